"""Does the server honour `tool_choice` and `parallel_tool_calls`? A 200 with the instruction
ignored is the dangerous outcome (the seed's `tool_choice: "required"` returning zero calls)."""

from __future__ import annotations

from rigbench.suites.agent._toolcalls import WEATHER
from rigbench.suites.agent.probes._protocol import FunctionProbe, ProbeResult, result
from rigbench.suites.agent.probes._session import TIME, ProbeSession, call_names, rejected

__all__ = ["TOOL_CHOICE"]

FAMILY = "tool_choice"


async def _tool_choice_none(s: ProbeSession) -> ProbeResult:
    ex = await s.tools_call("none")
    obs = {"http_status": ex.http_status, "calls": len(ex.tool_calls)}
    if ex.error and not rejected(ex):
        return result("fail", f"the request failed: {ex.error[:200]}", obs, ex)
    if rejected(ex):
        return result("fail", "tool_choice 'none' was rejected with an HTTP error", obs, ex)
    if ex.tool_calls:
        return result("silently_ignored", "tool_choice 'none' returned HTTP 200 with a tool call", obs, ex)
    return result("pass", "no tool call with tool_choice 'none'", obs, ex)


async def _tool_choice_auto(s: ProbeSession) -> ProbeResult:
    ex = await s.tools_call("auto")
    obs = {"http_status": ex.http_status, "calls": call_names(ex)}
    if ex.error:
        return result("fail", f"the request failed: {ex.error[:200]}", obs, ex)
    if "get_weather" in call_names(ex):
        return result("pass", "the model called get_weather when asked to", obs, ex)
    return result(
        "fail",
        (
            "no tool call for a prompt that names the tool; the server may not support tool "
            "calling for this model's chat template"
        ),
        obs,
        ex,
    )


async def _tool_choice_required(s: ProbeSession) -> ProbeResult:
    ex = await s.tools_call("required", prompt="Hello! Tell me a fun fact.")
    obs = {"http_status": ex.http_status, "calls": call_names(ex), "finish_reason": ex.finish_reason}
    if rejected(ex):
        return result(
            "fail", "tool_choice 'required' was rejected with an HTTP error (loud, not silent)", obs, ex
        )
    if ex.error:
        return result("fail", f"the request failed: {ex.error[:200]}", obs, ex)
    if ex.tool_calls:
        return result("pass", "a tool call was forced even for a prompt that needs none", obs, ex)
    return result(
        "silently_ignored", "HTTP 200 with zero tool calls although tool_choice was 'required'", obs, ex
    )


async def _tool_choice_named(s: ProbeSession) -> ProbeResult:
    choice = {"type": "function", "function": {"name": "get_time"}}
    ex = await s.tools_call(choice, tools=[WEATHER, TIME])
    obs = {"http_status": ex.http_status, "calls": call_names(ex)}
    if rejected(ex):
        return result("fail", "a named tool_choice was rejected with an HTTP error", obs, ex)
    if ex.error:
        return result("fail", f"the request failed: {ex.error[:200]}", obs, ex)
    if ex.tool_calls and set(call_names(ex)) == {"get_time"}:
        return result("pass", "only the named function get_time was called", obs, ex)
    if ex.tool_calls:
        return result(
            "silently_ignored", f"HTTP 200 but called {call_names(ex)} instead of the named get_time", obs, ex
        )
    return result("silently_ignored", "HTTP 200 with zero tool calls although a function was named", obs, ex)


async def _parallel_tool_calls_false(s: ProbeSession) -> ProbeResult:
    ex = await s.tools_call(
        "auto",
        prompt="What's the weather in Tokyo and in Osaka? Use get_weather.",
        parallel_tool_calls=False,
    )
    obs = {"http_status": ex.http_status, "calls": len(ex.tool_calls)}
    if rejected(ex):
        return result("fail", "parallel_tool_calls=false was rejected with an HTTP error", obs, ex)
    if ex.error:
        return result("fail", f"the request failed: {ex.error[:200]}", obs, ex)
    if len(ex.tool_calls) > 1:
        return result(
            "silently_ignored",
            f"{len(ex.tool_calls)} calls in one message despite parallel_tool_calls=false",
            obs,
            ex,
        )
    if len(ex.tool_calls) == 1:
        return result("pass", "one call in the message with parallel_tool_calls=false", obs, ex)
    return result(
        "not_applicable", "the model made no call at all, so the limit could not be observed", obs, ex
    )


TOOL_CHOICE = (
    FunctionProbe("tool_choice_none", FAMILY, _tool_choice_none),
    FunctionProbe("tool_choice_auto", FAMILY, _tool_choice_auto),
    FunctionProbe("tool_choice_required", FAMILY, _tool_choice_required),
    FunctionProbe("tool_choice_named", FAMILY, _tool_choice_named),
    FunctionProbe("parallel_tool_calls_false", FAMILY, _parallel_tool_calls_false),
)
