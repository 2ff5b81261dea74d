"""The probe protocol: a new family runs through `Probe` and `ProbeRegistry` alone, its records
land in the run and the report like the shipped ones, and a malformed probe or result is refused
with an error that names the probe and says what to return."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from rigbench.analysis._agent import summarize_agent
from rigbench.errors import ProbeError
from rigbench.report._agent import render_agent_markdown
from rigbench.store import RunReader
from rigbench.suites.agent import PROBES, AgentSettings
from rigbench.suites.agent.probes import (
    DEFAULT_PROBES,
    FunctionProbe,
    ProbeRegistry,
    ProbeResult,
    ProbeSession,
    ProbesSuite,
)
from tests.unit.test_agent_suites import _ctx, _run, _serve, seed_model


class EchoProbe:
    """A family of its own, written against the protocol only (no FunctionProbe, no shipped helper
    but the session): does the server repeat a word when asked to?"""

    family = "echo"

    def __init__(self, word: str) -> None:
        self.word = word

    @property
    def name(self) -> str:
        return f"echo_{self.word}"

    async def run(self, session: ProbeSession) -> ProbeResult:
        ex = await session.send(session.body(f"Repeat the word {self.word}."), streamed=True)
        said = self.word in ex.content
        return ProbeResult(verdict="pass" if said else "fail",
                           detail=f"the answer {'repeats' if said else 'does not repeat'} {self.word!r}",
                           observed={"content": ex.content}, exchanges=[ex])


def _echo_model(body: dict[str, Any]) -> tuple[str, str, list[dict[str, Any]]]:
    text = body["messages"][-1]["content"]
    if text.startswith("Repeat the word "):
        word = text.removeprefix("Repeat the word ").rstrip(".")
        return ("I cannot." if word == "never" else f"{word} {word}"), "", []
    return seed_model(body)


@pytest.fixture
async def echo_url() -> AsyncIterator[str]:
    async for u in _serve(_echo_model):
        yield u


async def test_a_new_family_runs_through_the_protocol_and_reaches_the_report(echo_url: str, tmp_path: Path) -> None:
    registry = ProbeRegistry([EchoProbe("tokyo"), EchoProbe("never")])
    assert registry.families == {"echo": ("echo_tokyo", "echo_never")}
    reader = await _run(ProbesSuite(AgentSettings(), registry=registry), _ctx(echo_url, tmp_path / "run"))
    recs = list(reader.raw_records("agent_probe"))
    assert [(r["unit_id"], r["verdict"]) for r in recs] == [("agent/probe/echo_tokyo", "pass"),
                                                            ("agent/probe/echo_never", "fail")]
    assert recs[0]["exchanges"][0]["request"]["messages"][0]["content"] == "Repeat the word tokyo."
    assert recs[1]["observed"] == {"content": "I cannot."}
    md = render_agent_markdown(summarize_agent(reader))
    assert "| echo_never | **FAIL** | the answer does not repeat 'never' |" in md


async def test_a_new_family_runs_after_the_shipped_ones(echo_url: str, tmp_path: Path) -> None:
    reader = await _run(ProbesSuite(AgentSettings(), registry=ProbeRegistry([*DEFAULT_PROBES, EchoProbe("osaka")])),
                        _ctx(echo_url, tmp_path / "run"))
    probes = [r["probe"] for r in reader.raw_records("agent_probe")]
    assert probes == [*PROBES, "echo_osaka"]


class _Returns:
    family = "broken"

    def __init__(self, name: str, result: object) -> None:
        self.name = name
        self.result = result

    async def run(self, session: ProbeSession) -> Any:
        return self.result


@pytest.mark.parametrize(("result", "message"), [
    (("pass", "old-style tuple", {}, []),
     r"probe 'legacy' \(family 'broken'\) returned tuple \('pass', 'old-style tuple', \{\}, \[\]\), not a "
     r"ProbeResult; return ProbeResult\(verdict=\.\.\."),
    (ProbeResult.model_construct(verdict="maybe", detail="", observed={}, exchanges=[]),
     r"probe 'legacy' \(family 'broken'\) returned an invalid ProbeResult: verdict: Input should be 'pass', "
     r"'fail', 'silently_ignored' or 'not_applicable' \(got 'maybe'\); detail: String should have at least 1 "
     r"character"),
])
async def test_a_malformed_result_is_refused_and_not_stored(echo_url: str, tmp_path: Path, result: object,
                                                            message: str) -> None:
    registry = ProbeRegistry([EchoProbe("tokyo"), _Returns("legacy", result)])
    ctx = _ctx(echo_url, tmp_path / "run")
    with pytest.raises(ProbeError, match=message):
        await _run(ProbesSuite(AgentSettings(), registry=registry), ctx)
    assert [r["probe"] for r in RunReader(tmp_path / "run").raw_records("agent_probe")] == ["echo_tokyo"]


async def _noop(session: ProbeSession) -> ProbeResult:
    return ProbeResult(verdict="not_applicable", detail="nothing to check")


def test_the_registry_refuses_what_cannot_be_run_or_stored() -> None:
    with pytest.raises(ProbeError, match="two probes are named 'seed'"):
        ProbeRegistry([*DEFAULT_PROBES, FunctionProbe("seed", "mine", _noop)])
    with pytest.raises(ProbeError, match="is not a probe: a probe has `name`, `family` and an async `run"):
        ProbeRegistry([object()])  # type: ignore[list-item]
    with pytest.raises(ProbeError, match="cannot be a unit id"):
        ProbeRegistry([FunctionProbe("a/b", "mine", _noop)])


def test_shipped_probes_keep_their_names_order_and_families() -> None:
    # the names are unit ids of stored runs: renaming one would make resume redo it and compare lose it
    assert PROBES == (
        "tool_choice_none", "tool_choice_auto", "tool_choice_required", "tool_choice_named",
        "parallel_tool_calls_false", "tool_call_id_round_trip", "stream_matches_non_stream",
        "finish_reason_consistent", "arguments_match_schema", "reasoning_field", "thinking_can_be_disabled",
        "stop_sequence", "max_tokens", "seed", "context_overflow",
    )
    assert {f: len(n) for f, n in DEFAULT_PROBES.families.items()} == {
        "tool_choice": 5, "call_mechanics": 4, "reasoning": 2, "sampling_controls": 4}
