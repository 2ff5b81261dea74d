"""The HTML report: one self-contained file (inline CSS and SVG, no script, no external URL), so it
opens offline and can be mailed or archived as is. The answer first (what was measured, the verdict
and why, headline figures), then plots, tables across runs, each run's details, warnings (collapsed)
and fingerprints. Sections with nothing to show are left out.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rigbench.analysis import Comparison, Revision, RunAnalysis, SuiteComparison, request_timing
from rigbench.errors import RigbenchError
from rigbench.outside import for_html
from rigbench.records import SpeedRequest
from rigbench.report._answer import answer_sections, answer_table_across
from rigbench.report._blog import _NOTE, _grid, _revision_note
from rigbench.report._cells import Cell, html_table, html_text, section_html
from rigbench.report._differences import differences_section
from rigbench.report._fingerprint import fingerprint_section
from rigbench.report._fmt import fmt_itl_ms, fmt_tok_s, fmt_ttft_ms
from rigbench.report._labels import SYNTH_NOTE, synthetic_acceptance
from rigbench.report._plots import (
    plot_acceptance,
    plot_accuracy,
    plot_agent_matrix,
    plot_concurrency,
    plot_goodput,
    plot_latency_cdf,
    plot_rate_latency,
    plot_speedup,
    plot_tok_s,
    plot_tokens_over_time,
)
from rigbench.report._publish import hide_session_details, machine_name, model_name, report_title
from rigbench.report._run_sections import findings_section, run_parts, trust_label
from rigbench.report._speed import LATENCY_KEY, NC_NOTE, NOT_COMPARABLE
from rigbench.report._suite_compare import NOT_SIGNIFICANT_NOTE, suite_comparison_sections
from rigbench.store import RunReader

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
ul.verdict{padding-left:1.2em} ul.verdict ul{margin:.1em 0 .3em 0;color:#444} .good{color:#1e7b34;font-weight:600}
span.bad{color:#b0281a;font-weight:600;background:none;border:0}
"""


def _e(text: object) -> str:
    return html_text(text)


def _findings(name: str, a: RunAnalysis) -> str:
    """One collapsible block per run: the verdict and the counts first, each finding on demand (the
    notes of the run's findings section, as the terminal's panel and the Markdown quote them)."""
    notes = findings_section(a).notes
    untrusted = [n.text for n in notes if n.severity == "error"]
    other = [n.text for n in notes if n.severity != "error"]
    bad = bool(untrusted) or any(n.severity == "critical" or n.text.startswith("this run failed") for n in notes)
    counts = []
    if untrusted:
        counts.append(f"UNTRUSTED: {len(untrusted)} reason{'s' if len(untrusted) != 1 else ''}")
    if other:
        counts.append(f"{len(other)} warning{'s' if len(other) != 1 else ''}")
    first = untrusted[0].removeprefix("UNTRUSTED: ") if untrusted else other[0]
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


def _clip(text: str, n: int) -> str:
    """`text` cut to `n` characters; a `code span` cut open is closed after the ellipsis (else its backtick
    would show on the page instead of a <code>)."""
    if len(text) <= n:
        return text
    cut = text[: n - 1] + "…"
    return cut + "`" if cut.count("`") % 2 else cut


def _plot(title: str, svg: str | None, missing: str) -> str:
    body = f'<div class="plot">{svg}</div>' if svg else f'<p class="missing">{_e(missing)}</p>'
    return f"<h3>{_e(title)}</h3>{body}"


def _headline(names: Sequence[str], analyses: Sequence[RunAnalysis]) -> str:
    """Each run's answer (report/_answer.py: how fast and what it means for a user, the load figures, how
    good, how agent-ready), as the terminal and the Markdown lead with it; several runs: one table per kind
    with a run column."""
    secs = answer_sections(analyses[0]) if len(analyses) == 1 else answer_table_across(names, analyses)
    return "<h2>Headline figures</h2>" + "".join(section_html(sec, level=3) for sec in secs)


def _summary(names: Sequence[str], analyses: Sequence[RunAnalysis]) -> str:
    """What was measured and the verdict with its reasons: the first screen."""
    rows = []
    for n, a in zip(names, analyses, strict=True):
        fp = a.header.fingerprint
        engine = f"{fp.engine} {fp.engine_version or '(version unknown)'}" if fp is not None else "? (not recorded)"
        rows.append([n, model_name(fp), engine,
                     machine_name(fp), a.header.created_at[:16].replace("T", " "), a.status])
    out = ["<h2>What was measured</h2>",
           html_table(["run", "model", "engine", "machine", "date (UTC)", "status"], rows, numeric_from=99)]
    out.append("<h2>Verdict</h2><ul class=\"verdict\">")
    for n, a in zip(names, analyses, strict=True):
        trust, _ = trust_label(a)
        notes = findings_section(a).notes
        reasons = [n.text.removeprefix("UNTRUSTED: ") for n in notes if n.severity == "error"]
        failed = [n.text for n in notes if n.text.startswith(("this run failed", "this run did not finish"))]
        why = [*failed, *reasons][:3]
        more = len(failed) + len(reasons) - len(why)
        cls = "good" if trust == "trusted" and not failed else "bad"
        out.append(f'<li><b>{_e(n)}</b>: <span class="{cls}">{_e(trust)}</span>'
                   + ("<ul>" + "".join(f"<li>{_e(_clip(w, 160))}</li>" for w in why)
                      + (f"<li>and {more} more (below)</li>" if more else "") + "</ul>" if why else "") + "</li>")
    out.append("</ul>")
    return "".join(out)


def _request_series(names: Sequence[str], analyses: Sequence[RunAnalysis]) -> tuple[list[Any], list[Any]]:
    """Per run: the measured requests' TTFT and per-request ITL, and the median-length request's
    tokens over time (first scenario at its lowest concurrency)."""
    cdf: list[Any] = []
    over_time: list[Any] = []
    for n, a in zip(names, analyses, strict=True):
        try:
            reqs = [r for r in RunReader(Path(a.run_dir)).records("speed_request", SpeedRequest) if not r.warmup]
        except (OSError, RigbenchError):
            reqs = []
        timings = [(r, request_timing(r.result, output_tokens_target=r.output_tokens_target)) for r in reqs
                   if r.result.chunk_ns]
        # only where the row's own figure is measurable: a row buffered by a proxy (or whose TTFT is
        # withheld for multi-token chunks) has no TTFT/ITL to plot, whatever its stamps say
        rows = a.speed.rows if a.speed else []
        has_ttft = {(row.scenario, row.concurrency) for row in rows if row.ttft_s is not None}
        has_itl = {(row.scenario, row.concurrency) for row in rows if row.itl_mean_s is not None}
        cdf.append((n, [t.ttft_s for r, t in timings if t.ttft_s is not None and (r.scenario, r.concurrency) in has_ttft],
                    [t.itl_mean_s for r, t in timings
                     if t.itl_mean_s is not None and (r.scenario, r.concurrency) in has_itl]))
        if not timings:
            over_time.append((n, "", [], []))
            continue
        first = min(timings, key=lambda x: (x[0].scenario != timings[0][0].scenario, x[0].concurrency))[0]
        same = sorted((t for r, t in timings if r.scenario == first.scenario and r.concurrency == first.concurrency
                       and t.wall_s is not None), key=lambda t: t.wall_s or 0.0)
        pick = next(r for r, t in timings if same and t is same[len(same) // 2])
        per_chunk = max(1.0, (request_timing(pick.result).output_tokens or 0) / len(pick.result.chunk_ns))
        t = [(c - pick.result.sent_ns) / 1e9 for c in pick.result.chunk_ns]
        over_time.append((n, f"{pick.scenario} c={pick.concurrency}, median request", [0.0, *t],
                          [0.0, *(per_chunk * (k + 1) for k in range(len(t)))]))
    return cdf, over_time


def _speed_side_by_side(names: Sequence[str], analyses: Sequence[RunAnalysis]) -> str:
    """One table: each scenario and concurrency, the runs on adjacent rows."""
    keys = list(dict.fromkeys((r.scenario, r.concurrency) for a in analyses for r in (a.speed.rows if a.speed else [])))
    if not keys:
        return ""
    by_run = [{(r.scenario, r.concurrency): r for r in (a.speed.rows if a.speed else [])} for a in analyses]
    rows: list[list[str | Cell]] = []
    for sc, c in keys:
        for n, rs in zip(names, by_run, strict=True):
            r = rs.get((sc, c))
            if r is None:
                rows.append([sc, str(c), n, Cell("not measured", "muted"), "", "", "", "", ""])
                continue
            rows.append([sc, str(c), n, str(r.requests - r.failed), fmt_tok_s(r.e2e_tok_s), fmt_tok_s(r.decode_tok_s),
                         NOT_COMPARABLE if r.ttft_not_comparable else fmt_ttft_ms(r.ttft_s), fmt_itl_ms(r.itl_mean_s),
                         fmt_tok_s(r.aggregate_tok_s)])
    head = ["scenario", "c", "run", "n", "e2e tok/s", "decode tok/s", "TTFT ms", "ITL ms", "aggregate tok/s"]
    nc = any(r.ttft_not_comparable for rs in by_run for r in rs.values())
    return ("<h2>Speed, run by run</h2>" + html_table(head, rows, numeric_from=3)
            + f'<p class="note">Median ± standard deviation over requests (warm-up excluded). {_e(LATENCY_KEY)}'
            + (f" {_e(NC_NOTE)}" if nc else "") + "</p>")


def render_html(names: Sequence[str], analyses: Sequence[RunAnalysis], comparisons: Sequence[Comparison] = (),
                revisions: Sequence[Revision] = (), suites: Sequence[SuiteComparison] = (), *,
                paths: bool = False) -> str:
    """The whole report page for one or more analysed runs (the first is the baseline). `paths`: keep
    home-directory and temporary paths and local ports (hidden by default). The answer first (what
    was measured, the verdict and why, the headline figures), then plots, tables side by side, every
    section of the terminal report, the warnings per run (collapsed) and the fingerprints."""
    title = report_title([a.header for a in analyses])
    parts = [f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{for_html(title)}</title>'
             '<meta name="viewport" content="width=device-width,initial-scale=1">'
             f"<style>{_CSS}</style></head><body><h1>{_e(title)}</h1>"]
    parts.append(_summary(names, analyses))
    synth = [n for n, a in zip(names, analyses, strict=True) if synthetic_acceptance(a.header) is not None]
    if synth:
        parts.append(f'<div class="warn bad"><b>{_e(", ".join(synth))}</b>: {_e(SYNTH_NOTE)}</div>')
    parts.append(_headline(names, analyses))
    # what differs between the rigs, and re-measurements, right under the figures they explain (the
    # first screen holds the answer: what was measured, the verdict, the headline figures)
    if len(analyses) > 1:
        parts.append(section_html(differences_section(names, [a.header for a in analyses]), numeric_from=99, level=2))
    for r in revisions:
        parts.append(f'<div class="warn">{_e(_revision_note(r))}</div>')
    # plots: the ones with nothing to draw are left out
    cdf, over_time = _request_series(names, analyses)
    plots = [("Throughput by scenario (median, whisker ± std)", plot_tok_s(names, analyses)),
             ("Speed-up", plot_speedup(names, comparisons, [synthetic_acceptance(a.header) for a in analyses[1:]])
              if len(analyses) > 1 else None),
             ("TTFT and ITL over requests (CDF)", plot_latency_cdf(cdf)),
             ("Tokens over time, one request", plot_tokens_over_time(over_time)),
             ("Concurrency", plot_concurrency(names, analyses)),
             ("Latency by offered rate", plot_rate_latency(names, analyses)),
             ("Goodput by offered rate", plot_goodput(names, analyses)),
             ("Acceptance length", plot_acceptance(names, analyses)),
             ("Accuracy by subject", plot_accuracy(names, analyses)),
             ("Agent probes", plot_agent_matrix(names, analyses))]
    shown = [_plot(t, svg, "") for t, svg in plots if svg]
    if shown:
        parts += ["<h2>Plots</h2>", *shown]
    # tables across runs
    if len(analyses) > 1:
        head, grid = _grid(names, analyses, comparisons)
        if grid:
            note = f'<p class="note">{_e(_NOTE)}</p>' + (
                f'<p class="synth">{_e(", ".join(synth))}: {_e(SYNTH_NOTE)}</p>' if synth else "")
            parts.append(f"<h2>Speed-up vs {_e(names[0])}</h2>" + html_table(head, grid, flag="synthetic") + note)
    parts.append(_speed_side_by_side(names, analyses))
    parts += _suites_html(names, suites)
    # every section of each run's report, as the terminal and the Markdown draw them (its findings are
    # the verdict above and the warnings below, its fingerprint closes the page)
    for n, a in zip(names, analyses, strict=True):
        body = "".join(section_html(p.section, level=p.level + 2) for p in run_parts(a)
                       if p.section.title != "Fingerprint")
        if body:
            parts.append(f"<h2>{_e(n)}: details</h2>{body}")
    # warnings, collapsed, per run
    warn = [_findings(n, a) for n, a in zip(names, analyses, strict=True) if a.warnings]
    if warn:
        parts += ["<h2>Warnings</h2>", *warn]
    parts.append("<h2>Fingerprints</h2>")
    for n, a in zip(names, analyses, strict=True):
        fp = fingerprint_section(a)
        parts.append(f"<h3>{_e(n)}</h3>" + html_table(fp.head, fp.rows, numeric_from=99, cls="fp"))
    parts.append('<footer class="note">Source data: '
                 + ", ".join(f"<code>{_e(a.source_data_id)}</code>" for a in analyses) + "</footer></body></html>")
    page = "\n".join(parts)
    return page if paths else hide_session_details(page)
