"""The honesty steps around the suites: preflight and the known-answer gate before, and on what the
suites recorded after them (rejections, gibberish, traffic, buffering, a busy host)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rigbench.analysis import assess_host, latency_finding, summarize_speed
from rigbench.honesty import (
    PreflightInput,
    ScenarioLength,
    check_traffic,
    generate_questions,
    judge_prefix_cache,
    load_prefix_cache_use,
    new_question_seed,
    prefix_cache_use,
    preflight,
    requests_from_records,
    run_sanity_gate,
    screen_outputs,
)
from rigbench.records import (
    HostConditions,
    LoadRequest,
    SanityVerdict,
    SpeedRequest,
    TelemetryRecord,
)
from rigbench.rig import (
    AttachedRig,
    LaunchedRig,
)
from rigbench.runner._busy import BusyHostPolicy
from rigbench.runner._config import RunConfig
from rigbench.store import Finding, FindingKind, RunReader, RunWriter
from rigbench.suites import Progress


async def _after_suites(cfg: RunConfig, run_dir: Path, writer: RunWriter, rig: LaunchedRig | AttachedRig,
                        info: Any, done: set[str]) -> list[Finding]:
    """The honesty steps on what the suites recorded: each untrusting finding."""
    found = _rejections(RunReader(run_dir))
    found += _screen_outputs(RunReader(run_dir), writer)
    found += await _traffic_check(RunReader(run_dir), writer, rig.client, info, done)
    found += _buffered_latency(RunReader(run_dir))
    found += _host_check(RunReader(run_dir), cfg.busy_host)
    return found


def _preflight(cfg: RunConfig, rig: Any, info: Any, writer: RunWriter, done: set[str]) -> list[Finding]:
    """Config traps (token budgets, parsers, context, slots), checked against the live server's figures.

    Errors make the run untrusted (with the fix in the report); warnings are only shown.
    """

    if "preflight" in done:
        return []
    speed = cfg.speed
    scen = [ScenarioLength(name=s.name, input_tokens=s.input_tokens, output_tokens=s.output_tokens)
            for s in (speed.shapes if speed is not None else [])]
    conc = list(speed.concurrency) if speed is not None else []
    given = PreflightInput(uses_tools="agent" in cfg.suite_settings, concurrency=conc, scenarios=scen,
                           served_context_tokens=info.context_length, server_slots=info.slots,
                           engine=info.engine)
    report = preflight(getattr(rig, "argv", None), given)
    writer.append(report)
    return [Finding(kind=FindingKind.PREFLIGHT, text=f"preflight: {f.problem} (fix: {f.fix})") for f in report.errors]


async def _sanity_gate(client: Any, info: Any, writer: RunWriter, prog: Progress, done: set[str],
                       max_tokens: int, question_seed: int | None = None) -> list[Finding]:
    """Known-answer questions before any speed number. Returns findings of distrust (empty: passed)."""

    if "sanity" in done:  # resumed run: the gate already ran on this rig
        reader = RunReader(writer.dir)
        prior = reader.records("sanity", SanityVerdict)[-1]
        return [Finding(kind=FindingKind.SANITY, text=r) for r in prior.reasons]
    seed = new_question_seed() if question_seed is None else question_seed
    questions = generate_questions(seed)
    task = prog.task(f"sanity gate: {len(questions)} known-answer questions (seed {seed})", len(questions))
    verdict = await run_sanity_gate(client, info.model, questions=questions, max_tokens=max_tokens,
                                    on_answer=lambda: prog.advance(task))
    verdict = verdict.model_copy(update={"question_seed": seed})
    prog.done(task)
    writer.append(verdict)
    return [Finding(kind=FindingKind.SANITY, text=r) for r in verdict.reasons]


async def _traffic_check(reader: RunReader, writer: RunWriter, client: Any, info: Any,
                         done: set[str]) -> list[Finding]:
    """The measured traffic: prompt dependence, reported token counts, server timings (honesty/_traffic.py),
    and prompt tokens served from a prefix cache (honesty/_prefix_cache.py)."""

    reqs = requests_from_records([*reader.raw_records("speed_request"), *reader.raw_records("load_request")])
    if not reqs:
        return []
    gates = reader.records("sanity", SanityVerdict)
    earlier = [(f"the gate's answer to {a.question_id}", a.answer) for a in gates[-1].answers] if gates else []
    loads = reader.records("load_request", LoadRequest)
    check = await check_traffic(client, info.engine, reqs, earlier_replies=earlier, history=session_history(loads))
    cache = prefix_cache_use(reader.records("speed_request", SpeedRequest), reader.records("telemetry", TelemetryRecord))
    cache += load_prefix_cache_use(loads)
    verdict = judge_prefix_cache(cache)
    check = check.model_copy(update={"prefix_cache": cache, "reasons": check.reasons + verdict.reasons,
                                     "warnings": check.warnings + verdict.warnings})
    writer.append(check)
    return [Finding(kind=FindingKind.TRAFFIC, text=r) for r in check.reasons]


def session_history(loads: list[LoadRequest]) -> dict[str, list[str]]:
    """unit_id of each later session turn -> the unit_ids of its session's earlier turns, whose replies
    it sent back as history."""
    turns: dict[tuple[str, int], list[LoadRequest]] = {}
    for q in loads:
        if q.session is not None and q.turn is not None:
            turns.setdefault((q.window, q.session), []).append(q)
    return {q.unit_id: [e.unit_id for e in qs if e.turn is not None and q.turn is not None and e.turn < q.turn]
            for qs in turns.values() for q in qs}


def _rejections(reader: RunReader) -> list[Finding]:
    """A run whose server turned away most measured requests (HTTP 429 rate limits, 503 overload, any
    other status) measured the few it let through, not the planned load: a finding that names it."""
    statuses: dict[int, int] = {}
    total = gave_up = 0
    for r in [*reader.raw_records("speed_request"), *reader.raw_records("load_request")]:
        total += 1
        err = (r.get("result") or {}).get("error") or {}
        if err.get("kind") == "http_status":
            statuses[int(err.get("http_status") or 0)] = statuses.get(int(err.get("http_status") or 0), 0) + 1
            gave_up += bool((r.get("result") or {}).get("retry_stopped"))
    rejected = sum(statuses.values())
    if not total or rejected * 2 <= total:
        return []
    which = ", ".join(f"HTTP {s} x{n}" for s, n in sorted(statuses.items()))
    retried = f"; {gave_up} of them after their --retry-on budget ran out" if gave_up else ""
    return [Finding(kind=FindingKind.REJECTED, figures={"rejected": rejected, "requests": total, "gave_up": gave_up},
                    text=f"the server rejected {rejected} of {total} measured requests ({which}{retried}): the figures "
                    "cover the few it let through, not the planned load. Lower --concurrency, or measure when the "
                    "server is not overloaded or rate-limited")]


def _host_check(reader: RunReader, policy: BusyHostPolicy | None) -> list[Finding]:
    """Speed measured on a busy host (other processes or steal on the engine's cores) untrusts the run,
    unless the policy keeps the figures trusted (the finding is shown either way: analysis/_host.py)."""

    verdict = assess_host(reader.records("host_conditions", HostConditions))
    if not verdict.busy or policy is BusyHostPolicy.MEASURE_TRUSTED:
        return []
    busy = [r for r in verdict.rows if r.busy]
    figures = {"busy_windows": len(busy),
               "other_cores_max": max((r.other_cores or 0.0 for r in busy), default=0.0),
               "steal_cores_max": max((r.steal_cores or 0.0 for r in busy), default=0.0)}
    return [Finding(kind=FindingKind.HOST_BUSY, figures=figures, text=verdict.reason
                    + "; measure on a quiet host, or pass --allow-busy-host to keep these figures")]


def _screen_outputs(reader: RunReader, writer: RunWriter) -> list[Finding]:
    """Screen every speed output for gibberish; one that no working model would write untrusts the run."""

    outputs = [(r["unit_id"], r["result"]["content"])
               for kind in ("speed_request", "load_request") for r in reader.raw_records(kind)
               if r["result"].get("error") is None]
    screen = screen_outputs(outputs, forced_length=True)  # the speed and load suites force output length
    writer.append(screen)
    if screen.trusted:
        return []
    return [Finding(kind=FindingKind.GIBBERISH, figures={"failed": screen.failed_outputs, "outputs": screen.outputs},
                    text=f"{screen.failed_outputs} of {screen.outputs} measured outputs look like gibberish, e.g. "
                    + "; ".join(screen.examples[:2]))]


def _buffered_latency(reader: RunReader) -> list[Finding]:
    """Rows whose streams arrived buffered by the server or a proxy: their latency is not the engine's."""
    speed = summarize_speed(reader)
    rows = speed.rows if speed is not None else []
    return [Finding(kind=FindingKind.BUFFERED_LATENCY, text=f) for r in rows if r.arrival is not None
            and (f := latency_finding(r.scenario, r.concurrency, r.arrival)) is not None]
