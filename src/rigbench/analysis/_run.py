"""Everything a report shows about one run, computed once from the run directory."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from rigbench.analysis._agent import summarize_agent
from rigbench.analysis._honesty_run import honesty_sections
from rigbench.analysis._host import HostVerdict, assess_host
from rigbench.analysis._load import summarize_load
from rigbench.analysis._quality import summarize_quality
from rigbench.analysis._retries import summarize_retries
from rigbench.analysis._selfcheck import OUTSIDE_LOAD_REMEDY, ClientVerdict, assess_selfcheck
from rigbench.analysis._speed import SpeedSummary, summarize_speed
from rigbench.analysis._stability import speed_stability, stability_warnings
from rigbench.analysis._stamping import stamping_error
from rigbench.records import HostConditions, SanityVerdict, SelfCheck, SpeedBatch, SpeedRequest, TrafficCheck
from rigbench.store import Finding, FindingKind, RunHeader, RunReader

__all__ = ["RunAnalysis", "analyze_run"]


class RunAnalysis(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

    run_dir: str
    header: RunHeader
    status: str  # complete | incomplete | failed (as shown)
    source_data_id: str
    startup: dict[str, Any] | None
    speed: SpeedSummary | None
    torn_lines: int
    warnings: list[str] = Field(default_factory=list)
    sections: dict[str, Any] = Field(default_factory=dict)  # other suites' summaries, by suite name


def analyze_run(reader: RunReader) -> RunAnalysis:
    startup = next(iter(reader.raw_records("startup")), None)
    speed = summarize_speed(reader)
    warnings: list[str] = []
    h = reader.header
    if reader.display_status == "incomplete":
        warnings.append("this run did not finish (killed or interrupted): figures cover the completed part only; "
                        f"continue it with `rigbench run --resume {reader.dir}`")
    if h.status == "failed":
        warnings.append(f"this run failed: {h.error}")
    if h.fingerprint is not None and h.fingerprint.mode == "attached":
        warnings.append("attached to a running server: its launch flags were not recorded by rigbench "
                        "(see the fingerprint's unknown fields)")
    if h.trust is not None and not h.trust.trusted:
        warnings[:0] = [f"UNTRUSTED: {r}" for r in h.trust.reasons]
    # a finished run whose data is gone or changed: its verdict and source-data id no longer hold
    warnings[:0] = [f"DAMAGED: {d}; its verdict and figures do not stand" for d in reader.damage]
    stability = speed_stability(reader.records("speed_request", SpeedRequest),
                                reader.records("speed_batch", SpeedBatch)) if speed else []
    if speed:  # a finding the trust verdict already gives (e.g. buffered latency) is not said twice
        given = set(h.trust.reasons) if h.trust is not None else set()
        warnings.extend(w for w in speed.warnings if w not in given)

    sections: dict[str, Any] = honesty_sections(reader, speed)
    if stability:
        sections["stability"] = stability
    if "traffic" in sections:  # e.g. prompts partly served from a prefix cache, below what untrusts
        warnings.extend(sections["traffic"].warnings)
    quality = summarize_quality(reader)
    if not quality.empty:
        sections["quality"] = quality

    if speed:  # the client's own error, measured against the kernel's arrival stamps
        sections["stamping"] = stamping_error(
            r.result for r in reader.records("speed_request", SpeedRequest) if not r.warmup)
    host = assess_host(reader.records("host_conditions", HostConditions))
    sections["host"] = host
    warnings.extend(_host_warnings(host, run_findings(reader)))
    checks = reader.records("selfcheck", SelfCheck)
    if checks:
        ttft_sd = [r.ttft_s.std for r in (speed.rows if speed else []) if r.ttft_s and r.ttft_s.n > 1]
        verdict = assess_selfcheck(checks, noise_s=min(ttft_sd, default=None))
        sections["selfcheck"] = verdict
        warnings.extend(f"self-check note: {n}" for n in verdict.notes)
        warnings.extend(_selfcheck_warnings(verdict, host))
    # after the host and the client: a busy host or a late client explains a changed series, and is read first
    warnings.extend(stability_warnings(stability))

    load = summarize_load(reader)
    if load is not None:
        sections["load"] = load
        warnings.extend(load.warnings)

    retries = summarize_retries(reader)
    if retries is not None:
        sections["retries"] = retries
        if retries.gave_up:
            warnings.append(f"{retries.gave_up} request(s) were still refused when their retry budget ran out "
                            f"(e.g. {retries.stopped[0] if retries.stopped else 'budget spent'}); they are failed "
                            "records. Raise --max-retries/--max-retry-wait, or measure when the server is not "
                            "rate-limited")

    agent = summarize_agent(reader)
    if not agent.empty:
        sections["agent"] = agent
    torn = reader.damaged_records
    if torn:  # damaged lines are never dropped silently: the figures above are without them
        warnings.insert(0, f"{torn} damaged records skipped (torn or invalid lines in records.jsonl); the figures "
                        f"leave them out. An unfinished run redoes their units: `rigbench run --resume {reader.dir}`")
    return RunAnalysis(
        run_dir=str(reader.dir), header=h, status=reader.display_status, source_data_id=reader.source_data_id,
        startup=startup, speed=speed, torn_lines=torn, warnings=warnings, sections=sections,
    )


def run_findings(reader: RunReader) -> list[Finding]:
    """What untrusted the run, typed: the header keeps each finding's text; the gate's and the traffic
    check's own records name theirs, the other checks' texts are told by their lead (`Finding.read`)."""
    trust = reader.header.trust
    if trust is None:
        return []
    named = {r: FindingKind.SANITY for v in reader.records("sanity", SanityVerdict) for r in v.reasons}
    named.update({r: FindingKind.TRAFFIC for v in reader.records("traffic_check", TrafficCheck) for r in v.reasons})
    return trust.findings(named)


def _host_warnings(host: HostVerdict, found: list[Finding]) -> list[str]:
    """A busy host kept by --allow-busy-host (otherwise its finding leads as an UNTRUSTED reason), and
    what could not be measured."""
    out: list[str] = []
    kept = host.busy and not any(f.kind is FindingKind.HOST_BUSY for f in found)
    if kept:
        out.append(f"{host.reason} (kept by --allow-busy-host: these speed figures are not the rig's alone)")
    return out + host.notes


def _selfcheck_warnings(v: ClientVerdict, host: HostVerdict) -> list[str]:
    """CLIENT-BOUND only for rigbench's own load; lag it did not cause names the host instead."""
    out: list[str] = []
    own = [r for r in v.reasons if r not in v.outside_reasons]
    if own:
        out.append("CLIENT-BOUND: rigbench itself may have limited these numbers: " + "; ".join(own)
                   + (f". Remedy: {v.own_remedy}" if v.own_remedy else ""))
    if v.outside_reasons:
        cause = ("the host was busy (above), and its load delayed rigbench's own timing too" if host.busy else
                 "other work held the CPU while rigbench used little of it")
        out.append(f"LATE STAMPS: {cause}: " + "; ".join(v.outside_reasons) + f". Remedy: {OUTSIDE_LOAD_REMEDY}")
    return out
