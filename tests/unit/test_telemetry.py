"""Telemetry: sampling around a scenario against a fake /metrics, and what is derived from it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from aiohttp import web

from rigbench.analysis._telemetry import cross_check_timings, summarize_telemetry
from rigbench.client import ChatClient
from rigbench.records import StreamResult, TelemetryRecord, TelemetrySample
from rigbench.rig._telemetry import TelemetrySampler

# The shape of a real llama-server --metrics scrape (build 11434), counters driven by the test.
LLAMACPP = """# TYPE llamacpp:tokens_predicted_total counter
llamacpp:tokens_predicted_total {gen}
llamacpp:spec_decode_num_draft_tokens_total {draft}
llamacpp:spec_decode_num_accepted_tokens_total {acc}
llamacpp:spec_decode_num_drafts_total {drafts}
llamacpp:requests_processing {running}
llamacpp:requests_deferred 0
llamacpp:spec_decode_num_accepted_tokens_per_pos_total{{position="0"}} {p0}
llamacpp:spec_decode_num_accepted_tokens_per_pos_total{{position="1"}} {p1}
"""


class FakeServer:
    def __init__(self, status: int = 200) -> None:
        self.status = status
        self.state = {"gen": 100, "draft": 30, "acc": 20, "drafts": 10, "running": 0, "p0": 10, "p1": 10}

    async def metrics(self, request: web.Request) -> web.Response:
        if self.status != 200:
            return web.Response(status=self.status, text="This server does not support metrics endpoint.")
        return web.Response(text=LLAMACPP.format(**self.state))


@pytest.fixture
async def server() -> AsyncIterator[tuple[FakeServer, str]]:
    fake = FakeServer()
    app = web.Application()
    app.router.add_get("/metrics", fake.metrics)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    yield fake, f"http://127.0.0.1:{port}/v1"
    await runner.cleanup()


async def test_samples_before_during_after_and_acceptance(server: tuple[FakeServer, str]) -> None:
    fake, url = server
    async with ChatClient(url) as client:
        async with TelemetrySampler(client, "llamacpp", interval_s=0.05) as tel:
            fake.state.update(running=2)
            await asyncio.sleep(0.3)
            # the scenario: 8 drafts of 3 tokens, 16 accepted (positions 0: 8, 1: 6, 2: 2), 24 tokens out
            fake.state.update(gen=124, draft=54, acc=36, drafts=18, p0=18, p1=16, running=0)
            await asyncio.sleep(0.1)
        rec = tel.record(scenario="chat", concurrency=2)
    phases = [s.phase for s in rec.samples]
    assert phases[0] == "before" and phases[-1] == "after" and phases.count("during") >= 3
    [st] = summarize_telemetry([rec])
    assert st.drafts == 8 and st.accepted_tokens == 16
    assert st.mean_acceptance_length == pytest.approx(1 + 16 / 8)
    assert st.acceptance_rate == pytest.approx(16 / 24)
    assert st.per_position_acceptance == pytest.approx([8 / 8, 6 / 8])
    assert st.requests_running_peak == 2 and st.generation_tokens == 24
    assert st.sample_rate_hz is not None and st.sample_rate_hz >= 1.0


async def test_metrics_off_is_recorded_not_raised(server: tuple[FakeServer, str]) -> None:
    fake, url = server
    fake.status = 501
    async with ChatClient(url) as client:
        async with TelemetrySampler(client, "llamacpp", interval_s=0.05):
            await asyncio.sleep(0.1)
        tel = TelemetrySampler(client, "llamacpp")
        async with tel:
            pass
        rec = tel.record(scenario="chat", concurrency=1)
    assert rec.samples == [] and rec.unavailable is not None and "501" in rec.unavailable
    [st] = summarize_telemetry([rec])
    assert st.mean_acceptance_length is None and st.unavailable == rec.unavailable


def test_slower_than_1hz_is_refused() -> None:
    with pytest.raises(ValueError):
        TelemetrySampler(ChatClient("http://127.0.0.1:1/v1"), "llamacpp", interval_s=2.0)


def test_sglang_gauges_are_averaged() -> None:
    def s(phase: str, t: int, **v: float) -> TelemetrySample:
        return TelemetrySample(t_ns=t, phase=phase, scrape_s=0.0, values=v)  # type: ignore[arg-type]

    rec = TelemetryRecord(unit_id="telemetry/x/c1", scenario="x", concurrency=1, engine="sglang",
                          metrics_url="u", interval_s=0.5, samples=[
                              s("before", 0, spec_accept_length=0.0),
                              s("during", 1, spec_accept_length=2.0, spec_accept_rate=0.4, kv_cache_usage_ratio=0.1),
                              s("during", 2, spec_accept_length=3.0, spec_accept_rate=0.6, kv_cache_usage_ratio=0.3),
                              s("after", 3, kv_cache_usage_ratio=0.0)])
    [st] = summarize_telemetry([rec])
    assert st.mean_acceptance_length == pytest.approx(2.5) and st.acceptance_length_source == "gauge_mean"
    assert st.acceptance_rate == pytest.approx(0.5) and st.kv_usage_peak == pytest.approx(0.3)


def _res(n: int, step_ms: float, predicted_ms: float | None) -> StreamResult:
    chunks = [10_000_000 + int(i * step_ms * 1e6) for i in range(n)]
    timings = {"predicted_n": n, "predicted_ms": predicted_ms, "prompt_ms": 8.0} if predicted_ms else None
    return StreamResult(sent_ns=0, headers_ns=1, first_event_ns=chunks[0], done_ns=chunks[-1], chunk_ns=chunks,
                        chunk_chars=[3] * n, chunk_kind="c" * n, content="x" * n, finish_reason="length",
                        usage={"completion_tokens": n}, timings=timings, http_status=200)


def test_timing_cross_check_agrees_and_disagrees() -> None:
    # client sees 20 ms per token; the server says the same (63 steps x 20 ms)
    ok = cross_check_timings([("s", 1, _res(64, 20.0, 63 * 20.0))])[0]
    assert ok.agrees and ok.ratio == pytest.approx(1.0, abs=0.01)
    assert ok.ttft_minus_prompt_s == pytest.approx(0.010 - 0.008, abs=1e-4)
    # the server claims twice the speed the client measured: something between them is slow
    bad = cross_check_timings([("s", 1, _res(64, 20.0, 63 * 10.0))])[0]
    assert bad.agrees is False and bad.ratio == pytest.approx(0.5, abs=0.01)
    none = cross_check_timings([("s", 1, _res(64, 20.0, None))])[0]
    assert none.requests == 0 and none.agrees is None


async def test_a_ctrl_c_that_lands_as_the_sampler_stops_is_not_lost() -> None:
    # Ctrl-C cancels the run's task; if that lands while the sampler waits for its own cancelled
    # scraper, swallowing "the" CancelledError would swallow the run's too, and the run would
    # carry on as if never interrupted.
    async def app_metrics(_: web.Request) -> web.Response:
        return web.Response(text="llamacpp:requests_processing 0\n")

    app = web.Application()
    app.router.add_get("/metrics", app_metrics)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    me = asyncio.current_task()
    assert me is not None

    async def scraper_hit_by_ctrl_c() -> None:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            me.cancel()  # the run's cancel arrives while the sampler stops its scraper
            raise

    try:
        async with ChatClient(f"http://127.0.0.1:{port}/v1") as client:
            tel = TelemetrySampler(client, "llamacpp")
            await tel.__aenter__()
            assert tel._task is not None
            tel._task.cancel()
            tel._task = asyncio.create_task(scraper_hit_by_ctrl_c())
            await asyncio.sleep(0)
            with pytest.raises(asyncio.CancelledError):
                await tel.__aexit__(None, None, None)
            me.uncancel()
    finally:
        await runner.cleanup()


async def test_a_registered_engines_own_metric_names_are_sampled(server: tuple[FakeServer, str]) -> None:
    # telemetry names no engine: an engine added from outside gets its per-position counter and its
    # extra gauges read as the built-ins do (here it exports llama.cpp's names under its own adapter)
    import signal

    from rigbench.rig.engines import LlamaCppAdapter, get_engine, register_engine, unregister_engine

    class PosAdapter(LlamaCppAdapter):  # llama.cpp's calls, its own facts
        name = "poscount"

        def __init__(self) -> None:
            super().__init__()
            self.metric_names = {"spec_drafts_total": "llamacpp:spec_decode_num_drafts_total"}
            self.per_position_metric: str | None = "llamacpp:spec_decode_num_accepted_tokens_per_pos_total"
            self.reports_usage = False
            self.tokenize_unidentified = False
            self.extra_gauges = {"requests_running": "llamacpp:requests_processing"}

    base = get_engine("llamacpp")
    members = {m: getattr(base, m) for m in ("aliases", "default_port", "start_timeout_s", "speculative_flags",
                                             "command", "crash_hint", "flag_syntax", "context_overrun_note",
                                             "context_fix", "prefix_cache_reset", "model_stop_fix", "display_name",
                                             "slots_fix", "kv_accounting", "preflight_rules",
                                             "served_context", "flag_slots", "stop_strings", "identify", "open",
                                             "setup", "rig_from_run_flags")}
    from typing import Literal

    from rigbench.rig.engines import EngineSpec

    class PosLaunch(EngineSpec):
        kind: Literal["poscount"] = "poscount"

    engine = type("PosEngine", (), {**members, "aliases": (), "name": "poscount", "launch_spec": PosLaunch,
                                     "death_signal": signal.SIGTERM, "adapter": lambda self: PosAdapter()})()
    fake, url = server
    register_engine(engine)
    try:
        async with ChatClient(url) as client:
            async with TelemetrySampler(client, "poscount", interval_s=0.05) as tel:
                fake.state.update(running=3, p0=14, p1=11)
                await asyncio.sleep(0.1)
            rec = tel.record(scenario="chat", concurrency=1)
    finally:
        unregister_engine("poscount")
    assert rec.unavailable is None
    assert rec.samples[-1].accepted_per_pos == {0: 14.0, 1: 11.0}
    assert max(s.values.get("requests_running", 0) for s in rec.samples) == 3.0
    assert rec.metric_names == {"spec_drafts_total": "llamacpp:spec_decode_num_drafts_total",
                                "spec_accepted_per_pos": "llamacpp:spec_decode_num_accepted_tokens_per_pos_total",
                                "requests_running": "llamacpp:requests_processing"}
