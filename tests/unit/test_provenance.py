"""Provenance of every speed figure: where the token counts came from, shown next to the figure,
and flagged when an estimate stands where the engine could have given an exact count."""

from __future__ import annotations

import asyncio
from pathlib import Path

from rigbench.analysis import summarize_speed
from rigbench.analysis._speed import token_provenance
from rigbench.analysis._timing import request_timing
from rigbench.client import ChatClient
from rigbench.records import StreamResult
from rigbench.report._speed import speed_markdown
from rigbench.rig.engines import known_engines
from rigbench.store import RunReader
from rigbench.testing import Emulator, EmulatorScript
from rigbench.testing._script import Delay

GOLDEN = Path(__file__).parent.parent / "golden" / "run_v1"


async def _results(script: EmulatorScript, n: int = 3) -> list[StreamResult]:
    async with Emulator(script) as emu, ChatClient(emu.url) as client:
        return [await client.stream_chat({"model": "m", "messages": [{"role": "user", "content": f"hi {i}"}],
                                          "max_tokens": 32}) for i in range(n)]


def _prov(script: EmulatorScript, engine: str | None) -> object:
    res = asyncio.run(_results(script))
    # the fingerprint records whether the engine reports usage (its adapter's `reports_usage`)
    reports_usage = engine in {e.name for e in known_engines()} or None
    return token_provenance([(r, request_timing(r)) for r in res], engine, reports_usage)


FAST = {"ttft": Delay(mean_ms=1.0), "itl": Delay(mean_ms=0.5)}


def test_server_usage_with_one_token_per_chunk_is_exact() -> None:
    p = _prov(EmulatorScript(**FAST), "vllm")  # type: ignore[arg-type]
    assert p.output_tokens == {"usage": 3} and p.chunk_tokens == "exact"  # type: ignore[attr-defined]
    assert p.reasoning_split == "none" and p.flag is None and p.label == "usage"  # type: ignore[attr-defined]


def test_missing_usage_is_an_estimate_flagged_when_the_engine_could_report_it() -> None:
    flagged = _prov(EmulatorScript(usage="none", **FAST), "llamacpp")  # type: ignore[arg-type]
    assert flagged.output_tokens == {"estimated": 3} and flagged.label == "est.!"  # type: ignore[attr-defined]
    assert "llamacpp reports usage.completion_tokens" in flagged.flag  # type: ignore[attr-defined]
    unknown = _prov(EmulatorScript(usage="none", **FAST), "unknown")  # type: ignore[arg-type]
    assert unknown.flag is None and unknown.label == "est."  # type: ignore[attr-defined]  # nothing better to ask


def test_multi_token_chunks_are_inferred_and_reasoning_split_estimated() -> None:
    p = _prov(EmulatorScript(tokens_per_chunk=3, reasoning_tokens=9, **FAST), "vllm")  # type: ignore[arg-type]
    assert p.chunk_tokens == "inferred" and p.reasoning_split == "estimated"  # type: ignore[attr-defined]
    assert p.label == "usage, ~chunk, ~reasoning"  # type: ignore[attr-defined]


def test_the_report_shows_the_source_next_to_the_figure_and_the_flag() -> None:
    summary = summarize_speed(RunReader(GOLDEN))
    assert summary is not None and all(r.provenance and r.provenance.label == "usage" for r in summary.rows)
    flagged = _prov(EmulatorScript(usage="none", **FAST), "llamacpp")
    rows = [summary.rows[0].model_copy(update={"provenance": flagged}), *summary.rows[1:]]
    md = speed_markdown(summary.model_copy(update={"rows": rows}))
    # the column stays while rows differ in where their counts came from (a constant one moves to the caption)
    assert "| token counts from |" in md and "| est.! |" in md and "| usage |" in md
    assert "output tokens of 3 of 3 requests were estimated" in md


def test_the_flag_rests_on_the_fingerprints_reports_usage_not_on_an_engine_name(tmp_path: Path) -> None:
    # analysis sits below rig: whether the engine could have sent usage comes from the run's record
    import json
    import shutil

    from rigbench.rig import EndpointSpec
    from rigbench.runner import RunConfig, execute_run
    from rigbench.suites import SuiteSettings
    from rigbench.suites.speed import SpeedSettings
    from rigbench.testing import EmulatorProcess

    speed = SpeedSettings(scenarios=["chat_short"], repetitions=2, warmup=0)
    with EmulatorProcess(EmulatorScript(usage="none", **FAST)) as emu:
        cfg = RunConfig(suite_names=["speed"], settings=SuiteSettings(speed=speed), out_dir=tmp_path,
                        rig=EndpointSpec(base_url=emu.url), sanity=False, allow_untrusted=True)
        run_dir = tmp_path / asyncio.run(execute_run(cfg)).run_id
    header = json.loads((run_dir / "run.json").read_text())
    assert header["fingerprint"]["reports_usage"] is None  # an unidentified server: not known

    def flagged(reports_usage: object) -> list[str]:
        copy = tmp_path / f"copy-{reports_usage}"
        shutil.copytree(run_dir, copy)
        fp = dict(header["fingerprint"], engine="llamacpp")
        if reports_usage == "absent":
            fp.pop("reports_usage")  # a run recorded before the fact was stored
        else:
            fp["reports_usage"] = reports_usage
        (copy / "run.json").write_text(json.dumps({**header, "fingerprint": fp}))
        summary = summarize_speed(RunReader(copy))
        assert summary is not None
        return [w for w in summary.warnings if "were estimated" in w]

    assert len(flagged(True)) == 1
    assert flagged(False) == [] and flagged(None) == [] and flagged("absent") == []
