"""Call a model's Python function on test arguments in the sandbox; decide each case outside it.

The expected values never enter the sandbox: the program gets only the arguments, the harness
writes each return value as JSON on a result channel (a file descriptor opened by rigbench, not
stdout), and rigbench compares it with the expected value after a JSON round trip, type-strictly.
So a program cannot pass by printing a forged result line, by returning an object whose `__eq__`
always says True (it is not JSON data), or by returning 1.0 for 1 or True for 1.
"""

from __future__ import annotations

import json
import math
import tempfile
import time
from pathlib import Path
from typing import Any, NamedTuple

from rigbench.sandbox._confine import Confinement
from rigbench.sandbox._run import Limits, run_confined, sandbox_python

__all__ = ["CaseOutcome", "FunctionResult", "run_function_tests", "same_json"]

_HARNESS = r'''
import json, os, sys
chan = os.fdopen(int(sys.argv[sys.argv.index("--channel") + 1]), "w", encoding="utf-8")
def send(obj):
    chan.write(json.dumps(obj) + "\n")
    chan.flush()
spec = json.load(open("spec.json", encoding="utf-8"))
ns = {"__name__": "candidate"}
try:
    exec(compile(open("candidate.py", encoding="utf-8").read(), "candidate.py", "exec"), ns)
    fn = ns[spec["function"]]
except BaseException as e:
    send({"load_error": f"{type(e).__name__}: {e}"[:500]})
    sys.exit(0)
for i, args in enumerate(spec["args"]):
    try:
        got = fn(*args)
        try:
            value = json.dumps(got, allow_nan=False)
        except (TypeError, ValueError) as e:
            send({"case": i, "error": f"return value is not JSON data ({type(got).__name__}): {e}"[:300]})
            continue
        send({"case": i, "value": value})
    except BaseException as e:
        send({"case": i, "error": f"{type(e).__name__}: {e}"[:300]})
'''


class CaseOutcome(NamedTuple):
    passed: bool
    got: str | None  # the returned value as JSON text
    error: str | None


class FunctionResult(NamedTuple):
    passed: bool
    cases: list[CaseOutcome]
    error: str | None  # load error, timeout, crash, tampered channel: what stopped the run
    confinement: Confinement
    wall_s: float


def same_json(got: Any, want: Any) -> bool:
    """Equal as JSON data, types included (1 != 1.0 != True; a list is not a dict)."""
    if type(got) is not type(want):
        return False
    if isinstance(want, list):
        return len(got) == len(want) and all(same_json(g, w) for g, w in zip(got, want, strict=True))
    if isinstance(want, dict):
        return got.keys() == want.keys() and all(same_json(got[k], want[k]) for k in want)
    if isinstance(want, float) and math.isnan(want):
        return False
    return bool(got == want)


def _parse_channel(text: str, n: int) -> tuple[dict[int, dict[str, Any]], str | None]:
    seen: dict[int, dict[str, Any]] = {}
    for line in text.splitlines():
        try:
            msg = json.loads(line)
        except ValueError:
            return seen, f"result channel holds a line that is not JSON: {line[:80]!r}"
        if not isinstance(msg, dict):
            return seen, f"result channel holds {line[:80]!r}, not a result"
        if "load_error" in msg:
            return seen, str(msg["load_error"])
        i = msg.get("case")
        if not isinstance(i, int) or not 0 <= i < n or i in seen:
            return seen, f"result channel tampered with: unexpected or repeated case {i!r}"
        seen[i] = msg
    return seen, None


def run_function_tests(code: str, function: str, cases: list[tuple[list[Any], Any]], *, limits: Limits,
                       allow_unconfined: bool) -> FunctionResult:
    """Define `code`, call `function(*args)` for each (args, expected) case, compare outside the sandbox."""
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="rigbench-code-") as tmp:
        d = Path(tmp)
        (d / "candidate.py").write_text(code, encoding="utf-8")
        (d / "spec.json").write_text(json.dumps({"function": function, "args": [a for a, _ in cases]}))
        (d / "harness.py").write_text(_HARNESS, encoding="utf-8")
        run = run_confined([sandbox_python(False), "-I", "-S", "harness.py"], d, limits,
                           allow_unconfined=allow_unconfined, channel=True)
    wall = time.perf_counter() - t0
    seen, err = _parse_channel(run.channel, len(cases))
    outcomes: list[CaseOutcome] = []
    for i, (_args, expected) in enumerate(cases):
        msg = seen.get(i)
        if msg is None:
            outcomes.append(CaseOutcome(False, None, "no result"))
        elif "value" in msg:
            got_text = str(msg["value"])
            try:
                ok = same_json(json.loads(got_text), json.loads(json.dumps(expected)))
            except ValueError:
                ok = False
            outcomes.append(CaseOutcome(ok, got_text[:200], None))
        else:
            outcomes.append(CaseOutcome(False, None, str(msg.get("error"))[:300]))
    if err is None and run.timed_out:
        err = f"timed out after {limits.wall_s:g} s"
    elif err is None and len(seen) < len(cases):
        why = f"exit status {run.returncode}"
        if run.returncode is not None and run.returncode < 0:
            why += f" (signal {-run.returncode}: CPU, memory or file-size limit?)"
        err = f"the program stopped before all cases ran, {why}: {run.output.strip()[-300:]}"
    passed = err is None and bool(outcomes) and all(c.passed for c in outcomes)
    return FunctionResult(passed, outcomes, err, run.confinement, wall)
