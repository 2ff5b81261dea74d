"""Sampling controls and limits: stop sequences, max_tokens, seed, and a prompt past the context."""

from __future__ import annotations

from rigbench.suites.agent.probes._protocol import FunctionProbe, ProbeResult, result
from rigbench.suites.agent.probes._session import ProbeSession, rejected

__all__ = ["SAMPLING_CONTROLS"]

FAMILY = "sampling_controls"


async def _stop_sequence(s: ProbeSession) -> ProbeResult:
    prompt = "Write three sentences about the sea."
    a = await s.send(s.body(prompt), streamed=True)
    words = [w.strip(".,!?;:\"'") for w in a.content.split()]
    # A word from the middle of the baseline answer: the stopped answer must end before it.
    stop = next(
        (w for i, w in enumerate(words) if i >= 4 and len(w) >= 4),
        None,
    )
    if a.error or stop is None:
        why = a.error[:200] if a.error else "the baseline answer was too short to pick a stop word"
        return result("not_applicable", why, {}, a)
    b = await s.send(s.body(prompt, stop=[stop]), streamed=True)
    obs = {
        "stop": stop,
        "baseline_chars": len(a.content),
        "stopped_chars": len(b.content),
        "finish_reason": b.finish_reason,
    }
    if b.error:
        return result("fail", f"the request with a stop sequence failed: {b.error[:200]}", obs, a, b)
    if stop in b.content:
        return result("silently_ignored", f"the stop sequence {stop!r} appears in the output", obs, a, b)
    return result("pass", f"output ended before the stop sequence {stop!r}", obs, a, b)


async def _max_tokens(s: ProbeSession) -> ProbeResult:
    ex = await s.send(s.body("Write a long story about a dragon.", max_tokens=5), streamed=True)
    n = ex.usage.get("completion_tokens") if ex.usage else None
    obs = {"completion_tokens": n, "finish_reason": ex.finish_reason}
    if ex.error:
        return result("fail", f"the request failed: {ex.error[:200]}", obs, ex)
    if not isinstance(n, int):
        return result(
            "fail", "no usage.completion_tokens in the response, so max_tokens cannot be verified", obs, ex
        )
    if n > 5:
        return result("silently_ignored", f"{n} tokens generated with max_tokens=5", obs, ex)
    if n == 5 and ex.finish_reason != "length":
        return result(
            "fail", f"stopped at the limit but finish_reason is {ex.finish_reason!r}, not 'length'", obs, ex
        )
    return result("pass", f"{n} tokens with max_tokens=5, finish_reason {ex.finish_reason!r}", obs, ex)


async def _seed(s: ProbeSession) -> ProbeResult:
    prompt = "Invent a name for a new color and describe it."
    ex = []
    for seed in (1234, 1234, 98765):
        body = s.body(prompt, temperature=1.0, top_p=1.0, seed=seed, max_tokens=min(48, s.max_tokens))
        ex.append(await s.send(body, streamed=True))
    same = ex[0].content == ex[1].content
    other = ex[0].content != ex[2].content
    obs = {"same_seed_equal": same, "other_seed_differs": other}
    if any(e.error for e in ex):
        return result("fail", "a sampling request failed", obs, *ex)
    if not same:
        return result(
            "silently_ignored", "two requests with seed=1234 at temperature 1 gave different text", obs, *ex
        )
    if not other:
        return result(
            "pass",
            (
                "same seed gave the same text; a different seed also gave the same text, so the "
                "output may be deterministic regardless of the seed"
            ),
            obs,
            *ex,
        )
    return result("pass", "same seed gave the same text and a different seed different text", obs, *ex)


async def _context_overflow(s: ProbeSession) -> ProbeResult:
    n_ctx = s.ctx.rig.context_length or s.context_length or 0
    if not n_ctx:  # llama.cpp says it in /props
        status, props = await s.ctx.client.get_json(s.ctx.rig.server_root + "/props")
        if status == 200 and isinstance(props, dict):
            n_ctx = int((props.get("default_generation_settings") or {}).get("n_ctx") or 0)
    if not n_ctx:
        return result(
            "not_applicable", "the served context length is unknown, so no prompt can be sized past it", {}
        )
    words = int(n_ctx * 1.5) + 256  # "lorem" is at least one token per word in every tokenizer seen
    prompt = "Summarise this: " + "lorem " * words
    ex = await s.send(s.body(prompt, max_tokens=8), streamed=False)
    obs = {
        "context_length": n_ctx,
        "prompt_words": words,
        "http_status": ex.http_status,
        "prompt_tokens": (ex.usage or {}).get("prompt_tokens"),
    }
    if rejected(ex):
        return result(
            "pass",
            f"HTTP {ex.http_status} with an error for a prompt past the {n_ctx}-token context",
            obs,
            ex,
        )
    if ex.error:
        return result("fail", f"an unclear failure for an over-long prompt: {ex.error[:200]}", obs, ex)
    return result(
        "silently_ignored",
        (
            "HTTP 200 for a prompt longer than the context: the input was truncated "
            "or shifted without an error"
        ),
        obs,
        ex,
    )


SAMPLING_CONTROLS = (
    FunctionProbe("stop_sequence", FAMILY, _stop_sequence),
    FunctionProbe("max_tokens", FAMILY, _max_tokens),
    FunctionProbe("seed", FAMILY, _seed),
    FunctionProbe("context_overflow", FAMILY, _context_overflow),
)
