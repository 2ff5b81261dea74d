"""No function in cli/ or the runner runs over 80 lines (issue 24): a command is options (declared once,
as a typed model: cli/_typed.py) and a few calls; a long body is several jobs, each wanting a name.
Lines are counted from `def` to the last line of the body, decorators left out."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "rigbench"
LIMIT = 80


def long_functions(paths: list[Path], limit: int = LIMIT) -> list[str]:
    out = []
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > limit:
                    out.append(f"{path.name}:{node.lineno}: {node.name} has {lines} lines (at most {limit})")
    return out


def test_no_function_in_cli_or_the_runner_is_over_80_lines() -> None:
    paths = [*sorted((SRC / "cli").glob("*.py")), *sorted((SRC / "runner").glob("*.py"))]
    assert len(paths) > 10 and any(p.name == "_run.py" for p in paths)  # the files are where they were
    assert long_functions(paths) == []


def test_the_check_counts_a_long_function_and_passes_a_short_one(tmp_path: Path) -> None:
    f = tmp_path / "m.py"
    f.write_text("@decorated\ndef long(\n    a: int,\n) -> None:\n" + "    x = 1\n" * 78
                 + "\n\nasync def short() -> None:\n" + "    x = 1\n" * 79)
    assert long_functions([f]) == ["m.py:2: long has 81 lines (at most 80)"]
