"""The fingerprint table: one formatter per field of `rigbench.records.Fingerprint`, in one registry.

Each `FingerprintField` names the row, the model fields it reads (dotted below `host`, `model`,
...) and how it writes them; a row whose fields hold nothing is left out. Every field of the model
is either read by a row here or listed in `NOT_SHOWN` with the reason, and
`tests/unit/test_fingerprint_typed.py` fails on a field that is neither: a field added to the
fingerprint gets a formatter or a reason, never silence.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any, NamedTuple

from rigbench.analysis import RunAnalysis, stamping_text
from rigbench.records import EngineBinary, Fingerprint, MemoryBandwidth
from rigbench.report._cells import Section
from rigbench.report._fmt import fmt_bytes

__all__ = ["FINGERPRINT_FIELDS", "NOT_SHOWN", "FingerprintField", "fingerprint_rows", "fingerprint_section",
           "short_hashes"]


class FingerprintField(NamedTuple):
    label: str
    reads: tuple[str, ...]  # the Fingerprint fields this row formats
    format: Callable[[Fingerprint], str | None]  # None: nothing recorded, the row is left out


def short_hashes(text: str) -> str:
    """64-hex digests cut to 16: enough to tell files apart, short enough to read."""
    return re.sub(r"\b([0-9a-f]{16})[0-9a-f]{48}\b", r"\1…", text)


def _engine(fp: Fingerprint) -> str:
    return f"{fp.engine} {fp.engine_version or '(version unknown)'}"


def _mode(fp: Fingerprint) -> str:
    return fp.mode + (" (remote: host below is the client)" if fp.host_is_server is False else "")


def _model(fp: Fingerprint) -> str:
    m = fp.model
    return f"{m.served_name or '?'}" + (f"  {m.path}" if m.path and m.path != m.served_name else "")


def _model_file(fp: Fingerprint) -> str:
    return f"{fmt_bytes(fp.model.size_bytes)}  sha256 {(fp.model.sha256 or 'unknown')[:16]}"


def _draft(fp: Fingerprint) -> str | None:
    d = fp.draft_model
    if d is None:
        return None
    return f"{d.served_name or d.path or '?'}, {fmt_bytes(d.size_bytes)}  sha256 {(d.sha256 or 'unknown')[:16]}"


def _kv_pool(fp: Fingerprint) -> str | None:
    """vLLM: the pool it reported (log, /metrics) beside rigbench's prediction for the same rig."""
    info = fp.server_info
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


def _speculative(fp: Fingerprint) -> str:
    """On / off / unknown with where that was learnt, then the command's own flags when it set any."""
    flags = json.dumps(fp.speculative) if fp.speculative else None
    s = fp.speculation
    if s is None:  # a run before format 10
        if flags or fp.mode != "attached":
            return flags or "off / not configured"
        return "not recorded (attached, before rigbench read it)"
    method = f"; method {s.method}" if s.method else "; method not reported" if s.state == "on" and not flags else ""
    return f"{s.state} ({s.source}{method})" + (f"  {flags}" if flags else "")


def _host(fp: Fingerprint) -> str | None:
    h = fp.host
    if h is None:
        return None
    return (f"{h.cpu_model}, {h.cpu_cores_logical} threads, {fmt_bytes(h.memory_bytes)}"
            + (f", GPU {'; '.join(h.gpus)}" if h.gpus else ""))


def _binary(b: EngineBinary) -> str:
    build = f", {b.build_variant} CPU build" if b.build_variant else ""
    made = ""
    if b.package:
        cpu = f"; compiled with {' '.join(b.build_flags)}" if b.origin == "prebuilt" and b.build_flags else ""
        made = (f" from {b.package} (release {b.source_build or '?'}{cpu}; sha256 "
                f"{(b.package_sha256 or '?')[:16]})")
    why = f"; not the prebuilt: {b.not_prebuilt}" if b.not_prebuilt else ""
    return (f"{b.origin}{build}{made}; CPU fallback: {b.fallback}"
            + (f" ({b.fallback_reason}; it can lower speed)" if b.fallback != "none" else "") + why)


def _bandwidth(bw: MemoryBandwidth, cores: int | None) -> str:
    host = f"host {bw.host_gb_s:g} GB/s ({bw.host_method})" if bw.host_gb_s else "host unknown"
    gpu = (f"; GPU {bw.gpu_name} {bw.gpu_gb_s:g} GB/s" if bw.gpu_gb_s
           else f"; GPU: {bw.gpu_method}" if bw.gpu_method else "")
    load = bw.load_avg_1m
    busy = (f" under load {load:g} (may read low; `rigbench probe` on a quiet machine re-measures)"
            if load is not None and load > 0.5 * (cores or 1) else "")
    return f"{host}{gpu}, probed {bw.measured_at[:10]}{busy}"


def _older(fp: Fingerprint) -> str | None:
    if not fp.older_fields:
        return None
    return "; ".join(f"{k} = {json.dumps(v, default=str)}" for k, v in fp.older_fields.items()) + \
        " (recorded by an older rigbench)"


FINGERPRINT_FIELDS: tuple[FingerprintField, ...] = (
    FingerprintField("engine", ("engine", "engine_version"), _engine),
    FingerprintField("mode", ("mode", "host_is_server"), _mode),
    FingerprintField("model", ("model.served_name", "model.path"), _model),
    FingerprintField("model file", ("model.size_bytes", "model.sha256"), _model_file),
    FingerprintField("model source", ("model.source",), lambda fp: fp.model.source),
    FingerprintField("draft model", ("draft_model",), _draft),
    FingerprintField("chat template sha256", ("chat_template_sha256",),
                     lambda fp: (fp.chat_template_sha256 or "unknown")[:16]),
    FingerprintField("context / slots", ("context_length", "slots"),
                     lambda fp: f"{fp.context_length or '?'} / {fp.slots or '?'}"),
    FingerprintField("KV pool", ("server_info",), _kv_pool),
    FingerprintField("speculative", ("speculative", "speculation"), _speculative),
    FingerprintField("host", ("host.cpu_model", "host.cpu_cores_logical", "host.memory_bytes", "host.gpus"), _host),
    FingerprintField("os / python", ("host.os", "host.python"),
                     lambda fp: f"{fp.host.os} / {fp.host.python}" if fp.host else None),
    FingerprintField("engine binary", ("engine_binary",),
                     lambda fp: _binary(fp.engine_binary) if fp.engine_binary else None),
    FingerprintField("memory bandwidth", ("host.memory_bandwidth",),
                     lambda fp: _bandwidth(fp.host.memory_bandwidth, fp.host.cpu_cores_logical)
                     if fp.host and fp.host.memory_bandwidth else None),
    FingerprintField("command", ("argv",), lambda fp: " ".join(fp.argv) if fp.argv
                     else "not recorded (server started outside rigbench)"),
    FingerprintField("fingerprinted", ("started_at",), lambda fp: fp.started_at),
    FingerprintField("unknown", ("unknown",), lambda fp: "; ".join(fp.unknown) if fp.unknown else None),
    FingerprintField("older fields", ("older_fields",), _older),
)

# Fields of the model no row shows, and why.
NOT_SHOWN: dict[str, str] = {
    "host.cpu_cores_physical": "the logical threads decide the engine's parallelism; shown in `host`",
    "host.cpu_flags": "a long list; it decides which CPU build of the engine runs (the engine binary row says which)",
    "host.rigbench_version": "the run's own rigbench version leads the report",
    "host.hostname": "private to one machine; it identifies no rig",
    "endpoint": "the address the server listened on: its port is a session detail; mode says how it was reached",
    "reports_usage": "shown where it matters: the speed table's token-count provenance",
}


def fingerprint_rows(fp: Fingerprint | None) -> list[list[str]]:
    """One row per registry entry that has something to say."""
    if fp is None:
        return [["fingerprint", "not recorded (the run stopped before its rig was up)"]]
    rows = []
    for f in FINGERPRINT_FIELDS:
        value: Any = f.format(fp)
        if value is not None:
            rows.append([f.label, short_hashes(str(value))])
    return rows


def fingerprint_section(a: RunAnalysis) -> Section:
    """The run id, the fingerprint, and the clock the run's arrivals were read by with the client's
    own error (a fact of the run, measured, beside the rig's)."""
    rows = [["run", a.header.run_id], *fingerprint_rows(a.header.fingerprint)]
    se = a.sections.get("stamping")
    if se is not None:
        rows.append(["arrival stamps", stamping_text(se)])
    return Section("Fingerprint", ["", ""], rows)
