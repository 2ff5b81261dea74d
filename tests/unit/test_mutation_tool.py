"""The mutation tool (benchmarks/mutation.py): its operators make the breaks the issue names, every mutant of
every trust-critical module is valid Python that changes the code, a mutant's key survives unrelated edits,
and each survivor argued equivalent in benchmarks/mutation_equivalent.txt still names a mutant of today's code
(an argument about code that is gone must go with it)."""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "rigbench"

CHECK = b'''"""A check."""
LIMIT = 0.25


def busy(other: float, steal: float | None, engine: bool) -> bool:
    """Docstring 0.5 is not a number to move."""
    if other >= LIMIT and engine:
        return True
    label: int = 3
    return steal is not None and steal > 0.10 or not engine


def reasons(n: int) -> list[str]:
    out = [f"{n * 2} busy windows"]
    return out[: n + 1]


def note(x: int) -> None:
    if x:
        raise ValueError("x " + str(x))
'''


@pytest.fixture(scope="module")
def tool() -> Iterator[tuple[ModuleType, ModuleType]]:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import mutation
        import mutation_ops

        yield mutation, mutation_ops
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))


def _made(ops: ModuleType, source: bytes) -> set[tuple[str, str, str, str]]:
    return {(m.scope.qualname, m.operator, m.original, m.replacement) for m in ops.mutants_of("x.py", source)}


def test_each_operator_makes_the_break_it_names(tool: tuple[ModuleType, ModuleType]) -> None:
    _, ops = tool
    made = _made(ops, CHECK)
    expected = {
        ("<module>", "constant", "0.25", "2.5"),  # a threshold widened 10x
        ("<module>", "constant", "0.25", "0.025"),
        ("busy", "compare-invert", "other >= LIMIT", "other < LIMIT"),
        ("busy", "compare-boundary", "other >= LIMIT", "other > LIMIT"),
        ("busy", "drop-operand", "other >= LIMIT and engine", "other >= LIMIT"),  # a condition dropped
        ("busy", "drop-operand", "other >= LIMIT and engine", "engine"),
        ("busy", "negate", "True", "False"),
        ("busy", "negate", "not engine", "engine"),
        ("busy", "compare-invert", "steal is not None", "steal is None"),
        ("busy", "compare-boundary", "steal > 0.10", "steal >= 0.1"),
        ("busy", "constant", "0.10", "1.0"),
        ("busy", "return-healthy", "def busy(...)", "return False"),  # the check finds nothing
        ("busy", "return-healthy", "def busy(...)", "return True"),
        ("reasons", "return-healthy", "def reasons(...)", "return []"),
        ("reasons", "constant", "1", "2"),  # off by one
        ("reasons", "constant", "1", "0"),
        ("reasons", "arith", "n + 1", "n - 1"),
        ("note", "skip-body", "def note(...)", "return"),
        ("note", "negate", "x", "not x"),
    }
    assert expected <= made, sorted(expected - made)
    # not mutated: docstrings, annotations, f-strings and messages, string concatenation
    assert not any(m[2] in ("0.5", "3") and m[0] == "busy" and m[1] == "constant" and m[3] in ("5.0", "0.05")
                   for m in made)
    assert not any("busy windows" in m[2] or m[2].startswith("n * 2") or '"x "' in m[2] for m in made), made
    assert not any(m[2] in ("float | None", "bool", "list[str]") for m in made)


def _top_level_spans(source: bytes) -> list[tuple[int, int]]:
    """Byte ranges of the module's top-level statements (decorators included), in order."""
    offsets = [0]
    for line in source.splitlines(keepends=True):
        offsets.append(offsets[-1] + len(line))
    spans = []
    for stmt in ast.parse(source).body:
        first = min([stmt.lineno, *[d.lineno for d in getattr(stmt, "decorator_list", [])]])
        spans.append((offsets[first - 1], offsets[stmt.end_lineno or stmt.lineno]))
    return spans


def test_every_mutant_of_every_target_compiles_and_changes_the_code(tool: tuple[ModuleType, ModuleType]) -> None:
    """Each mutant changes one top-level statement: that statement, mutated, is valid Python whose tree differs
    from the original's (the rest of the file is untouched, so the file is valid too)."""
    mutation, ops = tool
    total = 0
    for module in mutation.TARGETS:
        source = (SRC / module).read_bytes()
        spans = _top_level_spans(source)
        mutants = ops.mutants_of(module, source)
        assert mutants, f"{module}: no mutant"
        keys = [m.key for m in mutants]
        assert len(keys) == len(set(keys)), f"{module}: two mutants share a key"
        dumps = {(a, b): ast.dump(ast.parse(source[a:b])) for a, b in spans}
        for m in mutants:
            [(a, b)] = [(a, b) for a, b in spans if a <= m.start and m.end <= b]
            after = source[a:m.start] + m.new_text.encode() + source[m.end:b]
            tree = ast.parse(after)
            assert ast.dump(tree) != dumps[(a, b)], f"not a change: {m.key}"
            compile(tree, module, "exec", dont_inherit=True)
        total += len(mutants)
    assert total > 1000


def test_a_mutants_key_survives_lines_moving_above_it(tool: tuple[ModuleType, ModuleType]) -> None:
    _, ops = tool
    moved = CHECK.replace(b'LIMIT = 0.25\n', b'LIMIT = 0.25\nOTHER = "added"\n\n\n')
    a = {m.key: m.line for m in ops.mutants_of("x.py", CHECK)}
    b = {m.key: m.line for m in ops.mutants_of("x.py", moved)}
    assert set(a) == set(b)
    assert all(b[k] == a[k] + 3 for k in a if a[k] > 2)


def test_each_argued_equivalent_survivor_names_a_mutant_of_the_code_as_it_is(tool: tuple[ModuleType, ModuleType]
                                                                           ) -> None:
    mutation, ops = tool
    argued = mutation.load_equivalent()
    keys = {m.key for module in mutation.TARGETS for m in ops.mutants_of(module, (SRC / module).read_bytes())}
    stale = sorted(set(argued) - keys)
    assert not stale, ("benchmarks/mutation_equivalent.txt argues about mutants the code no longer has (the code "
                       f"changed: run `python benchmarks/mutation.py -m MODULE` and argue the survivors again): {stale}")


def test_jobs_split_the_map_by_running_time_each_file_once(tool: tuple[ModuleType, ModuleType]) -> None:
    mutation, _ = tool
    files = [f"tests/unit/test_{c}.py" for c in "abcdef"]
    # the last map's seconds per file: one slow file, the rest quick
    old = mutation.CoverageMap([f"{f}::t" for f in files], [60.0, 5.0, 5.0, 5.0, 5.0, 5.0], set(), {}, {}, {})
    groups = mutation._map_groups(files, 3, old)
    assert sorted(f for g in groups for f in g) == sorted(files)  # every file mapped, none twice
    assert len(groups) == 3
    assert ["tests/unit/test_a.py"] in groups  # the slow file alone: the others share the rest
    assert mutation._map_groups(files[:2], 8, old) == [[files[0]], [files[1]]]  # never an empty worker
    assert mutation._map_groups(files, 1, old) == [sorted(files)]


def test_a_bad_worker_count_or_shard_is_refused_with_the_value_seen(
        tool: tuple[ModuleType, ModuleType], capsys: pytest.CaptureFixture[str]) -> None:
    mutation, _ = tool
    import argparse

    ap = argparse.ArgumentParser()
    assert mutation._parse_shard(ap, "2/5") == (2, 5)
    assert mutation._parse_shard(ap, None) is None
    for bad in ("5/5", "-1/3", "a/b", "3"):
        with pytest.raises(SystemExit):
            mutation._parse_shard(ap, bad)
        assert bad in capsys.readouterr().err
    with pytest.raises(SystemExit):
        mutation.main(["--jobs", "0"])
    assert "--jobs must be at least 1 (got 0)" in capsys.readouterr().err
