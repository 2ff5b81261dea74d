"""Reports over several runs: the seed's speed-up table (baseline vs each configuration), a
revision note for a re-measured run, and the source-data ids, as Markdown to paste into a post
and as a rich table for the terminal. They format `analysis` results; they never compute.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.table import Table
from rich.text import Text

from rigbench.analysis import Comparison, Revision, RunAnalysis, SuiteComparison
from rigbench.outside import visible
from rigbench.report._answer import answer_table_across
from rigbench.report._cells import section_markdown
from rigbench.report._differences import differences_section
from rigbench.report._fmt import fmt_margin, fmt_stat, fmt_tok_s_mean
from rigbench.report._labels import SYNTH_NOTE, synthetic_acceptance
from rigbench.report._publish import hide_session_details, report_title
from rigbench.report._suite_compare import suite_comparison_markdown

__all__ = ["render_blog_markdown", "speedup_markdown", "speedup_table"]


def _ratio(c: Comparison | None, scenario: str, conc: int) -> str:
    if c is None:  # no comparison for this run (it has no speed records, e.g. its rig failed)
        return "–"
    row = next((r for r in c.rows if r.scenario == scenario and r.concurrency == conc), None)
    if row is None or row.result.ratio is None:
        return "–"
    err = f" ± {row.result.ratio_err:.2f}" if row.result.ratio_err is not None else ""
    res = row.result
    mark = {"differs": "", "same": f" (same {fmt_margin(res.margin)})",
            "inconclusive": " (inconclusive" + (f", ~{res.needed_n}/side)" if res.needed_n else ")")}[res.verdict]
    return f"{res.ratio:.2f}×{err}{mark}"


def _grid(names: Sequence[str], analyses: Sequence[RunAnalysis],
          comparisons: Sequence[Comparison]) -> tuple[list[str], list[list[str]]]:
    """Header and rows: scenario, in / out, baseline tok/s, then tok/s and speed-up per configuration."""
    head = ["scenario", "in / out", f"{names[0]} mean tok/s"]
    synth = [synthetic_acceptance(a.header) for a in analyses]
    for n, L in zip(names[1:], synth[1:], strict=True):
        head += [f"{n} mean tok/s", f"{n} speed-up" + ("" if L is None else f" (synthetic L={L:g})")]
    rows: list[list[str]] = []
    base = analyses[0].speed
    if base is None:
        return head, rows
    others = [{(r.scenario, r.concurrency): r for r in (a.speed.rows if a.speed else [])} for a in analyses[1:]]
    multi_conc = len({r.concurrency for r in base.rows}) > 1
    for r in base.rows:
        label = r.scenario + (f" (c={r.concurrency})" if multi_conc else "")
        cells = [label, f"{r.input_tokens_target} / {r.output_tokens_target}", fmt_tok_s_mean(r.e2e_tok_s)]
        comps: list[Comparison | None] = [*comparisons, *[None] * (len(others) - len(comparisons))]
        for other, comp, L in zip(others, comps, synth[1:], strict=True):
            o = other.get((r.scenario, r.concurrency))
            ratio = _ratio(comp, r.scenario, r.concurrency)
            cells += [fmt_tok_s_mean(o.e2e_tok_s) if o else "–", ratio + (" synthetic" if L is not None else "")]
        rows.append(cells)
    return head, rows


_NOTE = ("End-to-end throughput per request, mean ± standard deviation over requests (warm-up excluded): the "
         "means the speed-up and its tests are made of (the speed tables show medians). Speed-up: ratio of these "
         "means ± propagated standard error; no mark: a difference by Welch's "
         "t-test at α = 0.05; (same ±M%): two one-sided tests put the ratio within ±M% of 1; (inconclusive, "
         "~N/side): neither test decides, and about N repetitions per side would tell ±M% (80% power at "
         "the observed spread).")


def speedup_markdown(names: Sequence[str], analyses: Sequence[RunAnalysis],
                     comparisons: Sequence[Comparison]) -> str:
    head, rows = _grid(names, analyses, comparisons)
    if not rows:
        return f"_No speed results in the baseline run ({names[0]}): nothing to compare._"
    lines = ["| " + " | ".join(head) + " |", "|---|---|" + "---:|" * (len(head) - 2)]
    lines += ["| " + " | ".join(c.replace("|", "\\|").replace(" synthetic", " **synthetic**") for c in row) + " |"
              for row in rows]
    synth = [n for n, a in zip(names, analyses, strict=True) if synthetic_acceptance(a.header) is not None]
    return "\n".join([*lines, "", _NOTE] + (["", f"**{', '.join(synth)}:** {SYNTH_NOTE}"] if synth else []))


def speedup_table(names: Sequence[str], analyses: Sequence[RunAnalysis],
                  comparisons: Sequence[Comparison]) -> Table:
    head, rows = _grid(names, analyses, comparisons)
    # the title as text, not markup: a run label is outside text (rigbench.outside)
    t = Table(title=Text(visible(f"Speed-up vs {names[0]} (e2e tok/s, mean ± std; ratio of means ± error)")),
              title_justify="left", caption=_NOTE, caption_justify="left")
    for i, h in enumerate(head):
        t.add_column(h, justify="left" if i < 2 else "right", overflow="fold",
                     header_style="bold red" if "synthetic" in h else "bold")
    for row in rows:
        t.add_row(*(Text(visible(c), style="bold red" if c.endswith(" synthetic") else "") for c in row))
    synth = [n for n, a in zip(names, analyses, strict=True) if synthetic_acceptance(a.header) is not None]
    if synth:
        t.caption = Text.assemble(_NOTE + "\n", (f"{visible(', '.join(synth))}: {SYNTH_NOTE}", "bold red"))
    return t


def _revision_note(r: Revision) -> str:
    parts = []
    for row in r.rows:
        res = row.result
        t = f", t = {res.t:.2f}" if res.t is not None else ""
        p = f", p = {res.p:.3f}" if res.p is not None else ""
        multi = len({x.concurrency for x in r.rows}) > 1
        label = f"{row.scenario} (c={row.concurrency})" if multi else row.scenario
        parts.append(f"{label} {fmt_stat(row.baseline, digits=2)} vs {fmt_stat(row.other, digits=2)} tok/s "
                     f"over {row.baseline.n} and {row.other.n} repetitions{t}{p}")
    m = fmt_margin(r.rows[0].result.margin) if r.rows else ""
    needed = max((row.result.needed_n or 0 for row in r.rows), default=0)
    verdict = {"same": f"it reproduces the result: the two runs are the same within {m} by an equivalence test",
               "differs": "the two runs differ beyond noise",
               "inconclusive": "the data cannot tell whether it reproduces the result"
               + (f" (about {needed} repetitions per side would tell {m})" if needed else "")}[r.verdict]
    return (f"Updated {r.later_date[:10]}: `{r.later_name}` was re-measured (same rig fingerprint and "
            f"configuration as `{r.earlier_name}` from {r.earlier_date[:10]}); {verdict} ("
            + "; ".join(parts) + ").")


def _findings_markdown(name: str, warnings: Sequence[str]) -> str:
    """One collapsible block per run (GitHub and most blog engines render <details>): counts first."""
    untrusted = [w for w in warnings if w.startswith("UNTRUSTED")]
    other = len(warnings) - len(untrusted)
    counts = ([f"UNTRUSTED: {len(untrusted)} reason{'s' if len(untrusted) != 1 else ''}"] if untrusted else []) \
        + ([f"{other} warning{'s' if other != 1 else ''}"] if other else [])
    items = [f"- {w}" for w in warnings]
    return "\n".join([f"<details><summary><b>{name}</b>: {' · '.join(counts)}</summary>", "", *items, "",
                      "</details>"])


def render_blog_markdown(names: Sequence[str], analyses: Sequence[RunAnalysis],
                         comparisons: Sequence[Comparison], revisions: Sequence[Revision] = (),
                         suites: Sequence[SuiteComparison] = (), *, paths: bool = False) -> str:
    """One Markdown document over several runs, ready to paste into a write-up: an H1 naming model,
    engine and machine, then `## Results`. Each run's own report follows it one level down
    (`render_markdown(...)` through `shift_headings`). `paths`: keep private paths and ports."""
    out = [f"# {report_title([a.header for a in analyses])}", "", "## Results", ""]
    for rev in revisions:
        out += [f"> {_revision_note(rev)}", ""]
    for n, a in zip(names, analyses, strict=True):
        if a.warnings:
            out += [_findings_markdown(n, a.warnings), ""]
    if len(analyses) > 1:
        out += [section_markdown(differences_section(names, [a.header for a in analyses]), heading="###"), ""]
    # each run's answer (how fast, the load figures, how good, how agent-ready), a run column per table
    out += [x for sec in answer_table_across(names, analyses) for x in (section_markdown(sec, heading="###"), "")]
    if any(a.speed is not None and a.speed.rows for a in analyses):
        out += [speedup_markdown(names, analyses, comparisons), ""]
    for name, sc in zip(names[1:], suites, strict=False):
        if not sc.empty:
            out += [suite_comparison_markdown(sc, baseline=names[0], other=name, heading="###"), ""]
    out += ["| rig | run | status | verdict | source data |", "|---|---|---|---|---|"]
    for n, a in zip(names, analyses, strict=True):
        t = a.header.trust
        verdict = "not assessed" if t is None else ("trusted" if t.trusted else "UNTRUSTED")
        out.append(f"| {n} | {a.header.run_id} | {a.status} | {verdict} | `{a.source_data_id}` |")
    out += ["", "Source data: " + ", ".join(f"`{a.source_data_id}`" for a in analyses), ""]
    text = "\n".join(out)
    return text if paths else hide_session_details(text)
