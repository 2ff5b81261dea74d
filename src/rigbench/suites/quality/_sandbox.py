"""Run a model's Python function against test cases in a separate, limited process.

Limits: wall-clock timeout (the process group is killed), CPU seconds, address space and file
size via `resource` rlimits, a fresh temporary working directory, `-I` isolated mode (no user
site, no PYTHON* env, no cwd on sys.path) and an empty environment. Network: the harness first
tries an unprivileged user+network namespace (Linux `unshare(CLONE_NEWUSER|CLONE_NEWNET)`), and
where that is refused it replaces `socket.socket` with one that raises; the result says which.
This contains honest mistakes (infinite loops, memory blow-ups, stray writes); it is not a
security boundary against hostile code.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import resource
import signal
import sys
import tempfile
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

__all__ = ["CaseOutcome", "SandboxResult", "run_function_tests"]

_HARNESS = r'''
import ctypes, json, sys
net = "none"
try:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(0x10000000 | 0x40000000) == 0:  # CLONE_NEWUSER | CLONE_NEWNET
        net = "namespace"
except Exception:
    pass
if net != "namespace":
    import socket
    class _NoNet(socket.socket):
        def __init__(self, *a, **k):
            raise OSError("network disabled in the rigbench sandbox")
    socket.socket = _NoNet
    net = "socket_patched"
spec = json.load(open("spec.json", encoding="utf-8"))
out = {"network": net, "load_error": None, "cases": []}
ns = {"__name__": "candidate"}
try:
    exec(compile(open("candidate.py", encoding="utf-8").read(), "candidate.py", "exec"), ns)
    fn = ns[spec["function"]]
except BaseException as e:
    out["load_error"] = f"{type(e).__name__}: {e}"[:500]
    print(json.dumps(out)); sys.exit(0)
for case in spec["cases"]:
    try:
        got = fn(*case["args"])
        if isinstance(got, tuple):
            got = list(got)
        out["cases"].append({"passed": got == case["expected"], "got": repr(got)[:200], "error": None})
    except BaseException as e:
        out["cases"].append({"passed": False, "got": None, "error": f"{type(e).__name__}: {e}"[:300]})
print(json.dumps(out))
'''


class CaseOutcome(BaseModel):
    model_config = ConfigDict(frozen=True)

    passed: bool
    got: str | None
    error: str | None


class SandboxResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    passed: bool
    cases: list[CaseOutcome]
    error: str | None  # load error, timeout, crash: what stopped the run
    network: str  # "namespace" | "socket_patched" | "unknown"
    wall_s: float


def _limits(cpu_s: int, memory_bytes: int) -> None:
    os.setsid()
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s))
    resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, 1 << 20))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


async def run_function_tests(code: str, function: str, cases: list[dict[str, Any]], *,
                             timeout_s: float = 10.0, cpu_s: int = 5,
                             memory_bytes: int = 512 * 1024 * 1024) -> SandboxResult:
    """Define `code`, call `function(*case["args"])` for each case, compare with `expected`."""
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    with tempfile.TemporaryDirectory(prefix="rigbench-sandbox-") as tmp:
        d = Path(tmp)
        (d / "candidate.py").write_text(code, encoding="utf-8")
        (d / "spec.json").write_text(json.dumps({"function": function, "cases": cases}), encoding="utf-8")
        (d / "harness.py").write_text(_HARNESS, encoding="utf-8")
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-I", "harness.py", cwd=d, env={"PATH": "/usr/bin:/bin"},
            stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, preexec_fn=lambda: _limits(cpu_s, memory_bytes),
        )
        try:
            out, err = await asyncio.wait_for(proc.communicate(), timeout_s)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            await proc.wait()
            return SandboxResult(passed=False, cases=[], error=f"timed out after {timeout_s:g} s",
                                 network="unknown", wall_s=loop.time() - t0)
    wall = loop.time() - t0
    try:
        data = json.loads(out.decode(errors="replace").strip().splitlines()[-1])
    except (ValueError, IndexError):
        why = f"exit status {proc.returncode}"
        if proc.returncode is not None and proc.returncode < 0:
            why += f" (signal {-proc.returncode}: CPU or memory limit?)"
        tail = err.decode(errors="replace").strip()[-300:]
        return SandboxResult(passed=False, cases=[], error=f"harness crashed, {why}: {tail}",
                             network="unknown", wall_s=wall)
    outcomes = [CaseOutcome(**c) for c in data["cases"]]
    return SandboxResult(
        passed=data["load_error"] is None and bool(outcomes) and all(c.passed for c in outcomes),
        cases=outcomes, error=data["load_error"], network=data["network"], wall_s=wall,
    )
