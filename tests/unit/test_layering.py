"""Imports go one way (docs/design.md, "Layout"): a module may import only from a lower layer than
its own package's, or from its own package. Every `import` under src/rigbench is read with `ast`,
function-level ones too (a function-level import dodges a cycle; it does not remove it)."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path
from typing import NamedTuple

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"

# Top-level package (or module) of rigbench -> its layer. A package may import from a lower layer
# only: two packages on one layer know nothing of each other.
LAYERS: dict[str, int] = {
    "errors": 0,
    "_version": 0,
    "records": 1,
    "outside": 0,  # rendering outside text as text: pure string functions
    "sizing": 1,  # context and slot arithmetic: plain functions
    "inputs": 1,  # the rules every door checks outside input by: plain functions of values and paths
    "store": 2,
    "client": 3,
    "analysis": 3,
    "sandbox": 3,
    "rig": 4,
    "report": 4,
    "testing": 5,  # the emulator's /metrics takes each engine's metric names from its adapter
    "honesty": 5,  # gate, gibberish screen, generic preflight (issue 13 item 3): checks a rig
    "suites": 5,
    "runner": 6,
    "plan": 7,
    "scale": 8,
    "cli": 9,
    "__main__": 10,
    "rigbench": 10,  # the package's own __init__ (version and errors only)
}


class Import(NamedTuple):
    path: Path
    line: int
    source: str  # the importing package, a key of LAYERS
    target: str  # the imported module, dotted
    function_level: bool


def _package(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def _module_name(path: Path, src: Path) -> str:
    return ".".join(path.relative_to(src).with_suffix("").parts).removesuffix(".__init__")


def rigbench_imports(src: Path) -> list[Import]:
    """Every import of a rigbench module in the tree under `src` (which holds `rigbench/`)."""
    found: list[Import] = []
    for path in sorted((src / "rigbench").rglob("*.py")):
        module = _module_name(path, src)
        tree = ast.parse(path.read_text(), str(path))
        in_function = {id(n) for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
                       for n in ast.walk(f)}
        for node in ast.walk(tree):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:  # relative: resolve against this module's package
                    base = module.split(".")[: len(module.split(".")) - node.level + (path.name == "__init__.py")]
                    targets = [".".join(base + ([node.module] if node.module else []))]
                elif node.module:
                    targets = [node.module]
            for t in targets:
                if t == "rigbench" or t.startswith("rigbench."):
                    found.append(Import(path, node.lineno, _package(module), t, id(node) in in_function))
    return found


def upward_imports(src: Path, layers: dict[str, int] = LAYERS) -> list[str]:
    """One line per import that goes back up (or sideways into a sibling package on its layer)."""
    bad: list[str] = []
    for imp in rigbench_imports(src):
        target = _package(imp.target)
        if target == imp.source or (target == "rigbench" and imp.target == "rigbench"):
            continue
        if layers[target] >= layers[imp.source]:
            where = "function-level " if imp.function_level else ""
            bad.append(f"{imp.path.relative_to(src.parent)}:{imp.line}: {where}import {imp.target}: "
                       f"{imp.source} (layer {layers[imp.source]}) -> {target} (layer {layers[target]}) goes back up")
    return bad


def private_imports(src: Path) -> list[str]:
    """One line per import of another package's `_private` module (its package exports the name)."""
    bad: list[str] = []
    for imp in rigbench_imports(src):
        parts = imp.target.split(".")
        if _package(imp.target) != imp.source and any(p.startswith("_") for p in parts[2:]):
            public = ".".join(parts[: next(i for i, p in enumerate(parts) if i >= 2 and p.startswith("_"))])
            bad.append(f"{imp.path.relative_to(src.parent)}:{imp.line}: import {imp.target}: "
                       f"{imp.source} reaches into {public}'s private module; import the name from {public}")
    return bad


def test_every_package_has_a_layer() -> None:
    packages = {p.stem if p.is_file() else p.name for p in (SRC / "rigbench").iterdir()
                if (p.is_dir() and (p / "__init__.py").exists()) or (p.suffix == ".py" and p.name != "__init__.py")}
    missing = packages - LAYERS.keys()
    assert not missing, f"give these a layer in LAYERS (and in docs/design.md): {sorted(missing)}"


def test_no_import_goes_back_up() -> None:
    bad = upward_imports(SRC)
    assert not bad, "imports that go back up:\n" + "\n".join(bad)


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    """A synthetic src/rigbench tree holding `files`."""
    src = tmp_path / "src"
    for rel, text in files.items():
        p = src / "rigbench" / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return src


def test_the_check_names_file_line_and_arrow_of_an_upward_import(tmp_path: Path) -> None:
    src = _tree(tmp_path, {
        "__init__.py": "",
        "records/__init__.py": "from rigbench.errors import RigbenchError\n",
        "records/_speed.py": "import json\n\n\ndef f():\n    from rigbench.report import render\n    return render\n",
        "report/__init__.py": "from rigbench.records import StreamResult\n",
    })
    assert upward_imports(src) == ["src/rigbench/records/_speed.py:5: function-level import rigbench.report: "
                                   "records (layer 1) -> report (layer 4) goes back up"]


@pytest.mark.parametrize("code", [
    "from rigbench.rig._sanity import SanityVerdict\n",  # analysis reading a producer
    "import rigbench.suites.speed\n",
    "from ..rig import RigInfo\n",  # relative imports count too
])
def test_the_check_catches_each_form_of_import(tmp_path: Path, code: str) -> None:
    src = _tree(tmp_path, {"__init__.py": "", "analysis/__init__.py": "", "analysis/_x.py": code})
    bad = upward_imports(src)
    assert len(bad) == 1
    assert bad[0].startswith("src/rigbench/analysis/_x.py:1: ") and "analysis (layer 3) ->" in bad[0]


def test_siblings_on_one_layer_may_not_import_each_other(tmp_path: Path) -> None:
    src = _tree(tmp_path, {"__init__.py": "", "client/__init__.py": "from rigbench.analysis import describe\n"})
    assert upward_imports(src) == [
        "src/rigbench/client/__init__.py:1: import rigbench.analysis: client (layer 3) -> analysis (layer 3) goes back up"
    ]


def test_imports_down_and_within_a_package_pass(tmp_path: Path) -> None:
    src = _tree(tmp_path, {
        "__init__.py": "",
        "report/__init__.py": "from rigbench.analysis import describe\nfrom rigbench.report._fmt import f\n",
        "report/_fmt.py": "from rigbench.records import StreamResult\nfrom . import _labels\n",
    })
    assert upward_imports(src) == []


def test_no_package_imports_another_packages_private_module() -> None:
    bad = private_imports(SRC)
    assert not bad, "imports of private modules across packages:\n" + "\n".join(bad)


def test_the_private_check_names_the_public_package_to_use(tmp_path: Path) -> None:
    src = _tree(tmp_path, {
        "__init__.py": "",
        "report/__init__.py": "",
        "report/_run.py": ("from rigbench.report._fmt import f\n"  # within its own package: fine
                           "from rigbench.analysis import describe\n"
                           "\n\ndef g():\n    from rigbench.suites.speed._suite import SpeedSuite\n"),
    })
    assert private_imports(src) == [
        "src/rigbench/report/_run.py:6: import rigbench.suites.speed._suite: report reaches into "
        "rigbench.suites.speed's private module; import the name from rigbench.suites.speed"
    ]


# -- engine names outside rig/engines/ (issue 24): an engine's knowledge lives in its own module -----

# f-string text is its own token from Python 3.12 on (one STRING token before)
_CODE_TOKENS = {tokenize.NAME, tokenize.STRING, getattr(tokenize, "FSTRING_MIDDLE", tokenize.STRING)}
_ENGINE_NAME = re.compile(r"llama[._-]?cpp|llama-server|vllm|sglang|ollama", re.IGNORECASE)


class PeerToolFormat(NamedTuple):
    """A file format of a peer tool that rigbench writes: named for the tool, yet no engine's knowledge."""

    modules: tuple[str, ...]  # modules that are the format (under src/rigbench/): every name in them is its
    names: tuple[str, ...]  # how other modules spell it (its module, functions, CLI option, label), exactly
    reason: str


# Formats of peer tools: the exemption class of the engine-name check. A format another tool defines (a
# file it writes, a field of its responses) is not engine knowledge when rigbench reads or writes it
# whatever engine serves the run: a benchmark client's result file is written from a run of any engine,
# and a response field is read from any server that sends it. Nothing in such a format says how an
# engine serves, so it belongs in no engine's module; the texts that explain it name the tool that defined
# it. Each entry: the format, the modules that are it, the exact names others spell it by, and why.
PEER_TOOL_FORMATS: dict[str, PeerToolFormat] = {
    "vllm bench serve --save-result --save-detailed": PeerToolFormat(
        modules=("report/_vllm_export.py",),
        names=("_vllm_export", "vllm_detailed_result", "vllm_json", "--vllm-json", "vllm bench serve",
               "vLLM-style detailed JSON", "vLLM's result"),
        reason="the result JSON of vLLM's benchmark client (`rigbench report --vllm-json`), written for a run of "
               "any engine so its figures sit beside that client's; its 'vllm' semantics is that client's timing "
               "(docs/metrics.md)"),
    "llama.cpp's `timings` response object": PeerToolFormat(
        modules=(),
        names=("llama.cpp timings", "llama.cpp's `timings`", "llama.cpp `timings`"),
        reason="a field llama.cpp defined that the client reads from any stream that carries it (the emulator "
               "sends it too); reports say where the field comes from, which is no engine's knowledge of the run"),
}


def engine_names(path: Path, exempt: tuple[str, ...] = ()) -> list[tuple[int, str]]:
    """(line, text) of each engine name in the code of `path`: identifiers and strings, not comments nor
    docstrings (prose may say which engines a generic rule was checked against), nor the `exempt` names
    (a peer tool's format as other modules spell it)."""
    text = path.read_text()
    tree = ast.parse(text, str(path))
    docs: set[int] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and body \
                and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                and isinstance(body[0].value.value, str):
            docs.update(range(body[0].lineno, (body[0].end_lineno or body[0].lineno) + 1))
    found: list[tuple[int, str]] = []
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type not in _CODE_TOKENS or tok.start[0] in docs:
            continue
        code = tok.string
        for name in exempt:
            code = code.replace(name, " ")
        found += [(tok.start[0], m.group(0)) for m in _ENGINE_NAME.finditer(code)]
    return found


def engine_names_outside_engines(src: Path, allowed: dict[str, int],
                                 formats: dict[str, PeerToolFormat] | None = None) -> list[str]:
    """One line per module outside rig/engines/ that names an engine more often than `allowed` says (the
    peer tools' `formats` aside: PEER_TOOL_FORMATS unless given)."""
    formats = PEER_TOOL_FORMATS if formats is None else formats
    exempt_modules = {m for f in formats.values() for m in f.modules}
    exempt_names = tuple(n for f in formats.values() for n in f.names)
    bad: list[str] = []
    for path in sorted((src / "rigbench").rglob("*.py")):
        rel = path.relative_to(src / "rigbench").as_posix()
        if rel.startswith(("rig/engines/", "data/")) or rel in exempt_modules:
            continue
        names = engine_names(path, exempt_names)
        if len(names) > allowed.get(rel, 0):
            first = ", ".join(f"{line}: {word}" for line, word in names[:3])
            bad.append(f"src/rigbench/{rel}: {len(names)} engine names (allowed {allowed.get(rel, 0)}; {first}). "
                       "Engine knowledge goes in its module under rig/engines/ (docs/engines.md, "
                       "'Adding an engine'); readers below rig get it through records (the fingerprint).")
    return bad


def test_no_module_outside_rig_engines_names_an_engine() -> None:
    """Issue 24: every engine's knowledge is in its module under rig/engines/ (378 names in 28 modules when
    the check came in); the rest of rigbench asks the engine (`Engine`, its adapter) or reads the records."""
    bad = engine_names_outside_engines(SRC, {})
    assert not bad, "engine names outside rig/engines/:\n" + "\n".join(bad)


def test_the_engine_name_check_reads_code_not_prose(tmp_path: Path) -> None:
    src = _tree(tmp_path, {
        "__init__.py": "",
        "analysis/_speed.py": '"""Checked against vLLM and llama.cpp."""\n# SGLang too\n'
                              'USAGE = {"vllm", "ollama"}\n',
        "analysis/_clean.py": '"""Names no engine in code."""\nX = 1  # not vLLM\n',
        "rig/engines/_vllm.py": 'NAME = "vllm"\n',
    })
    assert engine_names_outside_engines(src, {}) == [
        "src/rigbench/analysis/_speed.py: 2 engine names (allowed 0; 3: vllm, 3: ollama). Engine knowledge goes "
        "in its module under rig/engines/ (docs/engines.md, 'Adding an engine'); readers below rig get it "
        "through records (the fingerprint)."]
    assert engine_names_outside_engines(src, {"analysis/_speed.py": 2}) == []


def test_the_engine_name_check_exempts_a_peer_tools_format_and_nothing_else(tmp_path: Path) -> None:
    """A peer tool's format is exempt where it is written and where others name it; an engine name beside it
    is still counted."""
    src = _tree(tmp_path, {
        "__init__.py": "",
        "report/_bench_export.py": 'SEMANTICS = ("rigbench", "vllm")\n',
        "cli/_report.py": 'from rigbench.report import bench_json\nHELP = "as `vllm bench serve` writes"\n'
                          'ENGINE = "vllm"\n',
    })
    fmt = {"vllm bench serve": PeerToolFormat(modules=("report/_bench_export.py",),
                                              names=("vllm bench serve",), reason="a client's file")}
    assert engine_names_outside_engines(src, {}, fmt) == [
        "src/rigbench/cli/_report.py: 1 engine names (allowed 0; 3: vllm). Engine knowledge goes in its module "
        "under rig/engines/ (docs/engines.md, 'Adding an engine'); readers below rig get it through records "
        "(the fingerprint)."]
    assert len(engine_names_outside_engines(src, {}, {})) == 2  # without the exemption both modules count


def test_each_peer_tool_format_exemption_is_still_used() -> None:
    """An exemption outlives nothing: its modules exist and name the tool, and each name it exempts is used."""
    code = {p: p.read_text() for p in (SRC / "rigbench").rglob("*.py")}
    for tool, fmt in PEER_TOOL_FORMATS.items():
        assert fmt.reason, tool
        for module in fmt.modules:
            assert engine_names(SRC / "rigbench" / module), f"{tool}: {module} no longer names it"
        for name in fmt.names:
            assert any(name in text for p, text in code.items()
                       if p.relative_to(SRC / "rigbench").as_posix() not in fmt.modules), f"{tool}: {name!r} unused"


# -- import circles (issue 24 item 6): modules that import each other, in any form ------------------

# Packages (dotted under rigbench) inside which a circle among their own modules is known and left, with
# why. Each must still have one (test_each_circle_exemption_is_still_needed): remove the entry when its
# circle is broken. A circle that reaches outside the package is never exempt.
CIRCLES_LEFT: dict[str, str] = {}


def _module_graph(src: Path) -> dict[str, set[str]]:
    """Module -> the rigbench modules it imports, in any form: top-level, function-level, under
    TYPE_CHECKING (a type-only import still means the two modules cannot be read apart)."""
    modules = {_module_name(p, src): p for p in (src / "rigbench").rglob("*.py")}

    def resolve(dotted: str) -> str | None:
        parts = dotted.split(".")
        while parts and ".".join(parts) not in modules:
            parts.pop()
        return ".".join(parts) or None

    graph: dict[str, set[str]] = {m: set() for m in modules}
    for module, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = module.split(".")[: len(module.split(".")) - node.level + (path.name == "__init__.py")]
                    base = ".".join(parts + ([node.module] if node.module else []))
                targets = [f"{base}.{a.name}" for a in node.names]  # a submodule, else the module itself
            for t in targets:
                found = resolve(t) if t.startswith("rigbench") else None
                if found and found != module:
                    graph[module].add(found)
    return graph


def import_circles(src: Path) -> list[list[str]]:
    """Each group of modules that import one another round a circle (strongly connected, two or more)."""
    graph = _module_graph(src)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = stack[stack.index(v):]
            del stack[stack.index(v):]
            if len(group) > 1:
                circles.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(circles)


def _inside(circle: list[str], package: str) -> bool:
    """Whether every module of `circle` is `package` (dotted under rigbench) or one of its modules."""
    return all(m == f"rigbench.{package}" or m.startswith(f"rigbench.{package}.") for m in circle)


def test_no_import_circle_outside_the_known_ones() -> None:
    bad = [c for c in import_circles(SRC) if not any(_inside(c, p) for p in CIRCLES_LEFT)]
    assert not bad, ("modules that import each other (give the shared type a module of its own, as "
                     "suites/agent/_task.py holds AgentTask):\n" + "\n".join(", ".join(c) for c in bad))


def test_each_circle_exemption_is_still_needed() -> None:
    circles = import_circles(SRC)
    for package, reason in CIRCLES_LEFT.items():
        assert reason
        assert any(_inside(c, package) for c in circles), f"{package} has no import circle left: remove it from CIRCLES_LEFT"


def test_the_circle_check_sees_type_only_and_function_level_imports(tmp_path: Path) -> None:
    src = _tree(tmp_path, {
        "__init__.py": "",
        "suites/__init__.py": "",
        "suites/_tasks.py": "from rigbench.suites._grading import grade\n",
        "suites/_grading.py": ("from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n"
                               "    from rigbench.suites._tasks import Task\n"),
        "report/__init__.py": "",
        "report/_a.py": "from . import _b\n",
        "report/_b.py": "def f():\n    from rigbench.report._a import g\n    return g\n",
    })
    assert import_circles(src) == [["rigbench.report._a", "rigbench.report._b"],
                                   ["rigbench.suites._grading", "rigbench.suites._tasks"]]


def test_the_circle_check_passes_a_shared_module(tmp_path: Path) -> None:
    src = _tree(tmp_path, {
        "__init__.py": "",
        "suites/__init__.py": "",
        "suites/_task.py": "class Task: ...\n",
        "suites/_tasks.py": "from rigbench.suites._grading import grade\nfrom rigbench.suites._task import Task\n",
        "suites/_grading.py": "from rigbench.suites._task import Task\n",
    })
    assert import_circles(src) == []


def test_a_circle_exemption_covers_circles_inside_its_package_only(tmp_path: Path) -> None:
    src = _tree(tmp_path, {
        "__init__.py": "",
        "rig/__init__.py": "",
        "rig/_launcher.py": "def f():\n    from rigbench.rig.engines._toy import ENGINE\n",
        "rig/engines/__init__.py": "",
        "rig/engines/_toy.py": "from rigbench.rig._launcher import f\n",
        "rig/engines/_v/__init__.py": "",
        "rig/engines/_v/_engine.py": "def g():\n    from . import _rig\n",
        "rig/engines/_v/_rig.py": "from rigbench.rig.engines._v._engine import g\n",
    })
    circles = import_circles(src)
    assert circles == [["rigbench.rig._launcher", "rigbench.rig.engines._toy"],
                       ["rigbench.rig.engines._v._engine", "rigbench.rig.engines._v._rig"]]
    assert [_inside(c, "rig.engines._v") for c in circles] == [False, True]
    assert not _inside(circles[0], "rig.engines")  # a circle reaching out of the package is never exempt
