"""Reading an engine's death: which exit codes mean the CPU code crashed, and what avoids it.

A process killed by a signal shows as a negative return code to Python (-11 SIGSEGV, -4 SIGILL,
-7 SIGBUS) and as 128 + signal through a shell or wrapper script (139, 132, 135).
"""

from __future__ import annotations

import re
from typing import Literal

from rigbench.records import Frozen

__all__ = ["CpuCrash", "classify_crash"]

_SIGNALS = {11: "SIGSEGV", 4: "SIGILL", 7: "SIGBUS"}
# Lines of a llama.cpp log that show the AMX or repacked-weight path in use (model loading prints
# the buffer types it allocates, e.g. "AMX model buffer size = ..." / "CPU_REPACK model buffer").
_AMX = re.compile(r"\bAMX\b|ggml_backend_amx|ldtilecfg", re.IGNORECASE)
_REPACK = re.compile(r"CPU_REPACK|repack", re.IGNORECASE)


class CpuCrash(Frozen):
    """An engine that died by a signal that points at its CPU code, with the evidence."""

    kind: Literal["cpu_crash"] = "cpu_crash"
    exit_code: int
    signal: str  # SIGSEGV, SIGILL, SIGBUS
    amx_in_log: bool  # the log shows the AMX path (buffers or a backtrace through it)
    repack_in_log: bool

    @property
    def cause(self) -> str:
        if self.signal == "SIGILL":
            return ("SIGILL: the binary ran an instruction this CPU does not have (built for another CPU, "
                    "or with -march=native elsewhere)")
        if self.amx_in_log:
            return (f"{self.signal} in llama.cpp's AMX path (the log shows AMX buffers): a known crash of "
                    "builds compiled with -march=native on Intel AMX CPUs")
        return (f"{self.signal} while loading the model or answering the first request: on x86 this is "
                "typically the repacked-weight (AMX/extra buffer) path of a -march=native build")

    @property
    def avoided_by(self) -> str:
        if self.signal == "SIGILL":
            return ("rebuild llama.cpp for this CPU (cmake -DGGML_NATIVE=OFF with the ISA flags this CPU has), or "
                    "let rigbench build it (omit --llama-server)")
        return "`--no-repack` (no AMX/repacked weight buffers); with rigbench: --engine-arg=--no-repack"


def classify_crash(exit_code: int | None, log_text: str = "") -> CpuCrash | None:
    """The CPU crash an exit code shows, or None (still running, clean exit, ordinary error)."""
    if exit_code is None:
        return None
    sig = -exit_code if exit_code < 0 else exit_code - 128 if 128 < exit_code < 160 else None
    if sig not in _SIGNALS:
        return None
    return CpuCrash(exit_code=exit_code, signal=_SIGNALS[sig], amx_in_log=bool(_AMX.search(log_text)),
                    repack_in_log=bool(_REPACK.search(log_text)))
