"""Statistics and derived metrics. Never touches the network; never formats output."""

from rigbench.analysis._agent import AgentSummary, ProbeRow, TaskScore, summarize_agent
from rigbench.analysis._arrival import ArrivalPattern, ArrivalSummary, stream_arrival, summarize_arrival
from rigbench.analysis._bandwidth import machine_bandwidth
from rigbench.analysis._compare import (
    Comparison,
    busy_windows,
    check_two_runs,
    compare_runs,
    compare_stats,
    fingerprint_differences,
)
from rigbench.analysis._experience import (
    ATTENTION_LIMIT_S,
    FLOW_LIMIT_S,
    READING_TOK_S,
    Experience,
    experience,
)
from rigbench.analysis._goodput import SLO_METRICS, SloCheck, knee_rate, meets_slo, parse_slo
from rigbench.analysis._host import OTHER_CORES_MAX, STEAL_CORES_MAX, HostVerdict, HostWindowRow, assess_host
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
from rigbench.analysis._load_compare import LoadComparison, LoadRateComparison, compare_load
from rigbench.analysis._quality import (
    EffortSummary,
    MMLUProComparison,
    MMLUProSummary,
    PackSummary,
    PairTest,
    Proportion,
    QualitySummary,
    summarize_quality,
)
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
from rigbench.analysis._stability import (
    CHANGE_Z,
    MIN_REPETITIONS,
    OUTLIER_Z,
    QUIET_SPREAD,
    UNSTABLE_ALPHA,
    UNSTABLE_CV,
    Detectable,
    SeriesStability,
    StabilityRules,
    detectable,
    judge_series,
    speed_stability,
    stability_warnings,
)
from rigbench.analysis._stamping import StampingError, stamping_error, stamping_text
from rigbench.analysis._stats import Stat, describe
from rigbench.analysis._suite_compare import AccuracyDiff, SuiteComparison, compare_suites
from rigbench.analysis._telemetry import ScenarioTelemetry, TimingCrossCheck
from rigbench.analysis._timing import RequestTiming, arrival_ns, chunk_token_counts, request_timing
from rigbench.analysis._verdict import DEFAULT_MARGIN, MAX_NEEDED, Verdict

__all__ = [
    "ATTENTION_LIMIT_S",
    "CHANGE_Z",
    "CPU_FRACTION_MAX",
    "DEFAULT_MARGIN",
    "FLOW_LIMIT_S",
    "LOOP_LAG_P99_MAX_S",
    "MAX_NEEDED",
    "MIN_REPETITIONS",
    "OTHER_CORES_MAX",
    "OUTLIER_Z",
    "QUIET_SPREAD",
    "READING_TOK_S",
    "REQUEST_COLUMNS",
    "SCHEDULE_LAG_P99_MAX_S",
    "SCHEDULE_RATE_MIN",
    "SLO_METRICS",
    "STEAL_CORES_MAX",
    "UNSTABLE_ALPHA",
    "UNSTABLE_CV",
    "AccuracyDiff",
    "AgentSummary",
    "ArrivalPattern",
    "ArrivalSummary",
    "BlockAccounting",
    "Comparison",
    "Detectable",
    "EffortSummary",
    "Experience",
    "HostVerdict",
    "HostWindowRow",
    "KVArchitecture",
    "KVBlocks",
    "KVCapacity",
    "LoadComparison",
    "LoadRateComparison",
    "LoadSummary",
    "LoadWindowSummary",
    "MMLUProComparison",
    "MMLUProSummary",
    "PackSummary",
    "PairTest",
    "ProbeRow",
    "Proportion",
    "QualitySummary",
    "RequestTiming",
    "RetrySummary",
    "Revision",
    "Roofline",
    "RunAnalysis",
    "ScenarioSpeed",
    "ScenarioTelemetry",
    "SeriesStability",
    "SloCheck",
    "SpeculationFit",
    "SpeedSummary",
    "SpeedupPrediction",
    "StabilityRules",
    "StampingError",
    "Stat",
    "SuiteComparison",
    "TaskScore",
    "TimingCrossCheck",
    "Verdict",
    "WeightsInfo",
    "analyze_run",
    "arrival_ns",
    "assess_host",
    "busy_windows",
    "check_two_runs",
    "chunk_token_counts",
    "compare_load",
    "compare_runs",
    "compare_stats",
    "compare_suites",
    "describe",
    "detectable",
    "experience",
    "find_revisions",
    "fingerprint_differences",
    "fit_speculation",
    "hide_session_details",
    "judge_series",
    "knee_rate",
    "kv_architecture_from_path",
    "kv_capacity",
    "latency_finding",
    "load_timing",
    "lookup_device",
    "machine_bandwidth",
    "meets_slo",
    "parse_slo",
    "predict_speedup",
    "request_rows",
    "request_timing",
    "roofline",
    "session_neutral",
    "sessions_from_pool",
    "speed_stability",
    "split_reasoning",
    "split_tokens",
    "stability_warnings",
    "stamping_error",
    "stamping_text",
    "stream_arrival",
    "summarize_agent",
    "summarize_arrival",
    "summarize_load",
    "summarize_quality",
    "summarize_speed",
    "weights_from_path",
]
