"""The sanity gate and gibberish screen against real llama-servers.

A server with synthetic speculative acceptance (`--spec-synth-len`, "generated output is not
valid") must be flagged; the same model served normally must pass. Also checks the /metrics and
/props facts the telemetry code relies on.

Found while writing this: with the *same* GGUF as its own draft (`-md <same> --spec-type
draft-simple`), greedy drafts equal the target's tokens, so synthetic acceptance accepts only
correct tokens and the output stays valid. The gate rightly passes that server; preflight flags
the flag itself. The invalid-output case therefore uses n-gram drafting, whose drafts are wrong.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from rigbench.client import ChatClient
from rigbench.honesty._preflight import preflight
from rigbench.honesty._sanity import DEFAULT_MIX, run_sanity_gate, screen_outputs
from rigbench.rig._telemetry import TelemetrySampler
from tests.conftest import LiveRig, _embedded_files, start_llama_server

pytestmark = pytest.mark.live

SYNTH_NGRAM = ["--spec-type", "ngram-simple", "--spec-ngram-simple-size-n", "1", "--spec-synth-len", "4"]
PERF_PROMPTS = ["Write a short story about a robot.", "Explain how photosynthesis works.",
                "Write a Python function that sorts a list."]


async def _gate_and_screen(base_url: str, model: str) -> tuple[object, object]:
    async with ChatClient(base_url) as client:
        # short budgets keep this affordable on a loaded 2-core box; a loop shows within 96 tokens
        verdict = await run_sanity_gate(client, model, question_seed=11)
        outs = []
        for i, p in enumerate(PERF_PROMPTS):
            r = await client.stream_chat({"model": model, "messages": [{"role": "user", "content": p}],
                                          "temperature": 0, "max_tokens": 64, "ignore_eos": True})
            assert r.ok, r.error
            outs.append((f"perf/{i}", r.content))
        return verdict, screen_outputs(outs)


@pytest.fixture(scope="module")
def synth_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, list[str], Path]]:
    binary, model = _embedded_files()
    log = tmp_path_factory.mktemp("synth") / "llama-server.log"
    proc, base = start_llama_server(binary, model, log, ctx=4096, slots=1, extra=SYNTH_NGRAM)
    try:
        yield base, proc.argv, log
    finally:
        proc.stop()


def test_healthy_server_passes(live_rig: LiveRig) -> None:
    verdict, screen = asyncio.run(_gate_and_screen(live_rig.info.base_url, live_rig.info.model))
    assert verdict.trusted, verdict.reasons  # type: ignore[attr-defined]
    # every question of the default mix was asked and answered, in each of its languages
    assert len(verdict.answers) == len(DEFAULT_MIX)  # type: ignore[attr-defined]
    assert {a.language for a in verdict.answers} == {lang for _, lang in DEFAULT_MIX}  # type: ignore[attr-defined]
    assert screen.trusted, screen.examples  # type: ignore[attr-defined]


def test_spec_synth_len_server_is_untrusted_end_to_end(synth_server: tuple[str, list[str], Path],
                                                      tmp_path: Path) -> None:
    """The live row of the rogue gallery (docs/honesty.md): attached to, so preflight cannot see the
    flag; the gate and the screens must catch what it serves."""
    base, _, _ = synth_server
    out = tmp_path / "runs"
    res = subprocess.run([sys.executable, "-m", "rigbench", "run", "--endpoint", base, "--scenarios", "chat_short",
                          "--repetitions", "1", "--warmup", "0", "--sanity-seed", "11", "--out", str(out),
                          "--allow-busy-host"],  # the verdict under test is the gate's, not the host's
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 1, (res.stdout[-3000:], res.stderr[-2000:])
    [run_dir] = list(out.iterdir())
    trust = json.loads((run_dir / "run.json").read_text())["trust"]
    assert trust["trusted"] is False
    reasons = " | ".join(trust["reasons"])
    assert "known-answer questions right" in reasons or "wrong answer" in reasons, reasons


def test_synthetic_acceptance_is_flagged(synth_server: tuple[str, list[str], Path]) -> None:
    base, _, log = synth_server
    assert "generated output is not valid" in log.read_text(errors="replace")  # the server says so too
    verdict, screen = asyncio.run(_gate_and_screen(base, "smollm2"))
    assert not verdict.trusted  # type: ignore[attr-defined]
    assert verdict.reasons  # type: ignore[attr-defined]
    assert not screen.trusted or len(verdict.reasons) >= 2  # type: ignore[attr-defined]


def test_preflight_names_the_synthetic_flag() -> None:
    r = preflight(["llama-server", "-m", "m.gguf", *SYNTH_NGRAM])
    assert [f.id for f in r.errors] == ["synthetic_acceptance"]


async def _telemetry(base_url: str) -> object:
    async with ChatClient(base_url) as client:
        async with TelemetrySampler(client, "llamacpp", interval_s=0.25) as tel:
            r = await client.stream_chat({"model": "smollm2", "messages": [
                {"role": "user", "content": "Count from 1 to 30, separated by commas."}],
                "temperature": 0, "max_tokens": 96, "ignore_eos": True})
            assert r.ok
            await asyncio.sleep(0.3)
        status, props = await client.get_json(client.server_root + "/props")
        assert status == 200 and "total_slots" in props and "n_ctx" in props["default_generation_settings"]
        return tel.record(scenario="live", concurrency=1)


def test_metrics_names_on_a_real_server(live_rig: LiveRig, synth_server: tuple[str, list[str], Path]) -> None:
    from rigbench.analysis._telemetry import summarize_telemetry

    clean = asyncio.run(_telemetry(live_rig.info.base_url))
    [c] = summarize_telemetry([clean])  # type: ignore[list-item]
    assert c.unavailable is None and c.generation_tokens == 96
    assert c.requests_running_peak == 1
    assert c.mean_acceptance_length is None  # no speculation, no acceptance length
    spec = asyncio.run(_telemetry(synth_server[0]))
    [s] = summarize_telemetry([spec])  # type: ignore[list-item]
    assert s.drafts and s.drafts > 0 and s.mean_acceptance_length is not None and s.mean_acceptance_length > 1
    assert s.per_position_acceptance and all(0 <= p <= 1 for p in s.per_position_acceptance)
