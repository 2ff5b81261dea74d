"""Call mechanics: ids round-trip, streamed and non-streamed calls agree, finish reasons and
argument schemas hold over every tool response the session has seen."""

from __future__ import annotations

import json
from typing import Any

import jsonschema

from rigbench.suites.agent._exchange import canonical_calls, parse_arguments
from rigbench.suites.agent._toolcalls import WEATHER
from rigbench.suites.agent.probes._protocol import FunctionProbe, ProbeResult, result
from rigbench.suites.agent.probes._session import ASK, SCHEMAS, ProbeSession

__all__ = ["CALL_MECHANICS"]

FAMILY = "call_mechanics"


async def _tool_call_id_round_trip(s: ProbeSession) -> ProbeResult:
    synthetic = s.first_call is None
    if s.first_call is not None:
        ex0, body0 = s.first_call
        call = ex0.tool_calls[0]
        messages = list(body0["messages"])
        tools = body0["tools"]
    else:  # the model never called: test the server's side with a call we write ourselves
        call = {
            "id": "call_rigbench_0",
            "type": "function",
            "function": {"name": "get_weather", "arguments": json.dumps({"city": "Tokyo"})},
        }
        messages = [{"role": "user", "content": ASK}]
        tools = [WEATHER]
    cid = call.get("id")
    obs: dict[str, Any] = {"synthetic_call": synthetic, "call_id": cid}
    if not cid:
        return result(
            "fail", "the model's tool call came back without an id, so results cannot be matched", obs
        )
    messages += [
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": cid, "content": '{"condition": "sunny", "temperature_c": 21}'},
    ]
    ex = await s.send(s.body(messages, tools=tools), streamed=False)
    obs["http_status"] = ex.http_status
    who = "a call rigbench wrote (the model made none)" if synthetic else "the model's own call"
    if ex.error:
        return result("fail", f"a role:tool result for {who} was not accepted: {ex.error[:200]}", obs, ex)
    return result("pass", f"a role:tool result carrying the id of {who} was accepted and answered", obs, ex)


async def _stream_matches_non_stream(s: ProbeSession) -> ProbeResult:
    body = s.body(ASK, tools=[WEATHER], tool_choice="auto")
    a = await s.send(body, streamed=False)
    b = await s.send(body, streamed=True)
    s.tool_exchanges += [a, b]
    ca, cb = canonical_calls(a.tool_calls), canonical_calls(b.tool_calls)
    obs = {"non_streamed_calls": ca, "streamed_calls": cb, "content_equal": a.content == b.content}
    if a.error or b.error:
        return result("fail", f"a request failed: {(a.error or b.error or '')[:200]}", obs, a, b)
    if not ca and not cb:
        return result(
            "not_applicable",
            (
                "no tool calls in either response; answer text "
                + ("matched" if a.content == b.content else "differed")
            ),
            obs,
            a,
            b,
        )
    if ca == cb:
        return result(
            "pass", "streamed deltas assembled to the same calls as the non-streamed response", obs, a, b
        )
    return result(
        "fail", "streamed and non-streamed responses carried different calls at temperature 0", obs, a, b
    )


async def _finish_reason_consistent(s: ProbeSession) -> ProbeResult:
    seen = [ex for ex in s.tool_exchanges if not ex.error]
    bad = [
        (len(ex.tool_calls), ex.finish_reason)
        for ex in seen
        if bool(ex.tool_calls) != (ex.finish_reason == "tool_calls")
    ]
    with_calls = sum(1 for ex in seen if ex.tool_calls)
    obs = {"responses": len(seen), "with_calls": with_calls, "mismatches": bad}
    if not seen:
        return result("not_applicable", "no successful tool-enabled response to check", obs)
    if bad:
        return result(
            "fail",
            f"{len(bad)} of {len(seen)} responses had a finish_reason that contradicts their calls",
            obs,
        )
    note = "" if with_calls else " (no response carried a call, so only the no-call side was checked)"
    return result(
        "pass", f"finish_reason matched the presence of calls in all {len(seen)} responses{note}", obs
    )


async def _arguments_match_schema(s: ProbeSession) -> ProbeResult:
    calls = [c for ex in s.tool_exchanges for c in ex.tool_calls]
    problems = []
    for c in calls:
        name = (c.get("function") or {}).get("name") or ""
        args = parse_arguments(c)
        if args is None:
            problems.append(f"{name}: arguments are not a JSON object")
        elif name not in SCHEMAS:
            problems.append(f"{name}: not an offered tool")
        else:
            try:
                jsonschema.validate(args, SCHEMAS[name])
            except jsonschema.ValidationError as e:
                problems.append(f"{name}: {e.message}")
    obs = {"calls": len(calls), "problems": problems}
    if not calls:
        return result("not_applicable", "the model made no tool call to check", obs)
    if problems:
        return result(
            "fail", f"{len(problems)} of {len(calls)} calls had invalid arguments: {problems[0]}", obs
        )
    return result("pass", f"all {len(calls)} calls had JSON arguments matching their schema", obs)


CALL_MECHANICS = (
    FunctionProbe("tool_call_id_round_trip", FAMILY, _tool_call_id_round_trip),
    FunctionProbe("stream_matches_non_stream", FAMILY, _stream_matches_non_stream),
    FunctionProbe("finish_reason_consistent", FAMILY, _finish_reason_consistent),
    FunctionProbe("arguments_match_schema", FAMILY, _arguments_match_schema),
)
