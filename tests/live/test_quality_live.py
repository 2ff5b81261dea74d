"""The quality suites against the real embedded rig (llama-server --jinja, SmolLM2-135M).

MMLU-Pro runs on the checked-in fixture (the hub is not reachable from tests); the 135M model is
expected to score near chance, and the report must say so with the chance level printed.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from rich.console import Console

from rigbench.analysis._quality import summarize_quality
from rigbench.records import MMLUProAnswer, PackAnswer
from rigbench.report._quality import render_quality_markdown, render_quality_terminal
from rigbench.store import RunHeader, RunReader, RunWriter
from rigbench.suites._context import SuiteContext
from rigbench.suites.quality import (
    EffortSettings,
    EffortSweepSuite,
    MMLUProSettings,
    MMLUProSuite,
    PackSettings,
    PackSuite,
)

pytestmark = pytest.mark.live

FIXTURE = Path(__file__).parents[1] / "fixtures" / "mmlu_pro" / "data"


def test_quality_suites_against_the_embedded_rig(live_rig, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    run = tmp_path / "run"
    writer = RunWriter(run, RunHeader(run_id="live-quality", created_at="now", rigbench_version="0"))
    suites = [
        MMLUProSuite(MMLUProSettings(data=str(FIXTURE), subjects=["math", "law"], questions_per_subject=1,
                                     max_tokens=48)),
        PackSuite(PackSettings(tasks=["en_capital_50", "ja_mikan_total", "en_dedup_sort"], max_tokens=96)),
        EffortSweepSuite(EffortSettings(tasks=["en_capital_50"], levels=["none", "low"], max_tokens=48)),
    ]

    async def go() -> None:
        async with live_rig.client() as client:
            for suite in suites:
                await suite.run(SuiteContext(client=client, writer=writer, rig=live_rig.info))

    asyncio.run(go())
    writer.finish("complete")
    reader = RunReader(run)

    answers = reader.records("mmlu_pro_answer", MMLUProAnswer)
    assert len(answers) == 2 and all(a.result.ok for a in answers)
    assert all(a.result.completion_tokens for a in answers)
    packs = [a for a in reader.records("pack_answer", PackAnswer) if a.suite == "packs"]
    assert len(packs) == 3 and all(a.result.ok for a in packs)
    # SmolLM2 has no reasoning channel: the sweep must see no thinking at "none".
    summary = summarize_quality(reader)
    assert summary.effort and summary.effort[0].levels[0].effort == "none"
    assert summary.effort[0].levels[0].off_honoured is True

    console = Console(width=170, record=True)
    render_quality_terminal(console, summary)
    text = console.export_text()
    assert "Chance level is" in text and "MMLU-Pro" in text and "Reasoning-effort sweep" in text
    md = render_quality_markdown(summary)
    assert "| overall |" in md and "Task pack multilingual" in md
