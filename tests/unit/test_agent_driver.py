"""The multi-turn driver on its own: it holds the conversation with any tool runner (no
workspace, no grader) and says why it stopped."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rigbench.suites.agent._driver import converse
from tests.unit.test_agent_suites import _call, _ctx, _serve

_TOOLS = [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}]


def _model(body: dict[str, Any]) -> tuple[str, str, list[dict[str, Any]]]:
    """Looks a word up once, then answers with what the tool said."""
    results = [m["content"] for m in body["messages"] if m["role"] == "tool"]
    return (f"the answer is {results[0]}", "", []) if results else ("", "", [_call("lookup", word="tea")])


async def test_the_driver_runs_any_tool_and_stops_when_the_model_answers(tmp_path: Path) -> None:
    seen: list[dict[str, Any]] = []

    async def run_tool(call: dict[str, Any]) -> tuple[str, dict[str, Any] | None]:
        seen.append(call)
        return "green", None

    async for url in _serve(_model):
        ctx = _ctx(url, tmp_path / "run", {})
        conv = await converse(ctx, [{"role": "user", "content": "look up tea"}], _TOOLS, run_tool, seed=1,
                              max_turns=5, repeat_limit=3, max_tokens=32)
        await ctx.client.aclose()
    assert conv.stop == "model_stopped" and conv.answer is None
    assert [c["function"]["name"] for c in seen] == ["lookup"]
    assert [t.tool_calls for t in conv.turns] == [1, 0]
    assert conv.messages[2] == {"role": "tool", "tool_call_id": seen[0]["id"], "content": "green"}
    assert conv.messages[-1]["content"] == "the answer is green"


async def test_a_submitted_answer_ends_the_conversation(tmp_path: Path) -> None:
    async def submit(call: dict[str, Any]) -> tuple[str, dict[str, Any] | None]:
        return "recorded", {"word": "tea"}

    async for url in _serve(lambda b: ("", "", [_call("lookup", word="tea")])):
        ctx = _ctx(url, tmp_path / "run", {})
        conv = await converse(ctx, [{"role": "user", "content": "x"}], _TOOLS, submit, seed=1, max_turns=5,
                              repeat_limit=3, max_tokens=32)
        await ctx.client.aclose()
    assert conv.stop == "answer_submitted" and conv.answer == {"word": "tea"} and len(conv.turns) == 1
