"""Whole-run reports: terminal (rich), Markdown, JSON. They format; they never compute."""

from __future__ import annotations

import json
from typing import Any

from rich.console import Console, Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from rigbench.analysis import RunAnalysis
from rigbench.report._agent import render_agent_markdown, render_agent_terminal
from rigbench.report._fmt import fmt_bytes
from rigbench.report._honesty import (
    preflight_markdown,
    preflight_terminal,
    roofline_markdown,
    roofline_terminal,
    sanity_markdown,
    sanity_terminal,
    telemetry_markdown,
    telemetry_terminal,
)
from rigbench.report._quality import render_quality_markdown, render_quality_terminal
from rigbench.report._speed import speed_markdown, speed_table

__all__ = ["render_json", "render_markdown", "render_terminal"]


def _trust_line(a: RunAnalysis) -> tuple[str, str]:
    t = a.header.trust
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
        ("model", f"{model.get('served_name') or '?'}  {model.get('path') or ''}"),
        ("model file", f"{fmt_bytes(model.get('size_bytes'))}  sha256 {str(model.get('sha256') or 'unknown')[:16]}"),
        ("chat template sha256", str(fp.get("chat_template_sha256") or "unknown")[:16]),
        ("context / slots", f"{fp.get('context_length') or '?'} / {fp.get('slots') or '?'}"),
        ("speculative", json.dumps(fp.get("speculative")) if fp.get("speculative") else "off / not configured"),
        ("host", f"{host.get('cpu_model')}, {host.get('cpu_cores_logical')} threads, "
                 f"{fmt_bytes(host.get('memory_bytes'))}" + (f", GPU {'; '.join(host.get('gpus') or [])}"
                                                            if host.get("gpus") else "")),
        ("os / python", f"{host.get('os')} / {host.get('python')}"),
        ("command", " ".join(fp["argv"]) if fp.get("argv") else "not recorded (server started outside rigbench)"),
    ]
    kv = _kv_pool_row(fp.get("server_info") or {})
    if kv:
        rows.insert(6, ("KV pool", kv))
    if fp.get("unknown"):
        rows.append(("unknown", "; ".join(fp["unknown"])))
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
        ("run ", "bold"), (a.header.run_id, "bold cyan"), "  status ", (a.status, "bold"),
        "  verdict ", (trust, style), "  source data ", (a.source_data_id, "bold"),
    )
    parts: list[Any] = [head]
    for w in a.warnings:
        parts.append(Text("! " + w, style="red" if w.startswith("UNTRUSTED") else "yellow"))
    console.print(Panel(Group(*parts), title="rigbench", title_align="left"))
    if a.startup:
        s = a.startup
        console.print(f"startup: spawn → healthy {s['spawn_to_healthy_s']:.2f} s, healthy → first completion "
                      f"{s['healthy_to_first_completion_s']:.2f} s, total {s['spawn_to_first_completion_s']:.2f} s"
                      f"{_compile_note(s)}")
    if a.speed:
        console.print(speed_table(a.speed, compact=console.width < 120))
        if any(r.ttft_not_comparable for r in a.speed.rows):
            console.print("[dim]n/c*: TTFT not comparable — chunks carried several tokens each.[/]")
    _honesty_terminal(a, console)
    if "quality" in a.sections:
        render_quality_terminal(console, a.sections["quality"])
    if "agent" in a.sections:
        render_agent_terminal(console, a.sections["agent"])
    fp = Table(title="Fingerprint", show_header=False, title_justify="left")
    fp.add_column(style="bold")
    fp.add_column(overflow="fold")
    for k, v in _fingerprint_rows(a.header.fingerprint):
        fp.add_row(k, v)
    console.print(fp)
    console.print(f"[dim]run directory: {a.run_dir}[/]")


def _compile_note(s: dict[str, Any]) -> str:
    """vLLM's compile cache: cold and warm starts differ by a minute, so say which this was."""
    state = s.get("compile_cache")
    if not state:
        return ""
    what = {"cold": "cold compile cache (torch.compile ran)", "warm": "warm compile cache (graphs loaded)",
            "off": "no compilation (--enforce-eager)"}.get(state, state)
    secs = f", {s['compile_s']:.1f} s engine-reported" if s.get("compile_s") is not None else ""
    return f" — {what}{secs}"


def render_markdown(a: RunAnalysis) -> str:
    trust, _ = _trust_line(a)
    out = [f"# rigbench run {a.header.run_id}", "",
           f"Status: **{a.status}** · verdict: **{trust}** · source data: `{a.source_data_id}` · "
           f"rigbench {a.header.rigbench_version} · started {a.header.created_at}", ""]
    if a.warnings:
        out += ["> " + w for w in a.warnings] + [""]
    if a.startup:
        s = a.startup
        out += ["## Startup", "",
                f"spawn → healthy {s['spawn_to_healthy_s']:.2f} s · healthy → first completion "
                f"{s['healthy_to_first_completion_s']:.2f} s · total {s['spawn_to_first_completion_s']:.2f} s"
                f"{_compile_note(s)}", ""]
    if a.speed:
        out += ["## Speed", "", "Median ± standard deviation over repetitions (warm-up excluded); n = requests.",
                "", speed_markdown(a.speed), ""]
    out += _honesty_markdown(a)
    if "quality" in a.sections:
        out += [render_quality_markdown(a.sections["quality"]), ""]
    if "agent" in a.sections:
        out += [render_agent_markdown(a.sections["agent"]), ""]
    out += ["## Fingerprint", "", "| | |", "|---|---|"]
    out += [f"| {k} | {_md_escape(v)} |" for k, v in _fingerprint_rows(a.header.fingerprint)]
    out += ["", f"Source data: `{a.source_data_id}`", ""]
    return "\n".join(out)


def _honesty_terminal(a: RunAnalysis, console: Console) -> None:
    if "preflight" in a.sections:
        preflight_terminal(a.sections["preflight"], console)
    if "roofline" in a.sections:
        rl = a.sections["roofline"]
        if rl.roofline is not None:
            console.print(f"[bold]decode roofline[/] (measured: {rl.scenario}, median decode tok/s)")
            roofline_terminal(rl.roofline, console)
        else:
            console.print(f"[dim]decode roofline: {rl.unavailable}[/]")
    if "telemetry" in a.sections:
        summaries, checks = a.sections["telemetry"]
        telemetry_terminal(summaries, checks, console)
    if "sanity" in a.sections:
        gate, screen = a.sections["sanity"]
        sanity_terminal(gate, screen, console)


def _honesty_markdown(a: RunAnalysis) -> list[str]:
    out: list[str] = []
    if "preflight" in a.sections:
        out += [preflight_markdown(a.sections["preflight"]), ""]
    if "sanity" in a.sections:
        out += [sanity_markdown(*a.sections["sanity"]), ""]
    if "roofline" in a.sections:
        rl = a.sections["roofline"]
        out += [roofline_markdown(rl.roofline) + f"\n\nMeasured on {rl.scenario} (median decode tok/s)."
                if rl.roofline is not None else f"Decode roofline: {rl.unavailable}", ""]
    if "telemetry" in a.sections:
        out += [telemetry_markdown(*a.sections["telemetry"]), ""]
    return out


def _md_escape(text: str) -> str:
    return text.replace("|", "\\|")


def render_json(a: RunAnalysis) -> str:
    return a.model_dump_json(indent=2)
