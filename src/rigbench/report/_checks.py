"""The checks of the rig and of its traffic, drawn: the known-answer gate with the output screen, the prefix-cache
check on the measured traffic, and the preflight. Terminal (rich) and Markdown; nothing is computed here."""

from __future__ import annotations

from rich.console import Console

from rigbench.records import OutputScreen, PreflightReport, SanityVerdict, TrafficCheck
from rigbench.report._cells import Cell, Note, Section, Severity, section_markdown, section_terminal

__all__ = ["preflight_markdown", "preflight_section", "preflight_terminal", "sanity_markdown", "sanity_section",
           "sanity_terminal", "traffic_text"]


# -- sanity gate and output screen ----------------------------------------------------------------


def _gate_how(v: SanityVerdict) -> str:
    how = f"questions from seed {v.question_seed}, greedy" if v.question_seed is not None else f"greedy, seed {v.seed}"
    return how + (f", {v.elapsed_s:.1f} s" if v.elapsed_s is not None else "")


def _prefix_cache_text(c: TrafficCheck) -> str:
    if not c.prefix_cache:
        return "prefix cache: not reported by the server"
    prompt = sum(r.prompt_tokens for r in c.prefix_cache)
    cached = sum(r.cached_tokens for r in c.prefix_cache)
    hit = [r for r in c.prefix_cache if r.beyond_tokens > 0]
    sources = "/".join(sorted({r.source for r in c.prefix_cache}))
    return (f"prefix cache: {cached} of {prompt} prompt tokens served from it ({sources}), "
            + (f"beyond the prefix shared by design in {len(hit)} of {len(c.prefix_cache)} levels"
               if hit else "none beyond the prefix shared by design"))


def traffic_text(c: TrafficCheck) -> str:
    """One line on the checks of the measured traffic (honesty/_traffic.py, honesty/_prefix_cache.py)."""
    usage = {"tokenize": "recounted with /tokenize", "bytes_bound": "bounded by bytes", "none": "not reported"}
    return (f"traffic check: {c.duplicate_outputs} of {c.outputs} outputs identical to another prompt's; "
            f"usage {usage[c.usage_method]} in {c.usage_checked} ({c.usage_inflated} inflated); "
            f"server timings in {c.timings_checked} ({c.timings_inconsistent} contradict the client's clock); "
            + _prefix_cache_text(c))


def sanity_section(v: SanityVerdict, screen: OutputScreen | None = None) -> Section:
    """The gate's answer per question, why it failed (or what it missed within the bar), then the
    gibberish screen of the measured outputs."""
    ok = sum(1 for a in v.answers if a.passed)
    rows: list[list[str | Cell]] = [
        [a.question_id, a.language, Cell("pass", "ok") if a.passed else Cell("FAIL", "error"),
         " ".join(a.answer.split())[:60].rstrip()] for a in v.answers]
    notes = [Note(f"✗ {r}", "error") for r in v.reasons]
    notes += [Note(f"missed (within the bar): {r}", "warn") for r in v.notes]
    if screen is not None:
        notes.append(Note(f"gibberish screen: {screen.failed_outputs} of {screen.outputs} measured outputs fail, "
                          f"{screen.warned_outputs} repetitive (warning only)", "ok" if screen.trusted else "error"))
        notes += [Note(f"✗ {e}", "error", level=1) for e in screen.examples]
    return Section(f"Sanity gate: {'passed' if v.trusted else 'FAILED'}, {ok}/{len(v.answers)} known-answer "
                   f"questions ({_gate_how(v)})", ["question", "lang", "result", "answer"], rows, notes, left_cols=4,
                   title_severity="ok" if v.trusted else "error")


def sanity_terminal(v: SanityVerdict, screen: OutputScreen | None, console: Console) -> None:
    section_terminal(console, sanity_section(v, screen), notes_indent="")


def sanity_markdown(v: SanityVerdict, screen: OutputScreen | None = None, *, heading: str | None = None) -> str:
    return section_markdown(sanity_section(v, screen), heading=heading)


# -- preflight -----------------------------------------------------------------------------------

_PREFLIGHT_SEVERITY: dict[str, Severity | None] = {"error": "error", "warn": "warn", "info": None}


def preflight_section(r: PreflightReport) -> Section:
    """One row per configuration trap found (none: a note that says so)."""
    what = "" if r.command is None else (f" of a {r.command.engine} command line"
                                         + (f" (model {r.command.model})" if r.command.model else ""))
    rows: list[list[str | Cell]] = [
        [f.id, Cell(f.severity, sev) if (sev := _PREFLIGHT_SEVERITY[f.severity]) else f.severity, f.problem,
         f.evidence, f.fix] for f in r.findings]
    notes = [] if r.findings else [Note("no configuration traps found", "ok")]
    return Section(f"Preflight{what}", ["check", "severity", "problem", "evidence", "fix"], rows, notes, left_cols=5)


def preflight_terminal(r: PreflightReport, console: Console) -> None:
    """One card per finding: its problem, evidence and fix are paragraphs, too long for columns."""
    section_terminal(console, preflight_section(r), layout="cards", notes_indent="")


def preflight_markdown(r: PreflightReport, *, heading: str | None = None) -> str:
    return section_markdown(preflight_section(r), heading=heading)
