"""Prompt tokens served from a prefix cache (honesty/_prefix_cache.py): a run against a caching
emulator that is sent a previous run's prompts is untrusted, an honest run is not; the per-request
(llama.cpp timings, usage) and per-level (vLLM, SGLang /metrics counters) paths at their edges."""

from __future__ import annotations

import asyncio
import functools
import json
import subprocess
import sys
from pathlib import Path

import pytest

from rigbench.client import ChatClient
from rigbench.honesty import PREFIX_CACHE_UNTRUST_SHARE, judge_prefix_cache, prefix_cache_use
from rigbench.records import (
    SpeedRequest,
    StreamResult,
    TelemetryRecord,
    TelemetrySample,
    TrafficCheck,
    record_adapter,
)
from rigbench.report import render_markdown
from rigbench.rig import EndpointSpec
from rigbench.rig.engines import SGLangAdapter, VLLMAdapter, canonical_values
from rigbench.runner import BusyHostPolicy, RunConfig, execute_run
from rigbench.store import RunReader
from rigbench.suites import SuiteContext, SuiteSettings
from rigbench.suites.speed import SpeedSettings
from rigbench.testing import EmulatorProcess, EmulatorScript
from rigbench.testing._script import Delay

FIXTURES = Path(__file__).parent.parent / "fixtures" / "engines"


def _req(i: int, *, timings: dict[str, int] | None = None, usage: dict[str, object] | None = None,
         shared_max: int | None = 70, warmup: bool = False, scenario: str = "chat_short") -> SpeedRequest:
    res = StreamResult(sent_ns=0, http_status=200, timings=timings, usage=usage)
    return SpeedRequest(unit_id=f"speed/{scenario}/c1/r{i}/i0", scenario=scenario, concurrency=1, repetition=i,
                        warmup=warmup, index=0, input_tokens_target=128, output_tokens_target=64,
                        input_tokens_measured=128, input_tokens_shared_max=shared_max, result=res)


def test_the_prefix_shared_by_design_is_not_a_hit() -> None:
    # live llama-server, SmolLM2-135M: 39-40 of 128 tokens reused from the template and the opening
    rows = prefix_cache_use([_req(i, timings={"cache_n": 40, "prompt_n": 88}) for i in range(5)])
    [row] = rows
    assert (row.source, row.prompt_tokens, row.cached_tokens, row.beyond_tokens, row.hit_requests) == \
        ("timings", 640, 200, 0, 0)
    assert judge_prefix_cache(rows) == ([], [])


def test_a_cached_prompt_untrusts_its_scenario_and_says_what_ttft_then_measures() -> None:
    reqs = [_req(i, timings={"cache_n": 127 if i == 0 else 40, "prompt_n": 1 if i == 0 else 88}) for i in range(5)]
    [row] = prefix_cache_use(reqs)
    assert row.hit_requests == 1 and row.beyond_tokens == 127 - 70
    assert row.beyond_share == pytest.approx(57 / (640 - 350))  # 20% of the prompts' own tokens
    reasons, warnings = judge_prefix_cache([row])
    assert not warnings and len(reasons) == 1
    assert reasons[0].startswith("chat_short c=1: 19.6% of the prompt tokens not shared by design were served from "
                                 "the server's prefix cache (287 of 640 prompt tokens cached, at most 350 shared "
                                 "by design; 1 of 5 requests; server-reported, llama.cpp timings.cache_n): TTFT "
                                 "measured a cache hit: prefill time understated. Remedy: ")


def test_a_small_hit_warns_and_the_threshold_is_where_the_docs_say() -> None:
    # 20 requests of 128 with 70 shared by design: 58 own tokens each, 1160 in all; 10% is 116
    base = [_req(i, timings={"cache_n": 40, "prompt_n": 88}) for i in range(18)]
    below = base + [_req(18 + i, timings={"cache_n": 70 + 57, "prompt_n": 1}) for i in range(2)]  # 114 beyond
    at = base[:-1] + [_req(17 + i, timings={"cache_n": 127, "prompt_n": 1}) for i in range(3)]  # 171 beyond
    r_below, w_below = judge_prefix_cache(prefix_cache_use(below))
    assert PREFIX_CACHE_UNTRUST_SHARE == 0.10
    assert not r_below and w_below[0].startswith("chat_short c=1: 9.8% of the prompt tokens")
    assert "below the 10% that untrusts" in w_below[0]
    r_at, _ = judge_prefix_cache(prefix_cache_use(at))
    assert len(r_at) == 1


def test_usage_cached_tokens_are_read_where_there_are_no_timings_and_warmups_are_left_out() -> None:
    usage = {"prompt_tokens": 128, "completion_tokens": 64, "prompt_tokens_details": {"cached_tokens": 120}}
    reqs = [_req(0, usage=usage, warmup=True), _req(1, usage={**usage, "prompt_tokens_details": {"cached_tokens": 32}})]
    [row] = prefix_cache_use(reqs)
    assert (row.source, row.requests, row.cached_tokens, row.beyond_tokens) == ("usage", 1, 32, 0)


def test_without_a_recorded_bound_half_the_prompt_counts_as_shared() -> None:
    [row] = prefix_cache_use([_req(0, timings={"cache_n": 64, "prompt_n": 64}, shared_max=None)])
    assert row.shared_tokens == 64 and row.beyond_tokens == 0
    [row] = prefix_cache_use([_req(0, timings={"cache_n": 127, "prompt_n": 1}, shared_max=None)])
    assert row.beyond_tokens == 63


def _telemetry(engine: str, adapter: object, before: str, after: str) -> TelemetryRecord:
    samples = [TelemetrySample(t_ns=i, phase=phase, scrape_s=0.001, values=canonical_values(adapter, text))
               for i, (phase, text) in enumerate((("before", before), ("after", after)))]
    return TelemetryRecord(unit_id="telemetry/chat_short/c1", scenario="chat_short", concurrency=1, engine=engine,
                           metrics_url="http://x/metrics", interval_s=0.5, samples=samples)


def _bumped(text: str, **add: float) -> str:
    """The recorded scrape with some counters advanced (every series of the name by the same amount)."""
    out = []
    for line in text.splitlines():
        for name, d in add.items():
            if line.startswith(name + "{"):
                head, value = line.rsplit(" ", 1)
                line = f"{head} {float(value) + d}"
        out.append(line)
    return "\n".join(out) + "\n"


@pytest.mark.parametrize("fixture", ["metrics.txt", "metrics_legacy.txt"])
def test_vllm_prefix_cache_counters_over_the_scenario(fixture: str) -> None:
    text = (FIXTURES / "vllm" / fixture).read_text()
    gpu = "gpu_" if "legacy" in fixture else ""
    q, h = f"vllm:{gpu}prefix_cache_queries_total", f"vllm:{gpu}prefix_cache_hits_total"
    reqs = [_req(i) for i in range(5)]  # no per-request figures: the counters speak for the level
    # vLLM caches whole 16-token blocks: the ~40 shared tokens of each prompt are 2 blocks, 32 tokens
    honest = _telemetry("vllm", VLLMAdapter(), text, _bumped(text, **{q: 640, h: 5 * 32}))
    [row] = prefix_cache_use(reqs, [honest])
    assert (row.source, row.prompt_tokens, row.cached_tokens, row.shared_tokens, row.beyond_tokens) == \
        ("counters", 640, 160, 350, 0)
    assert judge_prefix_cache([row]) == ([], [])
    replayed = _telemetry("vllm", VLLMAdapter(), text, _bumped(text, **{q: 640, h: 5 * 112}))
    reasons, _ = judge_prefix_cache(prefix_cache_use(reqs, [replayed]))
    assert len(reasons) == 1 and "560 of 640 prompt tokens cached" in reasons[0]
    assert "/metrics prefix-cache counters over the scenario (other clients count too)" in reasons[0]


def test_sglang_cached_tokens_are_summed_over_cache_sources_against_prompt_tokens() -> None:
    text = (FIXTURES / "sglang" / "metrics.txt").read_text()
    assert canonical_values(SGLangAdapter(), text)["prefix_cache_hits_total"] == 61000.0
    after = _bumped(text, **{"sglang:prompt_tokens_total": 640, "sglang:cached_tokens_total": 300})  # x2 sources
    [row] = prefix_cache_use([_req(i) for i in range(5)], [_telemetry("sglang", SGLangAdapter(), text, after)])
    assert (row.prompt_tokens, row.cached_tokens, row.beyond_tokens) == (640, 600, 250)


def test_a_v3_traffic_check_without_the_new_fields_still_loads() -> None:
    v3 = {"kind": "traffic_check", "unit_id": "traffic_check", "outputs": 4, "duplicate_outputs": 0,
          "usage_checked": 4, "usage_method": "tokenize", "usage_inflated": 0, "timings_checked": 4,
          "timings_inconsistent": 0, "reasons": [], "examples": []}
    rec = record_adapter.validate_python(v3)
    assert isinstance(rec, TrafficCheck) and rec.prefix_cache == [] and rec.warnings == []


# -- end to end: `rigbench run` against a caching emulator ---------------------------------------

CACHING = EmulatorScript(persona="healthy", prefix_cache=True, ttft=Delay(mean_ms=2.0), itl=Delay(mean_ms=1.0))


def _run(url: str, out: Path) -> tuple[dict[str, object], Path]:
    speed = SpeedSettings(scenarios=["chat_short"], repetitions=3, warmup=0)
    # MEASURE_TRUSTED: this judges the prefix cache alone, on whatever host runs the tests (the busy-host
    # check has its own adversary and control: test_host_conditions.py, tests/live/test_host_live.py)
    cfg = RunConfig(suite_names=["speed"], settings=SuiteSettings(speed=speed), out_dir=out, rig=EndpointSpec(base_url=url),
                    allow_untrusted=True, busy_host=BusyHostPolicy.MEASURE_TRUSTED)
    header = asyncio.run(execute_run(cfg))
    run_dir = out / header.run_id
    return json.loads((run_dir / "run.json").read_text()), run_dir


def test_a_replayed_run_is_untrusted_and_the_report_says_ttft_measured_a_cache_hit(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the adversary: the same prompts twice (nonce fixed, same seed), to a server that caches prefixes
    import rigbench.runner._run as running  # where execute_run builds each suite's context

    monkeypatch.setattr(running, "SuiteContext", functools.partial(SuiteContext, prompt_nonce="feedcafe"))
    with EmulatorProcess(CACHING) as emu:
        first, _ = _run(emu.url, tmp_path / "a")
        second, run_dir = _run(emu.url, tmp_path / "b")
    assert first["trust"] == {"trusted": True, "reasons": []}, first["trust"]
    trust = second["trust"]
    assert isinstance(trust, dict) and trust["trusted"] is False
    [reason] = trust["reasons"]
    [check] = RunReader(run_dir).records("traffic_check", TrafficCheck)
    [row] = check.prefix_cache
    assert row.beyond_share > 0.9  # all but each prompt's last token, less the half assumed shared
    assert reason.startswith(f"chat_short c=1: {row.beyond_share * 100:.1f}% of the prompt tokens not shared by "
                             "design were served from the server's prefix cache (")
    assert "3 of 3 requests; server-reported, llama.cpp timings.cache_n): TTFT measured a cache hit" in reason
    from rigbench.analysis import analyze_run
    md = render_markdown(analyze_run(RunReader(run_dir)))
    assert "TTFT measured a cache hit: prefill time understated" in md
    assert "beyond the prefix shared by design in 1 of 1 levels" in md


def test_an_honest_run_on_a_caching_server_is_not_flagged(tmp_path: Path) -> None:
    with EmulatorProcess(CACHING) as emu:
        _run(emu.url, tmp_path / "a")
        second, run_dir = _run(emu.url, tmp_path / "b")  # a fresh nonce: only `[request` is shared
    assert second["trust"] == {"trusted": True, "reasons": []}, second["trust"]
    [check] = RunReader(run_dir).records("traffic_check", TrafficCheck)
    [row] = check.prefix_cache
    assert row.cached_tokens > 0 and row.beyond_tokens == 0 and not check.warnings


def test_rigbench_emulate_plays_the_caching_server_from_the_command_line() -> None:
    # The adversary of this check, as a user starts it: the second identical prompt is reported
    # as served from the cache, in llama.cpp's and the OpenAI usage spelling alike.
    proc = subprocess.Popen([sys.executable, "-m", "rigbench", "emulate", "--prefix-cache", "--port", "0",
                             "--ttft-ms", "1", "--itl-ms", "0.1", "--output-tokens", "4"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().split()[-1]
        body = {"model": "m", "max_tokens": 4,
                "messages": [{"role": "user", "content": "the same prompt of several words, sent twice"}]}

        async def twice() -> list[StreamResult]:
            async with ChatClient(url) as c:
                return [await c.stream_chat(body) for _ in range(2)]

        first, second = asyncio.run(twice())
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    assert first.timings is not None and first.timings["cache_n"] == 0
    assert second.timings is not None and second.timings["cache_n"] > 0
    assert second.usage is not None
    assert second.usage["prompt_tokens_details"]["cached_tokens"] == second.timings["cache_n"]
