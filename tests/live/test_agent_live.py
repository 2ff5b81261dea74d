"""The agent suites against the real embedded rig (llama-server --jinja, SmolLM2-135M).

SmolLM2's chat template does not support tools (/props: supports_tools false), so llama.cpp
answers `tool_choice: "required"` with HTTP 200 and plain text: the seed's "silently ignored"
case, live. The 135M model fails most agent work; the suite must still finish and say so.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from rich.console import Console

from rigbench.analysis._agent import summarize_agent
from rigbench.report._agent import render_agent_markdown, render_agent_terminal
from rigbench.store import RunHeader, RunReader, RunWriter
from rigbench.suites._context import SuiteContext
from rigbench.suites.agent import AgentSettings, AgentSuite

pytestmark = pytest.mark.live

FIX = Path(__file__).parents[1] / "fixtures" / "bfcl"
# Small token budgets: the point is the verdicts and the end-to-end path, not the 135M model's prose.
SETTINGS = AgentSettings(
    tool_trials=1,
    task_trials=1,
    max_turns=2,
    probe_max_tokens=16,
    tool_max_tokens=32,
    bfcl_data_dir=str(FIX),
    bfcl_per_category=1,
    bfcl_max_tokens=32,
    task_max_tokens=32,
)


def test_agent_suite_against_the_embedded_rig(live_rig, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    run = tmp_path / "run"
    writer = RunWriter(
        run, RunHeader(run_id="live-agent", created_at="2026-01-01T00:00:00Z", rigbench_version="t")
    )
    client = live_rig.client()
    ctx = SuiteContext(client=client, writer=writer, rig=live_rig.info)

    async def go() -> None:
        try:
            await AgentSuite(SETTINGS).run(ctx)
        finally:
            await client.aclose()

    asyncio.run(go())
    writer.finish("complete")
    s = summarize_agent(RunReader(run))
    verdicts = {p.probe: p.verdict for p in s.probes}
    assert verdicts["tool_choice_required"] == "silently_ignored"
    assert verdicts["context_overflow"] == "pass"  # llama.cpp: HTTP 400 exceed_context_size_error
    assert verdicts["max_tokens"] == "pass"
    assert "tool_choice_required" in s.silently_ignored
    assert s.tool_accuracy is not None and s.tool_accuracy.n == 6
    assert [b.category for b in s.bfcl] == [
        "simple",
        "multiple",
        "parallel",
        "parallel_multiple",
        "irrelevance",
    ]
    fix = next(t for t in s.tasks if t.task == "cart_bugs")
    assert fix.trials == 1 and fix.passed == 0  # 135M without tool support cannot fix the repo
    rec = next(r for r in RunReader(run).raw_records("agent_task_trial") if r["task"] == "cart_bugs")
    assert rec["tests_failed_before"] == 5 and rec["tests_failed_after"] == 5
    md = render_agent_markdown(s)
    assert "| tool_choice_required | **SILENTLY IGNORED** |" in md
    console = Console(width=160, record=True, color_system=None)
    render_agent_terminal(console, s)
    (tmp_path / "agent.md").write_text(md)
    print(md)
