"""The seed's tool-call cases: five single-message cases and the two-city parallel case.

Each case runs `k` trials; every trial records how many calls each assistant message carried,
because the seed's model sometimes batched calls and sometimes split them across messages.
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jsonschema

from rigbench.records import Exchange, ToolTrialRecord
from rigbench.suites._context import SuiteContext
from rigbench.suites.agent._exchange import parse_arguments, send
from rigbench.suites.agent._settings import AgentSettings

__all__ = ["TOOL_CASES", "ToolCallSuite", "ToolCase", "grade_calls", "tool"]


def tool(name: str, description: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": properties, "required": required},
        },
    }


WEATHER = tool(
    "get_weather",
    "Get the current weather for a city.",
    {"city": {"type": "string", "description": "City name, e.g. Tokyo"}},
    ["city"],
)
CURRENCY = tool(
    "convert_currency",
    "Convert an amount of money from one currency to another.",
    {
        "amount": {"type": "number"},
        "from_currency": {"type": "string", "description": "ISO code"},
        "to_currency": {"type": "string", "description": "ISO code"},
    },
    ["amount", "from_currency", "to_currency"],
)
TICKET = tool(
    "create_ticket",
    "Create a work ticket.",
    {
        "title": {"type": "string"},
        "assignee": {
            "type": "object",
            "properties": {"name": {"type": "string"}, "team": {"type": "string"}},
            "required": ["name", "team"],
        },
        "priority": {"type": "string", "enum": ["low", "medium", "high"]},
        "estimated_hours": {"type": "integer"},
    },
    ["title", "assignee", "priority", "estimated_hours"],
)
SEARCH = tool(
    "search_menu",
    "Search the cafe menu by keyword.",
    {"keyword": {"type": "string", "description": "Search keyword"}},
    ["keyword"],
)


@dataclass(frozen=True)
class Expected:
    """What a correct trial does: these calls (name -> argument predicate), or none at all."""

    calls: tuple[tuple[str, Callable[[dict[str, Any]], bool]], ...] = ()


@dataclass(frozen=True)
class ToolCase:
    name: str
    prompt: str
    tools: tuple[dict[str, Any], ...]
    expected: Expected
    multi_message: bool = False  # keep answering calls until the model stops (parallel case)


def _norm(s: Any) -> str:
    return unicodedata.normalize("NFKC", str(s)).strip().lower()


def _city(name: str) -> Callable[[dict[str, Any]], bool]:
    return lambda a: _norm(a.get("city", "")).split(",")[0].strip() == name


TOOL_CASES: tuple[ToolCase, ...] = (
    ToolCase(
        "weather",
        "What's the weather in Tokyo right now?",
        (WEATHER,),
        Expected((("get_weather", _city("tokyo")),)),
    ),
    ToolCase(
        "choose_tool",
        "Convert 100 US dollars to Japanese yen.",
        (WEATHER, CURRENCY),
        Expected(
            (
                (
                    "convert_currency",
                    lambda a: (
                        a.get("amount") in (100, 100.0)
                        and _norm(a.get("from_currency")) == "usd"
                        and _norm(a.get("to_currency")) == "jpy"
                    ),
                ),
            )
        ),
    ),
    ToolCase(
        "nested_args",
        "Create a high-priority ticket titled 'Fix login timeout', assigned to Sato on the "
        "infra team, estimated at 8 hours.",
        (TICKET,),
        Expected(
            (
                (
                    "create_ticket",
                    lambda a: (
                        isinstance(a.get("assignee"), dict)
                        and _norm(a["assignee"].get("name")) == "sato"
                        and _norm(a["assignee"].get("team")) == "infra"
                        and a.get("priority") == "high"
                        and a.get("estimated_hours") == 8
                        and type(a.get("estimated_hours")) is int
                    ),
                ),
            )
        ),
    ),
    ToolCase(
        "japanese_arg",
        "メニューで「ほうじ茶ラテ」を検索してください。",
        (SEARCH,),
        Expected((("search_menu", lambda a: _norm(a.get("keyword")) == _norm("ほうじ茶ラテ")),)),
    ),
    ToolCase("no_call_greeting", "Hi! How are you today?", (WEATHER,), Expected(())),
    ToolCase(
        "parallel_two_cities",
        "What's the weather in Tokyo and in Osaka?",
        (WEATHER,),
        Expected((("get_weather", _city("tokyo")), ("get_weather", _city("osaka")))),
        multi_message=True,
    ),
)


def grade_calls(case: ToolCase, calls: list[dict[str, Any]]) -> tuple[bool, str]:
    """Every expected call made exactly once (any order), nothing else, arguments valid for the schema."""
    schemas = {t["function"]["name"]: t["function"]["parameters"] for t in case.tools}
    parsed: list[tuple[str, dict[str, Any]]] = []
    for c in calls:
        name = (c.get("function") or {}).get("name") or ""
        args = parse_arguments(c)
        if args is None:
            raw = (c.get("function") or {}).get("arguments")
            return False, f"arguments of {name!r} are not a JSON object: {raw!r}"
        if name not in schemas:
            return False, f"called {name!r}, which is not one of the tools offered"
        try:
            jsonschema.validate(args, schemas[name])
        except jsonschema.ValidationError as e:
            return False, f"arguments of {name} do not match its schema: {e.message}"
        parsed.append((name, args))
    if not case.expected.calls:
        return (True, "ok") if not parsed else (False, f"made {len(parsed)} call(s) where none was right")
    if len(parsed) != len(case.expected.calls):
        return False, f"expected {len(case.expected.calls)} call(s), got {len(parsed)}"
    left = list(parsed)
    for name, pred in case.expected.calls:
        hit = next((i for i, (n, a) in enumerate(left) if n == name and pred(a)), None)
        if hit is None:
            got = json.dumps([{n: a} for n, a in parsed], ensure_ascii=False)[:300]
            return False, f"no call of {name} with the right arguments; got {got}"
        left.pop(hit)
    return True, "ok"


def _fake_result(call: dict[str, Any]) -> str:
    args = parse_arguments(call) or {}
    return json.dumps({"city": args.get("city"), "condition": "sunny", "temperature_c": 21})


class ToolCallSuite:
    """The seed's tool-call cases, `tool_trials` times each, `tool_max_tokens` per request."""

    name = "agent_tools"

    def __init__(self, settings: AgentSettings, *, max_messages: int = 4) -> None:
        self.settings = settings
        self.max_tokens = self.settings.tool_max_tokens
        self.max_messages = max_messages

    async def run(self, ctx: SuiteContext) -> None:
        trials = self.settings.tool_trials
        units = [(c, t) for c in TOOL_CASES for t in range(trials)]
        todo = [(c, t) for c, t in units if f"agent/tool/{c.name}/t{t}" not in ctx.done_units]
        task = ctx.progress.task("agent: tool-call cases", len(todo))
        for case, trial in todo:
            ctx.writer.append(await self._trial(ctx, case, trial))
            ctx.progress.advance(task)
        ctx.progress.done(task)

    async def _trial(self, ctx: SuiteContext, case: ToolCase, trial: int) -> ToolTrialRecord:
        messages: list[dict[str, Any]] = [{"role": "user", "content": case.prompt}]
        exchanges: list[Exchange] = []
        per_message: list[int] = []
        calls: list[dict[str, Any]] = []
        error = None
        for _ in range(self.max_messages if case.multi_message else 1):
            body = {
                "model": ctx.rig.model,
                "messages": messages,
                "tools": list(case.tools),
                "tool_choice": "auto",
                "temperature": 0.0,
                "seed": ctx.seed + trial,
                "max_tokens": self.max_tokens,
            }
            reply = await send(ctx.client, ctx.writer, body)
            exchanges.append(reply.exchange)
            if reply.exchange.error:
                error = reply.exchange.error
                break
            per_message.append(len(reply.exchange.tool_calls))
            calls.extend(reply.exchange.tool_calls)
            if not reply.exchange.tool_calls or not case.multi_message:
                break
            messages = [
                *messages,
                reply.message,
                *(
                    {"role": "tool", "tool_call_id": c.get("id") or f"call_{i}", "content": _fake_result(c)}
                    for i, c in enumerate(reply.exchange.tool_calls)
                ),
            ]
        if error is not None:
            passed, reason = False, f"request failed: {error[:300]}"
        else:
            passed, reason = grade_calls(case, calls)
        return ToolTrialRecord(
            unit_id=f"agent/tool/{case.name}/t{trial}",
            case=case.name,
            trial=trial,
            passed=passed,
            reason=reason,
            calls_per_message=per_message,
            exchanges=exchanges,
        )
