"""Reasoning: does it arrive in its own field, the same one streamed and not, and can it be
turned off?"""

from __future__ import annotations

from rigbench.suites.agent.probes._protocol import FunctionProbe, ProbeResult, result
from rigbench.suites.agent.probes._session import ProbeSession, rejected

__all__ = ["REASONING"]

FAMILY = "reasoning"


async def _reasoning_field(s: ProbeSession) -> ProbeResult:
    body = s.body(
        "Is 17 a prime number? Think step by step, then answer yes or no.", max_tokens=2 * s.max_tokens
    )
    a = await s.send(body, streamed=False)
    b = await s.send(body, streamed=True)
    s.baseline_reasoning = b if b.reasoning else a
    leak = any(t in (a.content + b.content) for t in ("<think>", "</think>"))
    obs = {
        "non_streamed_field": a.reasoning_field,
        "streamed_field": b.reasoning_field,
        "think_tags_in_content": leak,
    }
    if a.error or b.error:
        return result("fail", f"a request failed: {(a.error or b.error or '')[:200]}", obs, a, b)
    if leak:
        return result(
            "fail",
            "reasoning arrives inside the answer content as <think> tags (no reasoning parser)",
            obs,
            a,
            b,
        )
    if a.reasoning_field != b.reasoning_field:
        return result(
            "fail",
            (f"streamed reasoning uses {b.reasoning_field!r} but non-streamed uses {a.reasoning_field!r}"),
            obs,
            a,
            b,
        )
    if a.reasoning_field is None:
        return result("not_applicable", "the model emitted no separate reasoning in either mode", obs, a, b)
    return result("pass", f"reasoning arrives in `{a.reasoning_field}`, separate from the answer", obs, a, b)


async def _thinking_can_be_disabled(s: ProbeSession) -> ProbeResult:
    base = s.baseline_reasoning
    body = s.body(
        "Is 17 a prime number? Think step by step, then answer yes or no.",
        max_tokens=2 * s.max_tokens,
        chat_template_kwargs={"enable_thinking": False},
        reasoning_effort="none",
    )
    ex = await s.send(body, streamed=True)
    obs = {
        "baseline_reasoning_chars": len(base.reasoning) if base else None,
        "disabled_reasoning_chars": len(ex.reasoning),
        "http_status": ex.http_status,
    }
    if rejected(ex):
        return result("fail", "the request to disable thinking was rejected with an HTTP error", obs, ex)
    if ex.error:
        return result("fail", f"the request failed: {ex.error[:200]}", obs, ex)
    if base is None or not base.reasoning:
        return result(
            "not_applicable", "the model does not think by default, so there is nothing to disable", obs, ex
        )
    if ex.reasoning:
        return result(
            "silently_ignored",
            (
                f"HTTP 200 but still {len(ex.reasoning)} characters of reasoning with "
                "enable_thinking=false and reasoning_effort='none'"
            ),
            obs,
            ex,
        )
    return result("pass", "no reasoning with enable_thinking=false / reasoning_effort='none'", obs, ex)


REASONING = (
    FunctionProbe("reasoning_field", FAMILY, _reasoning_field),
    FunctionProbe("thinking_can_be_disabled", FAMILY, _thinking_can_be_disabled),
)
