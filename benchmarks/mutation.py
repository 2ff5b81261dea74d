"""Mutation testing of rigbench's trust checks: break the code on purpose, one edit at a time, and
count the breaks the tests notice.

    python benchmarks/mutation.py                        # every trust-critical module (TARGETS)
    python benchmarks/mutation.py -m _goodput -m _host   # modules whose path contains either word
    python benchmarks/mutation.py --list -m _goodput     # the mutants, without running them
    python benchmarks/mutation.py --retest-survivors     # after adding tests: run the survivors again
    python benchmarks/mutation.py --summary              # the score and survivors of what was run

Each mutant (benchmarks/mutation_ops.py: a comparison inverted or moved by one, a condition dropped
or negated, a number x10, /10 or +-1, an operator swapped, a check that returns the healthy value)
is written into a temporary copy of src/ (the tree is never edited) and run against the unit and
golden tests that execute its lines: a coverage map (benchmarks/mutation_coverage.py, one context
per test) says which, built once and refreshed for the test files and modules that changed. Tests
run fastest first and stop at the first failure, in a child forked from a process that has already
imported pytest and the third-party libraries, so a mutant costs seconds.

A mutant is *killed* when a test fails (or the tests hang past the timeout, or it breaks an import the
unmutated code does not), *survived* when every covering test passes, *no tests* when no test executes
its lines; *error* (the tests do not even collect without it: a test file being edited) is run again. Every result is appended to
STATE/results.jsonl as it comes, so an interrupted run resumes where it stopped when run again (a
mutant is rerun only when its module changed, or with --retest-survivors). The summary (--out, JSON)
has the score per module and every survivor with its diff; a survivor argued equivalent (the
mutant cannot change what any user sees) is listed in benchmarks/mutation_equivalent.txt, one line
each: `KEY  # why`. An entry that no longer matches a survivor is reported as stale.

One worker by default: run it under `nice -n 10` on a shared machine. On a quiet one, `--jobs N` runs N
mutants at once (each worker its own copy of src/, every Nth pending mutant, one shared results file) and
builds the coverage map in N pytest processes; the killers are confirmed and the summary written once all end. Results and figures:
docs/benchmarks.md, "Mutation testing".
"""

from __future__ import annotations

import argparse
import compileall
import contextlib
import datetime as dt
import difflib
import fnmatch
import hashlib
import json
import os
import platform
import py_compile
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mutation_ops import Mutant, mutants_of

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "rigbench"
EQUIVALENT = ROOT / "benchmarks" / "mutation_equivalent.txt"
DEFAULT_STATE = ROOT / ".mutation"
TEST_DIRS = ("tests/unit", "tests/golden")
# The trust-critical modules (issue 33): the checks that decide whether a figure is printed as trusted.
TARGETS = (
    "honesty/_gibberish.py", "honesty/_prefix_cache.py", "honesty/_preflight.py", "honesty/_sanity.py",
    "honesty/_traffic.py",
    "rig/_host.py", "analysis/_host.py",
    "analysis/_arrival.py", "analysis/_stamping.py",
    "analysis/_load.py", "analysis/_goodput.py", "suites/load/_schedule.py",
    "analysis/_compare.py", "analysis/_verdict.py", "analysis/_stats.py",
    "analysis/_roofline.py", "analysis/_kvcache.py",
    "sandbox/_verdict.py", "suites/agent/_grading.py",
)
# Imported once in the parent so that each mutant's child starts with them loaded (never rigbench:
# its modules must load from the mutated copy).
PRELOAD = ("numpy", "scipy.stats", "pydantic", "rich.console", "rich.table", "typer", "aiohttp", "yaml", "psutil",
           "jsonschema", "matplotlib", "matplotlib.figure", "pytest", "pytest_asyncio", "pytest_timeout",
           "uvloop", "click", "platformdirs", "multidict", "yarl")
MARKERS = "not live and not ray and not vllm"


# -- small helpers ---------------------------------------------------------------------------------

def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


def _say(msg: str) -> None:
    print(msg, flush=True)


def _test_files(dirs: Sequence[str] = TEST_DIRS) -> dict[str, str]:
    out: dict[str, str] = {}
    for d in dirs:
        found = [ROOT / d] if d.endswith(".py") else sorted((ROOT / d).rglob("test_*.py"))
        for p in found:
            out[p.relative_to(ROOT).as_posix()] = _sha(p.read_bytes())
    return out


def _src_files() -> dict[str, str]:
    return {p.relative_to(SRC).as_posix(): _sha(p.read_bytes()) for p in sorted(SRC.rglob("*.py"))
            if "data" not in p.relative_to(SRC).parts[:1]}


def _test_file_of(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


# -- the coverage map ------------------------------------------------------------------------------

@dataclass
class CoverageMap:
    tests: list[str]
    seconds: list[float]
    failed: set[str]
    lines: dict[str, dict[int, list[int]]]  # module -> line -> test indices
    test_files: dict[str, str]
    src: dict[str, str]

    @classmethod
    def load(cls, path: Path) -> CoverageMap | None:
        if not path.exists():
            return None
        d = json.loads(path.read_text())
        return cls(d["tests"], d["seconds"], set(d["failed"]),
                   {m: {int(k): v for k, v in ls.items()} for m, ls in d["lines"].items()},
                   d["test_files"], d["src"])

    def save(self, path: Path) -> None:
        path.write_text(json.dumps({"tests": self.tests, "seconds": self.seconds, "failed": sorted(self.failed),
                                    "lines": self.lines, "test_files": self.test_files, "src": self.src}))

    def tests_on(self, module: str, lines: Iterable[int]) -> set[int]:
        by_line = self.lines.get(module, {})
        out: set[int] = set()
        for line in lines:
            out.update(by_line.get(line, ()))
        return out

    def merged(self, other: CoverageMap, replaced_files: set[str]) -> CoverageMap:
        """This map with every test of `replaced_files` dropped and `other`'s tests added."""
        keep = [i for i, t in enumerate(self.tests) if _test_file_of(t) not in replaced_files]
        new_index = {old: new for new, old in enumerate(keep)}
        offset = len(keep)
        lines: dict[str, dict[int, list[int]]] = {}
        for module, by_line in self.lines.items():
            for line, ids in by_line.items():
                kept = [new_index[i] for i in ids if i in new_index]
                if kept:
                    lines.setdefault(module, {})[line] = kept
        for module, by_line in other.lines.items():
            for line, ids in by_line.items():
                lines.setdefault(module, {}).setdefault(line, []).extend(i + offset for i in ids)
        return CoverageMap([self.tests[i] for i in keep] + other.tests,
                           [self.seconds[i] for i in keep] + other.seconds,
                           {t for t in self.failed if _test_file_of(t) not in replaced_files} | other.failed,
                           lines, {**self.test_files, **other.test_files}, other.src)


def _map_groups(files: Sequence[str], jobs: int, old: CoverageMap | None) -> list[list[str]]:
    """The test files split into `jobs` groups of about equal running time (the last map's seconds per file;
    a file it does not know weighs its size in bytes / 2,000, about a test's worth)."""
    cost: dict[str, float] = {}
    if old is not None:
        for t, sec in zip(old.tests, old.seconds, strict=True):
            cost[_test_file_of(t)] = cost.get(_test_file_of(t), 0.0) + sec
    weight = {f: cost[f] if f in cost else (ROOT / f).stat().st_size / 2000 for f in files}
    groups: list[list[str]] = [[] for _ in range(max(1, min(jobs, len(files))))]
    load = [0.0] * len(groups)
    for f in sorted(files, key=lambda f: -weight[f]):
        k = load.index(min(load))
        groups[k].append(f)
        load[k] += weight[f]
    return [sorted(g) for g in groups if g]


def _run_map(files: Sequence[str], state: Path, jobs: int = 1, old: CoverageMap | None = None) -> CoverageMap:
    """Run the test files under coverage, in `jobs` pytest processes at once (each its own files, map part,
    log and temporary directory), and join their parts into one map."""
    groups = _map_groups(files, jobs, old)
    # src/ and benchmarks/ first; what the caller had on the path after them (packages installed with --target)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT / "benchmarks"), *[
        p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]])}
    env.pop("CI", None)
    # pytest keeps the test files it rewrote (assertions) in tests/__pycache__: each mutant's child reads them
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    _say(f"coverage map: running {len(files)} test files under coverage in {len(groups)} process(es) "
         "(once; refreshed only for what changes)")
    t0 = time.monotonic()
    procs: list[tuple[Path, list[str], subprocess.Popen[bytes]]] = []
    try:
        for k, group in enumerate(groups):
            out = state / (f"map-part-{k}.json" if len(groups) > 1 else "map-part.json")
            out.unlink(missing_ok=True)
            # the tests' temporary directories outside the repository: a test that runs pytest in one (tests/unit/
            # test_ci_skips.py) must not find rigbench's own pyproject.toml above it
            cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "mutation_coverage", "-m",
                   MARKERS, f"--basetemp={Path(tempfile.gettempdir()) / f'rigbench-mutation-map-{k}'}", *group]
            log = None if len(groups) == 1 else (state / f"map-{k}.log").open("wb")
            procs.append((out, cmd, subprocess.Popen(cmd, cwd=ROOT, env={**env, "RIGBENCH_MUTATION_MAP": str(out)},
                                                     stdout=log, stderr=subprocess.STDOUT if log else None)))
            if log is not None:
                log.close()
        joined = CoverageMap([], [], set(), {}, {}, _src_files())
        for out, cmd, proc in procs:
            code = proc.wait()
            if not out.exists():
                raise SystemExit(f"the coverage run wrote no map (pytest exit {code}; its log: {state}/map-*.log): "
                                 f"{' '.join(cmd)}")
            d = json.loads(out.read_text())
            part = CoverageMap(d["tests"], d["seconds"], set(d["failed"]),
                               {m: {int(k): v for k, v in ls.items()} for m, ls in d["lines"].items()}, {},
                               joined.src)
            joined = joined.merged(part, set())
    finally:
        for _, _, proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    _say(f"coverage map: {len(joined.tests)} tests in {time.monotonic() - t0:.0f} s, {len(joined.failed)} failed "
         "(left out of every mutant's tests)")
    current = {p: _sha((ROOT / p).read_bytes()) for p in files}
    joined.test_files = {f: current[f] for f in files if f in current}
    return joined


def ensure_map(state: Path, remap: bool, dirs: Sequence[str] = TEST_DIRS, jobs: int = 1) -> CoverageMap:
    path = state / "map.json"
    known = CoverageMap.load(path)
    old = None if remap else known
    files = _test_files(dirs)
    src = _src_files()
    if old is None:
        fresh = _run_map(sorted(files), state, jobs, known)
        fresh.save(path)
        return fresh
    changed_src = {m for m, sha in src.items() if old.src.get(m) != sha}
    stale = {f for f, sha in files.items() if old.test_files.get(f) != sha}
    for module in changed_src:
        for ids in old.lines.get(module, {}).values():
            stale.update(_test_file_of(old.tests[i]) for i in ids)
    gone = set(old.test_files) - set(files)
    stale &= set(files)
    if not stale and not gone and not changed_src:
        return old
    if stale:
        _say(f"coverage map: {len(changed_src)} changed modules, {len(stale)} test files to map again")
        part = _run_map(sorted(stale), state, jobs, old)
    else:
        part = CoverageMap([], [], set(), {}, {}, src)
    part.src = src
    merged = old.merged(part, stale | gone)
    merged.test_files = {f: sha for f, sha in merged.test_files.items() if f in files}
    merged.save(path)
    return merged


# -- which tests cover a mutant ----------------------------------------------------------------------

class Readers:
    """Lines of src/rigbench that read a name: a module-level constant is covered by the tests that run them."""

    def __init__(self) -> None:
        import ast

        self.by_name: dict[str, list[tuple[str, int]]] = {}
        for p in SRC.rglob("*.py"):
            rel = p.relative_to(SRC).as_posix()
            if rel.startswith("data/"):
                continue
            for node in ast.walk(ast.parse(p.read_bytes())):
                if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                    self.by_name.setdefault(node.id, []).append((rel, node.lineno))
                elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
                    self.by_name.setdefault(node.attr, []).append((rel, node.lineno))


def covering_tests(m: Mutant, cmap: CoverageMap, readers: Readers, excluded: set[str]) -> list[str]:
    ids = cmap.tests_on(m.path, range(m.line, m.end_line + 1))
    if m.operator in ("return-healthy", "skip-body") and m.scope.function_lines:
        ids = cmap.tests_on(m.path, range(m.scope.function_lines[0], m.scope.function_lines[1] + 1))
    if not ids and m.scope.function_lines:  # a default argument: evaluated at import, read by every call
        ids = cmap.tests_on(m.path, range(m.scope.function_lines[0], m.scope.function_lines[1] + 1))
    if not ids and m.scope.function_lines is None:
        for name in m.scope.names:
            for module, line in readers.by_name.get(name, []):
                ids |= cmap.tests_on(module, [line])
        if not ids:
            ids = {i for ls in cmap.lines.get(m.path, {}).values() for i in ls}
    tests = [cmap.tests[i] for i in ids if cmap.tests[i] not in cmap.failed and cmap.tests[i] not in excluded]
    seconds = dict(zip(cmap.tests, cmap.seconds, strict=True))
    return sorted(tests, key=lambda t: (seconds.get(t, 0.0), t))


# -- running tests against a mutant ----------------------------------------------------------------

@dataclass(frozen=True)
class Outcome:
    status: str  # killed, timeout, survived, no-tests, error
    killer: str | None
    message: str | None
    ran: int
    seconds: float


class _Order:
    """pytest plugin of the child: run the tests in the given order and say which failed first."""

    def __init__(self, order: Sequence[str], result: Path) -> None:
        self.rank = {t: i for i, t in enumerate(order)}
        self.result = result
        self.ran = 0
        self.failed: list[tuple[str, str]] = []

    def pytest_collection_modifyitems(self, items: list[Any]) -> None:
        items.sort(key=lambda it: self.rank.get(it.nodeid, len(self.rank)))

    def pytest_collectreport(self, report: Any) -> None:
        if report.failed:  # an import error: the mutant's, or a test file being edited
            text = str(report.longreprtext or "").strip().splitlines()
            self.failed.append((f"collect:{report.nodeid}", (text[-1] if text else "")[:300]))
            self.result.write_text(json.dumps({"ran": self.ran, "failed": self.failed}))

    def pytest_runtest_logreport(self, report: Any) -> None:
        if report.when == "call" or report.failed:
            if report.when == "call":
                self.ran += 1
            if report.failed:
                text = str(report.longreprtext or "").strip().splitlines()
                msg = next((ln for ln in reversed(text) if ln.startswith("E ")), text[-1] if text else "")
                self.failed.append((report.nodeid, msg[:300]))
                self.result.write_text(json.dumps({"ran": self.ran, "failed": self.failed}))

    def pytest_sessionfinish(self, session: Any) -> None:
        self.result.write_text(json.dumps({"ran": self.ran, "failed": self.failed}))


class Sandbox:
    """A temporary copy of src/ that one mutant at a time is written into; tests run in a forked child."""

    def __init__(self, state: Path, log_name: str = "last-mutant.log") -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="rigbench-mutation-"))
        self.src = self.dir / "src"
        shutil.copytree(SRC, self.src / "rigbench", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        compileall.compile_dir(self.src, quiet=1, invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH)
        self.state = state
        self.log = state / log_name
        for name in PRELOAD:
            with contextlib.suppress(Exception):  # an optional library not installed: the child imports what it needs
                __import__(name)
        assert not any(k == "rigbench" or k.startswith("rigbench.") for k in sys.modules), "rigbench preloaded"

    def close(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)

    def run(self, m: Mutant | None, tests: Sequence[str], timeout_s: float, *, stop_at_first: bool = True,
            collect_only: bool = False) -> Outcome:
        target = self.src / "rigbench" / m.path if m else None
        original = target.read_bytes() if target else b""
        if target is not None and m is not None:
            target.write_bytes(m.apply(original))
        result = self.dir / "result.json"
        result.unlink(missing_ok=True)
        t0 = time.monotonic()
        try:
            pid = os.fork()
            if pid == 0:
                self._child(tests, result, stop_at_first, collect_only)
            status = self._wait(pid, timeout_s)
        finally:
            if target is not None:
                target.write_bytes(original)
        took = time.monotonic() - t0
        got: dict[str, Any] = json.loads(result.read_text()) if result.exists() else {"ran": 0, "failed": []}
        failed: list[list[str]] = got["failed"]
        if status == "timeout":
            return Outcome("timeout", failed[0][0] if failed else None, f"no result within {timeout_s:.0f} s",
                           got["ran"], took)
        tested = [f for f in failed if not f[0].startswith("collect:")]
        if tested:
            return Outcome("killed", tested[0][0], tested[0][1], got["ran"], took)
        if status != 0:  # nothing ran to a verdict: the mutant broke an import, or the tests cannot be collected
            why = failed[0][1] if failed else f"pytest exit {status}"
            if m is not None and self.run(None, tests, timeout_s, collect_only=True).status == "survived":
                return Outcome("killed", failed[0][0] if failed else None, f"import broken: {why}", got["ran"], took)
            return Outcome("error", None, f"the tests do not collect without the mutant either: {why}", 0, took)
        return Outcome("survived", None, None, got["ran"], took)

    def _child(self, tests: Sequence[str], result: Path, stop_at_first: bool, collect_only: bool) -> None:
        code = 70
        try:
            os.setpgid(0, 0)
            fd = os.open(self.log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            os.dup2(fd, 1)
            os.dup2(fd, 2)
            sys.path.insert(0, str(self.src))
            os.environ["PYTHONPATH"] = os.pathsep.join([str(self.src), *[p for p in os.environ.get(
                "PYTHONPATH", "").split(os.pathsep) if p and Path(p).resolve() != (ROOT / "src").resolve()]])
            os.environ["PYTHONDONTWRITEBYTECODE"] = "1"
            os.environ.pop("CI", None)
            sys.dont_write_bytecode = True
            os.chdir(ROOT)
            import pytest

            args = ["-q", "-p", "no:cacheprovider", "-m", MARKERS, f"--basetemp={self.dir / 'tmp'}",
                    *(["-x"] if stop_at_first else []), *(["--collect-only"] if collect_only else []), *tests]
            code = int(pytest.main(args, plugins=[_Order(tests, result)]))
        except BaseException:
            import traceback

            traceback.print_exc()
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)

    @staticmethod
    def _wait(pid: int, timeout_s: float) -> int | str:
        deadline = time.monotonic() + timeout_s
        try:
            while True:
                done, status = os.waitpid(pid, os.WNOHANG)
                if done:
                    return os.waitstatus_to_exitcode(status)
                if time.monotonic() > deadline:
                    os.killpg(pid, signal.SIGKILL)
                    os.waitpid(pid, 0)
                    return "timeout"
                time.sleep(0.05)
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)  # whatever the tests started and left behind


# -- results -----------------------------------------------------------------------------------------

def _load_results(path: Path) -> dict[tuple[str, str], dict[str, Any]]:
    out: dict[tuple[str, str], dict[str, Any]] = {}
    if path.exists():
        for line in path.read_text().splitlines():
            try:
                r = json.loads(line)
            except json.JSONDecodeError:
                continue  # a line torn by an interruption
            out[(r["src_sha"], r["key"])] = r
    return out


def load_equivalent(path: Path = EQUIVALENT) -> dict[str, str]:
    """KEY -> why, from `KEY  # why` lines (blank lines and lines starting with # are comments)."""
    out: dict[str, str] = {}
    if not path.exists():
        return out
    for line in path.read_text().splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        key, sep, why = line.partition("  # ")
        if not sep or not why.strip():
            raise SystemExit(f"{path}: a line without its reason (`KEY  # why`): {line!r}")
        out[key.strip()] = why.strip()
    return out


def _diff(path: str, source: bytes, m: Mutant) -> str:
    before = source.decode().splitlines(keepends=True)
    after = m.apply(source).decode().splitlines(keepends=True)
    return "".join(difflib.unified_diff(before, after, f"a/src/rigbench/{path}", f"b/src/rigbench/{path}", n=1))


def summarize(modules: Sequence[str], results: dict[tuple[str, str], dict[str, Any]],
              equivalent: dict[str, str]) -> dict[str, Any]:
    per_module: dict[str, dict[str, Any]] = {}
    survivors: list[dict[str, Any]] = []
    matched: set[str] = set()
    for module in modules:
        source = (SRC / module).read_bytes()
        sha = _sha(source)
        counts: dict[str, Any] = {"mutants": 0, "killed": 0, "timeout": 0, "survived": 0, "no-tests": 0, "not run": 0,
                  "equivalent": 0}
        for m in mutants_of(module, source):
            counts["mutants"] += 1
            r = results.get((sha, m.key))
            if r is None or r["status"] == "error":
                counts["not run"] += 1
                continue
            counts[r["status"]] += 1
            if r["status"] in ("survived", "no-tests"):
                why = equivalent.get(m.key)
                if why:
                    counts["equivalent"] += 1
                    matched.add(m.key)
                survivors.append({"key": m.key, "module": module, "line": m.line, "operator": m.operator,
                                  "status": r["status"], "tests": r["tests"], "equivalent": why,
                                  "diff": _diff(module, source, m)})
        run = counts["mutants"] - counts["not run"]
        dead = counts["killed"] + counts["timeout"]
        counts["killed_pct"] = round(100 * dead / run, 1) if run else None
        counts["score_pct"] = round(100 * (dead + counts["equivalent"]) / run, 1) if run else None
        per_module[module] = counts
    totals = {k: sum(c[k] for c in per_module.values()) for k in ("mutants", "killed", "timeout", "survived",
                                                                  "no-tests", "not run", "equivalent")}
    run = totals["mutants"] - totals["not run"]
    totals["killed_pct"] = round(100 * (totals["killed"] + totals["timeout"]) / run, 1) if run else None
    totals["score_pct"] = (round(100 * (totals["killed"] + totals["timeout"] + totals["equivalent"]) / run, 1)
                           if run else None)
    in_scope = {k for k in equivalent if k.split(":", 1)[0] in modules}
    return {"per_module": per_module, "totals": totals, "survivors": survivors,
            "unexplained": [s["key"] for s in survivors if not s["equivalent"]],
            "stale_equivalent": sorted(in_scope - matched)}


def _print_summary(s: dict[str, Any]) -> None:
    _say(f"\n{'module':34} {'mutants':>7} {'killed':>7} {'survived':>8} {'no tests':>8} {'equiv.':>6} "
         f"{'killed %':>8} {'score %':>8}")
    rows = [*s["per_module"].items(), ("total", s["totals"])]
    for module, c in rows:
        dead = c["killed"] + c["timeout"]
        kp = "-" if c["killed_pct"] is None else f"{c['killed_pct']:.1f}"
        sp = "-" if c["score_pct"] is None else f"{c['score_pct']:.1f}"
        left = f" ({c['not run']} not run)" if c["not run"] else ""
        _say(f"{module:34} {c['mutants']:7} {dead:7} {c['survived']:8} {c['no-tests']:8} {c['equivalent']:6} "
             f"{kp:>8} {sp:>8}{left}")
    if s["unexplained"]:
        _say(f"\n{len(s['unexplained'])} survivors not argued equivalent in {EQUIVALENT.relative_to(ROOT)}:")
        for key in s["unexplained"]:
            _say(f"  {key}")
    if s["stale_equivalent"]:
        _say(f"\n{len(s['stale_equivalent'])} entries of {EQUIVALENT.relative_to(ROOT)} match no survivor "
             "(killed now, or the code changed): remove them")
        for key in s["stale_equivalent"]:
            _say(f"  {key}")


# -- the command -----------------------------------------------------------------------------------

def _select(patterns: Sequence[str]) -> list[str]:
    if not patterns:
        return list(TARGETS)
    chosen = [t for t in TARGETS if any(p in t or fnmatch.fnmatch(t, p) for p in patterns)]
    extra = [p for p in patterns if p.endswith(".py") and (SRC / p).exists() and p not in chosen]
    if not chosen and not extra:
        raise SystemExit(f"no module matches {list(patterns)}; the trust-critical modules are: {', '.join(TARGETS)} "
                         "(or name any module of src/rigbench by its path, e.g. analysis/_speed.py)")
    return chosen + extra


def _git_commit() -> str:
    """The commit the mutants were made from ("unknown" in a copy without git or its history)."""
    try:
        res = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "src", "tests"], cwd=ROOT, capture_output=True,
                               text=True).stdout.strip()
    except OSError:
        return os.environ.get("RIGBENCH_MUTATION_COMMIT", "unknown")
    if res.returncode:
        return os.environ.get("RIGBENCH_MUTATION_COMMIT", "unknown")
    return res.stdout.strip() + ("+uncommitted" if dirty else "")


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n\n".join(__doc__.split("\n\n")[1:]))
    ap.add_argument("-m", "--module", action="append", default=[], metavar="PATTERN",
                    help="only modules whose path (under src/rigbench) contains PATTERN or matches it as a glob; "
                         "repeatable; a path outside TARGETS is accepted too")
    ap.add_argument("--operator", action="append", default=[], help="only these operators (repeatable)")
    ap.add_argument("--list", action="store_true", help="list the mutants and the number of tests each runs; run none")
    ap.add_argument("--summary", action="store_true", help="only print and write the summary of what was run")
    ap.add_argument("--retest-survivors", action="store_true",
                    help="run again the mutants that survived or had no tests (after adding tests)")
    ap.add_argument("--retest", action="append", default=[], metavar="KEY_PART",
                    help="run again the mutants whose key contains KEY_PART (repeatable)")
    ap.add_argument("--remap", action="store_true", help="rebuild the whole coverage map")
    ap.add_argument("--tests", action="append", default=[], metavar="PATH",
                    help=f"map only these test files or directories (default: {', '.join(TEST_DIRS)}); a trial "
                         "run with a smaller map kills fewer mutants")
    ap.add_argument("--state", type=Path, default=DEFAULT_STATE,
                    help=f"where the map and the results are kept (default {DEFAULT_STATE.relative_to(ROOT)}/)")
    ap.add_argument("--out", type=Path, help="write the summary here as JSON (default STATE/summary.json)")
    ap.add_argument("--timeout-factor", type=float, default=4.0,
                    help="a mutant times out (counted killed) after this many times its tests' mapped duration "
                         "plus 60 s (default 4)")
    ap.add_argument("-j", "--jobs", type=int, default=1, metavar="N",
                    help="run N mutants at once, each in its own worker and copy of src/, and map with N pytest "
                         "processes (default 1, for a shared machine; on a quiet one, its cores minus one)")
    ap.add_argument("--shard", default=None, help=argparse.SUPPRESS)  # K/N: one worker of --jobs N
    ap.add_argument("--max", type=int, default=0, help="stop after running this many mutants (0: all)")
    ap.add_argument("--max-tests", type=int, default=0, metavar="N",
                    help="run each mutant against its N fastest covering tests only (0: all, the default): quicker "
                         "while developing tests, and never kills more than the full run would (a survivor of N "
                         "tests may die in the full run, not the reverse); its results are not kept for resume")
    args = ap.parse_args(argv)
    if args.jobs < 1:
        ap.error(f"--jobs must be at least 1 (got {args.jobs})")
    if args.jobs > 1 and (args.max or args.max_tests):
        ap.error("--jobs runs every pending mutant; use --max/--max-tests with one worker (--jobs 1)")
    shard = _parse_shard(ap, args.shard)

    modules = _select(args.module)
    # a kill ends the run as Ctrl-C does: results kept, copy removed
    signal.signal(signal.SIGTERM, _interrupt)
    signal.signal(signal.SIGINT, _interrupt)
    state: Path = args.state
    state.mkdir(parents=True, exist_ok=True)
    results_path = state / "results.jsonl"
    equivalent = load_equivalent()
    out = args.out or state / "summary.json"

    if args.summary:
        s = summarize(modules, _load_results(results_path), equivalent)
        _print_summary(s)
        out.write_text(json.dumps({"meta": _meta(modules), **s}, indent=1))
        return 0

    cmap = ensure_map(state, args.remap and shard is None, args.tests or TEST_DIRS, args.jobs)
    readers = Readers()
    results = _load_results(results_path)
    plan: list[tuple[str, bytes, Mutant, list[str]]] = []
    for module in modules:
        source = (SRC / module).read_bytes()
        for m in mutants_of(module, source):
            if args.operator and m.operator not in args.operator:
                continue
            plan.append((module, source, m, covering_tests(m, cmap, readers, set())))
    if args.list:
        for module, _, m, tests in plan:
            _say(f"{module}:{m.line} {m.operator:16} {m.original} -> {m.replacement}   [{len(tests)} tests]")
        _say(f"{len(plan)} mutants")
        return 0

    commit = _git_commit()
    excluded: set[str] = set()

    def todo(module: str, source: bytes, m: Mutant) -> bool:
        r = results.get((_sha(source), m.key))
        if r is None or r.get("killer") in excluded or r["status"] == "error":
            return True
        if args.retest_survivors and r["status"] in ("survived", "no-tests"):
            return True
        return any(part in m.key for part in args.retest)

    seconds = dict(zip(cmap.tests, cmap.seconds, strict=True))
    if args.jobs > 1 and shard is None:
        code = _run_workers(args, state)
        if code:
            return code
        results = _load_results(results_path)
    sandbox = Sandbox(state, f"last-mutant-{shard[0]}.log" if shard else "last-mutant.log")
    tag = f"w{shard[0]} " if shard else ""
    done = 0
    try:
        with results_path.open("a") as sink:
            while True:
                pending = [p for p in plan if todo(*p[:3])]
                if shard is not None:
                    pending = pending[shard[0]::shard[1]]
                others = " or are another worker's" if shard else ""
                _say(f"{tag}{len(plan)} mutants in {len(modules)} modules; {len(plan) - len(pending)} have a result"
                     f"{others}, {len(pending)} to run")
                t_start = time.monotonic()
                for n, (module, source, m, tests) in enumerate(pending, 1):
                    if args.max and done >= args.max:
                        break
                    tests = [t for t in tests if t not in excluded]
                    if args.max_tests:
                        tests = tests[:args.max_tests]
                    if not tests:
                        o = Outcome("no-tests", None, None, 0, 0.0)
                    else:
                        timeout = 60 + args.timeout_factor * sum(seconds.get(t, 1.0) for t in tests)
                        o = sandbox.run(m, tests, timeout)
                    rec: dict[str, Any] = {"key": m.key, "module": module, "src_sha": _sha(source), "line": m.line,
                           "operator": m.operator, "status": o.status, "tests": len(tests), "ran": o.ran,
                           "killer": o.killer, "message": o.message, "seconds": round(o.seconds, 2),
                           "commit": commit, "when": dt.datetime.now().isoformat(timespec="seconds")}
                    if not args.max_tests:
                        sink.write(json.dumps(rec) + "\n")
                        sink.flush()
                    results[(rec["src_sha"], m.key)] = rec
                    done += 1
                    eta = (time.monotonic() - t_start) / n * (len(pending) - n)
                    killer = f" by {o.killer.split('::')[-1][:60]}" if o.killer else ""
                    _say(f"{tag}[{n}/{len(pending)}] {o.status:8} {module}:{m.line} {m.operator} "
                         f"{m.original[:50]} -> {m.replacement[:40]} ({o.seconds:.1f} s, {o.ran}/{len(tests)} "
                         f"tests{killer}) eta {eta / 60:.0f} min")
                if shard is not None:
                    return 0  # the parent confirms the killers of every worker, then summarizes
                bad = _confirm_killers(sandbox, results, modules, state)
                if not bad - excluded or (args.max and done >= args.max):
                    break
                excluded |= bad
    except KeyboardInterrupt:
        _say(f"\ninterrupted after {done} mutants; their results are kept in {results_path}: the same command "
             "resumes with the rest")
        return 130
    finally:
        sandbox.close()
    s = summarize(modules, results, equivalent)
    _print_summary(s)
    out.write_text(json.dumps({"meta": _meta(modules), **s}, indent=1))
    _say(f"\nsummary: {out}")
    return 0


def _parse_shard(ap: argparse.ArgumentParser, text: str | None) -> tuple[int, int] | None:
    if text is None:
        return None
    k, _, n = text.partition("/")
    if not (k.isdigit() and n.isdigit() and 0 <= int(k) < int(n)):
        ap.error(f"--shard takes K/N with 0 <= K < N (got {text!r})")
    return int(k), int(n)


def _run_workers(args: argparse.Namespace, state: Path) -> int:
    """--jobs N: N copies of this command, each running every Nth pending mutant (--shard K/N) in its own copy of
    src/ and appending to the one results file (one line per write, so lines never interleave). Returns 0 when
    all finished; an interruption stops them all, their results kept."""
    base = [sys.executable, str(Path(__file__).resolve()), "--state", str(state), "--jobs", "1",
            "--timeout-factor", str(args.timeout_factor)]
    for flag, values in (("-m", args.module), ("--operator", args.operator), ("--retest", args.retest),
                         ("--tests", args.tests)):
        for v in values:
            base += [flag, v]
    if args.retest_survivors:
        base.append("--retest-survivors")
    procs = [subprocess.Popen([*base, "--shard", f"{k}/{args.jobs}"], cwd=ROOT) for k in range(args.jobs)]
    try:
        codes = [p.wait() for p in procs]
    except KeyboardInterrupt:
        for p in procs:
            if p.poll() is None:
                p.terminate()
        for p in procs:
            p.wait()
        _say(f"\ninterrupted; the results of every worker are kept in {state / 'results.jsonl'}: the same command "
             "resumes with the rest")
        return 130
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    failed = [(k, c) for k, c in enumerate(codes) if c]
    if failed:
        _say(f"workers ended badly (worker, exit code): {failed}; their logs are above, their results kept")
        return 1
    return 0


def _interrupt(signum: int, frame: object) -> None:
    # once: a second signal (Ctrl-C reaches the workers and the parent, which then stops them too) must not
    # break the cleanup the first one started
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    raise KeyboardInterrupt


def _confirm_killers(sandbox: Sandbox, results: dict[tuple[str, str], dict[str, Any]], modules: Sequence[str],
                     state: Path) -> set[str]:
    """The control: every test that killed a mutant must pass on the unmutated copy. One that fails there (a
    test broken or flaky on this host) killed nothing: it is returned, and the mutants it killed are run again
    without it. A result is kept while the test's file and src/ are unchanged (STATE/controls.json)."""
    path = state / "controls.json"
    tree = _sha(json.dumps(_src_files(), sort_keys=True).encode())
    files = _test_files()
    known: dict[str, Any] = json.loads(path.read_text()) if path.exists() else {}
    if known.get("src") != tree:
        known = {"src": tree, "tests": {}}
    shas = {module: _sha((SRC / module).read_bytes()) for module in modules}
    killers = {r["killer"] for (sha, _), r in results.items()
               if r["status"] == "killed" and r["killer"] and shas.get(r["module"]) == sha}
    stale = sorted(k for k in killers if known["tests"].get(k, {}).get("file") != files.get(_test_file_of(k)))
    if stale:
        _say(f"control: {len(stale)} tests that killed mutants, on the unmutated copy")
        o = sandbox.run(None, stale, 600 + 60 * len(stale), stop_at_first=False)
        if o.status == "timeout":
            raise SystemExit(f"the control run did not finish: {o.message}; see {sandbox.log}")
        got = json.loads((sandbox.dir / "result.json").read_text()) if (sandbox.dir / "result.json").exists() else None
        if got is None or (o.status == "killed" and not got["failed"]):
            raise SystemExit(f"the control run failed before its tests ran ({o.message}); see {sandbox.log}")
        failed = {f for f, _ in got["failed"]}
        for k in stale:
            known["tests"][k] = {"file": files.get(_test_file_of(k)), "passed": k not in failed}
        path.write_text(json.dumps(known, indent=1))
    bad = {k for k in killers if not known["tests"].get(k, {}).get("passed", True)}
    if bad:
        _say(f"control: {len(bad)} tests fail without any mutant; the mutants they killed run again without "
             f"them: {sorted(bad)}")
    return bad


def _meta(modules: Sequence[str]) -> dict[str, Any]:
    return {"date": dt.date.today().isoformat(), "commit": _git_commit(), "modules": list(modules),
            "host": f"{platform.node()} ({os.cpu_count()} cores)", "load_avg": [round(x, 2) for x in os.getloadavg()],
            "python": platform.python_version(),
            "command": " ".join([Path(sys.argv[0]).as_posix(), *sys.argv[1:]])}


if __name__ == "__main__":
    sys.exit(main())
