"""Plots as inline SVG strings (matplotlib, no pyplot, no display). They draw analysis results;
they compute nothing beyond picking fields.

Each function returns None when the runs hold nothing to draw, so the page can say so.
"""

from __future__ import annotations

import io
import re
from collections.abc import Sequence
from typing import Any

from matplotlib import rc_context
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from rigbench.analysis import Comparison, RunAnalysis, Stat
from rigbench.report._speed import NOT_COMPARABLE

__all__ = ["plot_accuracy", "plot_agent_matrix", "plot_concurrency", "plot_goodput", "plot_latency",
           "plot_latency_cdf", "plot_rate_latency", "plot_speedup", "plot_tok_s", "plot_tokens_over_time", "svg"]

_COLORS = ["#4C72B0", "#DD8452", "#55A868", "#C44E52", "#8172B3", "#937860", "#DA8BC3", "#8C8C8C"]


def svg(fig: Figure) -> str:
    """The figure as an <svg> element to inline in HTML (no XML prolog, no DOCTYPE, no external refs)."""
    buf = io.StringIO()
    # a fixed salt for the clip-path ids (matplotlib draws a random one per id): the same run gives the
    # same page, so `run --html` and `report --html` agree byte for byte. An id then follows from its
    # clip path alone, so ids repeated across a page's plots name identical clips.
    with rc_context({"svg.hashsalt": "rigbench"}):
        fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None, "Creator": None})
    text = buf.getvalue()
    text = re.sub(r"<\?xml[^>]*\?>\s*", "", text)
    text = re.sub(r"<!DOCTYPE[^>]*>\s*", "", text)
    text = re.sub(r"<metadata>.*?</metadata>\s*", "", text, flags=re.S)  # RDF block with namespace URLs
    return text


def _fig(width: float = 7.5, height: float = 3.2) -> Figure:
    fig = Figure(figsize=(width, height))
    fig.set_layout_engine("constrained")
    return fig


def _legend(ax: Any) -> None:
    """Outside the axes, to the right: it never covers a bar, and the saved figure grows to fit it."""
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False, borderaxespad=0)


def _keys(analyses: Sequence[RunAnalysis]) -> list[tuple[str, int]]:
    keys: list[tuple[str, int]] = []
    for a in analyses:
        for r in a.speed.rows if a.speed else []:
            if (r.scenario, r.concurrency) not in keys:
                keys.append((r.scenario, r.concurrency))
    return keys


def _row(a: RunAnalysis, key: tuple[str, int]) -> Any:
    return next((r for r in (a.speed.rows if a.speed else []) if (r.scenario, r.concurrency) == key), None)


def _label(key: tuple[str, int], multi_conc: bool) -> str:
    return f"{key[0]}\nc={key[1]}" if multi_conc else key[0]


def plot_tok_s(names: Sequence[str], analyses: Sequence[RunAnalysis]) -> str | None:
    """End-to-end tok/s per scenario, one bar per configuration: median, whisker = ± std."""
    keys = _keys(analyses)
    if not keys:
        return None
    multi = len({c for _, c in keys}) > 1
    fig = _fig()
    ax = fig.add_subplot()
    width = 0.8 / len(analyses)
    for j, (name, a) in enumerate(zip(names, analyses, strict=True)):
        xs, ys, errs = [], [], []
        for i, key in enumerate(keys):
            r = _row(a, key)
            s: Stat | None = r.e2e_tok_s if r is not None else None
            if s is not None:
                xs.append(i + (j - (len(analyses) - 1) / 2) * width)
                ys.append(s.median)
                errs.append(s.std)
        ax.bar(xs, ys, width * 0.95, yerr=errs, capsize=3, label=name, color=_COLORS[j % len(_COLORS)])
    ax.set_xticks(range(len(keys)), [_label(k, multi) for k in keys])
    ax.set_ylabel("e2e tok/s per request")
    ax.set_title("Throughput by scenario and configuration (median ± std)")
    _legend(ax)
    ax.grid(axis="y", alpha=0.3)
    return svg(fig)


def plot_speedup(names: Sequence[str], comparisons: Sequence[Comparison],
                 synthetic: Sequence[float | None] = ()) -> str | None:
    """Speed-up of each configuration over the first run, per scenario: ratio ± propagated error.
    `synthetic`: per compared run, its scripted acceptance length (--spec-synth-len) or None; such
    bars get a red outline and a red 'SYNTHETIC' legend entry."""
    if not comparisons:
        return None
    keys: list[tuple[str, int]] = []
    for c in comparisons:
        for r in c.rows:
            if (r.scenario, r.concurrency) not in keys:
                keys.append((r.scenario, r.concurrency))
    if not keys:
        return None
    multi = len({c for _, c in keys}) > 1
    fig = _fig()
    ax = fig.add_subplot()
    width = 0.8 / len(comparisons)
    for j, (name, comp) in enumerate(zip(names[1:], comparisons, strict=True)):
        xs, ys, errs, hatch = [], [], [], []
        for i, key in enumerate(keys):
            row = next((r for r in comp.rows if (r.scenario, r.concurrency) == key), None)
            if row is None or row.result.ratio is None:
                continue
            xs.append(i + (j - (len(comparisons) - 1) / 2) * width)
            ys.append(row.result.ratio)
            errs.append(row.result.ratio_err or 0.0)
            hatch.append(row.result.verdict != "differs")
        L = synthetic[j] if j < len(synthetic) else None
        label = name if L is None else f"{name}\nSYNTHETIC L={L:g}"
        bars = ax.bar(xs, ys, width * 0.95, yerr=errs, capsize=3, label=label, color=_COLORS[(j + 1) % len(_COLORS)],
                      edgecolor="#c0392b" if L is not None else None, linewidth=2 if L is not None else 0)
        for b, h in zip(bars, hatch, strict=True):
            if h:  # not significant: drawn hollow so it does not read as a measured difference
                b.set_hatch("//")
                b.set_alpha(0.5)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xticks(range(len(keys)), [_label(k, multi) for k in keys])
    ax.set_ylabel(f"× vs {names[0]}")
    ax.set_title(f"Speed-up vs {names[0]} (ratio of means ± error; hatched: not a measured difference)")
    _legend(ax)
    legend = ax.get_legend()
    for text in legend.get_texts() if legend is not None else []:
        if "SYNTHETIC" in text.get_text():
            text.set_color("#c0392b")
    ax.grid(axis="y", alpha=0.3)
    return svg(fig)


def plot_concurrency(names: Sequence[str], analyses: Sequence[RunAnalysis]) -> str | None:
    """Per scenario with several concurrency levels: per-request and aggregate tok/s vs concurrency."""
    scenarios = []
    for a in analyses:
        by: dict[str, set[int]] = {}
        for r in a.speed.rows if a.speed else []:
            by.setdefault(r.scenario, set()).add(r.concurrency)
        scenarios += [s for s, cs in by.items() if len(cs) > 1 and s not in scenarios]
    if not scenarios:
        return None
    fig = _fig(7.5, 3.0 * len(scenarios))
    axes = fig.subplots(len(scenarios), 2, squeeze=False)
    for i, scen in enumerate(scenarios):
        for j, (name, a) in enumerate(zip(names, analyses, strict=True)):
            rows = sorted((r for r in (a.speed.rows if a.speed else []) if r.scenario == scen),
                          key=lambda r: r.concurrency)
            color = _COLORS[j % len(_COLORS)]
            per = [(r.concurrency, r.e2e_tok_s) for r in rows if r.e2e_tok_s]
            agg = [(r.concurrency, r.aggregate_tok_s) for r in rows if r.aggregate_tok_s]
            axes[i][0].errorbar([c for c, _ in per], [s.median for _, s in per], yerr=[s.std for _, s in per],
                                marker="o", capsize=3, label=name, color=color)
            axes[i][1].errorbar([c for c, _ in agg], [s.median for _, s in agg], yerr=[s.std for _, s in agg],
                                marker="o", capsize=3, label=name, color=color)
        axes[i][0].set_title(f"{scen}: per request")
        axes[i][1].set_title(f"{scen}: aggregate")
        for ax in axes[i]:
            ax.set_xlabel("concurrent requests")
            ax.set_ylabel("tok/s")
            ax.set_xscale("log", base=2)
            ax.grid(alpha=0.3)
        _legend(axes[i][1])
    return svg(fig)


def _dist(ax: Any, stats: list[tuple[str, Stat | None]], title: str, scale: float, unit: str) -> None:
    """A distribution summary per item: min–max line, mean ± std box, median tick."""
    for i, (_, s) in enumerate(stats):
        if s is None:
            continue
        ax.plot([s.min * scale, s.max * scale], [i, i], color="#888", linewidth=1)
        ax.barh(i, 2 * s.std * scale, left=(s.mean - s.std) * scale, height=0.4, color="#4C72B0", alpha=0.6)
        ax.plot([s.median * scale], [i], marker="|", markersize=14, color="black")
    ax.set_yticks(range(len(stats)), [label for label, _ in stats], fontsize="small")
    ax.set_xlabel(unit)
    ax.set_title(title)
    ax.grid(axis="x", alpha=0.3)


def plot_latency(names: Sequence[str], analyses: Sequence[RunAnalysis]) -> str | None:
    """TTFT and ITL per configuration x scenario: range, mean ± std, median."""
    ttft: list[tuple[str, Stat | None]] = []
    itl: list[tuple[str, Stat | None]] = []
    for name, a in zip(names, analyses, strict=True):
        for r in a.speed.rows if a.speed else []:
            label = f"{name} · {r.scenario} c={r.concurrency}"
            nm = " (n/m: buffered)" if r.latency_not_measurable else ""
            ttft.append((label + (f" ({NOT_COMPARABLE})" if r.ttft_not_comparable else nm), r.ttft_s))
            itl.append((label + nm, r.itl_mean_s))
    if not any(s for _, s in ttft + itl):
        return None
    fig = _fig(7.5, 1.0 + 0.35 * len(ttft) * 2)
    ax1, ax2 = fig.subplots(2, 1)
    _dist(ax1, ttft, "Time to first token (line: min–max, box: mean ± std, tick: median)", 1e3, "ms")
    _dist(ax2, itl, "Inter-token latency, per-request mean (over requests)", 1e3, "ms")
    return svg(fig)


def plot_acceptance(names: Sequence[str], analyses: Sequence[RunAnalysis]) -> str | None:
    """Histogram of per-request mean acceptance length (speculative decoding), one series per run."""
    series = [(n, [v for vals in a.sections.get("acceptance", {}).values() for v in vals])
              for n, a in zip(names, analyses, strict=True)]
    series = [(n, v) for n, v in series if v]
    if not series:
        return None
    fig = _fig(7.5, 3.0)
    ax = fig.subplots()
    lo = min(min(v) for _, v in series)
    hi = max(max(v) for _, v in series)
    bins = [lo + (hi - lo) * i / 20 for i in range(21)] if hi > lo else 10
    for n, v in series:
        ax.hist(v, bins=bins, alpha=0.6, label=f"{n} (n={len(v)})")
    ax.set_xlabel("mean acceptance length per request (tokens per verification step, bonus included)")
    ax.set_ylabel("requests")
    _legend(ax)
    return svg(fig)


def plot_accuracy(names: Sequence[str], analyses: Sequence[RunAnalysis]) -> str | None:
    """MMLU-Pro per-subject accuracy with ± 1 standard error, one bar per run."""
    runs = []
    for name, a in zip(names, analyses, strict=True):
        q = a.sections.get("quality")
        mmlu = getattr(q, "mmlu_pro", None) or (q if hasattr(q, "subjects") else None)
        if mmlu is not None and mmlu.subjects:
            runs.append((name, mmlu))
    if not runs:
        return None
    subjects = sorted({s.subject for _, m in runs for s in m.subjects})
    fig = _fig(7.5, 3.6)
    ax = fig.add_subplot()
    width = 0.8 / len(runs)
    for j, (name, m) in enumerate(runs):
        by = {s.subject: s for s in m.subjects}
        xs = [i + (j - (len(runs) - 1) / 2) * width for i, s in enumerate(subjects) if s in by]
        ax.bar(xs, [100 * by[s].accuracy.p for s in subjects if s in by], width * 0.95,
               yerr=[100 * by[s].accuracy.se for s in subjects if s in by], capsize=2, label=name,
               color=_COLORS[j % len(_COLORS)])
    ax.set_xticks(range(len(subjects)), subjects, rotation=45, ha="right", fontsize="small")
    ax.set_ylabel("accuracy %")
    ax.set_ylim(0, 100)
    ax.set_title("MMLU-Pro accuracy by subject (± 1 standard error)")
    _legend(ax)
    ax.grid(axis="y", alpha=0.3)
    return svg(fig)


_VERDICT_COLOR = {"pass": "#55A868", "fail": "#C44E52", "silently_ignored": "#8B0000", "unsupported": "#DD8452"}


def plot_agent_matrix(names: Sequence[str], analyses: Sequence[RunAnalysis]) -> str | None:
    """Agent probes x runs, each cell coloured by its verdict."""
    runs = [(n, a.sections["agent"]) for n, a in zip(names, analyses, strict=True)
            if "agent" in a.sections and a.sections["agent"].probes]
    if not runs:
        return None
    probes: list[str] = []
    for _, ag in runs:
        probes += [p.probe for p in ag.probes if p.probe not in probes]
    fig = _fig(min(7.5, 2.5 + 1.6 * len(runs)), 0.8 + 0.32 * len(probes))
    ax = fig.add_subplot()
    for j, (_, ag) in enumerate(runs):
        by = {p.probe: str(p.verdict) for p in ag.probes}
        for i, probe in enumerate(probes):
            v = by.get(probe)
            ax.add_patch(_rect(j, i, _VERDICT_COLOR.get(v or "", "#DDDDDD")))
            ax.text(j + 0.5, i + 0.5, v or "–", ha="center", va="center", fontsize=7, color="white" if v else "black")
    ax.set_xlim(0, len(runs))
    ax.set_ylim(len(probes), 0)
    ax.set_xticks([j + 0.5 for j in range(len(runs))], [n for n, _ in runs], fontsize="small")
    ax.set_yticks([i + 0.5 for i in range(len(probes))], probes, fontsize="small")
    ax.set_title("Agent probes")
    return svg(fig)


def _rect(x: float, y: float, color: str) -> Any:
    return Rectangle((x, y), 1, 1, facecolor=color, edgecolor="white")


def _load_rates(a: RunAnalysis) -> list[Any]:
    """The rates a curve may join: windows of one offered rate that had a steady interval (a window too short
    for one is marked in the tables, not drawn as a point of the curve)."""
    load = a.sections.get("load")
    if load is None:
        return []
    ws = [w for w in load.rates if w.sessions is None and not (w.steady is not None and w.steady.measured_s == 0)]
    return sorted(ws, key=lambda w: w.offered_rate_rps)


def plot_rate_latency(names: Sequence[str], analyses: Sequence[RunAnalysis]) -> str | None:
    """Rate -> latency curves (p50, p90, p99) of TTFT, ITL and e2e, response times from the intended start
    (measured, client clock). None unless a run measured two or more rates."""
    runs = [(n, _load_rates(a)) for n, a in zip(names, analyses, strict=True)]
    runs = [(n, ws) for n, ws in runs if len(ws) > 1]
    if not runs:
        return None
    fig = _fig(7.5, 7.5)
    axes = fig.subplots(3, 1)
    metrics = (("ttft_response_s", "TTFT (response, from intended start)"), ("itl_s", "ITL (per-request mean)"),
               ("e2e_response_s", "end-to-end (response, from intended start)"))
    styles = (("median", "-", "p50"), ("p90", "--", "p90"), ("p99", ":", "p99"))
    for ax, (field, title) in zip(axes, metrics, strict=True):
        for j, (name, ws) in enumerate(runs):
            color = _COLORS[j % len(_COLORS)]
            for attr, style, label in styles:
                pts = [(w.offered_rate_rps, getattr(getattr(w, field), attr)) for w in ws if getattr(w, field) is not None]
                pts = [(x, y * 1e3) for x, y in pts if y is not None]
                if pts:
                    ax.plot([x for x, _ in pts], [y for _, y in pts], style, marker="o", markersize=3, color=color,
                            label=f"{name} {label}" if len(runs) > 1 else label)
        ax.set_title(title + ", measured")
        ax.set_xlabel("offered rate (req/s)")
        ax.set_ylabel("ms")
        ax.grid(alpha=0.3)
        _legend(ax)
    return svg(fig)


def plot_goodput(names: Sequence[str], analyses: Sequence[RunAnalysis]) -> str | None:
    """Offered rate -> throughput and goodput under the run's SLO, the knee marked. None without an SLO
    on two or more rates."""
    runs = [(n, _load_rates(a), a.sections["load"]) for n, a in zip(names, analyses, strict=True)
            if "load" in a.sections and a.sections["load"].slo is not None]
    runs = [(n, ws, s) for n, ws, s in runs if len(ws) > 1]
    if not runs:
        return None
    fig = _fig(7.5, 3.4)
    ax = fig.subplots()
    top = 0.0
    for j, (name, ws, s) in enumerate(runs):
        color = _COLORS[j % len(_COLORS)]
        x = [w.offered_rate_rps for w in ws]
        top = max(top, *x)
        ax.plot(x, [w.throughput_rps for w in ws], "--", marker="o", markersize=3, color=color,
                label=f"{name} throughput" if len(runs) > 1 else "throughput")
        ax.plot(x, [w.slo.goodput_rps for w in ws], "-", marker="o", color=color,
                label=f"{name} goodput" if len(runs) > 1 else "goodput")
        k = s.knee  # a bound: a knee between two tested rates, or only a lower (upper) bound
        at, label = ((k.low_rps, f"knee {k.low_rps:.3g} req/s" if k.bracketed else f"knee ≥ {k.low_rps:.3g} req/s")
                     if k is not None and k.low_rps is not None else
                     (k.high_rps, f"knee < {k.high_rps:.3g} req/s") if k is not None and k.high_rps is not None
                     else (None, ""))
        if at is not None:
            ax.axvline(at, color=color, linestyle=":", linewidth=1.5)
            ax.annotate(label, (at, 0), xytext=(4, 6), textcoords="offset points", fontsize="small", color=color)
    ax.plot([0, top], [0, top], color="#bbb", linewidth=0.8, label="offered")
    ax.set_xlabel("offered rate (req/s)")
    ax.set_ylabel("req/s (measured)")
    ax.set_title("Throughput and goodput (requests meeting every SLO target) by offered rate")
    ax.grid(alpha=0.3)
    _legend(ax)
    return svg(fig)


def plot_latency_cdf(series: Sequence[tuple[str, Sequence[float], Sequence[float]]]) -> str | None:
    """TTFT and per-request ITL as empirical CDFs over the measured requests, one line per run:
    (name, TTFT seconds, ITL seconds)."""
    if not any(t or i for _, t, i in series):
        return None
    fig = _fig(7.5, 3.0)
    ax1, ax2 = fig.subplots(1, 2)
    for j, (name, ttft, itl) in enumerate(series):
        for ax, values in ((ax1, ttft), (ax2, itl)):
            if values:
                xs = sorted(v * 1e3 for v in values)
                ax.step(xs, [(k + 1) / len(xs) for k in range(len(xs))], where="post", label=name,
                        color=_COLORS[j % len(_COLORS)])
    for ax, what in ((ax1, "TTFT"), (ax2, "ITL, per-request mean")):
        ax.set_xlabel(f"{what}, ms (measured)")
        ax.set_ylabel("fraction of requests")
        ax.set_ylim(0, 1.02)
        ax.grid(alpha=0.3)
    _legend(ax2)
    return svg(fig)


def plot_tokens_over_time(series: Sequence[tuple[str, str, Sequence[float], Sequence[float]]]) -> str | None:
    """Tokens received over time for one request per run: (name, which request, seconds since sent,
    cumulative output tokens)."""
    series = [s for s in series if s[2]]
    if not series:
        return None
    fig = _fig(7.5, 3.0)
    ax = fig.add_subplot()
    for j, (name, which, t, tokens) in enumerate(series):
        ax.step(t, tokens, where="post", label=f"{name}: {which}", color=_COLORS[j % len(_COLORS)])
    ax.set_xlabel("seconds since the request was sent (measured)")
    ax.set_ylabel("output tokens received")
    ax.grid(alpha=0.3)
    _legend(ax)
    return svg(fig)
