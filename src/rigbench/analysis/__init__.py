"""Statistics and derived metrics. Never touches the network; never formats output."""

from rigbench.analysis._run import RunAnalysis, analyze_run
from rigbench.analysis._speed import ScenarioSpeed, SpeedSummary, summarize_speed
from rigbench.analysis._stats import Stat, describe
from rigbench.analysis._timing import RequestTiming, request_timing

__all__ = [
    "RequestTiming",
    "RunAnalysis",
    "ScenarioSpeed",
    "SpeedSummary",
    "Stat",
    "analyze_run",
    "describe",
    "request_timing",
    "summarize_speed",
]
