"""One run whose speed load comes from client actors: connect, start the pool, run, judge the clocks."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
from rich.table import Table

from rigbench.analysis import (
    CPU_FRACTION_MAX,
    LOOP_LAG_P99_MAX_S,
    SCHEDULE_LAG_P99_MAX_S,
    SCHEDULE_RATE_MIN,
    load_timing,
)
from rigbench.errors import UsageError
from rigbench.records import ClientClock, ClientShare, Frozen, LoadRequest, LoadWindow, SelfCheck, SpeedBatch
from rigbench.rig import EndpointSpec
from rigbench.runner import execute_run
from rigbench.scale._clients import CLOCK_BOUND_NS, ClientPool, RaySpeedSuite
from rigbench.scale._load import RayLoadSuite, check_clients_load
from rigbench.scale._ray import connect
from rigbench.store import HEADER_FILE, RunHeader, RunReader, TrustVerdict
from rigbench.suites import Progress
from rigbench.suites.load import LoadSuite
from rigbench.suites.speed import SpeedSuite

__all__ = ["ActorSummary", "check_client_options", "clock_reasons", "execute_run_with_clients",
           "summarize_clients"]


def check_client_options(*, ray: str | None, clients: int, endpoint: str | None, suites: str) -> None:
    if ray is None:
        raise UsageError(f"--clients {clients} spreads the load over Ray actors: add --ray ADDRESS (the head's "
                         "HOST:PORT), --ray auto (this machine's cluster) or --ray local.")
    if not endpoint:
        raise UsageError("--ray without a plan drives an existing server from client actors: pass --endpoint URL "
                         "(reachable from every node). To spread a plan's rigs over the cluster, pass the plan "
                         "file: rigbench run plan.yaml --ray ADDRESS.")
    names = [s.strip() for s in suites.split(",") if s.strip()]
    if "speed" not in names and "load" not in names:
        raise UsageError(f"--clients spreads the speed suite's load (or, with --rate/--sweep/--trace, the load "
                         f"suite's), but --suite is {suites!r}: add speed.")


class ActorSummary(Frozen):
    """One client actor over a run: its load, its clock, its own overhead."""

    actor: str
    node: str
    requests: int
    output_tokens: int
    tok_s: float | None  # its tokens over its own spans (measured batches and load windows)
    offset_before_ns: int | None
    offset_after_ns: int | None
    uncertainty_max_ns: int | None  # worst over every alignment used (before, per batch, after)
    cpu_fraction: float | None  # of one core, from its self-check
    loop_lag_p99_s: float | None
    # Rate mode (load windows with a schedule, not the saturation burst): its send lag (as
    # analysis.load_timing), and its worst window's sent rate over its share's scheduled rate (shares of 3
    # or more requests). None: it sent no such window.
    send_lag_p50_s: float | None = None
    send_lag_p99_s: float | None = None
    sent_vs_scheduled: float | None = None

    @property
    def schedule_kept(self) -> bool:
        """Its sends kept the schedule as one process must (analysis' SCHEDULE_* bounds)."""
        lag_ok = self.send_lag_p99_s is None or self.send_lag_p99_s <= SCHEDULE_LAG_P99_MAX_S
        return lag_ok and (self.sent_vs_scheduled is None or self.sent_vs_scheduled >= SCHEDULE_RATE_MIN)


def _adherence(shares: list[ClientShare], by_window: dict[str, dict[int, LoadRequest]]) -> dict[str, float | None]:
    """One actor's send lag over its load-window shares, and its worst share's sent / scheduled rate."""
    lags: list[float] = []
    ratios: list[float] = []
    for s in shares:
        reqs = by_window.get(s.batch_unit_id.removeprefix("load/"), {})
        mine = [reqs[i] for i in s.indices if i in reqs]
        lags += [load_timing(q).send_lag_s for q in mine]
        if len(mine) >= 3:
            due = [q.result.scheduled_ns or q.result.sent_ns for q in mine]
            sent = sorted(q.result.sent_ns for q in mine)
            if max(due) > min(due) and sent[-1] > sent[0]:
                ratios.append((max(due) - min(due)) / (sent[-1] - sent[0]))
    if not lags:
        return {"send_lag_p50_s": None, "send_lag_p99_s": None, "sent_vs_scheduled": None}
    return {"send_lag_p50_s": float(np.percentile(lags, 50)), "send_lag_p99_s": float(np.percentile(lags, 99)),
            "sent_vs_scheduled": min(ratios) if ratios else None}


def summarize_clients(reader: RunReader) -> list[ActorSummary]:
    loads = reader.records("load_window", LoadWindow)
    windows = {w.unit_id for w in loads}
    scheduled = {w.unit_id for w in loads if w.mode != "saturation"}  # the burst has no schedule to keep
    measured = {b.unit_id for b in reader.records("speed_batch", SpeedBatch) if not b.warmup} | windows
    by_window: dict[str, dict[int, LoadRequest]] = {}
    if windows:
        for q in reader.records("load_request", LoadRequest):
            by_window.setdefault(q.window, {})[q.index] = q
    shares: dict[str, ClientShare] = {}
    for s in reader.records("client_share", ClientShare):
        shares[s.unit_id] = s  # a batch redone on resume: its last write counts, as for requests
    clocks = reader.records("client_clock", ClientClock)
    checks = {c.label.split("@", 1)[1]: c for c in reader.records("selfcheck", SelfCheck) if "@" in c.label}
    actors = sorted({s.actor for s in shares.values()} | {c.actor for c in clocks},
                    key=lambda a: (len(a), a))
    out = []
    for a in actors:
        mine = [s for s in shares.values() if s.actor == a and s.batch_unit_id in measured]
        span = sum(s.ended_ns - s.started_ns for s in mine) / 1e9
        toks = sum(s.output_tokens for s in mine)
        cl = [c for c in clocks if c.actor == a]
        before = next((c.offset_ns for c in cl if c.phase == "before"), None)
        after = next((c.offset_ns for c in reversed(cl) if c.phase == "after"), None)
        uncs = [c.uncertainty_ns for c in cl] + [s.offset_uncertainty_ns for s in shares.values() if s.actor == a]
        chk = checks.get(a)
        node = mine[0].node if mine else (cl[0].node if cl else "?")
        out.append(ActorSummary(actor=a, node=node, requests=sum(len(s.indices) for s in mine), output_tokens=toks,
                                tok_s=toks / span if span > 0 else None, offset_before_ns=before,
                                offset_after_ns=after, uncertainty_max_ns=max(uncs) if uncs else None,
                                cpu_fraction=chk.cpu_fraction if chk else None,
                                loop_lag_p99_s=chk.loop_lag_p99_s if chk else None,
                                **_adherence([s for s in mine if s.batch_unit_id in scheduled], by_window)))
    return out


def clock_reasons(summaries: list[ActorSummary], bound_ns: int) -> list[str]:
    """Why the merged timings cannot be trusted to the bound (empty: every clock was pinned within it)."""
    out = []
    for s in summaries:
        if s.uncertainty_max_ns is not None and s.uncertainty_max_ns > bound_ns:
            out.append(f"client actor {s.actor} ({s.node}): its clock offset was known only to "
                       f"+-{s.uncertainty_max_ns / 1e6:.2f} ms (bound {bound_ns / 1e6:.0f} ms), so its stamps "
                       "on the driver's clock may be off by as much; run the actors nearer the driver or on a "
                       "quieter network")
        if s.offset_before_ns is not None and s.offset_after_ns is not None \
                and abs(s.offset_after_ns - s.offset_before_ns) > bound_ns:
            out.append(f"client actor {s.actor} ({s.node}): its clock drifted "
                       f"{(s.offset_after_ns - s.offset_before_ns) / 1e6:+.2f} ms against the driver's during "
                       f"the run (bound {bound_ns / 1e6:.0f} ms)")
    return out


def _flag(run_dir: Path, reasons: list[str]) -> RunHeader:
    """Add reasons for distrust to a finished run's header (its data id does not cover the verdict)."""
    reader = RunReader(run_dir)
    header = reader.header
    if reasons:
        old = header.trust or TrustVerdict(trusted=True, reasons=[])
        header = header.model_copy(update={"trust": TrustVerdict(trusted=False, reasons=[*old.reasons, *reasons])})
        tmp = run_dir / (HEADER_FILE + ".tmp")
        tmp.write_text(header.model_dump_json(indent=2))
        os.replace(tmp, run_dir / HEADER_FILE)
    return header


async def execute_run_with_clients(cfg: Any, progress: Progress | None = None, *, address: str, clients: int,
                                   console: Any = None, skew_ns: dict[int, int] | None = None,
                                   echo_delay_s: dict[int, float] | None = None,
                                   cpus_per_client: float | None = None) -> RunHeader:
    """`execute_run` with the speed suite's load (and the load suite's schedule) sent by `clients` Ray actors.

    `skew_ns` / `echo_delay_s` (per actor index) are for tests: a skewed clock, an unpinnable one.
    """
    if not isinstance(cfg.rig, EndpointSpec):
        raise UsageError("client actors drive an existing server: pass --endpoint URL.")
    for s in cfg.suites:  # refused before any actor starts
        if isinstance(s, LoadSuite):
            check_clients_load(s.settings)
    if cpus_per_client is None:  # a core each; a private local instance shares this machine's cores
        cpus_per_client = min(1.0, (os.cpu_count() or 1) / clients) if address == "local" else 1.0
    with connect(address) as ray:
        pool = ClientPool(ray, clients, cfg.rig.base_url, cfg.api_key, cpus_per_client=cpus_per_client,
                          skew_ns=skew_ns, echo_delay_s=echo_delay_s)
        if progress is not None:
            progress.note(f"starting {clients} client actor(s) on the Ray cluster")
        await pool.start()
        try:
            cfg.suites = [RaySpeedSuite(s, pool) if isinstance(s, SpeedSuite)
                          else RayLoadSuite(s, pool) if isinstance(s, LoadSuite) else s for s in cfg.suites]
            header = await execute_run(cfg, progress)
        finally:
            pool.stop()
    run_dir = cfg.resume if cfg.resume is not None else cfg.out_dir / header.run_id
    summaries = summarize_clients(RunReader(run_dir))
    header = _flag(run_dir, clock_reasons(summaries, CLOCK_BOUND_NS))
    if console is not None:
        console.print(clients_table(summaries))
    return header


def clients_table(summaries: list[ActorSummary]) -> Any:
    t = Table(title="client actors (measured; clock offsets against the driver, NTP-style)", title_justify="left")
    rate = any(s.send_lag_p99_s is not None for s in summaries)
    for col in ("actor", "node", "requests", "output tokens", "tok/s", "clock offset", "+-", "client CPU",
                "loop lag p99", *(("send lag p50 / p99", "sent / scheduled rate") if rate else ()), "bottleneck"):
        t.add_column(col)
    for s in summaries:
        bound = (s.cpu_fraction is not None and s.cpu_fraction > CPU_FRACTION_MAX) or \
            (s.loop_lag_p99_s is not None and s.loop_lag_p99_s > LOOP_LAG_P99_MAX_S) or not s.schedule_kept
        lag = (f"{s.send_lag_p50_s * 1e3:.2f} / {s.send_lag_p99_s * 1e3:.2f} ms"
               if s.send_lag_p50_s is not None and s.send_lag_p99_s is not None else "–")
        t.add_row(s.actor, s.node, str(s.requests), str(s.output_tokens),
                  f"{s.tok_s:.1f}" if s.tok_s else "–",
                  f"{s.offset_before_ns / 1e6:+.3f} ms" if s.offset_before_ns is not None else "–",
                  f"{s.uncertainty_max_ns / 1e6:.3f} ms" if s.uncertainty_max_ns is not None else "–",
                  f"{s.cpu_fraction:.0%}" if s.cpu_fraction is not None else "–",
                  f"{s.loop_lag_p99_s * 1e3:.2f} ms" if s.loop_lag_p99_s is not None else "–",
                  *((lag, f"{s.sent_vs_scheduled:.1%}" if s.sent_vs_scheduled is not None else "–") if rate else ()),
                  "[bold red]YES[/]" if bound else "no")
    return t
