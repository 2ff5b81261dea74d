"""Checks on the measured traffic itself, after the suites: the gate proves the rig can answer
questions; these prove the speed requests were served by that rig, honestly counted and timed.

Each check names the adversary it stops (the rogue-server gallery in `rigbench.testing._rogue`
plays each one; docs/honesty.md has the table):

- prompt dependence: different prompts answered with the same text, or with the text of an
  earlier reply (a gate answer): a canned or cached server.
- token counts: the server's `usage.completion_tokens` against rigbench's own count of the text it
  received, through the engine's tokenize endpoint (an unidentified server is tried with the bodies of
  the engines whose adapter says `tokenize_unidentified`), else
  against a bound no byte-level tokenizer can break (one token carries at least one byte).
- server timings: a server-reported `timings.predicted_ms` against the client's clock: a server
  cannot decode for longer than the whole request took, nor much faster than the tokens arrived.

Runs while the rig is still up (the token count needs the server's tokenizer); writes one
`TrafficCheck` record.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from typing import Any, Literal

from rigbench.client import ChatClient
from rigbench.errors import UsageError
from rigbench.records import StreamResult, TrafficCheck
from rigbench.rig.engines import EngineAdapter, get_adapter, known_engines

__all__ = ["check_traffic", "count_text_tokens", "requests_from_records"]

TOKENIZE_SAMPLE = 8  # requests whose text is re-tokenized (one /tokenize call each)
USAGE_TOLERANCE = 0.25  # reported may exceed rigbench's count by this share (re-tokenizing merges differently)...
USAGE_SLACK_TOKENS = 8  # ...plus this many tokens (special tokens that render as no text)
BYTES_SLACK_TOKENS = 8
TIMING_SLACK_S = 0.05  # client clock: scheduling noise on a loaded machine
TIMING_UNDERSTATE_FACTOR = 2.0  # the client saw the tokens arrive over more than this x the server's decode time
DUPLICATE_MIN_CHARS = 16  # outputs shorter than this may legitimately coincide ("OK.")
# A small greedy model given the same task over different filler can, now and then, write the same
# text twice (SmolLM2-135M's code_generation outputs share their first 60+ characters); a canned or
# cached server repeats nearly every output. So duplicates untrust at this share of the outputs.
DUPLICATE_MIN_SHARE = 0.5


def _norm(text: str) -> str:
    return " ".join(text.split()).casefold()


def _show(text: str, n: int = 50) -> str:
    one = " ".join(text.split())
    return repr(one[:n] + ("…" if len(one) > n else ""))


async def count_text_tokens(client: ChatClient, engine: str, text: str) -> int | None:
    """rigbench's own count of `text` in the served model's tokens, or None where no tokenizer
    answers. A server not identified as an engine is tried with the bodies of the engines whose adapter
    says `tokenize_unidentified`, in the order engines are matched."""
    adapters: list[EngineAdapter]
    try:
        adapters = [get_adapter(engine)]
    except UsageError:  # "unknown", or an engine no longer registered
        adapters = [a for a in (e.adapter() for e in known_engines()) if a.tokenize_unidentified]
    for adapter in adapters:
        try:
            toks = await adapter.tokenize(client, text)
        except Exception:  # absent endpoint, refused, not JSON: no count from this body shape
            continue
        if toks is not None:
            return len(toks)
    return None


async def check_traffic(
    client: ChatClient,
    engine: str,
    requests: Iterable[tuple[str, StreamResult]],
    *,
    earlier_replies: Iterable[tuple[str, str]] = (),
    history: Mapping[str, Collection[str]] | None = None,
    tokenize_sample: int = TOKENIZE_SAMPLE,
) -> TrafficCheck:
    """`requests`: (unit_id, result) of the measured requests, each sent with its own prompt.
    `earlier_replies`: (label, text) of replies to other prompts (the gate's answers).
    `history`: unit_id -> the unit_ids whose replies were sent back inside its prompt (a session's
    earlier turns). A reply that repeats one of those copies its own prompt, as small models do, so it
    is no sign of a canned server and is left out of the count; the same text in another session is not."""
    reqs = [(u, r) for u, r in requests if r.ok]
    history = history or {}
    reasons: list[str] = []
    examples: list[str] = []

    # 1. prompt dependence
    seen: dict[str, str] = {}
    for label, text in earlier_replies:
        if len(_norm(text)) >= DUPLICATE_MIN_CHARS:
            seen.setdefault(_norm(text), label)
    dupes = echoes = 0
    first_dupe = ""
    texts = {u: _norm(r.content + r.reasoning) for u, r in reqs}
    for u, _ in reqs:
        key = texts[u]
        if len(key) < DUPLICATE_MIN_CHARS:
            continue
        if any(texts.get(h) == key for h in history.get(u, ())):
            echoes += 1
            continue
        if key in seen:
            dupes += 1
            first_dupe = first_dupe or f"{u} repeats {seen[key]}: {_show(key)}"
        else:
            seen[key] = u
    judged = len(reqs) - echoes
    if dupes >= max(2, DUPLICATE_MIN_SHARE * judged):
        reasons.append(f"{dupes} of {judged} measured outputs are identical to the output for a different "
                       f"prompt (e.g. {first_dupe}): replies do not depend on the prompt (canned or cached)")
        examples.append(first_dupe)

    # 2. reported output tokens against rigbench's own count
    sample = [(u, r) for u, r in reqs if r.usage and isinstance(r.usage.get("completion_tokens"), int)
              and not r.tool_calls][:tokenize_sample]
    method: Literal["tokenize", "bytes_bound", "none"] = "none"
    inflated: list[str] = []
    for u, r in sample:
        reported = int(r.usage["completion_tokens"]) if r.usage else 0
        text = r.reasoning + r.content
        counted = await count_text_tokens(client, engine, text) if text else 0
        if counted is not None and method != "bytes_bound":
            method = "tokenize"
            if reported > counted * (1 + USAGE_TOLERANCE) + USAGE_SLACK_TOKENS:
                inflated.append(f"{u}: usage says {reported} output tokens, /tokenize of the received "
                                f"text counts {counted}")
        else:
            method = "bytes_bound"
            nbytes = len(text.encode())
            if reported > nbytes + BYTES_SLACK_TOKENS:
                inflated.append(f"{u}: usage says {reported} output tokens for {nbytes} bytes of text "
                                "(no tokenizer makes tokens of less than a byte)")
    if inflated:
        reasons.append(f"server-reported output tokens are inflated in {len(inflated)} of {len(sample)} "
                       f"requests checked (e.g. {inflated[0]}): tok/s from usage would be overstated")
        examples += inflated[:2]

    # 3. server timings against the client's clock
    checked = 0
    bad: list[str] = []
    for u, r in reqs:
        t = r.timings or {}
        ms, n = t.get("predicted_ms"), t.get("predicted_n")
        if not isinstance(ms, int | float) or not isinstance(n, int) or n < 2 or len(r.chunk_ns) < 2:
            continue
        checked += 1
        server_s = float(ms) / 1000.0
        whole_s = ((r.done_ns or r.chunk_ns[-1]) - r.sent_ns) / 1e9
        seen_s = (r.chunk_ns[-1] - r.chunk_ns[0]) / 1e9
        if server_s > whole_s + TIMING_SLACK_S:
            bad.append(f"{u}: timings say {server_s * 1000:.0f} ms of decoding, the whole request took "
                       f"{whole_s * 1000:.0f} ms on the client's clock")
        elif seen_s > TIMING_UNDERSTATE_FACTOR * server_s + TIMING_SLACK_S:
            bad.append(f"{u}: timings say {n} tokens decoded in {server_s * 1000:.0f} ms, the client saw "
                       f"them arrive over {seen_s * 1000:.0f} ms")
    if bad and len(bad) * 2 > checked:
        reasons.append(f"server timings contradict the client's clock in {len(bad)} of {checked} requests "
                       f"(e.g. {bad[0]}): the server's own speed figures are not to be believed")
        examples += bad[:2]
    return TrafficCheck(outputs=len(reqs), duplicate_outputs=dupes, usage_checked=len(sample), usage_method=method,
                        usage_inflated=len(inflated), timings_checked=checked, timings_inconsistent=len(bad),
                        reasons=reasons, examples=examples[:5])


def requests_from_records(raw: Iterable[dict[str, Any]]) -> list[tuple[str, StreamResult]]:
    """(unit_id, result) of stored speed_request records (latest write of each unit)."""
    out: dict[str, StreamResult] = {}
    for rec in raw:
        out[rec["unit_id"]] = StreamResult.model_validate(rec["result"])
    return list(out.items())
