"""The honesty sections of one run's analysis: the gate, the output screen, server telemetry, the
client/server timing cross-check and the decode roofline."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import Field

from rigbench.analysis._roofline import Roofline, lookup_device, roofline, weights_from_path
from rigbench.analysis._speculation import acceptance_samples
from rigbench.analysis._speed import SpeedSummary
from rigbench.analysis._telemetry import (
    ScenarioTelemetry,
    TimingCrossCheck,
    cross_check_timings,
    summarize_telemetry,
)
from rigbench.errors import RigbenchError
from rigbench.records import (
    Fingerprint,
    Frozen,
    OutputScreen,
    PreflightReport,
    SanityVerdict,
    SpeedRequest,
    TelemetryRecord,
    TrafficCheck,
)
from rigbench.store import RunReader

__all__ = ["RowEfficiency", "RunRoofline", "honesty_sections"]


class RowEfficiency(Frozen):
    """One speed row's median per-request decode speed against the single-stream ceiling."""

    scenario: str
    concurrency: int
    decode_tok_s: float
    efficiency: float  # decode_tok_s / ceiling_tok_s (above 1.0: an input is wrong, see Roofline.finding)


class RunRoofline(Frozen):
    """The decode roofline against the most decode-heavy scenario's median decode speed."""

    scenario: str | None
    roofline: Roofline | None
    unavailable: str | None = None  # why there is no roofline (bandwidth or weights unknown)
    rows: list[RowEfficiency] = Field(default_factory=list)  # every speed row's decode efficiency


def _bandwidth(fp: Fingerprint | None, plan: dict[str, Any]) -> tuple[float | None, str, str]:
    """(GB/s, source text, basis): --bandwidth-gbs, else the datasheet table, else this machine's probe.

    The device is the GPU when the host has one and the engine is not rigbench's own CPU build.
    """
    if plan.get("bandwidth_gb_s") is not None:
        return float(plan["bandwidth_gb_s"]), "given with --bandwidth-gbs", "override"
    host = fp.host if fp is not None else None
    built = fp is not None and fp.engine_binary is not None and fp.engine_binary.origin in ("built", "prebuilt")
    gpus = [] if built or host is None else list(host.gpus)  # rigbench's own llama-server runs on the CPU
    for name in gpus or [(host.cpu_model if host else None) or ""]:
        dev = lookup_device(name.split(",")[0]) if name else None
        if dev:
            return dev.bandwidth_gb_s, f"{dev.name}: {dev.source}", "datasheet"
    bw = host.memory_bandwidth if host is not None else None
    if gpus:
        if bw is not None and bw.gpu_gb_s:
            return bw.gpu_gb_s, f"probed: {bw.gpu_name} {bw.gpu_method}", "probed"
        return None, (f"the GPU ({gpus[0]}) is not in rigbench's table and its bandwidth was not measured "
                      f"({(bw.gpu_method if bw else None) or 'no probe recorded'})"), "probed"
    if bw is not None and bw.host_gb_s:
        return bw.host_gb_s, f"probed on this machine: {bw.host_method}", "probed"
    return None, "the host's bandwidth is not in rigbench's table and was not probed (run recorded before "\
                 "the probe existed, or probing disabled)", "probed"


def _roofline(reader: RunReader, speed: SpeedSummary | None) -> RunRoofline | None:
    if speed is None or not speed.rows:
        return None
    fp = reader.header.fingerprint
    plan = reader.header.plan or {}
    path = fp.model.path if fp is not None else None
    weights = None
    if path and Path(path).is_file():
        try:
            weights = weights_from_path(path).weights_bytes
        except RigbenchError:
            weights = None
    if weights is None:
        return RunRoofline(scenario=None, roofline=None, unavailable=(
            "weight bytes unknown (the model file is not readable here, e.g. attach mode): "
            "use `rigbench roofline --weights-gb ... --bandwidth-gbs ... --tok-s ...`"))
    bw, source, basis = _bandwidth(fp, plan)
    if bw is None:
        return RunRoofline(scenario=None, roofline=None, unavailable=(
            f"memory bandwidth unknown: {source}. Measure it with `rigbench probe` and pass --bandwidth-gbs "
            "to `rigbench run`"))
    rows = [r for r in speed.rows if r.concurrency == 1 and r.decode_tok_s is not None]
    if not rows:
        return None
    best = min(rows, key=lambda r: r.prefill_share if r.prefill_share is not None else 1.0)
    assert best.decode_tok_s is not None
    rl = roofline(weights, bw, measured_tok_s=best.decode_tok_s.median, bandwidth_source=source,
                  bandwidth_basis=basis)  # type: ignore[arg-type]
    per_row = [RowEfficiency(scenario=r.scenario, concurrency=r.concurrency, decode_tok_s=r.decode_tok_s.median,
                             efficiency=r.decode_tok_s.median / rl.ceiling_tok_s)
               for r in speed.rows if r.decode_tok_s is not None]
    return RunRoofline(scenario=best.scenario, roofline=rl, rows=per_row)


def honesty_sections(reader: RunReader, speed: SpeedSummary | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    pre = reader.records("preflight", PreflightReport)
    if pre and pre[-1].findings:
        out["preflight"] = pre[-1]
    gates = reader.records("sanity", SanityVerdict)
    screens = reader.records("output_screen", OutputScreen)
    if gates:
        out["sanity"] = (gates[-1], screens[-1] if screens else None)
    traffic = reader.records("traffic_check", TrafficCheck)
    if traffic:
        out["traffic"] = traffic[-1]
    tel = reader.records("telemetry", TelemetryRecord)
    reqs = [(r.scenario, r.concurrency, r.result) for r in reader.records("speed_request", SpeedRequest)
            if not r.warmup]
    summaries: list[ScenarioTelemetry] = summarize_telemetry(tel) if tel else []
    checks: list[TimingCrossCheck] = cross_check_timings(reqs) if reqs else []
    if summaries or checks:
        out["telemetry"] = (summaries, checks)
    acc = acceptance_samples(reader)
    if acc:
        out["acceptance"] = acc
    rl = _roofline(reader, speed)
    if rl is not None:
        out["roofline"] = rl
    return out
