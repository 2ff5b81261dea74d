"""What the probes of one run share: the context, the request helpers, and the exchanges that a
later probe judges (finish reasons and argument schemas are checked over every tool response)."""

from __future__ import annotations

from typing import Any

from rigbench.records import Exchange
from rigbench.suites._context import SuiteContext
from rigbench.suites.agent._exchange import send
from rigbench.suites.agent._toolcalls import WEATHER, tool

__all__ = ["ASK", "SCHEMAS", "TIME", "ProbeSession", "call_names", "rejected"]

ASK = "What's the weather in Tokyo right now? Use the get_weather tool."
TIME = tool("get_time", "Get the current local time in a city.", {"city": {"type": "string"}}, ["city"])
SCHEMAS = {t["function"]["name"]: t["function"]["parameters"] for t in (WEATHER, TIME)}


class ProbeSession:
    """Deterministic requests (temperature 0, the run's seed) through the one client."""

    def __init__(self, ctx: SuiteContext, *, max_tokens: int, context_length: int | None = None) -> None:
        self.ctx = ctx
        self.max_tokens = max_tokens
        self.context_length = context_length  # the served context when neither the rig nor the server says
        self.tool_exchanges: list[Exchange] = []  # every tool-enabled response, for the call checks
        self.first_call: tuple[Exchange, dict[str, Any]] | None = None  # the model's first call and its request
        self.baseline_reasoning: Exchange | None = None  # a thinking answer, for the disable check

    def body(self, messages: list[dict[str, Any]] | str, **extra: Any) -> dict[str, Any]:
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

    async def send(self, body: dict[str, Any], *, streamed: bool) -> Exchange:
        return (await send(self.ctx.client, self.ctx.writer, body, streamed=streamed)).exchange

    async def tools_call(
        self, tool_choice: Any, tools: list[dict[str, Any]] | None = None, prompt: str = ASK, **extra: Any
    ) -> Exchange:
        body = self.body(prompt, tools=tools or [WEATHER], tool_choice=tool_choice, **extra)
        ex = await self.send(body, streamed=False)
        self.tool_exchanges.append(ex)
        if ex.tool_calls and self.first_call is None:
            self.first_call = (ex, body)
        return ex


def rejected(ex: Exchange) -> bool:
    """The server refused the request loudly (HTTP 4xx), which is never a silent failure."""
    return ex.http_status is not None and 400 <= ex.http_status < 500


def call_names(ex: Exchange) -> list[str]:
    return [(c.get("function") or {}).get("name") or "" for c in ex.tool_calls]

