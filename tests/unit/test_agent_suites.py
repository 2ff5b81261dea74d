"""The agent suites end to end against a scripted OpenAI-compatible server that behaves like the
seed's model: tool_choice "required"/named and "thinking off" silently ignored, the two-city
question answered one call per message, four file reads batched in one message."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from rich.console import Console

from rigbench.analysis._agent import pass_hat_k, summarize_agent
from rigbench.client import ChatClient
from rigbench.report._agent import render_agent_markdown, render_agent_terminal
from rigbench.rig import RigInfo
from rigbench.store import RunHeader, RunReader, RunWriter
from rigbench.suites import SuiteContext
from rigbench.suites.agent import AgentSettings, AgentSuite, ProbesSuite, RepoTaskSuite, ToolCallSuite
from rigbench.suites.agent._task import load_task

FIX = Path(__file__).parents[1] / "fixtures" / "bfcl"
N_CTX = 512

Reply = tuple[str, str, list[dict[str, Any]]]  # content, reasoning, [(name, args)]


def _call(name: str, **args: Any) -> dict[str, Any]:
    return {"name": name, "args": args}


def _last_user(msgs: list[dict[str, Any]]) -> str:
    return next(m["content"] for m in reversed(msgs) if m["role"] == "user")


def _fixed(path: str, text: str) -> str:
    fixes = {
        "app/cart.py": ("price for _, price, qty", "price * qty for _, price, qty"),
        "app/discount.py": ("/ 1000", "/ 100"),
        "app/tax.py": ("amount * rate", "amount * (1 + rate)"),
    }
    old, new = fixes[path]
    return text.replace(old, new)


def seed_model(body: dict[str, Any], *, honour_required: bool = False, fix: bool = True) -> Reply:
    """A deterministic stand-in for the seed's model."""
    msgs = body["messages"]
    tools = {t["function"]["name"] for t in body.get("tools") or []}
    user = _last_user(msgs)
    tool_msgs = [m for m in msgs if m["role"] == "tool"]
    choice = body.get("tool_choice", "auto")
    if "run_tests" in tools:  # repo fix: read 3 files at once, write the fixes, test, stop
        reads = [m for m in msgs if m["role"] == "tool" and m["content"].startswith(("from", "CODES", "def"))]
        if not tool_msgs:
            return (
                "",
                "plan",
                [_call("read_file", path=p) for p in ("app/cart.py", "app/discount.py", "app/tax.py")],
            )
        if len(tool_msgs) == 3:
            paths = ("app/cart.py", "app/discount.py", "app/tax.py")
            if not fix:  # edits the tests instead of the code; rigbench restores them before grading
                return (
                    "",
                    "",
                    [_call("write_file", path="tests/test_tax.py", content="def test_x():\n    pass\n")],
                )
            return (
                "",
                "",
                [
                    _call("write_file", path=p, content=_fixed(p, r["content"]))
                    for p, r in zip(paths, reads, strict=True)
                ],
            )
        if not any(m["content"].startswith(("12 passed", "1 passed")) for m in tool_msgs):
            if any("passed" in m["content"] for m in tool_msgs):
                return "All tests pass now.", "", []
            return "", "", [_call("run_tests")]
        return "All tests pass now.", "", []
    if "report_root_cause" in tools:
        if not tool_msgs:
            return "", "", [_call("list_files", path=".")]
        if len(tool_msgs) == 1:
            return (
                "",
                "",
                [
                    _call("read_file", path=p)
                    for p in ("app/__init__.py", "app/cart.py", "app/discount.py", "tests/test_cart.py")
                ],
            )
        return (
            "",
            "",
            [
                _call(
                    "report_root_cause",
                    file="app/discount.py",
                    function="apply_discount",
                    explanation="subtracts rate*100 instead of amount*rate",
                )
            ],
        )
    reasoning = "Let me think." if "Think" in user or "weather" in user else ""
    if choice == "none" or not tools:
        words = "The sea is wide and blue. Waves roll over sand all day long and night. Birds fly."
        if "color" in user:
            words = f"Color number {body.get('seed')} is bright."
        if "lorem" in user:
            return "ok", "", []
        return words, reasoning, []
    if isinstance(choice, dict) or choice == "required":
        if not honour_required:
            return "I cannot call tools for that.", reasoning, []
        name = choice["function"]["name"] if isinstance(choice, dict) else sorted(tools)[0]
        return "", reasoning, [_call(name, city="Tokyo")]
    if "Tokyo and in Osaka" in user:
        done = {json.loads(m["content"])["city"] for m in tool_msgs}
        for city in ("Tokyo", "Osaka"):
            if city not in done:
                return "", reasoning, [_call("get_weather", city=city)]
        return "Both are sunny.", "", []
    if tool_msgs:
        return "It is sunny.", "", []
    if "weather in Tokyo" in user:
        return "", reasoning, [_call("get_weather", city="Tokyo")]
    if "US dollars" in user:
        return "", "", [_call("convert_currency", amount=100, from_currency="USD", to_currency="JPY")]
    if "ticket" in user:
        return (
            "",
            "",
            [
                _call(
                    "create_ticket",
                    title="Fix login timeout",
                    assignee={"name": "Sato", "team": "infra"},
                    priority="high",
                    estimated_hours=8,
                )
            ],
        )
    if "ほうじ茶ラテ" in user:
        return "", "", [_call("search_menu", keyword="ほうじ茶ラテ")]
    if "triangle" in user and "calculate_triangle_area" in tools:
        return "", "", [_call("calculate_triangle_area", base=10, height=5)]
    return "Hello! I'm fine, thanks.", "", []


def _n_tokens(body: dict[str, Any]) -> int:
    return sum(len(str(m.get("content") or "").split()) for m in body["messages"])


def make_app(model: Callable[[dict[str, Any]], Reply]) -> web.Application:
    async def chat(request: web.Request) -> web.StreamResponse:
        body = await request.json()
        if _n_tokens(body) > N_CTX:
            return web.json_response(
                {
                    "error": {
                        "message": "request exceeds the available context size",
                        "type": "exceed_context_size_error",
                    }
                },
                status=400,
            )
        content, reasoning, calls = model(body)
        for s in body.get("stop") or []:
            if s in content:
                content = content[: content.index(s)]
        toks = content.split()
        mt = body.get("max_tokens")
        finish = "tool_calls" if calls else "stop"
        if mt is not None and len(toks) > mt:
            content, finish = " ".join(toks[:mt]), "length"
        tcs = [
            {
                "id": f"call_{i}_{len(body['messages'])}",
                "type": "function",
                "function": {"name": c["name"], "arguments": json.dumps(c["args"], ensure_ascii=False)},
            }
            for i, c in enumerate(calls)
        ]
        usage = {
            "prompt_tokens": _n_tokens(body),
            "completion_tokens": min(len(toks), mt or 10**9) + len(tcs),
        }
        if not body.get("stream"):
            msg: dict[str, Any] = {"role": "assistant", "content": content or None}
            if reasoning:
                msg["reasoning_content"] = reasoning
            if tcs:
                msg["tool_calls"] = tcs
            return web.json_response(
                {"choices": [{"index": 0, "message": msg, "finish_reason": finish}], "usage": usage}
            )
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)

        async def ev(obj: dict[str, Any]) -> None:
            await resp.write(b"data: " + json.dumps(obj).encode() + b"\n\n")

        def ch(delta: dict[str, Any], fr: str | None = None) -> dict[str, Any]:
            return {"choices": [{"index": 0, "delta": delta, "finish_reason": fr}]}

        await ev(ch({"role": "assistant"}))
        if reasoning:
            await ev(ch({"reasoning_content": reasoning}))
        for w in re.findall(r"\S+\s*", content):
            await ev(ch({"content": w}))
        for i, tc in enumerate(tcs):  # split each call's arguments over two deltas
            a = tc["function"]["arguments"]
            await ev(
                ch(
                    {
                        "tool_calls": [
                            {
                                "index": i,
                                "id": tc["id"],
                                "type": "function",
                                "function": {"name": tc["function"]["name"], "arguments": a[:3]},
                            }
                        ]
                    }
                )
            )
            await ev(ch({"tool_calls": [{"index": i, "function": {"arguments": a[3:]}}]}))
        await ev(ch({}, finish))
        await ev({"choices": [], "usage": usage})
        await resp.write(b"data: [DONE]\n\n")
        return resp

    app = web.Application()
    app.router.add_post("/v1/chat/completions", chat)
    return app


async def _serve(model: Callable[[dict[str, Any]], Reply]) -> AsyncIterator[str]:
    runner = web.AppRunner(make_app(model))
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        await runner.cleanup()


@pytest.fixture
async def seed_url() -> AsyncIterator[str]:
    async for u in _serve(seed_model):
        yield u


def _ctx(url: str, run_dir: Path, done: set[str] | None = None, resume: bool = False) -> SuiteContext:
    header = RunHeader(run_id="t", created_at="2026-01-01T00:00:00Z", rigbench_version="test")
    writer = RunWriter(run_dir, header, resume=resume)
    rig = RigInfo(
        engine="unknown", model="seedlike", base_url=url, server_root=url[:-3], context_length=N_CTX
    )
    return SuiteContext(
        client=ChatClient(url), writer=writer, rig=rig, done_units=done or set()
    )


async def _run(suite: Any, ctx: SuiteContext) -> RunReader:
    try:
        await suite.run(ctx)
    finally:
        await ctx.client.aclose()
        ctx.writer.finish("complete")
    return RunReader(ctx.writer.dir)


async def test_probes_flag_the_seed_models_silent_failures(seed_url: str, tmp_path: Path) -> None:
    reader = await _run(ProbesSuite(AgentSettings()), _ctx(seed_url, tmp_path / "run"))
    v = {p.probe: p.verdict for p in summarize_agent(reader).probes}
    assert v["tool_choice_required"] == "silently_ignored"
    assert v["tool_choice_named"] == "silently_ignored"
    assert v["thinking_can_be_disabled"] == "silently_ignored"
    for ok in (
        "tool_choice_none",
        "tool_choice_auto",
        "tool_call_id_round_trip",
        "stream_matches_non_stream",
        "finish_reason_consistent",
        "arguments_match_schema",
        "reasoning_field",
        "stop_sequence",
        "max_tokens",
        "seed",
        "context_overflow",
        "parallel_tool_calls_false",
    ):
        assert v[ok] == "pass", ok
    rec = next(reader.raw_records("agent_probe"))
    assert rec["exchanges"][0]["request"]["tool_choice"] == "none"  # the evidence is in the run


async def test_required_honoured_is_a_pass(tmp_path: Path) -> None:
    async for url in _serve(lambda b: seed_model(b, honour_required=True)):
        reader = await _run(ProbesSuite(AgentSettings()), _ctx(url, tmp_path / "run"))
    v = {p.probe: p.verdict for p in summarize_agent(reader).probes}
    assert v["tool_choice_required"] == "pass" and v["tool_choice_named"] == "pass"


async def test_tool_cases_record_split_parallel_calls(seed_url: str, tmp_path: Path) -> None:
    reader = await _run(ToolCallSuite(AgentSettings(tool_trials=2)), _ctx(seed_url, tmp_path / "run"))
    s = summarize_agent(reader)
    assert s.tool_accuracy is not None and (s.tool_accuracy.k, s.tool_accuracy.n) == (12, 12)
    par = next(c for c in s.tool_cases if c.case == "parallel_two_cities")
    assert par.calls_per_message == {0: 2, 1: 4}  # one call per message, then the answer: the seed's quirk
    greet = next(c for c in s.tool_cases if c.case == "no_call_greeting")
    assert greet.calls_per_message == {0: 2}


async def test_wrong_call_fails_the_case(tmp_path: Path) -> None:
    def wrong(b: dict[str, Any]) -> Reply:
        if "ほうじ茶ラテ" in _last_user(b["messages"]):
            return "", "", [_call("search_menu", keyword="hojicha latte")]
        return seed_model(b)

    async for url in _serve(wrong):
        reader = await _run(ToolCallSuite(AgentSettings(tool_trials=1)), _ctx(url, tmp_path / "run"))
    s = summarize_agent(reader)
    jp = next(c for c in s.tool_cases if c.case == "japanese_arg")
    assert jp.accuracy.k == 0 and s.tool_accuracy is not None and s.tool_accuracy.k == 5


async def test_repo_fix_graded_by_our_pytest(seed_url: str, tmp_path: Path) -> None:
    reader = await _run(RepoTaskSuite(AgentSettings(task_trials=2)), _ctx(seed_url, tmp_path / "run"))
    s = summarize_agent(reader)
    fix = next(t for t in s.tasks if t.task == "cart_bugs")
    assert (fix.passed, fix.pass_hat_k) == (2, 1.0)
    assert fix.turns is not None and fix.turns.median == 4  # read x3, write x3, run_tests, answer
    assert fix.calls_per_turn == {0: 2, 1: 2, 3: 4}
    rec = next(r for r in reader.raw_records("agent_task_trial") if r["task"] == "cart_bugs")
    assert (rec["tests_failed_before"], rec["tests_passed_after"], rec["tests_failed_after"]) == (5, 12, 0)
    assert rec["sandbox"]["network"]
    rc = next(t for t in s.tasks if t.task == "cart_root_cause")
    assert rc.passed == 2 and rc.stop_reasons == {"answer_submitted": 2}
    assert rc.calls_per_turn == {1: 4, 4: 2}  # four reads batched in one message, as in the seed


async def test_claiming_success_or_editing_tests_does_not_pass(tmp_path: Path) -> None:
    async for url in _serve(lambda b: seed_model(b, fix=False)):
        ctx = _ctx(url, tmp_path / "run")
        reader = await _run(RepoTaskSuite(AgentSettings(task_trials=1, agent_tasks=["cart_bugs"])), ctx)
    rec = next(reader.raw_records("agent_task_trial"))
    assert rec["passed"] is False and rec["tests_failed_after"] == 5


async def test_repeated_identical_calls_stop_the_trial(tmp_path: Path) -> None:
    async for url in _serve(lambda b: ("", "", [_call("list_files", path=".")])):
        ctx = _ctx(url, tmp_path / "run")
        reader = await _run(RepoTaskSuite(AgentSettings(task_trials=1, agent_tasks=["cart_root_cause"], max_turns=10)), ctx)
    rec = next(reader.raw_records("agent_task_trial"))
    assert rec["stop_reason"] == "repeated_call" and len(rec["turns"]) == 3 and not rec["passed"]


async def test_max_turns_and_refused_paths(tmp_path: Path) -> None:
    n = iter(range(100))
    async for url in _serve(lambda b: ("", "", [_call("read_file", path=f"../../etc/passwd{next(n)}")])):
        ctx = _ctx(url, tmp_path / "run")
        reader = await _run(RepoTaskSuite(AgentSettings(task_trials=1, agent_tasks=["cart_bugs"], max_turns=3)), ctx)
    rec = next(reader.raw_records("agent_task_trial"))
    assert rec["stop_reason"] == "max_turns" and rec["refused_paths"] == 3


async def test_resume_skips_done_units(seed_url: str, tmp_path: Path) -> None:
    run = tmp_path / "run"
    await _run(ToolCallSuite(AgentSettings(tool_trials=1)), _ctx(seed_url, run))
    done = {r["unit_id"] for r in RunReader(run).raw_records()}
    await _run(ToolCallSuite(AgentSettings(tool_trials=2)), _ctx(seed_url, run, done=done, resume=True))
    ids = [r["unit_id"] for r in RunReader(run).raw_records()]
    assert len(ids) == len(set(ids)) == 12


async def test_agent_suite_end_to_end_and_reports(seed_url: str, tmp_path: Path) -> None:
    settings = AgentSettings(tool_trials=1, task_trials=1, bfcl_data_dir=str(FIX), bfcl_per_category=2)
    reader = await _run(AgentSuite(settings), _ctx(seed_url, tmp_path / "run"))
    s = summarize_agent(reader)
    assert [b.category for b in s.bfcl] == [
        "simple",
        "multiple",
        "parallel",
        "parallel_multiple",
        "irrelevance",
    ]
    simple = s.bfcl[0]
    assert simple.accuracy.k == 1 and simple.accuracy.n == 2  # the triangle item is answered, factorial not
    assert s.bfcl[-1].accuracy.k == 2  # irrelevance: no calls is right
    md = render_agent_markdown(s)
    assert "| tool_choice_required | **SILENTLY IGNORED** |" in md
    assert "pass^1 = 1.00" in md and "### BFCL local:" in md
    console = Console(width=200, record=True, color_system=None)
    render_agent_terminal(console, s)
    text = console.export_text()
    assert "SILENTLY IGNORED" in text and "cart_bugs" in text and "Tool-call cases" in text


def test_pass_hat_k() -> None:
    assert pass_hat_k(3, 3, 3) == 1.0 and pass_hat_k(3, 2, 3) == 0.0
    assert pass_hat_k(4, 2, 1) == 0.5 and pass_hat_k(4, 3, 2) == pytest.approx(0.5)


def test_shipped_tasks_load() -> None:
    assert load_task("cart_bugs").kind == "repo_fix"
    assert load_task("cart_root_cause").spec["answer"]["file"] == "app/discount.py"


def test_the_agent_suite_ships_its_probes_and_tool_cases() -> None:
    import rigbench.suites.agent as agent

    assert len(agent.PROBES) == 15 and len(agent.TOOL_CASES) == 6
