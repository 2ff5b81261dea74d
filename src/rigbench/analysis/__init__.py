"""Statistics and derived metrics. Never touches the network; never formats output."""

from rigbench.analysis._compare import Comparison, compare_runs, compare_stats
from rigbench.analysis._kvcache import KVArchitecture, KVCapacity, kv_capacity
from rigbench.analysis._roofline import (
    Roofline,
    SpeedupPrediction,
    predict_speedup,
    roofline,
    weights_from_path,
)
from rigbench.analysis._run import RunAnalysis, analyze_run
from rigbench.analysis._speed import ScenarioSpeed, SpeedSummary, summarize_speed
from rigbench.analysis._stats import Stat, describe
from rigbench.analysis._timing import RequestTiming, request_timing

__all__ = [
    "Comparison",
    "KVArchitecture",
    "KVCapacity",
    "RequestTiming",
    "Roofline",
    "RunAnalysis",
    "ScenarioSpeed",
    "SpeedSummary",
    "SpeedupPrediction",
    "Stat",
    "analyze_run",
    "compare_runs",
    "compare_stats",
    "describe",
    "kv_capacity",
    "predict_speedup",
    "request_timing",
    "roofline",
    "summarize_speed",
    "weights_from_path",
]
