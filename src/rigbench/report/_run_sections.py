"""One run's report as a list of sections, described once and drawn by the terminal, the Markdown
and the HTML report alike (report/_cells.py), so that the three agree by construction.

`run_parts(a)` is the body in reading order (startup, speed, latency, rate mode, host conditions,
stability, retries, preflight, roofline, telemetry, the known-answer gate, the traffic check, quality, agent,
fingerprint); `findings_section(a)` is what leads it (the run, its verdict, every warning). Each
part says how the terminal lays its table out and how deep its heading sits; nothing else differs
between the media.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Literal

from pydantic import ValidationError
from rich.console import Console

from rigbench.analysis import RunAnalysis
from rigbench.records import StartupTiming, TrafficCheck
from rigbench.report._agent import agent_head, agent_sections, probe_terminal
from rigbench.report._cells import Cell, Note, Section, Severity
from rigbench.report._checks import preflight_section, sanity_section, traffic_text
from rigbench.report._fingerprint import fingerprint_section
from rigbench.report._hardware import decode_efficiency_text, roofline_section
from rigbench.report._host import host_section
from rigbench.report._labels import synth_mark, synth_note, synthetic_acceptance
from rigbench.report._load import PERCENTILES_TITLE, load_sections, percentiles_terminal
from rigbench.report._quality import quality_sections
from rigbench.report._retries import retries_section
from rigbench.report._speed import latency_section, speed_section
from rigbench.report._stability import stability_section
from rigbench.report._telemetry import telemetry_sections

__all__ = ["Part", "findings_section", "run_parts", "startup_section", "trust_label"]

Layout = Literal["fitted", "cards", "simple", "pairs"]


@dataclass(frozen=True)
class Part:
    """One section of a run's report. `level` 1: a section of its own (`##` in a one-run Markdown
    document); 2: below the part before it (`###`). `layout` and `notes_indent`: the terminal's.
    `terminal`: a drawing of its own for the terminal, from the same section (the probe table)."""

    section: Section
    level: int = 1
    layout: Layout = "fitted"
    notes_indent: str = "  "
    terminal: Callable[[Console, Section], None] | None = None


def trust_label(a: RunAnalysis) -> tuple[str, Severity]:
    """The verdict as a reader sees it, and how loudly: DAMAGED, not assessed, trusted, UNTRUSTED."""
    t = a.header.trust
    if a.status == "damaged":
        return "DAMAGED", "critical"
    if t is None:
        return "not assessed", "warn"
    return ("trusted", "ok") if t.trusted else ("UNTRUSTED", "critical")


def findings_section(a: RunAnalysis) -> Section:
    """The run, its status and verdict, then every run-level finding: a synthetic acceptance, the
    UNTRUSTED or DAMAGED reasons (critical), and the other warnings."""
    trust, severity = trust_label(a)
    h = a.header
    rows: list[list[str | Cell]] = [["run", h.run_id], ["status", a.status], ["verdict", Cell(trust, severity)],
                                    ["source data", a.source_data_id], ["rigbench", h.rigbench_version],
                                    ["started", h.created_at]]
    notes = [Note(synth_note(h), "critical")] if synthetic_acceptance(h) is not None else []
    notes += [Note(w, "error" if w.startswith(("UNTRUSTED", "DAMAGED")) else "warn") for w in a.warnings]
    return Section("Run", ["", ""], rows, notes)


def startup_section(record: dict[str, Any]) -> Section:
    """Spawn to healthy to the first completion, measured by rigbench on the monotonic clock; vLLM's
    compile cache (cold and warm starts differ by a minute) as the engine reported it."""
    try:
        s = StartupTiming.model_validate(record)
    except ValidationError as e:
        return Section("Startup", [], [], [Note(f"the startup record cannot be read: {e.errors()[0]['msg']}",
                                                "warn")])
    rows = [["spawn → healthy", f"{s.spawn_to_healthy_s:.2f} s"],
            ["healthy → first completion", f"{s.healthy_to_first_completion_s:.2f} s"],
            ["spawn → first completion", f"{s.spawn_to_first_completion_s:.2f} s"]]
    if s.compile_cache:
        what = {"cold": "cold (torch.compile ran)", "warm": "warm (graphs loaded)",
                "off": "off (--enforce-eager)"}.get(s.compile_cache, s.compile_cache)
        secs = f", {s.compile_s:.1f} s engine-reported" if s.compile_s is not None else ""
        rows.append(["compile cache", what + secs])
    return Section("Startup (measured by rigbench)", ["", ""], rows)


def _roofline(rl: Any) -> Section:
    """`rl`: the analysis' RunRoofline."""
    if rl.roofline is None:
        return Section("Decode roofline", [], [], [Note(f"not available: {rl.unavailable}", "muted")])
    sec = roofline_section(rl.roofline)
    notes = [Note(f"Measured on {rl.scenario} (median decode tok/s).")]
    if rl.rows:
        eff = decode_efficiency_text([(r.scenario, r.concurrency, r.decode_tok_s, r.efficiency) for r in rl.rows])
        notes.append(Note(f"Decode efficiency per row (median per-request decode tok/s / ceiling): {eff}."))
    return Section(sec.title, sec.head, sec.rows, notes, left_cols=sec.left_cols)


def _traffic(tc: TrafficCheck) -> Section:
    return Section(f"Traffic check: {'passed' if tc.trusted else 'FAILED'}", [], [],
                   [Note(traffic_text(tc).removeprefix("traffic check: ") + ".", "ok" if tc.trusted else "warn")],
                   title_severity="ok" if tc.trusted else "error")


def run_parts(a: RunAnalysis) -> list[Part]:
    """Every section of one run's report after its findings, in reading order."""
    s = a.sections
    parts: list[Part] = []
    if a.startup:
        parts.append(Part(startup_section(a.startup), layout="pairs"))
    if a.speed:
        speed = speed_section(a.speed)
        mark = synth_mark(a.header)
        if mark:  # a synthetic-acceptance run's speed is what acceptance L would give: said in its title
            speed = replace(speed, title=speed.title + mark, title_severity="error")
        parts.append(Part(speed, layout="simple", notes_indent=""))
        if a.speed.rows:
            parts.append(Part(latency_section(a.speed), level=2, layout="simple", notes_indent=""))
    if "load" in s:
        parts.append(Part(Section("Load (rate mode)", [], [])))
        # the full latency distribution is in the files; the terminal says so (p50 / p99 are on it)
        parts += [Part(sec, level=2, terminal=percentiles_terminal if sec.title == PERCENTILES_TITLE else None)
                  for sec in load_sections(s["load"])]
    if a.speed and "host" in s:
        parts.append(Part(host_section(s["host"])))
    if "stability" in s:
        parts.append(Part(stability_section(s["stability"])))
    if "retries" in s:
        parts.append(Part(retries_section(s["retries"])))
    if "preflight" in s:
        parts.append(Part(preflight_section(s["preflight"]), layout="cards", notes_indent=""))
    if "roofline" in s:
        parts.append(Part(_roofline(s["roofline"]), layout="pairs"))
    if "telemetry" in s:
        parts += [Part(sec, layout="simple") for sec in telemetry_sections(*s["telemetry"])]
    if "sanity" in s:
        parts.append(Part(sanity_section(*s["sanity"]), notes_indent=""))
    if "traffic" in s:
        parts.append(Part(_traffic(s["traffic"])))
    if "quality" in s:
        parts.append(Part(Section("Quality", [], [])))
        parts += [Part(sec, level=2) for sec in quality_sections(s["quality"])]
    if "agent" in s:
        parts.append(Part(agent_head(s["agent"]), notes_indent=""))
        parts += [Part(sec, level=2, terminal=probe_terminal if sec.title == "Conformance probes" else None)
                  for sec in agent_sections(s["agent"])]
    parts.append(Part(fingerprint_section(a), layout="pairs"))
    return parts
