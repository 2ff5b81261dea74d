"""Each package's public surface, pinned (as httpx pins its exports): a name added to or dropped from
an `__all__` is a change to what other packages and users may import, and shows up here.

Other packages import a package's names from the package (`from rigbench.records import StreamResult`),
never from its `_private` modules; tests/unit/test_layering.py checks that."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"

PUBLIC: dict[str, list[str]] = {
    "rigbench": [
        "RigbenchError", "__version__",
    ],
    "rigbench.analysis": [
        "AccuracyDiff", "AgentSummary", "BlockAccounting", "CPU_FRACTION_MAX", "Comparison", "DEFAULT_MARGIN",
        "EffortSummary", "HostVerdict", "KVArchitecture", "KVBlocks", "KVCapacity", "LOOP_LAG_P99_MAX_S",
        "LoadComparison", "LoadSummary", "LoadWindowSummary", "MAX_NEEDED", "MIN_REPETITIONS", "MMLUProComparison",
        "MMLUProSummary", "OTHER_CORES_MAX", "PackSummary", "PairTest", "ProbeRow", "Proportion", "QUIET_SPREAD",
        "QualitySummary", "READING_TOK_S", "REQUEST_COLUMNS", "RateBound", "RetrySummary", "Revision", "Roofline",
        "RunAnalysis", "SCHEDULE_LAG_P99_MAX_S", "SCHEDULE_RATE_MIN", "STEAL_CORES_MAX", "ScenarioSpeed",
        "ScenarioTelemetry", "SeriesStability", "SpeculationFit", "SpeedSummary", "SpeedupPrediction", "Stat",
        "SuiteComparison", "TaskScore", "TimingCrossCheck", "WeightsInfo", "analyze_run", "arrival_ns", "assess_host",
        "busy_windows", "check_two_runs", "chunk_token_counts", "compare_load", "compare_runs", "compare_suites",
        "detectable", "experience", "find_revisions", "fingerprint_differences", "fit_speculation",
        "hide_session_details", "kv_architecture_from_path", "kv_capacity", "latency_finding", "load_timing",
        "lookup_device", "machine_bandwidth", "parse_slo", "predict_speedup", "request_rows", "request_timing",
        "roofline", "session_neutral", "sessions_from_pool", "split_reasoning", "split_tokens", "stamping_text",
        "summarize_agent", "summarize_load", "summarize_quality", "summarize_speed", "weights_from_path",
    ],
    "rigbench.cli": [
        "app", "main",
    ],
    "rigbench.client": [
        "Accumulator", "AiohttpTransport", "ChatClient", "Deadlines", "EncodedBody", "RetryPolicy", "SelfCheckMonitor",
        "StampedTransport", "StreamRequest", "StreamTransport", "current_monitor", "event_loop_name", "is_loopback_url", "redact_text", "redact_url", "run",
        "url_has_userinfo", "use_monitor",
    ],
    "rigbench.errors": [
        "AnalysisError", "BusyHostError", "EndpointError", "EndpointLostError", "LongRunError", "PortInUseError",
        "ProbeError",
        "RigError", "RigStartError", "RigbenchError", "SetupError", "StoreError", "StoreWriteError", "UsageError",
    ],
    "rigbench.honesty": [
        "DEFAULT_MIX", "GibberishScreen", "PREFIX_CACHE_UNTRUST_SHARE", "PrefixCacheVerdict",
        "PreflightInput", "SanityQuestion", "ScenarioLength", "check_traffic", "count_text_tokens",
        "extract_answer", "generate_questions", "judge_prefix_cache", "load_prefix_cache_use",
        "new_question_seed", "parse_command", "prefix_cache_use", "preflight", "requests_from_records",
        "run_sanity_gate", "screen_outputs", "screen_text",
    ],
    "rigbench.plan": [
        "CliPlan", "EmbeddedRig", "LoadedPlan", "Plan", "PlanError", "PlanIndex", "PlanRig",
        "PlanRigEntry", "ResolvedRig", "RigResources", "RunOptions", "SpeedPlan", "check_plan_length", "execute_plan",
        "expand_rigs",
        "is_plan_dir", "load_plan", "open_index", "plan_from_options", "plan_runs",
        "read_plan_index", "run_config_for", "write_plan_index",
    ],
    "rigbench.records": [
        "AnyRecord", "ArrivalStamps", "BFCLItemRecord", "CacheSource", "ChunkKind", "ClientClock",
        "ClientShare", "EngineBinary", "EngineLocation", "Exchange", "Extraction", "Fingerprint", "Frozen",
        "GibberishFinding", "GibberishKind", "GibberishSeverity", "GpuProcess", "GradeResult", "HostConditions",
        "HostInfo", "Input", "LoadMode", "LoadRequest", "LoadWindow", "MMLUProAnswer", "MMLUProConfig", "MemoryBandwidth",
        "ModelInfo", "OFF_LEVELS", "OutputScreen",
        "PackAnswer", "PackConfig", "Phase", "PreflightFinding", "PreflightReport", "PreflightSeverity",
        "ProbeRecord", "ProbeVerdict", "RECORD_TYPES", "ReasoningForm", "Record", "RequestError",
        "RequestErrorKind", "RetryAttempt", "SanityAnswer", "SanityVerdict", "ScenarioPrefixCache", "SelfCheck",
        "ServingCommand", "SloTargets", "Speculation", "SpeedBatch", "SpeedRequest", "SpeedSkip", "StartupTiming",
        "StreamResult", "TaskStopReason", "TaskTrialRecord", "TelemetryRecord", "TelemetrySample",
        "TokenSplitMethod", "ToolTrialRecord", "TrafficCheck", "TurnObservation", "older_fingerprint", "record_adapter",
        "send_lag_ns",
    ],
    "rigbench.report": [
        "NOT_COMPARABLE", "RunListing", "comparison_markdown", "comparison_terminal", "differences_terminal", "kv_terminal", "load_comparison_markdown",
        "load_comparison_terminal", "preflight_terminal", "render_blog_markdown", "render_html",
        "render_json", "render_markdown", "render_terminal", "report_title", "rig_labels", "roofline_terminal", "runs_table", "shift_headings", "short_answer",
        "speculates", "speculation_markdown", "speculation_terminal", "speculation_unknown", "speed_markdown", "speed_table", "speedup_table",
        "suite_comparison_markdown", "suite_comparison_terminal", "summary_terminal", "synth_mark", "synth_note",
        "synthetic_acceptance", "vllm_detailed_result",
    ],
    "rigbench.rig": [
        "AttachedRig", "EMBEDDED_MODEL", "EmbeddedRig", "EndpointSpec", "EngineBinary", "EngineProcess",
        "EngineRef", "Fingerprint", "Flag", "HostInfo", "HostWatch", "HostWindow", "HubFile",
        "LaunchSpec", "LaunchedRig", "LocalFile", "MemoryBandwidth", "ModelInfo",
        "ModelSource", "RigFlags", "RigInfo", "RigSpec", "TelemetrySampler", "WheelFile",
        "cache_dir", "check_rig", "check_rig_flags", "describe_rig",
        "free_port", "host_info", "launched_rig", "locate_engine", "model_source_from_spec",
        "open_rig", "port_in_use", "rig_from_flags",
        "size_flag_rig", "size_rig",
    ],
    "rigbench.rig.engines": [
        "BaseAdapter", "BaseEngine", "ENGINE_NAMES", "ENTRY_POINT_GROUP", "EmbeddedRig", "Engine", "EngineAdapter", "EngineName", "EngineSpec", "FlagReading",
        "FlagSyntax", "LaunchCommand", "LlamaCppAdapter", "MetricSample", "OllamaAdapter",
        "PreflightInput", "SGLangAdapter", "ScenarioLength", "VLLMAdapter", "builtin_engines", "canonical_values",
        "detect_engine", "engine_problem", "engine_problems", "engine_source", "get_adapter", "get_engine", "int_flag", "known_engines", "parse_flags",
        "parse_prometheus", "register_engine", "speculative_from_argv", "unregister_engine",
    ],
    "rigbench.runner": [
        "BusyHostPolicy", "RunConfig", "check_concurrency", "execute_run",
    ],
    "rigbench.sandbox": [
        "CaseOutcome", "Confinement", "FunctionResult", "GRADER_NEVER_COPIES", "GradedTests", "Limits",
        "PathRefused", "RunOutcome", "SandboxUnavailable", "TestOutcome", "Workdir", "confinement", "grade_pytest",
        "require_confinement", "run_confined", "run_function_tests", "run_pytest", "same_json",
    ],
    "rigbench.outside": [
        "for_console", "for_csv", "for_html", "for_json", "for_markdown", "visible",
    ],
    "rigbench.inputs": [
        "MAX_TOKENS", "explain", "json_lines", "load_json", "load_yaml", "number", "read_text", "shown", "text_lines",
        "too_big_to_read", "whole_number",
    ],
    "rigbench.scale": [
        "ActorSummary", "INSTALL_HINT", "check_client_options", "connect", "execute_plan_on_ray",
        "execute_run_with_clients", "import_ray", "summarize_clients",
    ],
    "rigbench.sizing": [
        "CONTEXT_MARGIN_TOKENS", "PROMPT_BYTES_PER_TOKEN", "context_per_slot", "fits_in_context", "prompt_bytes",
        "slots_for",
    ],
    "rigbench.store": [
        "FORMAT_VERSION", "Finding", "FindingKind", "HEADER_FILE", "LOCK_FILE", "RECORDS_FILE", "RunHeader", "RunLock", "RunReader", "RunStatus",
        "RunWriter", "TrustVerdict", "new_run_id", "now_utc", "source_data_id",
    ],
    "rigbench.suites": [
        "BuiltSuites", "NullProgress", "Progress", "SUITES", "SUITE_NAMES", "Suite", "SuiteContext", "SuiteFlag",
        "SuiteSettings", "SuiteSpec", "build_suites", "suite_help", "suite_spec",
    ],
    "rigbench.suites.agent": [
        "AgentSettings", "AgentSuite", "BFCLSuite", "BFCL_CATEGORIES", "BFCL_VERSION", "PROBES",
        "ProbesSuite", "RepoTaskSuite", "TOOL_CASES", "ToolCallSuite",
    ],
    "rigbench.suites.agent.probes": [
        "CALL_MECHANICS", "DEFAULT_PROBES", "FunctionProbe", "PROBES", "Probe", "ProbeRegistry",
        "ProbeResult", "ProbeSession", "ProbesSuite", "REASONING", "SAMPLING_CONTROLS",
        "TOOL_CHOICE",
    ],
    "rigbench.suites.load": [
        "Dispatched", "LengthDist", "LoadSettings", "LoadSuite", "TRACE_LAYOUTS", "TraceRequest", "arrival_offsets_s",
        "load_suites", "no_full_collection", "read_trace", "sleep_until_ns", "sweep_rates",
    ],
    "rigbench.suites.quality": [
        "EffortSettings", "EffortSweepSuite", "MMLUProData", "MMLUProSettings", "MMLUProSuite",
        "Pack", "PackSettings", "PackSuite", "effort_request_fields", "load_mmlu_pro", "load_pack",
        "shipped_packs",
    ],
    "rigbench.suites.speed": [
        "ConcurrencyLevels", "ExactPrompt", "MAX_RUN_S", "PROFILES", "PromptBuilder", "Scenario",
        "SpeedSettings", "SpeedSuite", "scenarios_for",
    ],
    "rigbench.testing": [
        "AccuracyReport", "BufferingProxy", "Delay", "Emulator", "EmulatorProcess", "EmulatorScript", "Fault",
        "FaultKind", "NoiseFloor", "PERSONAS", "Persona", "ProxyMode", "ROGUES", "RequestTruth", "RogueName",
        "SchedulerNoise", "StallProxy", "UsageMode", "compare_with_truth", "serve",
    ],
}


def test_every_public_package_is_pinned() -> None:
    packages = {".".join(p.parent.relative_to(SRC).parts) for p in (SRC / "rigbench").rglob("__init__.py")
                if "data" not in p.parts and not any(part.startswith("_") for part in p.parent.relative_to(SRC).parts)}
    assert packages <= PUBLIC.keys(), f"pin the __all__ of {sorted(packages - PUBLIC.keys())} here"


@pytest.mark.parametrize("module", sorted(PUBLIC))
def test_public_names_are_pinned(module: str) -> None:
    exported = importlib.import_module(module).__all__
    assert len(set(exported)) == len(exported), f"{module}.__all__ lists a name twice"
    assert sorted(exported) == PUBLIC[module]


@pytest.mark.parametrize("module", sorted(PUBLIC))
def test_every_public_name_resolves(module: str) -> None:
    mod = importlib.import_module(module)
    missing = [name for name in mod.__all__ if not hasattr(mod, name)]
    assert not missing, f"{module}.__all__ names what it does not define: {missing}"
