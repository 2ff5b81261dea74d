"""Whole-run reports: terminal (rich), Markdown, JSON. They format; they never compute."""

from __future__ import annotations

import json
from typing import Any

from rich.console import Console, Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from rigbench.analysis import RunAnalysis, stamping_text
from rigbench.outside import for_console, for_markdown, visible
from rigbench.report._agent import render_agent_markdown, render_agent_terminal
from rigbench.report._cells import section_markdown, section_terminal
from rigbench.report._fmt import fmt_bytes
from rigbench.report._honesty import (
    decode_efficiency_text,
    preflight_markdown,
    preflight_terminal,
    roofline_markdown,
    roofline_terminal,
    sanity_markdown,
    sanity_terminal,
    telemetry_markdown,
    telemetry_terminal,
    traffic_text,
)
from rigbench.report._host import host_section
from rigbench.report._labels import synth_note, synthetic_acceptance
from rigbench.report._load import load_markdown, load_terminal
from rigbench.report._publish import hide_session_details, report_title
from rigbench.report._quality import render_quality_markdown, render_quality_terminal
from rigbench.report._speed import latency_markdown, latency_table, speed_markdown, speed_table
from rigbench.report._stability import stability_section

__all__ = ["render_json", "render_markdown", "render_terminal", "shift_headings"]

# UNTRUSTED reasons listed in the terminal's header panel before the rest are counted (a failed gate
# gives one per question: ten red lines would push every table off the screen).
_PANEL_REASONS = 3


def _trust_line(a: RunAnalysis) -> tuple[str, str]:
    t = a.header.trust
    if a.status == "damaged":
        return "DAMAGED", "bold red"
    if t is None:
        return "not assessed", "yellow"
    return ("trusted" if t.trusted else "UNTRUSTED"), ("green" if t.trusted else "bold red")


def _fingerprint_rows(fp: dict[str, Any]) -> list[tuple[str, str]]:
    if not fp:
        return [("fingerprint", "not recorded")]
    model = fp.get("model") or {}
    host = fp.get("host") or {}
    rows = [
        ("engine", f"{fp.get('engine')} {fp.get('engine_version') or '(version unknown)'}"),
        ("mode", fp.get("mode", "?") + ("" if fp.get("host_is_server", True) else " (remote: host below is the client)")),
        ("model", f"{model.get('served_name') or '?'}"
                  + (f"  {model.get('path')}" if model.get("path") and model.get("path") != model.get("served_name")
                     else "")),
        ("model file", f"{fmt_bytes(model.get('size_bytes'))}  sha256 {str(model.get('sha256') or 'unknown')[:16]}"),
        ("chat template sha256", str(fp.get("chat_template_sha256") or "unknown")[:16]),
        ("context / slots", f"{fp.get('context_length') or '?'} / {fp.get('slots') or '?'}"),
        ("speculative", json.dumps(fp.get("speculative")) if fp.get("speculative") else "off / not configured"),
        ("host", f"{host.get('cpu_model')}, {host.get('cpu_cores_logical')} threads, "
                 f"{fmt_bytes(host.get('memory_bytes'))}" + (f", GPU {'; '.join(host.get('gpus') or [])}"
                                                            if host.get("gpus") else "")),
        ("os / python", f"{host.get('os')} / {host.get('python')}"),
        *([("llama-server", _engine_binary_row(fp["engine_binary"]))] if fp.get("engine_binary") else []),
        *([("memory bandwidth", _bandwidth_row(host["memory_bandwidth"], host.get("cpu_cores_logical")))] if host.get("memory_bandwidth") else []),
        ("command", " ".join(fp["argv"]) if fp.get("argv") else "not recorded (server started outside rigbench)"),
    ]
    kv = _kv_pool_row(fp.get("server_info") or {})
    if kv:
        rows.insert(6, ("KV pool", kv))
    if fp.get("unknown"):
        rows.append(("unknown", "; ".join(fp["unknown"])))
    return rows


def run_fingerprint_rows(a: RunAnalysis) -> list[tuple[str, str]]:
    """The fingerprint, and the clock the run's arrivals were read by with the client's own error."""
    rows = _fingerprint_rows(a.header.fingerprint)
    se = a.sections.get("stamping")
    if se is not None:
        rows.append(("arrival stamps", stamping_text(se)))
    return rows


def _kv_pool_row(info: dict[str, Any]) -> str | None:
    """vLLM: the pool it reported (log, /metrics) beside rigbench's prediction for the same rig."""
    log, metrics, pred = info.get("kv_pool_tokens_log"), info.get("kv_pool_tokens_metrics"), info.get("kv_prediction")
    if log is None and metrics is None:
        return None
    parts = [f"{log:,} tokens (server log)" if log is not None else "log: not printed"]
    if metrics is not None:
        parts.append(f"{metrics:,} (server /metrics, block {info.get('block_size')})")
    if isinstance(pred, dict) and pred.get("tokens") is not None:
        err = pred.get("error_vs_server")
        parts.append(f"rigbench predicts {pred['tokens']:,} (estimated from config.json and "
                     f"{pred.get('budget_gib')} GiB{'' if err is None else f', {err:+.2%}'})")
    return "; ".join(parts)


def render_terminal(a: RunAnalysis, console: Console) -> None:
    trust, style = _trust_line(a)
    head = Text.assemble(
        ("run ", "bold"), (visible(a.header.run_id), "bold cyan"), "  status ", (a.status, "bold"),
        "  verdict ", (trust, style), "  source data ", (a.source_data_id, "bold"),
    )
    parts: list[Any] = [head]
    if synthetic_acceptance(a.header) is not None:
        parts.append(Text("! " + visible(synth_note(a.header)), style="bold red"))
    untrusted = [w for w in a.warnings if w.startswith(("UNTRUSTED", "DAMAGED"))]
    shown = untrusted if len(untrusted) <= _PANEL_REASONS + 1 else untrusted[:_PANEL_REASONS]
    for w in shown:
        parts.append(Text("! " + visible(w, multiline=True), style="red"))
    if len(shown) < len(untrusted):
        parts.append(Text(f"! and {len(untrusted) - len(shown)} more UNTRUSTED reasons (every one: "
                          f"rigbench report {visible(a.run_dir)} --markdown FILE)", style="red"))
    for w in a.warnings:
        if not w.startswith(("UNTRUSTED", "DAMAGED")):
            parts.append(Text("! " + visible(w, multiline=True), style="yellow"))
    console.print(Panel(Group(*parts), title="rigbench", title_align="left"))
    if a.startup:
        s = a.startup
        console.print(f"startup: spawn → healthy {s['spawn_to_healthy_s']:.2f} s, healthy → first completion "
                      f"{s['healthy_to_first_completion_s']:.2f} s, total {s['spawn_to_first_completion_s']:.2f} s"
                      f"{_compile_note(s)}")
    if a.speed:
        console.print()
        console.print(speed_table(a.speed, compact=console.width < 120))
        if a.speed.rows:
            console.print()
            console.print(latency_table(a.speed))
    if "load" in a.sections:
        load_terminal(a.sections["load"], console)
    console.print()
    _honesty_terminal(a, console)
    if "quality" in a.sections:
        console.print()
        render_quality_terminal(console, a.sections["quality"])
    if "agent" in a.sections:
        console.print()
        render_agent_terminal(console, a.sections["agent"])
    fp = Table(title="Fingerprint", show_header=False, title_justify="left")
    fp.add_column(style="bold")
    fp.add_column(overflow="fold")
    for k, v in run_fingerprint_rows(a):
        fp.add_row(k, Text(visible(v)))
    console.print()
    console.print(fp)
    console.print(f"[dim]run directory: {for_console(a.run_dir)}[/]")


def _compile_note(s: dict[str, Any]) -> str:
    """vLLM's compile cache: cold and warm starts differ by a minute, so say which this was."""
    state = s.get("compile_cache")
    if not state:
        return ""
    what = {"cold": "cold compile cache (torch.compile ran)", "warm": "warm compile cache (graphs loaded)",
            "off": "no compilation (--enforce-eager)"}.get(state, state)
    secs = f", {s['compile_s']:.1f} s engine-reported" if s.get("compile_s") is not None else ""
    return f" — {what}{secs}"


def render_markdown(a: RunAnalysis, *, paths: bool = False, title: str | None = None) -> str:
    """One run as a post: an H1 naming model, engine and machine, `##` sections, `###` below them.
    `paths`: keep home-directory and temporary paths and local ports (hidden by default).
    `title`: the H1 (a report of several runs gives each run its label and shifts it a level down)."""
    trust, _ = _trust_line(a)
    out = [f"# {for_markdown(title or report_title([a.header]))}", "",
           f"Run `{a.header.run_id}` · status {a.status} · verdict {trust} · source data `{a.source_data_id}` · "
           f"rigbench {a.header.rigbench_version} · started {a.header.created_at}", ""]
    if synthetic_acceptance(a.header) is not None:
        out += ["> **Synthetic acceptance.** " + synth_note(a.header), ""]
    if a.warnings:
        out += ["> " + for_markdown(w) for w in a.warnings] + [""]
    if a.startup:
        s = a.startup
        out += ["## Startup", "",
                f"spawn → healthy {s['spawn_to_healthy_s']:.2f} s · healthy → first completion "
                f"{s['healthy_to_first_completion_s']:.2f} s · total {s['spawn_to_first_completion_s']:.2f} s"
                f"{_compile_note(s)}", ""]
    if a.speed:
        out += ["## Speed", "", "Median ± standard deviation over requests (warm-up excluded); n = requests.",
                "", speed_markdown(a.speed), ""]
        if a.speed.rows:
            out += ["### Latency percentiles", "", latency_markdown(a.speed), ""]
    if "load" in a.sections:
        out += ["## Load (rate mode)", "", load_markdown(a.sections["load"]), ""]
    out += _honesty_markdown(a)
    if "quality" in a.sections:
        out += ["## Quality", "", render_quality_markdown(a.sections["quality"]), ""]
    if "agent" in a.sections:
        out += [render_agent_markdown(a.sections["agent"]), ""]
    out += ["## Fingerprint", "", "| | |", "|---|---|"]
    out += [f"| {k} | {_md_escape(v)} |" for k, v in run_fingerprint_rows(a)]
    out += ["", f"Source data: `{a.source_data_id}`", ""]
    text = "\n".join(out)
    return text if paths else hide_session_details(text)


def shift_headings(markdown: str, by: int) -> str:
    """Every ATX heading `by` levels deeper (outside code blocks), to nest a document in another."""
    out, fenced = [], False
    for line in markdown.split("\n"):
        if line.startswith("```"):
            fenced = not fenced
        out.append("#" * by + line if not fenced and line.startswith("#") and line.lstrip("#").startswith(" ")
                   else line)
    return "\n".join(out)


def _honesty_terminal(a: RunAnalysis, console: Console) -> None:
    if a.speed and "host" in a.sections:
        section_terminal(console, host_section(a.sections["host"]))
    if "stability" in a.sections:
        section_terminal(console, stability_section(a.sections["stability"]))
    if "preflight" in a.sections:
        preflight_terminal(a.sections["preflight"], console)
    if "roofline" in a.sections:
        rl = a.sections["roofline"]
        if rl.roofline is not None:
            console.print(f"[bold]decode roofline[/] (measured: {for_console(rl.scenario)}, median decode tok/s)")
            roofline_terminal(rl.roofline, console)
            if rl.rows:
                console.print(f"decode efficiency (median per-request decode tok/s / ceiling): {_eff(rl)}",
                              highlight=False)
        else:
            console.print(f"[dim]decode roofline: {for_console(rl.unavailable)}[/]")
    if "telemetry" in a.sections:
        summaries, checks = a.sections["telemetry"]
        telemetry_terminal(summaries, checks, console)
    if "sanity" in a.sections:
        gate, screen = a.sections["sanity"]
        sanity_terminal(gate, screen, console)
    if "traffic" in a.sections:
        tc = a.sections["traffic"]
        console.print(f"[{'green' if tc.trusted else 'bold red'}]{for_console(traffic_text(tc))}[/]", highlight=False)


def _honesty_markdown(a: RunAnalysis) -> list[str]:
    out: list[str] = []
    if a.speed and "host" in a.sections:
        out += [section_markdown(host_section(a.sections["host"]), heading="##"), ""]
    if "stability" in a.sections:
        out += [section_markdown(stability_section(a.sections["stability"]), heading="##"), ""]
    if "preflight" in a.sections:
        out += [preflight_markdown(a.sections["preflight"], heading="##"), ""]
    if "sanity" in a.sections:
        out += [sanity_markdown(*a.sections["sanity"], heading="##"), ""]
    if "traffic" in a.sections:
        out += ["## Traffic check", "", traffic_text(a.sections["traffic"]).removeprefix("traffic check: ") + ".", ""]
    if "roofline" in a.sections:
        rl = a.sections["roofline"]
        out += [roofline_markdown(rl.roofline, heading="##") + f"\n\nMeasured on {rl.scenario} (median decode tok/s)."
                + (f" Decode efficiency per row (median per-request decode tok/s / ceiling): {_eff(rl)}."
                   if rl.rows else "")
                if rl.roofline is not None else f"## Decode roofline\n\nNot available: {rl.unavailable}", ""]
    if "telemetry" in a.sections:
        out += [telemetry_markdown(*a.sections["telemetry"], heading="##"), ""]
    return out


def _eff(rl: Any) -> str:
    return decode_efficiency_text([(r.scenario, r.concurrency, r.decode_tok_s, r.efficiency) for r in rl.rows])


def _engine_binary_row(b: dict[str, Any]) -> str:
    build = f", {b['build_variant']} CPU build" if b.get("build_variant") else ""
    fb = b.get("fallback") or "none"
    return (f"{b.get('origin')}{build}; CPU fallback: {fb}"
            + (f" ({b.get('fallback_reason')}; it can lower speed)" if fb != "none" else ""))


def _bandwidth_row(bw: dict[str, Any], cores: int | None) -> str:
    host = f"host {bw['host_gb_s']:g} GB/s ({bw.get('host_method')})" if bw.get("host_gb_s") else "host unknown"
    gpu = (f"; GPU {bw.get('gpu_name')} {bw['gpu_gb_s']:g} GB/s" if bw.get("gpu_gb_s")
           else f"; GPU: {bw.get('gpu_method')}" if bw.get("gpu_method") else "")
    load = bw.get("load_avg_1m")
    busy = (f" under load {load:g} (may read low; `rigbench probe` on a quiet machine re-measures)"
            if isinstance(load, int | float) and load > 0.5 * (cores or 1) else "")
    return f"{host}{gpu}, probed {str(bw.get('measured_at') or '?')[:10]}{busy}"


def _md_escape(text: str) -> str:
    return for_markdown(text)


def render_json(a: RunAnalysis) -> str:
    return a.model_dump_json(indent=2)
