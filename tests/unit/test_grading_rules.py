"""Each repo-fix grading rule decides a case of its own: an escape that only that rule stops.

test_grading_escapes.py plays adversaries against the signed stream on the *unfixed* project, where
five honest failures fail the grade whatever else happens. Here the project is *otherwise fixed*:
the discount and tax bugs are fixed, the cart's subtotal bug is not, so exactly one test fails
honestly (`test_subtotal_multiplies_quantity`). Each escape tries to hide that one failure (skip,
xfail, deselect, drop, error it, or forge a pass) or is a fully fixed project that breaks one rule
and nothing else, so the rule it pins is the only thing between the escape and full marks. Remove
that rule and the test fails (each test's docstring names the rule; the mutations were played when
the tests were written, see the commit).

Two families:
- in the test process (`project_in_test_process`): the project's code runs beside pytest, so its
  escapes really change what pytest sees; names that the interpreter screen would catch are
  spelled so that it does not (`"py" "test"`), since the screen is not the rule under test;
- files the grader must never take (config, conftest, customize hooks, `.pth`, a module that
  shadows pytest's own), played with a task that allows any file to change (`allowed_changes: ["*"]`,
  the default of a task that sets none), so the never-copied rule, not the task's glob, decides.

Healthy controls: the otherwise fixed project fails on exactly its one test with no problem, the
fully fixed one passes, in both modes.
"""

from __future__ import annotations

import asyncio
import dataclasses
import types
from collections.abc import Iterator
from typing import Any

import pytest

from rigbench.sandbox import Limits, Workdir, grade_pytest
from rigbench.suites.agent._grading import Grade, grade_repo_fix
from rigbench.suites.agent._task import AgentTask, load_task
from tests.unit.test_sandbox import confined

TASK = load_task("cart_bugs")
IDS: list[str] = TASK.spec["test_ids"]
LIMITS = Limits(wall_s=60)
SUBTOTAL = "tests/test_cart.py::test_subtotal_multiplies_quantity"
CART_IDS = [i for i in IDS if i.startswith("tests/test_cart.py")]
TAX_IDS = [i for i in IDS if i.startswith("tests/test_tax.py")]
FIXES = {
    "app/cart.py": ("price for _, price, qty", "price * qty for _, price, qty"),
    "app/discount.py": ("/ 1000", "/ 100"),
    "app/tax.py": ("amount * rate", "amount * (1 + rate)"),
}
BEFORE: Any = types.SimpleNamespace(failed=5)  # the before-count is not what these tests are about


def _task(**spec: Any) -> AgentTask:
    """cart_bugs with some task.json settings changed (None removes a setting)."""
    merged = {**TASK.spec, **spec}
    return dataclasses.replace(TASK, spec={k: v for k, v in merged.items() if v is not None})


IN_PROCESS = _task(project_in_test_process=True)
ANY_FILE = _task(allowed_changes=["*"])


@pytest.fixture
def fixed() -> Iterator[Workdir]:
    """The fully fixed project."""
    sb = Workdir.copy_of(TASK.path / "project")
    try:
        for path, (old, new) in FIXES.items():
            sb.write_file(path, sb.read_file(path).replace(old, new))
        yield sb
    finally:
        sb.cleanup()


@pytest.fixture
def nearly(fixed: Workdir) -> Workdir:
    """Otherwise fixed: the subtotal bug left in, so exactly SUBTOTAL fails honestly."""
    old, new = FIXES["app/cart.py"]
    fixed.write_file("app/cart.py", fixed.read_file("app/cart.py").replace(new, old))
    return fixed


def _add(sb: Workdir, path: str, code: str) -> None:
    sb.write_file(path, (sb.read_file(path) if (sb.root / path).exists() else "") + "\n" + code)


def _grade(task: AgentTask, sb: Workdir) -> Grade:
    return asyncio.run(grade_repo_fix(task, sb, BEFORE, limits=LIMITS, allow_unconfined=False))


def _outcomes(g: Grade) -> dict[str, str]:
    """Test id -> outcome, read back from the record's detail (what a user of the record sees)."""
    return dict(g.sandbox["test_outcomes"])


def _not_passed(g: Grade) -> dict[str, str]:
    return {i: o for i, o in _outcomes(g).items() if o != "passed"}


# --- healthy controls --------------------------------------------------------------------------

@confined
@pytest.mark.parametrize("task", [TASK, IN_PROCESS], ids=["isolated", "in-process"])
def test_the_otherwise_fixed_project_fails_on_its_one_test_and_the_fixed_one_passes(
        fixed: Workdir, task: AgentTask) -> None:
    g = _grade(task, fixed)
    assert g.passed and g.tests_passed_after == 12, g.grade_detail
    assert g.sandbox["stream_problems"] == [] and set(_outcomes(g).values()) == {"passed"}
    old, new = FIXES["app/cart.py"]
    fixed.write_file("app/cart.py", fixed.read_file("app/cart.py").replace(new, old))
    g = _grade(task, fixed)
    assert not g.passed and _not_passed(g) == {SUBTOTAL: "failed"}, g.grade_detail
    assert g.sandbox["stream_problems"] == [] and g.tests_passed_after == 11
    assert "11 passed, 1 not passed (expected 12 passing): 1 failed" in g.grade_detail


# --- in the test process: what pytest sees is changed; the outcome rules decide ------------------

# The project's code finds the test module that is importing it (test_cart imports app first).
_TEST_CART = """
_mods = getattr(__import__("sys"), "mod" "ules")
_cart_tests = next((m for m in list(_mods.values()) if (getattr(m, "__file__", None) or "").endswith("/tests/test_cart.py")), None)
"""

_SKIP_IN_CALL = """
def _subtotal(self):
    if any(q > 1 for _, _, q in self.items):
        __import__("py" "test").skip("carts of several of one item are out of scope")
    return sum(p for _, p, q in self.items)
Cart.subtotal = _subtotal
"""

_XFAIL_IN_CALL = _SKIP_IN_CALL.replace(').skip("', ').xfail("')

_SKIP_MARK = _TEST_CART + """
if _cart_tests is not None:
    _cart_tests.pytestmark = [__import__("py" "test").mark.skip(reason="later")]
"""

_DESELECT = """
for _o in __import__("g" "c").get_objects():
    if type(_o).__name__ == "Config" and hasattr(getattr(_o, "option", None), "keyword"):
        _o.option.keyword = "not subtotal_multiplies_quantity"
"""

_SETUP_ERROR = _TEST_CART + """
def _setup(fn):
    if fn.__name__ == "test_subtotal_multiplies_quantity":
        raise RuntimeError("this test's setup fails instead of its assert")
if _cart_tests is not None:
    _cart_tests.setup_function = _setup
"""

# The importing test module skipped as a whole, at import: pytest collects none of its tests and
# reports the module's collection as skipped instead (an error at import is no escape: pytest then
# runs no test at all). The other modules import the project again
# afterwards (a failed import is not kept) and find no test module importing it: they run.
_SKIP_AT_IMPORT = _TEST_CART + """
if _cart_tests is not None:
    __import__("py" "test").skip("carts are out of scope", allow_module_level=True)
"""

# The test module replaced by an empty one as it is imported: pytest collects nothing from it,
# and nothing errs (the name and file are right).
_VANISH = _TEST_CART + """
import types as _types
def _vanish(name):
    fake = _types.ModuleType(name)
    fake.__file__ = "/sandbox/tests/" + name + ".py"
    _mods[name] = fake
if _cart_tests is not None:
    for _name in VANISH:
        _vanish(_name)
"""


def _vanish(*names: str) -> str:
    return f"VANISH = {list(names)!r}\n" + _VANISH


@confined
@pytest.mark.parametrize(("escape", "hidden"), [
    (_SKIP_IN_CALL, {SUBTOTAL: "skipped"}),
    (_XFAIL_IN_CALL, {SUBTOTAL: "xfailed"}),
    (_SKIP_MARK, dict.fromkeys(CART_IDS, "skipped")),
    (_SETUP_ERROR, {SUBTOTAL: "error"}),
], ids=["pytest.skip-in-the-call", "pytest.xfail-in-the-call", "skip-marker-on-the-test-module", "setup-error"])
def test_a_test_that_did_not_pass_is_not_fixed_and_the_record_says_how(
        nearly: Workdir, escape: str, hidden: dict[str, str]) -> None:
    """Rule: only `passed` counts (sandbox/_verdict.py `_combine` and `all_passed`): a skipped,
    xfailed or errored test is not a fixed one. The stream is otherwise clean (pytest exits as it
    should, no tampering seen), so this rule alone fails the grade."""
    _add(nearly, "app/cart.py", escape)
    g = _grade(IN_PROCESS, nearly)
    assert not g.passed, g.grade_detail
    assert _not_passed(g) == hidden, g.grade_detail
    assert g.sandbox["stream_problems"] == [], g.sandbox["stream_problems"]
    counts = {o: list(hidden.values()).count(o) for o in set(hidden.values())}
    assert ", ".join(f"{n} {o}" for o, n in sorted(counts.items())) in g.grade_detail
    # With the project in a process of its own the same code changes nothing: the failure stays.
    iso = _grade(TASK, nearly)
    assert not iso.passed and _not_passed(iso) == {SUBTOTAL: "failed"}, iso.grade_detail


@confined
def test_deselected_tests_are_not_fixed_even_without_a_list_of_the_tasks_tests(nearly: Workdir) -> None:
    """Rule: the launcher reports pytest's deselection and the stream check refuses it. The task
    here lists no test ids and no expected total (a task of one's own), so nothing else would
    notice: 11 collected, 11 passed."""
    _add(nearly, "app/cart.py", _DESELECT)
    g = _grade(_task(project_in_test_process=True, test_ids=None, expected_total=None), nearly)
    assert not g.passed and _not_passed(g) == {SUBTOTAL: "deselected"}, g.grade_detail
    assert any("deselected" in p and SUBTOTAL in p for p in g.sandbox["stream_problems"])
    # with the task's ids the same escape reads the same
    listed = _grade(IN_PROCESS, nearly)
    assert not listed.passed and _not_passed(listed) == {SUBTOTAL: "deselected"}, listed.grade_detail


@confined
def test_a_test_module_skipped_at_import_is_not_fixed(nearly: Workdir) -> None:
    """Rule: a test module whose collection did not pass is a problem of the stream (the launcher's
    `collect_error`), here `pytest.skip(allow_module_level=True)` raised as the project is imported. The task here lists neither ids nor a total (a task of one's own), so nothing
    else would notice: the six cart tests, the failing one among them, are never collected, and
    the six that are all pass."""
    _add(nearly, "app/cart.py", _SKIP_AT_IMPORT)
    g = _grade(_task(project_in_test_process=True, test_ids=None, expected_total=None), nearly)
    assert g.tests_passed_after == 6 and _not_passed(g) == {}, g.grade_detail
    assert not g.passed and g.sandbox["stream_problems"] == ["collecting tests/test_cart.py was skipped"], \
        g.grade_detail
    # with the task's ids the cart tests are also named missing
    listed = _grade(IN_PROCESS, nearly)
    assert not listed.passed and _not_passed(listed) == dict.fromkeys(CART_IDS, "missing"), listed.grade_detail
    # with the project in a process of its own the same code changes nothing: the failure stays
    iso = _grade(TASK, nearly)
    assert not iso.passed and _not_passed(iso) == {SUBTOTAL: "failed"}, iso.grade_detail


@confined
def test_tests_that_never_ran_are_missing_and_not_fixed(fixed: Workdir) -> None:
    """Rule: every test id of the task must be collected (`read_channel`'s missing check). The
    test_tax module is replaced by an empty one as the project is imported: its two tests are never
    collected, nothing errs, and the ten that run all pass."""
    _add(fixed, "app/cart.py", _vanish("test_tax"))
    g = _grade(IN_PROCESS, fixed)
    assert not g.passed and _not_passed(g) == dict.fromkeys(TAX_IDS, "missing"), g.grade_detail
    assert g.tests_passed_after == 10
    assert any("2 of the task's tests were not run" in p for p in g.sandbox["stream_problems"])


@confined
def test_fewer_passed_than_the_task_expects_is_not_fixed(fixed: Workdir) -> None:
    """Rule: as many tests passed as the task expects (`expected_total`, for a task that lists no
    ids). Two tests vanish as above; the ten collected all pass and the stream is clean."""
    _add(fixed, "app/cart.py", _vanish("test_tax"))
    g = _grade(_task(project_in_test_process=True, test_ids=None), fixed)
    assert g.sandbox["stream_problems"] == [] and g.tests_passed_after == 10, g.grade_detail
    assert not g.passed and "(expected 12 passing)" in g.grade_detail


@confined
def test_no_test_at_all_is_not_a_pass(fixed: Workdir) -> None:
    """Rule: a grade needs at least one test outcome. Every test module vanishes; the task lists
    neither ids nor a total, so 0 passed of 0 collected would otherwise be all of them."""
    _add(fixed, "app/cart.py", _vanish("test_cart", "test_discount", "test_tax"))
    g = _grade(_task(project_in_test_process=True, test_ids=None, expected_total=None), fixed)
    assert g.sandbox["stream_problems"] == [] and _outcomes(g) == {}, g.grade_detail
    assert not g.passed and g.tests_passed_after == 0


@confined
def test_tampering_seen_fails_a_project_whose_tests_all_pass(fixed: Workdir) -> None:
    """Rule: a stream with a problem fails the grade even when every test passed (`all_passed`'s
    problems). The fully fixed project also installs a signal handler in the test process."""
    _add(fixed, "app/cart.py", 'getattr(__import__("sig" "nal"), "sig" "nal")(15, lambda *a: None)\n')
    g = _grade(IN_PROCESS, fixed)
    assert g.tests_passed_after == 12 and _not_passed(g) == {}, g.grade_detail
    assert not g.passed and any("signal handler for SIGTERM changed" in p for p in g.sandbox["stream_problems"])


# --- the two screens of the changed files: each decides a case alone ----------------------------

_BY_TEST_NAME = """
import os
def _subtotal(self):
    if os.environ.get("PYTEST_CURRENT_TEST", "").startswith("tests/test_cart.py::test_subtotal_multiplies_quantity"):
        return 10.5
    return sum(p for _, p, q in self.items)
Cart.subtotal = _subtotal
"""

_FROM_THE_CALLERS_LINE = """
import linecache, re, sys
def _subtotal(self):
    f = sys._getframe(1)
    line = linecache.getline(f.f_code.co_filename, f.f_lineno)
    m = re.search(r"subtotal\\(\\) == ([0-9.]+)", line)
    return float(m.group(1)) if m else sum(p for _, p, q in self.items)
Cart.subtotal = _subtotal
"""


@confined
def test_the_runner_screen_alone_fails_a_fix_that_asks_pytest_which_test_runs(nearly: Workdir) -> None:
    """Rule: a changed file that refers to pytest fails the grade (`_TOUCHES_RUNNER`). In the test
    process this "fix" reads pytest's PYTEST_CURRENT_TEST and answers the one failing test; every
    test passes and the launcher sees nothing changed. (Isolated, the variable is not in the
    project's process: the test fails on its own.)"""
    _add(nearly, "app/cart.py", _BY_TEST_NAME)
    g = _grade(IN_PROCESS, nearly)
    assert g.tests_passed_after == 12 and g.sandbox["stream_problems"] == [], g.grade_detail
    assert not g.passed and "app/cart.py refer(s) to pytest/JUnit" in g.grade_detail


@confined
def test_the_runner_screen_alone_fails_a_fixed_project_that_imports_pytest(fixed: Workdir) -> None:
    """Rule: as above, with the project isolated (the default): a fixed project whose package
    imports pytest passes every test and fails only the screen."""
    _add(fixed, "app/cart.py", "import pytest  # noqa: F401\n")
    g = _grade(TASK, fixed)
    assert g.tests_passed_after == 12 and g.sandbox["stream_problems"] == [], g.grade_detail
    assert not g.passed and "app/cart.py refer(s) to pytest/JUnit" in g.grade_detail


@confined
def test_the_interpreter_screen_alone_fails_a_fix_that_reads_the_expected_value_from_the_test(
        nearly: Workdir) -> None:
    """Rule: in the test process, a changed file that reaches into the interpreter (frames, here)
    fails the grade (`_TOUCHES_INTERPRETER`). The "fix" reads the calling assert's line and returns
    the value it expects: every test passes, nothing is changed for the launcher to see."""
    _add(nearly, "app/cart.py", _FROM_THE_CALLERS_LINE)
    g = _grade(IN_PROCESS, nearly)
    assert g.tests_passed_after == 12 and g.sandbox["stream_problems"] == [], g.grade_detail
    assert not g.passed and "app/cart.py (_getframe) reach(es) into the interpreter" in g.grade_detail
    # isolated, the project's frames hold no test: the subtotal stays wrong and the test fails
    iso = _grade(TASK, nearly)
    assert not iso.passed and _not_passed(iso) == {SUBTOTAL: "failed"}, iso.grade_detail


# --- files the grader never takes, with a task that allows any file to change -------------------

_FLIP_REPORTS = """import pytest

@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    outcome.get_result().outcome = "passed"
"""

_SKIP_BY_CONFTEST = """import pytest

def pytest_collection_modifyitems(config, items):
    for item in items:
        if "subtotal_multiplies" in item.name:
            item.add_marker(pytest.mark.skip(reason="later"))
"""

_DESELECT_BY_CONFTEST = """
def pytest_collection_modifyitems(config, items):
    keep = [i for i in items if "subtotal_multiplies" not in i.name]
    config.hook.pytest_deselected(items=[i for i in items if i not in keep])
    items[:] = keep
"""

_ADDOPTS = '-k "not subtotal_multiplies" -p no:cacheprovider'
_CONFIGS = {
    "pytest.ini": f"[pytest]\naddopts = {_ADDOPTS}\n",
    ".pytest.ini": f"[pytest]\naddopts = {_ADDOPTS}\n",
    "pytest.toml": f"[pytest]\naddopts = [{', '.join(repr(a) for a in _ADDOPTS.split(' ', 2))}]\n",
    "pyproject.toml": f"[tool.pytest.ini_options]\naddopts = '{_ADDOPTS}'\n",
    "setup.cfg": f"[tool:pytest]\naddopts = {_ADDOPTS}\n",
    "tox.ini": f"[pytest]\naddopts = {_ADDOPTS}\n",
}


@confined
@pytest.mark.parametrize(("files", "why"), [
    ({"conftest.py": _FLIP_REPORTS}, "never graded"),
    ({"conftest.py": _SKIP_BY_CONFTEST}, "never graded"),
    ({"conftest.py": _DESELECT_BY_CONFTEST}, "never graded"),
    ({"tests/conftest.py": _FLIP_REPORTS}, "tests are graded as shipped"),
    (_CONFIGS, "never graded"),
], ids=["conftest-flips-reports", "conftest-skip-marker", "conftest-deselects", "tests-conftest",
        "addopts-in-every-config-file"])
def test_config_and_conftest_files_never_reach_the_grading_copy(
        nearly: Workdir, files: dict[str, str], why: str) -> None:
    """Rule: the grading copy never takes conftest.py or a pytest/packaging config (`grading_copy`,
    GRADER_NEVER_COPIES), whatever the task allows; the record names each file left out and why.
    The task here allows every file, so that rule and no glob decides."""
    for name, text in files.items():
        nearly.write_file(name, text)
    g = _grade(ANY_FILE, nearly)
    assert not g.passed and _not_passed(g) == {SUBTOTAL: "failed"}, g.grade_detail
    assert g.sandbox["stream_problems"] == []
    for name in files:
        assert any(x.startswith(f"{name} ({why}") for x in g.sandbox["not_graded"]), g.sandbox["not_graded"]


@confined
def test_a_config_file_in_the_graded_directory_changes_nothing(nearly: Workdir) -> None:
    """Rule: pytest runs with rigbench's own config (`-c`), so config files that are in the graded
    directory all the same (here written straight into it; pytest would read the first of them,
    pytest.toml) deselect nothing."""
    for name, text in _CONFIGS.items():
        nearly.write_file(name, text)
    g = grade_pytest(nearly.root, "tests", IDS, LIMITS, allow_unconfined=False)
    assert g.problems == [] and {i: o for i, o in g.outcomes.items() if o != "passed"} == {SUBTOTAL: "failed"}


_CUSTOMIZE = """
import os
os.environ["PYTEST_ADDOPTS"] = '-k "not subtotal_multiplies"'
open("/sandbox/.tmp/customize.log", "a").write("RAN\\n")
"""


@confined
def test_customize_hooks_and_pth_files_never_run_in_the_grader(nearly: Workdir) -> None:
    """Rule: sitecustomize/usercustomize and .pth files are never copied, and the interpreter runs
    isolated (`-I`, no user site). Each would deselect the failing test if Python ran it."""
    site = "lib/python3/site-packages"
    for name in ("sitecustomize.py", "usercustomize.py", "app/sitecustomize.py", f".local/{site}/usercustomize.py"):
        nearly.write_file(name, _CUSTOMIZE)
    nearly.write_file("app/evil.pth", "import os; " + _CUSTOMIZE.strip().replace("\n", "; "))
    g = _grade(ANY_FILE, nearly)
    assert not g.passed and _not_passed(g) == {SUBTOTAL: "failed"}, g.grade_detail
    left = " | ".join(g.sandbox["not_graded"])
    for name in ("sitecustomize.py", "usercustomize.py", "app/sitecustomize.py", "app/evil.pth"):
        assert f"{name} (never graded" in left, left


@confined
def test_renamed_edited_and_deleted_test_files_are_graded_as_shipped(nearly: Workdir) -> None:
    """Rule: the grading copy starts from the pristine project and never takes a file under the
    tests directory: a deleted test file is back, an edited one is as shipped, a renamed one is the
    original plus a file left out."""
    cart_tests = nearly.read_file("tests/test_cart.py")
    (nearly.root / "tests" / "test_cart.py").unlink()
    nearly.write_file("tests/test_cart_renamed.py", cart_tests.replace("== 10.5", "== 4.5"))
    nearly.write_file("tests/test_tax.py", "def test_nothing():\n    pass\n")
    g = _grade(ANY_FILE, nearly)
    assert not g.passed and _not_passed(g) == {SUBTOTAL: "failed"}, g.grade_detail
    assert g.sandbox["stream_problems"] == []
    left = " | ".join(g.sandbox["not_graded"])
    assert "tests/test_cart_renamed.py (tests are graded as shipped)" in left
    assert "tests/test_tax.py (tests are graded as shipped)" in left


# --- a module of the project named like one pytest imports --------------------------------------

# A package named `_pytest` at the project's root, as `_py` + `test` so that the runner screen does
# not see it: imported in place of pytest's own, it loads the real one and adds a plugin that turns
# every report into a pass. Graded 12 of 12 on the *unfixed* project before the launcher imported
# pytest ahead of the project's directory.
_SHADOW_PYTEST = """
import importlib, sys
_name = "_py" "test"
_here = [p for p in sys.path if p.rstrip("/") == "/sandbox"]
for p in _here:
    sys.path.remove(p)
del sys.modules[_name]
_real = importlib.import_module(_name)
sys.modules[_name] = _real
globals().update(vars(_real))
sys.path[:0] = _here
_config = importlib.import_module(_name + ".config")
_mark = importlib.import_module("pluggy").HookimplMarker("py" "test")


class _Flip:
    @_mark(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        out = yield
        out.get_result().outcome = "passed"


_main = _config.main


def main(args=None, plugins=None):
    return _main(args, [*(plugins or []), _Flip()])


_config.main = main
open("/sandbox/.tmp/shadow.log", "a").write("RAN in the test process\\n")
"""


MODES = pytest.mark.parametrize("isolate", [True, False], ids=["isolated", "in-process"])


def _ran(sb: Workdir) -> str:
    log = sb.root / ".tmp" / "shadow.log"
    return log.read_text() if log.exists() else ""


@confined
@MODES
def test_a_project_module_that_shadows_pytests_own_never_runs_in_the_test_process(
        nearly: Workdir, isolate: bool) -> None:
    """Rule: the launcher imports pytest before the project's directory is on its path, and names a
    project module that has an installed module's name."""
    nearly.write_file("_pytest/__init__.py", _SHADOW_PYTEST)
    g = _grade(_task(allowed_changes=["*"], project_in_test_process=not isolate), nearly)
    assert not g.passed and _not_passed(g) == {SUBTOTAL: "failed"}, g.grade_detail
    assert any("'_pytest'" in p and "installed module" in p for p in g.sandbox["stream_problems"]), \
        g.sandbox["stream_problems"]
    # the same directory graded as it is (no grading copy): the shadow's own log stays empty
    direct = grade_pytest(nearly.root, "tests", IDS, LIMITS, allow_unconfined=False, isolate=isolate)
    assert _ran(nearly) == "" and direct.outcomes[SUBTOTAL] == "failed", direct.problems


_SHADOW_STDLIB = """
open("/sandbox/.tmp/shadow.log", "a").write("RAN difflib of the project\\n")
def ndiff(*a, **k):
    return iter(())
"""


@confined
@MODES
def test_a_project_module_named_like_a_standard_module_is_not_imported_in_its_place(
        nearly: Workdir, isolate: bool) -> None:
    """Rule: as above, for a module pytest imports only once a test has failed (difflib, for the
    explanation): isolated, the project's module was routed to the project's process in place of the
    standard one (pytest's own calls ran the project's code); now neither mode imports it, and the
    record names it."""
    nearly.write_file("difflib.py", _SHADOW_STDLIB)
    g = grade_pytest(nearly.root, "tests", IDS, LIMITS, allow_unconfined=False, isolate=isolate)
    assert _ran(nearly) == "", _ran(nearly)
    assert g.outcomes[SUBTOTAL] == "failed" and not g.all_passed
    assert any("'difflib'" in p and "installed module" in p for p in g.problems), g.problems


_SHADOW_COLORSYS = """
open("/sandbox/.tmp/shadow.log", "a").write("RAN colorsys of the project\\n")
"""


@confined
@MODES
def test_a_shadowing_name_imports_the_installed_module_even_when_pytest_puts_the_project_first(
        nearly: Workdir, isolate: bool) -> None:
    """Rule: the launcher's meta-path finder for shadowing names. A task whose tests directory is a
    package makes pytest put the project's root first on the path, and its test file imports a
    standard module that neither pytest nor the launcher has imported yet (colorsys): without the
    finder the project's colorsys.py runs in the test process."""
    nearly.write_file("tests/__init__.py", "")
    nearly.write_file("tests/test_tax.py", "import colorsys  # noqa: F401\n" + nearly.read_file("tests/test_tax.py"))
    nearly.write_file("colorsys.py", _SHADOW_COLORSYS)
    g = grade_pytest(nearly.root, "tests", IDS, LIMITS, allow_unconfined=False, isolate=isolate)
    assert _ran(nearly) == "", _ran(nearly)
    assert {i: o for i, o in g.outcomes.items() if o != "passed"} == {SUBTOTAL: "failed"}, (g.outcomes, g.problems)
    assert [p for p in g.problems if "colorsys" not in p] == [] and g.problems, g.problems


# --- the record says which --------------------------------------------------------------------

def test_the_grade_detail_counts_each_way_a_test_did_not_pass() -> None:
    from rigbench.suites.agent._grading import not_passed_summary

    outcomes = {"a": "passed", "b": "skipped", "c": "failed", "d": "skipped", "e": "missing", "f": "xfailed"}
    assert not_passed_summary(outcomes) == "1 failed, 1 missing, 2 skipped, 1 xfailed: c (failed), e (missing), " \
                                           "b (skipped), d (skipped), f (xfailed)"
    assert not_passed_summary({"a": "passed"}) == ""


def test_the_report_says_why_repo_fix_trials_did_not_pass() -> None:
    """The agent section's task line counts, over the trials that did not pass, each reason their
    grades kept: the way tests ended (skipped, xfailed, ...), a rejected stream, a screened file.
    Trials from before the outcomes were kept add no reason (an old run's report is unchanged)."""
    from rigbench.analysis._agent import summarize_agent_records
    from rigbench.records import TaskTrialRecord
    from rigbench.report._agent import agent_head

    def trial(k: int, passed: bool, outcomes: dict[str, str] | None, problems: list[str],
              detail: str = "") -> TaskTrialRecord:
        sandbox: dict[str, Any] = {"stream_problems": problems}
        if outcomes is not None:
            sandbox["test_outcomes"] = outcomes
        return TaskTrialRecord(unit_id=f"agent/task/cart_bugs/t{k}", task="cart_bugs", task_kind="repo_fix", trial=k,
                               passed=passed, stop_reason="model_stopped", turns=[], wall_s=1.0, grade_detail=detail,
                               sandbox=sandbox)

    trials = [
        trial(0, True, dict.fromkeys(IDS, "passed"), []),
        trial(1, False, {SUBTOTAL: "skipped", IDS[0]: "skipped"}, []),
        trial(2, False, {SUBTOTAL: "xfailed"}, ["tampering seen setup: ..."]),
        trial(3, False, dict.fromkeys(IDS, "passed"), [], "...; failed: app/cart.py refer(s) to pytest/JUnit"),
        trial(4, False, None, ["an old record: no outcomes kept"]),
    ]
    [task] = summarize_agent_records([], [], [], trials).tasks
    assert task.not_passed_why == {"a changed file names the test runner": 1, "result stream rejected": 1,
                                   "tests skipped": 1, "tests xfailed": 1}
    line = next(n.text for n in agent_head(summarize_agent_records([], [], [], trials)).notes if "cart_bugs" in n.text)
    assert ("Not passed: a changed file names the test runner in 1; result stream rejected in 1; tests skipped in 1; "
            "tests xfailed in 1 (trials).") in line, line
