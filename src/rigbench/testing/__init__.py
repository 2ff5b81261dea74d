"""The reference emulator: an OpenAI-compatible server with scripted timing and faults that
records the true send time of every chunk (ground truth for tests and benchmarks), and the
rogue-server gallery: personas that play each adversary the trust checks stop; and two proxies,
one that buffers responses as gateways do (BufferingProxy), one that freezes the server once
mid-run (StallProxy: the adversary of coordinated omission)."""

from rigbench.testing._accuracy import AccuracyReport, compare_with_truth
from rigbench.testing._noise import NoiseFloor, SchedulerNoise
from rigbench.testing._process import EmulatorProcess
from rigbench.testing._proxy import BufferingProxy, ProxyMode
from rigbench.testing._rogue import PERSONAS, ROGUES, Persona, RogueName
from rigbench.testing._script import Delay, EmulatorScript, Fault, FaultKind, UsageMode
from rigbench.testing._serve import serve
from rigbench.testing._server import Emulator
from rigbench.testing._stall import StallProxy
from rigbench.testing._truth import RequestTruth

__all__ = [
    "PERSONAS",
    "ROGUES",
    "AccuracyReport",
    "BufferingProxy",
    "Delay",
    "Emulator",
    "EmulatorProcess",
    "EmulatorScript",
    "Fault",
    "FaultKind",
    "NoiseFloor",
    "Persona",
    "ProxyMode",
    "RequestTruth",
    "RogueName",
    "SchedulerNoise",
    "StallProxy",
    "UsageMode",
    "compare_with_truth",
    "serve",
]
