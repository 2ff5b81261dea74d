"""Conformance probes: does the server honour what an agent framework asks of it?

Each probe sends small requests and gives a verdict with its evidence. "silently_ignored" is the
dangerous verdict: HTTP 200, no error, and the instruction had no effect (the seed's
`tool_choice: "required"` returning zero calls).
"""

from __future__ import annotations

import json
from typing import Any

import jsonschema

from rigbench.records import Exchange, ProbeRecord, ProbeVerdict
from rigbench.suites._context import SuiteContext
from rigbench.suites.agent._exchange import canonical_calls, parse_arguments, send
from rigbench.suites.agent._toolcalls import WEATHER, tool

__all__ = ["PROBES", "ProbesSuite"]

TIME = tool("get_time", "Get the current local time in a city.", {"city": {"type": "string"}}, ["city"])
_ASK = "What's the weather in Tokyo right now? Use the get_weather tool."
_SCHEMAS = {t["function"]["name"]: t["function"]["parameters"] for t in (WEATHER, TIME)}

PROBES = (
    "tool_choice_none",
    "tool_choice_auto",
    "tool_choice_required",
    "tool_choice_named",
    "parallel_tool_calls_false",
    "tool_call_id_round_trip",
    "stream_matches_non_stream",
    "finish_reason_consistent",
    "arguments_match_schema",
    "reasoning_field",
    "thinking_can_be_disabled",
    "stop_sequence",
    "max_tokens",
    "seed",
    "context_overflow",
)


def _rejected(ex: Exchange) -> bool:
    return ex.http_status is not None and 400 <= ex.http_status < 500


def _names(ex: Exchange) -> list[str]:
    return [(c.get("function") or {}).get("name") or "" for c in ex.tool_calls]


class ProbesSuite:
    """Runs every probe in `PROBES` once (they are deterministic requests at temperature 0)."""

    name = "agent_probes"

    def __init__(self, *, max_tokens: int = 128) -> None:
        self.max_tokens = max_tokens

    async def run(self, ctx: SuiteContext) -> None:
        if all(f"agent/probe/{p}" in ctx.done_units for p in PROBES):
            return
        self.ctx = ctx
        self.max_tokens = int(ctx.settings.get("probe_max_tokens", self.max_tokens))
        self.tool_exchanges: list[Exchange] = []
        self.first_call: tuple[Exchange, dict[str, Any]] | None = None
        self.baseline_reasoning: Exchange | None = None
        task = ctx.progress.task("agent: conformance probes", len(PROBES))
        for probe in PROBES:
            uid = f"agent/probe/{probe}"
            # Probes that judge earlier exchanges need those exchanges even on resume.
            verdict, detail, observed, exchanges = await getattr(self, f"_{probe}")()
            if uid not in ctx.done_units:
                ctx.writer.append(
                    ProbeRecord(
                        unit_id=uid,
                        probe=probe,
                        verdict=verdict,
                        detail=detail,
                        observed=observed,
                        exchanges=exchanges,
                    )
                )
            ctx.progress.advance(task)
        ctx.progress.done(task)

    # -- helpers ----------------------------------------------------------------------------

    def _body(self, messages: list[dict[str, Any]] | str, **extra: Any) -> dict[str, Any]:
        msgs = [{"role": "user", "content": messages}] if isinstance(messages, str) else messages
        body: dict[str, Any] = {
            "model": self.ctx.rig.model,
            "messages": msgs,
            "temperature": 0.0,
            "seed": self.ctx.seed,
            "max_tokens": self.max_tokens,
        }
        body.update(extra)
        return body

    async def _tools_call(
        self, tool_choice: Any, tools: list[dict[str, Any]] | None = None, prompt: str = _ASK, **extra: Any
    ) -> Exchange:
        body = self._body(prompt, tools=tools or [WEATHER], tool_choice=tool_choice, **extra)
        ex = (await send(self.ctx.client, self.ctx.writer, body, streamed=False)).exchange
        self.tool_exchanges.append(ex)
        if ex.tool_calls and self.first_call is None:
            self.first_call = (ex, body)
        return ex

    # -- tool_choice ------------------------------------------------------------------------

    async def _tool_choice_none(self) -> tuple[ProbeVerdict, str, dict[str, Any], list[Exchange]]:
        ex = await self._tools_call("none")
        obs = {"http_status": ex.http_status, "calls": len(ex.tool_calls)}
        if ex.error and not _rejected(ex):
            return "fail", f"the request failed: {ex.error[:200]}", obs, [ex]
        if _rejected(ex):
            return "fail", "tool_choice 'none' was rejected with an HTTP error", obs, [ex]
        if ex.tool_calls:
            return "silently_ignored", "tool_choice 'none' returned HTTP 200 with a tool call", obs, [ex]
        return "pass", "no tool call with tool_choice 'none'", obs, [ex]

    async def _tool_choice_auto(self) -> tuple[ProbeVerdict, str, dict[str, Any], list[Exchange]]:
        ex = await self._tools_call("auto")
        obs = {"http_status": ex.http_status, "calls": _names(ex)}
        if ex.error:
            return "fail", f"the request failed: {ex.error[:200]}", obs, [ex]
        if "get_weather" in _names(ex):
            return "pass", "the model called get_weather when asked to", obs, [ex]
        return (
            "fail",
            (
                "no tool call for a prompt that names the tool; the server may not support tool "
                "calling for this model's chat template"
            ),
            obs,
            [ex],
        )

    async def _tool_choice_required(self) -> tuple[ProbeVerdict, str, dict[str, Any], list[Exchange]]:
        ex = await self._tools_call("required", prompt="Hello! Tell me a fun fact.")
        obs = {"http_status": ex.http_status, "calls": _names(ex), "finish_reason": ex.finish_reason}
        if _rejected(ex):
            return (
                "fail",
                "tool_choice 'required' was rejected with an HTTP error (loud, not silent)",
                obs,
                [ex],
            )
        if ex.error:
            return "fail", f"the request failed: {ex.error[:200]}", obs, [ex]
        if ex.tool_calls:
            return "pass", "a tool call was forced even for a prompt that needs none", obs, [ex]
        return (
            "silently_ignored",
            "HTTP 200 with zero tool calls although tool_choice was 'required'",
            obs,
            [ex],
        )

    async def _tool_choice_named(self) -> tuple[ProbeVerdict, str, dict[str, Any], list[Exchange]]:
        choice = {"type": "function", "function": {"name": "get_time"}}
        ex = await self._tools_call(choice, tools=[WEATHER, TIME])
        obs = {"http_status": ex.http_status, "calls": _names(ex)}
        if _rejected(ex):
            return "fail", "a named tool_choice was rejected with an HTTP error", obs, [ex]
        if ex.error:
            return "fail", f"the request failed: {ex.error[:200]}", obs, [ex]
        if ex.tool_calls and set(_names(ex)) == {"get_time"}:
            return "pass", "only the named function get_time was called", obs, [ex]
        if ex.tool_calls:
            return (
                "silently_ignored",
                f"HTTP 200 but called {_names(ex)} instead of the named get_time",
                obs,
                [ex],
            )
        return "silently_ignored", "HTTP 200 with zero tool calls although a function was named", obs, [ex]

    async def _parallel_tool_calls_false(self) -> tuple[ProbeVerdict, str, dict[str, Any], list[Exchange]]:
        ex = await self._tools_call(
            "auto",
            prompt="What's the weather in Tokyo and in Osaka? Use get_weather.",
            parallel_tool_calls=False,
        )
        obs = {"http_status": ex.http_status, "calls": len(ex.tool_calls)}
        if _rejected(ex):
            return "fail", "parallel_tool_calls=false was rejected with an HTTP error", obs, [ex]
        if ex.error:
            return "fail", f"the request failed: {ex.error[:200]}", obs, [ex]
        if len(ex.tool_calls) > 1:
            return (
                "silently_ignored",
                f"{len(ex.tool_calls)} calls in one message despite parallel_tool_calls=false",
                obs,
                [ex],
            )
        if len(ex.tool_calls) == 1:
            return "pass", "one call in the message with parallel_tool_calls=false", obs, [ex]
        return (
            "not_applicable",
            "the model made no call at all, so the limit could not be observed",
            obs,
            [ex],
        )

    # -- call mechanics ---------------------------------------------------------------------

    async def _tool_call_id_round_trip(self) -> tuple[ProbeVerdict, str, dict[str, Any], list[Exchange]]:
        synthetic = self.first_call is None
        if self.first_call is not None:
            ex0, body0 = self.first_call
            call = ex0.tool_calls[0]
            messages = list(body0["messages"])
            tools = body0["tools"]
        else:  # the model never called: test the server's side with a call we write ourselves
            call = {
                "id": "call_rigbench_0",
                "type": "function",
                "function": {"name": "get_weather", "arguments": json.dumps({"city": "Tokyo"})},
            }
            messages = [{"role": "user", "content": _ASK}]
            tools = [WEATHER]
        cid = call.get("id")
        obs: dict[str, Any] = {"synthetic_call": synthetic, "call_id": cid}
        if not cid:
            return (
                "fail",
                "the model's tool call came back without an id, so results cannot be matched",
                obs,
                [],
            )
        messages += [
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": cid, "content": '{"condition": "sunny", "temperature_c": 21}'},
        ]
        ex = (
            await send(self.ctx.client, self.ctx.writer, self._body(messages, tools=tools), streamed=False)
        ).exchange
        obs["http_status"] = ex.http_status
        who = "a call rigbench wrote (the model made none)" if synthetic else "the model's own call"
        if ex.error:
            return "fail", f"a role:tool result for {who} was not accepted: {ex.error[:200]}", obs, [ex]
        return "pass", f"a role:tool result carrying the id of {who} was accepted and answered", obs, [ex]

    async def _stream_matches_non_stream(self) -> tuple[ProbeVerdict, str, dict[str, Any], list[Exchange]]:
        body = self._body(_ASK, tools=[WEATHER], tool_choice="auto")
        a = (await send(self.ctx.client, self.ctx.writer, body, streamed=False)).exchange
        b = (await send(self.ctx.client, self.ctx.writer, body, streamed=True)).exchange
        self.tool_exchanges += [a, b]
        ca, cb = canonical_calls(a.tool_calls), canonical_calls(b.tool_calls)
        obs = {"non_streamed_calls": ca, "streamed_calls": cb, "content_equal": a.content == b.content}
        if a.error or b.error:
            return "fail", f"a request failed: {(a.error or b.error or '')[:200]}", obs, [a, b]
        if not ca and not cb:
            return (
                "not_applicable",
                (
                    "no tool calls in either response; answer text "
                    + ("matched" if a.content == b.content else "differed")
                ),
                obs,
                [a, b],
            )
        if ca == cb:
            return (
                "pass",
                "streamed deltas assembled to the same calls as the non-streamed response",
                obs,
                [a, b],
            )
        return (
            "fail",
            "streamed and non-streamed responses carried different calls at temperature 0",
            obs,
            [a, b],
        )

    async def _finish_reason_consistent(self) -> tuple[ProbeVerdict, str, dict[str, Any], list[Exchange]]:
        seen = [ex for ex in self.tool_exchanges if not ex.error]
        bad = [
            (len(ex.tool_calls), ex.finish_reason)
            for ex in seen
            if bool(ex.tool_calls) != (ex.finish_reason == "tool_calls")
        ]
        with_calls = sum(1 for ex in seen if ex.tool_calls)
        obs = {"responses": len(seen), "with_calls": with_calls, "mismatches": bad}
        if not seen:
            return "not_applicable", "no successful tool-enabled response to check", obs, []
        if bad:
            return (
                "fail",
                f"{len(bad)} of {len(seen)} responses had a finish_reason that contradicts their calls",
                obs,
                [],
            )
        note = "" if with_calls else " (no response carried a call, so only the no-call side was checked)"
        return (
            "pass",
            f"finish_reason matched the presence of calls in all {len(seen)} responses{note}",
            obs,
            [],
        )

    async def _arguments_match_schema(self) -> tuple[ProbeVerdict, str, dict[str, Any], list[Exchange]]:
        calls = [c for ex in self.tool_exchanges for c in ex.tool_calls]
        problems = []
        for c in calls:
            name = (c.get("function") or {}).get("name") or ""
            args = parse_arguments(c)
            if args is None:
                problems.append(f"{name}: arguments are not a JSON object")
            elif name not in _SCHEMAS:
                problems.append(f"{name}: not an offered tool")
            else:
                try:
                    jsonschema.validate(args, _SCHEMAS[name])
                except jsonschema.ValidationError as e:
                    problems.append(f"{name}: {e.message}")
        obs = {"calls": len(calls), "problems": problems}
        if not calls:
            return "not_applicable", "the model made no tool call to check", obs, []
        if problems:
            return (
                "fail",
                f"{len(problems)} of {len(calls)} calls had invalid arguments: {problems[0]}",
                obs,
                [],
            )
        return "pass", f"all {len(calls)} calls had JSON arguments matching their schema", obs, []

    # -- reasoning --------------------------------------------------------------------------

    async def _reasoning_field(self) -> tuple[ProbeVerdict, str, dict[str, Any], list[Exchange]]:
        body = self._body(
            "Is 17 a prime number? Think step by step, then answer yes or no.", max_tokens=2 * self.max_tokens
        )
        a = (await send(self.ctx.client, self.ctx.writer, body, streamed=False)).exchange
        b = (await send(self.ctx.client, self.ctx.writer, body, streamed=True)).exchange
        self.baseline_reasoning = b if b.reasoning else a
        leak = any(t in (a.content + b.content) for t in ("<think>", "</think>"))
        obs = {
            "non_streamed_field": a.reasoning_field,
            "streamed_field": b.reasoning_field,
            "think_tags_in_content": leak,
        }
        if a.error or b.error:
            return "fail", f"a request failed: {(a.error or b.error or '')[:200]}", obs, [a, b]
        if leak:
            return (
                "fail",
                "reasoning arrives inside the answer content as <think> tags (no reasoning parser)",
                obs,
                [a, b],
            )
        if a.reasoning_field != b.reasoning_field:
            return (
                "fail",
                (
                    f"streamed reasoning uses {b.reasoning_field!r} but non-streamed uses "
                    f"{a.reasoning_field!r}"
                ),
                obs,
                [a, b],
            )
        if a.reasoning_field is None:
            return "not_applicable", "the model emitted no separate reasoning in either mode", obs, [a, b]
        return "pass", f"reasoning arrives in `{a.reasoning_field}`, separate from the answer", obs, [a, b]

    async def _thinking_can_be_disabled(self) -> tuple[ProbeVerdict, str, dict[str, Any], list[Exchange]]:
        base = self.baseline_reasoning
        body = self._body(
            "Is 17 a prime number? Think step by step, then answer yes or no.",
            max_tokens=2 * self.max_tokens,
            chat_template_kwargs={"enable_thinking": False},
            reasoning_effort="none",
        )
        ex = (await send(self.ctx.client, self.ctx.writer, body, streamed=True)).exchange
        obs = {
            "baseline_reasoning_chars": len(base.reasoning) if base else None,
            "disabled_reasoning_chars": len(ex.reasoning),
            "http_status": ex.http_status,
        }
        if _rejected(ex):
            return "fail", "the request to disable thinking was rejected with an HTTP error", obs, [ex]
        if ex.error:
            return "fail", f"the request failed: {ex.error[:200]}", obs, [ex]
        if base is None or not base.reasoning:
            return (
                "not_applicable",
                "the model does not think by default, so there is nothing to disable",
                obs,
                [ex],
            )
        if ex.reasoning:
            return (
                "silently_ignored",
                (
                    f"HTTP 200 but still {len(ex.reasoning)} characters of reasoning with "
                    "enable_thinking=false and reasoning_effort='none'"
                ),
                obs,
                [ex],
            )
        return "pass", "no reasoning with enable_thinking=false / reasoning_effort='none'", obs, [ex]

    # -- sampling controls ------------------------------------------------------------------

    async def _stop_sequence(self) -> tuple[ProbeVerdict, str, dict[str, Any], list[Exchange]]:
        prompt = "Write three sentences about the sea."
        a = (await send(self.ctx.client, self.ctx.writer, self._body(prompt), streamed=True)).exchange
        words = [w.strip(".,!?;:\"'") for w in a.content.split()]
        # A word from the middle of the baseline answer: the stopped answer must end before it.
        stop = next(
            (w for i, w in enumerate(words) if i >= 4 and len(w) >= 4),
            None,
        )
        if a.error or stop is None:
            why = a.error[:200] if a.error else "the baseline answer was too short to pick a stop word"
            return "not_applicable", why, {}, [a]
        b = (
            await send(
                self.ctx.client,
                self.ctx.writer,
                self._body(prompt, stop=[stop]),
                streamed=True,
            )
        ).exchange
        obs = {
            "stop": stop,
            "baseline_chars": len(a.content),
            "stopped_chars": len(b.content),
            "finish_reason": b.finish_reason,
        }
        if b.error:
            return "fail", f"the request with a stop sequence failed: {b.error[:200]}", obs, [a, b]
        if stop in b.content:
            return "silently_ignored", f"the stop sequence {stop!r} appears in the output", obs, [a, b]
        return "pass", f"output ended before the stop sequence {stop!r}", obs, [a, b]

    async def _max_tokens(self) -> tuple[ProbeVerdict, str, dict[str, Any], list[Exchange]]:
        ex = (
            await send(
                self.ctx.client,
                self.ctx.writer,
                self._body("Write a long story about a dragon.", max_tokens=5),
                streamed=True,
            )
        ).exchange
        n = ex.usage.get("completion_tokens") if ex.usage else None
        obs = {"completion_tokens": n, "finish_reason": ex.finish_reason}
        if ex.error:
            return "fail", f"the request failed: {ex.error[:200]}", obs, [ex]
        if not isinstance(n, int):
            return (
                "fail",
                "no usage.completion_tokens in the response, so max_tokens cannot be verified",
                obs,
                [ex],
            )
        if n > 5:
            return "silently_ignored", f"{n} tokens generated with max_tokens=5", obs, [ex]
        if n == 5 and ex.finish_reason != "length":
            return (
                "fail",
                f"stopped at the limit but finish_reason is {ex.finish_reason!r}, not 'length'",
                obs,
                [ex],
            )
        return "pass", f"{n} tokens with max_tokens=5, finish_reason {ex.finish_reason!r}", obs, [ex]

    async def _seed(self) -> tuple[ProbeVerdict, str, dict[str, Any], list[Exchange]]:
        prompt = "Invent a name for a new color and describe it."
        ex = []
        for s in (1234, 1234, 98765):
            body = self._body(prompt, temperature=1.0, top_p=1.0, seed=s, max_tokens=min(48, self.max_tokens))
            ex.append((await send(self.ctx.client, self.ctx.writer, body, streamed=True)).exchange)
        same = ex[0].content == ex[1].content
        other = ex[0].content != ex[2].content
        obs = {"same_seed_equal": same, "other_seed_differs": other}
        if any(e.error for e in ex):
            return "fail", "a sampling request failed", obs, ex
        if not same:
            return (
                "silently_ignored",
                "two requests with seed=1234 at temperature 1 gave different text",
                obs,
                ex,
            )
        if not other:
            return (
                "pass",
                (
                    "same seed gave the same text; a different seed also gave the same text, so the "
                    "output may be deterministic regardless of the seed"
                ),
                obs,
                ex,
            )
        return "pass", "same seed gave the same text and a different seed different text", obs, ex

    async def _context_overflow(self) -> tuple[ProbeVerdict, str, dict[str, Any], list[Exchange]]:
        n_ctx = self.ctx.rig.context_length or int(self.ctx.settings.get("context_length", 0) or 0)
        if not n_ctx:  # llama.cpp says it in /props
            status, props = await self.ctx.client.get_json(self.ctx.rig.server_root + "/props")
            if status == 200 and isinstance(props, dict):
                n_ctx = int((props.get("default_generation_settings") or {}).get("n_ctx") or 0)
        if not n_ctx:
            return (
                "not_applicable",
                "the served context length is unknown, so no prompt can be sized past it",
                {},
                [],
            )
        words = int(n_ctx * 1.5) + 256  # "lorem" is at least one token per word in every tokenizer seen
        prompt = "Summarise this: " + "lorem " * words
        ex = (
            await send(self.ctx.client, self.ctx.writer, self._body(prompt, max_tokens=8), streamed=False)
        ).exchange
        obs = {
            "context_length": n_ctx,
            "prompt_words": words,
            "http_status": ex.http_status,
            "prompt_tokens": (ex.usage or {}).get("prompt_tokens"),
        }
        if _rejected(ex):
            return (
                "pass",
                f"HTTP {ex.http_status} with an error for a prompt past the {n_ctx}-token context",
                obs,
                [ex],
            )
        if ex.error:
            return "fail", f"an unclear failure for an over-long prompt: {ex.error[:200]}", obs, [ex]
        return (
            "silently_ignored",
            (
                "HTTP 200 for a prompt longer than the context: the input was truncated "
                "or shifted without an error"
            ),
            obs,
            [ex],
        )
