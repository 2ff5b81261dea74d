"""The HTML report: one self-contained file (inline CSS and SVG, no script, no external URL), so it
opens offline and can be mailed or archived as is. Warnings first, then tables, plots, fingerprints.
"""

from __future__ import annotations

from collections.abc import Sequence

from rigbench.analysis import Comparison, Revision, RunAnalysis, SuiteComparison
from rigbench.outside import for_html
from rigbench.report._blog import _NOTE, _grid, _revision_note
from rigbench.report._cells import html_table, section_html
from rigbench.report._honesty import preflight_section, sanity_section
from rigbench.report._host import host_section
from rigbench.report._labels import SYNTH_NOTE, synth_mark, synthetic_acceptance
from rigbench.report._load import load_html
from rigbench.report._plots import (
    plot_acceptance,
    plot_accuracy,
    plot_agent_matrix,
    plot_concurrency,
    plot_goodput,
    plot_latency,
    plot_rate_latency,
    plot_speedup,
    plot_tok_s,
)
from rigbench.report._run import _trust_line, run_fingerprint_rows
from rigbench.report._speed import (
    LATENCY_HEAD,
    LATENCY_KEY,
    latency_cells,
    not_measurable_notes,
    speed_columns,
)
from rigbench.report._stability import stability_section
from rigbench.report._suite_compare import NOT_SIGNIFICANT_NOTE, suite_comparison_sections

__all__ = ["render_html"]

_CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:2em auto;max-width:62em;
  padding:0 1em;color:#222}
h1{font-size:1.6em;margin-bottom:.2em} h2{margin-top:1.8em;border-bottom:1px solid #ddd;padding-bottom:.2em}
table{border-collapse:collapse;margin:.6em 0;font-size:13px} th,td{border:1px solid #ddd;padding:.25em .55em;
  vertical-align:top} th{background:#f4f4f4;text-align:left} td.num{text-align:right;font-variant-numeric:tabular-nums}
.warn{background:#fff4d6;border-left:4px solid #e0a800;padding:.4em .8em;margin:.3em 0}
.bad{background:#fde2e1;border-left:4px solid #c0392b}
.note{color:#555;font-size:12.5px} code{background:#f4f4f4;padding:0 .25em;border-radius:3px}
.plot svg{max-width:100%;height:auto} .missing{color:#777;font-style:italic}
.fp td:first-child{font-weight:600;white-space:nowrap} .fp td{word-break:break-all}
details.warn summary{cursor:pointer} details.warn ul{margin:.3em 0 .2em 1.2em;padding:0}
details.warn .first{color:#666;font-weight:normal} .bad-item{color:#8b1c13}
.synth,td.synth,th.synth{color:#c0392b;font-weight:600} .note.sub{margin-left:1.5em}
"""


def _e(text: object) -> str:
    return for_html(text)


def _findings(name: str, a: RunAnalysis) -> str:
    """One collapsible block per run: the verdict and the counts first, each finding on demand."""
    untrusted = [w.removeprefix("UNTRUSTED: ") for w in a.warnings if w.startswith("UNTRUSTED")]
    other = [w for w in a.warnings if not w.startswith("UNTRUSTED")]
    bad = bool(untrusted) or any(w.startswith("this run failed") for w in other)
    counts = []
    if untrusted:
        counts.append(f"UNTRUSTED: {len(untrusted)} reason{'s' if len(untrusted) != 1 else ''}")
    if other:
        counts.append(f"{len(other)} warning{'s' if len(other) != 1 else ''}")
    first = untrusted[0] if untrusted else other[0]
    items = "".join(f'<li class="bad-item">{_e(w)}</li>' for w in untrusted) + "".join(f"<li>{_e(w)}</li>"
                                                                                     for w in other)
    return (f'<details class="warn{" bad" if bad else ""}"><summary><b>{_e(name)}</b>: {_e(" · ".join(counts))}'
            f' <span class="first">({_e(_clip(first, 90))})</span></summary><ul>{items}</ul></details>')


def _suites_html(names: Sequence[str], suites: Sequence[SuiteComparison]) -> list[str]:
    """Quality and agent results of each run against the first, with their tests."""
    out = []
    for name, sc in zip(names[1:], suites, strict=False):
        out += [section_html(sec, numeric_from=1)
                for sec in suite_comparison_sections(sc, baseline=names[0], other=name)]
    if out:
        out = ["<h2>Quality and agent across runs</h2>", *out, f'<p class="note">{_e(NOT_SIGNIFICANT_NOTE)}</p>']
    return out


def _checks_html(names: Sequence[str], analyses: Sequence[RunAnalysis]) -> list[str]:
    """Each run's preflight and known-answer gate, as the terminal and Markdown reports show them."""
    out = []
    for name, a in zip(names, analyses, strict=True):
        secs = ([host_section(a.sections["host"])] if a.speed and "host" in a.sections else []) + (
            [stability_section(a.sections["stability"])] if "stability" in a.sections else []) + (
            [preflight_section(a.sections["preflight"])] if "preflight" in a.sections else []) + (
            [sanity_section(*a.sections["sanity"])] if "sanity" in a.sections else [])
        if secs:
            out += [f"<h3>{_e(name)}</h3>", *(section_html(sec, level=4) for sec in secs)]
    return ["<h2>Checks</h2>", *out] if out else []


def _clip(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def _plot(title: str, svg: str | None, missing: str) -> str:
    body = f'<div class="plot">{svg}</div>' if svg else f'<p class="missing">{_e(missing)}</p>'
    return f"<h3>{_e(title)}</h3>{body}"


def render_html(names: Sequence[str], analyses: Sequence[RunAnalysis], comparisons: Sequence[Comparison] = (),
                revisions: Sequence[Revision] = (), suites: Sequence[SuiteComparison] = (), *,
                paths: bool = False) -> str:
    """The whole report page for one or more analysed runs (the first is the baseline). `paths`: keep
    home-directory and temporary paths and local ports (hidden by default)."""
    title = "rigbench: " + (names[0] if len(names) == 1 else f"{len(names)} runs, baseline {names[0]}")
    parts = [f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{_e(title)}</title>'
             '<meta name="viewport" content="width=device-width,initial-scale=1">'
             f"<style>{_CSS}</style></head><body><h1>{_e(title)}</h1>"]
    # warnings first: nothing below should be read without them
    warn = [_findings(n, a) for n, a in zip(names, analyses, strict=True) if a.warnings]
    synth = [n for n, a in zip(names, analyses, strict=True) if synthetic_acceptance(a.header) is not None]
    if synth:
        warn.append(f'<div class="warn bad"><b>{_e(", ".join(synth))}</b>: {_e(SYNTH_NOTE)}</div>')
    for c in comparisons:
        blocking = [d for d in c.differences if d.matters]
        if blocking:
            fields = ", ".join(f"{d.field} ({d.baseline} vs {d.other})" for d in blocking)
            other = names[1 + list(comparisons).index(c)] if len(names) > len(comparisons) else c.other_run
            warn.append(f'<div class="warn">{_e(other)} differs from the baseline in what is measured, '
                        f"not only in flags: {_e(fields)}</div>")
    for r in revisions:
        warn.append(f'<div class="warn">{_e(_revision_note(r))}</div>')
    parts.append("".join(warn) or '<p class="note">No warnings.</p>')
    # runs
    rows = []
    for n, a in zip(names, analyses, strict=True):
        trust, _ = _trust_line(a)
        rows.append([n + synth_mark(a.header), a.header.run_id, a.status, trust, a.header.created_at[:16],
                     a.source_data_id])
    parts.append("<h2>Runs</h2>" + html_table(["rig", "run", "status", "verdict", "started", "source data"], rows,
                                          numeric_from=99))
    # seed-style tables
    if len(analyses) > 1:
        head, grid = _grid(names, analyses, comparisons)
        synth = [n for n, a in zip(names, analyses, strict=True) if synthetic_acceptance(a.header) is not None]
        note = f'<p class="note">{_e(_NOTE)}</p>' + (
            f'<p class="synth">{_e(", ".join(synth))}: {_e(SYNTH_NOTE)}</p>' if synth else "")
        parts.append(f"<h2>Speed-up vs {_e(names[0])}</h2>"
                     + (html_table(head, grid, flag="synthetic") + note if grid
                        else '<p class="missing">no speed results in the baseline run</p>'))
    parts.append("<h2>Speed</h2>")
    for n, a in zip(names, analyses, strict=True):
        if a.speed is None:
            parts.append(f'<h3>{_e(n)}</h3><p class="missing">no speed results</p>')
            continue
        head, rows, dropped = speed_columns(a.speed)
        parts.append(f"<h3>{_e(n)}{_e(synth_mark(a.header))}</h3>" + html_table(head, rows)
                     + (f'<p class="note">Not shown: {_e("; ".join(dropped))}.</p>' if dropped else "")
                     + "<h4>Latency percentiles</h4>" + html_table(LATENCY_HEAD, latency_cells(a.speed))
                     + f'<p class="note">{_e(LATENCY_KEY)}</p>')
        notes = [f"{r.scenario} (c={r.concurrency}): TTFT not comparable: {r.ttft_not_comparable}"
                 for r in a.speed.rows if r.ttft_not_comparable] + not_measurable_notes(a.speed)
        parts += [f'<p class="note">{_e(x)}</p>' for x in notes]
    loads = [(n, a.sections["load"]) for n, a in zip(names, analyses, strict=True) if "load" in a.sections]
    if loads:
        parts.append("<h2>Load (rate mode)</h2>")
        parts += [f"<h3>{_e(n)}</h3>" + load_html(s) for n, s in loads]
    parts += _checks_html(names, analyses)
    # plots
    parts += _suites_html(names, suites)
    parts.append("<h2>Plots</h2>")
    parts.append(_plot("Throughput by scenario and configuration", plot_tok_s(names, analyses),
                       "no speed results to plot"))
    if len(analyses) > 1:
        parts.append(_plot("Speed-up", plot_speedup(names, comparisons,
                                                  [synthetic_acceptance(a.header) for a in analyses[1:]]), "no comparable speed results"))
    parts.append(_plot("Concurrency", plot_concurrency(names, analyses),
                       "one concurrency level per scenario: run with --concurrency 1,2,4,8 for curves"))
    if loads:
        parts.append(_plot("Latency by offered rate", plot_rate_latency(names, analyses),
                           "one rate per run: run with --sweep for rate-latency curves"))
        parts.append(_plot("Goodput by offered rate", plot_goodput(names, analyses),
                           "no SLO over several rates: run with --sweep --slo ttft=500ms,itl=50ms"))
    parts.append(_plot("Latency distributions", plot_latency(names, analyses), "no latency data"))
    parts.append(_plot("Acceptance length", plot_acceptance(names, analyses),
                       "no speculative decoding in these runs (no per-request acceptance counts)"))
    parts.append(_plot("Accuracy by subject", plot_accuracy(names, analyses), "no quality (MMLU-Pro) results"))
    parts.append(_plot("Agent probes", plot_agent_matrix(names, analyses), "no agent results"))
    # fingerprints
    parts.append("<h2>Fingerprints</h2>")
    for n, a in zip(names, analyses, strict=True):
        fp_rows = [[k, v] for k, v in run_fingerprint_rows(a)]
        parts.append(f"<h3>{_e(n)}</h3>" + html_table(["", ""], fp_rows, numeric_from=99, cls="fp"))
    parts.append('<p class="note">Source data: '
                 + ", ".join(f"<code>{_e(a.source_data_id)}</code>" for a in analyses) + "</p></body></html>")
    return "\n".join(parts)
