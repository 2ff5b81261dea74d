"""Statistics and derived metrics. Never touches the network; never formats output."""

from rigbench.analysis._agent import AgentSummary, ProbeRow, TaskScore, summarize_agent
from rigbench.analysis._bandwidth import machine_bandwidth
from rigbench.analysis._compare import (
    Comparison,
    busy_windows,
    check_two_runs,
    compare_runs,
    fingerprint_differences,
)
from rigbench.analysis._experience import READING_TOK_S, experience
from rigbench.analysis._goodput import RateBound, parse_slo
from rigbench.analysis._host import OTHER_CORES_MAX, STEAL_CORES_MAX, HostVerdict, assess_host
from rigbench.analysis._kvcache import (
    BlockAccounting,
    KVArchitecture,
    KVBlocks,
    KVCapacity,
    kv_architecture_from_path,
    kv_capacity,
    sessions_from_pool,
)
from rigbench.analysis._load import (
    SCHEDULE_LAG_P99_MAX_S,
    SCHEDULE_RATE_MIN,
    LoadSummary,
    LoadWindowSummary,
    load_timing,
    summarize_load,
)
from rigbench.analysis._load_compare import LoadComparison, compare_load
from rigbench.analysis._mmlu import MMLUProSummary
from rigbench.analysis._packs import EffortSummary, PackSummary
from rigbench.analysis._proportion import Proportion
from rigbench.analysis._quality import QualitySummary, summarize_quality
from rigbench.analysis._quality_compare import MMLUProComparison, PairTest
from rigbench.analysis._reasoning import split_reasoning, split_tokens
from rigbench.analysis._requests import REQUEST_COLUMNS, request_rows
from rigbench.analysis._retries import RetrySummary
from rigbench.analysis._revision import Revision, find_revisions
from rigbench.analysis._roofline import (
    Roofline,
    SpeedupPrediction,
    WeightsInfo,
    lookup_device,
    predict_speedup,
    roofline,
    weights_from_path,
)
from rigbench.analysis._run import RunAnalysis, analyze_run
from rigbench.analysis._selfcheck import CPU_FRACTION_MAX, LOOP_LAG_P99_MAX_S
from rigbench.analysis._session import hide_session_details, session_neutral
from rigbench.analysis._speculation import SpeculationFit, fit_speculation
from rigbench.analysis._speed import ScenarioSpeed, SpeedSummary, latency_finding, summarize_speed
from rigbench.analysis._stability import MIN_REPETITIONS, QUIET_SPREAD, SeriesStability, detectable
from rigbench.analysis._stamping import stamping_text
from rigbench.analysis._stats import Stat
from rigbench.analysis._suite_compare import AccuracyDiff, SuiteComparison, compare_suites
from rigbench.analysis._telemetry import ScenarioTelemetry, TimingCrossCheck
from rigbench.analysis._timing import arrival_ns, chunk_token_counts, request_timing
from rigbench.analysis._verdict import DEFAULT_MARGIN, MAX_NEEDED

__all__ = [
    "CPU_FRACTION_MAX",
    "DEFAULT_MARGIN",
    "LOOP_LAG_P99_MAX_S",
    "MAX_NEEDED",
    "MIN_REPETITIONS",
    "OTHER_CORES_MAX",
    "QUIET_SPREAD",
    "READING_TOK_S",
    "REQUEST_COLUMNS",
    "SCHEDULE_LAG_P99_MAX_S",
    "SCHEDULE_RATE_MIN",
    "STEAL_CORES_MAX",
    "AccuracyDiff",
    "AgentSummary",
    "BlockAccounting",
    "Comparison",
    "EffortSummary",
    "HostVerdict",
    "KVArchitecture",
    "KVBlocks",
    "KVCapacity",
    "LoadComparison",
    "LoadSummary",
    "LoadWindowSummary",
    "MMLUProComparison",
    "MMLUProSummary",
    "PackSummary",
    "PairTest",
    "ProbeRow",
    "Proportion",
    "QualitySummary",
    "RateBound",
    "RetrySummary",
    "Revision",
    "Roofline",
    "RunAnalysis",
    "ScenarioSpeed",
    "ScenarioTelemetry",
    "SeriesStability",
    "SpeculationFit",
    "SpeedSummary",
    "SpeedupPrediction",
    "Stat",
    "SuiteComparison",
    "TaskScore",
    "TimingCrossCheck",
    "WeightsInfo",
    "analyze_run",
    "arrival_ns",
    "assess_host",
    "busy_windows",
    "check_two_runs",
    "chunk_token_counts",
    "compare_load",
    "compare_runs",
    "compare_suites",
    "detectable",
    "experience",
    "find_revisions",
    "fingerprint_differences",
    "fit_speculation",
    "hide_session_details",
    "kv_architecture_from_path",
    "kv_capacity",
    "latency_finding",
    "load_timing",
    "lookup_device",
    "machine_bandwidth",
    "parse_slo",
    "predict_speedup",
    "request_rows",
    "request_timing",
    "roofline",
    "session_neutral",
    "sessions_from_pool",
    "split_reasoning",
    "split_tokens",
    "stamping_text",
    "summarize_agent",
    "summarize_load",
    "summarize_quality",
    "summarize_speed",
    "weights_from_path",
]
