"""The engine's own counters, drawn: speculative-decoding telemetry per scenario and the client-vs-server timing
cross-check. Terminal (rich) and Markdown; nothing is computed here."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console

from rigbench.analysis import ScenarioTelemetry, TimingCrossCheck
from rigbench.report._cells import Section, section_markdown, section_terminal
from rigbench.report._fmt import fmt_fixed, fmt_pct

__all__ = ["telemetry_markdown", "telemetry_sections", "telemetry_terminal"]


# -- telemetry and timing cross-check ------------------------------------------------------------

_TEL_HEADER = ["scenario", "c", "samples (Hz)", "accept. length", "accept. rate", "KV peak", "running peak",
               "waiting peak"]


def _tel_rows(ts: Sequence[ScenarioTelemetry]) -> list[list[str]]:
    return [[t.scenario, str(t.concurrency),
             t.unavailable or f"{t.samples} ({fmt_fixed(t.sample_rate_hz, 1)})",
             fmt_fixed(t.mean_acceptance_length), fmt_pct(t.acceptance_rate), fmt_pct(t.kv_usage_peak),
             fmt_fixed(t.requests_running_peak, 0), fmt_fixed(t.requests_waiting_peak, 0)] for t in ts]


def _cc_rows(cs: Sequence[TimingCrossCheck]) -> list[list[str]]:
    return [[c.scenario, str(c.concurrency), str(c.requests), fmt_fixed(c.client_decode_tok_s, 1),
             fmt_fixed(c.server_decode_tok_s, 1), fmt_fixed(c.ratio, 3),
             "–" if c.ttft_minus_prompt_s is None else f"{c.ttft_minus_prompt_s * 1000:.1f} ms",
             {True: "yes", False: "NO", None: "–"}[c.agrees]] for c in cs]


_CC_HEADER = ["scenario", "c", "n", "client decode tok/s", "server decode tok/s", "ratio", "TTFT − prompt",
              "agree"]


_TEL_SHORT = ["scenario", "c", "samples\n(Hz)", "accept\nlen", "accept\nrate", "KV\npeak", "run\npeak",
              "wait\npeak"]
_TEL_KEY = ("accept len: mean acceptance length (tokens per target pass, bonus included); accept rate: accepted / "
            "drafted tokens; KV, run, wait peak: highest KV-cache usage, requests running, requests waiting over "
            "the scenario's scrapes.")
_CC_SHORT = ["scenario", "c", "n", "client\ntok/s", "server\ntok/s", "client/\nserver", "TTFT −\nprompt",
             "agree"]
_CC_KEY = ("Decode tok/s per request, median: measured by rigbench (client) and from llama.cpp's `timings` "
           "(server); agree: within ±10%. TTFT − prompt: time outside the server's prompt processing.")


def telemetry_sections(ts: Sequence[ScenarioTelemetry], checks: Sequence[TimingCrossCheck]) -> list[Section]:
    """Server telemetry per scenario, then the client-vs-server timing check (each only when there is data)."""
    out = []
    if ts:
        out.append(Section("Server telemetry", _TEL_HEADER, _tel_rows(ts), short_head=_TEL_SHORT, key=_TEL_KEY))
    if checks:
        out.append(Section("Client vs server timings", _CC_HEADER, _cc_rows(checks), short_head=_CC_SHORT,
                           short_title="Client vs server timings (llama.cpp `timings`)", key=_CC_KEY))
    return out


def telemetry_terminal(ts: Sequence[ScenarioTelemetry], checks: Sequence[TimingCrossCheck],
                       console: Console) -> None:
    """Short two-line headers with a key below, scenario names never cut: readable at 80 columns."""
    for sec in telemetry_sections(ts, checks):
        section_terminal(console, sec, layout="simple")


def telemetry_markdown(ts: Sequence[ScenarioTelemetry], checks: Sequence[TimingCrossCheck],
                       *, heading: str | None = None) -> str:
    return "\n\n".join(section_markdown(sec, heading=heading, align=False) for sec in telemetry_sections(ts, checks))
