"""One run, start to finish: rig up, sanity gate, suites, rig down, header closed (`execute_run`)."""

from __future__ import annotations

import asyncio
import gc
from typing import Any, cast

from rigbench.client import SelfCheckMonitor, redact_url, url_has_userinfo
from rigbench.errors import (
    BusyHostError,
    EndpointLostError,
    LongRunError,
    RigbenchError,
    StoreWriteError,
)
from rigbench.rig import (
    AttachedRig,
    EndpointSpec,
    HostWatch,
    LaunchedRig,
    locate_engine,
    open_rig,
)
from rigbench.runner._busy import BusyHostGuard
from rigbench.runner._config import RunConfig, check_concurrency
from rigbench.runner._honesty import _after_suites, _preflight, _sanity_gate
from rigbench.runner._resume import _open_run, _refuse_changed_rig, _WrongRig
from rigbench.runner._watch import _EndpointWatch, _EngineWatch, _WriterWatch
from rigbench.store import Finding, FindingKind, RunHeader, RunWriter, TrustVerdict
from rigbench.suites import NullProgress, Progress, SuiteContext


async def execute_run(cfg: RunConfig, progress: Progress | None = None,
                      build_progress: Any = None) -> RunHeader:
    prog = progress or NullProgress()
    plan = cfg.recorded()
    max_conc = check_concurrency(cfg.speed.concurrency if cfg.speed is not None else [1])
    opened = _open_run(cfg, plan, prog)
    if isinstance(opened, RunHeader):
        return opened  # nothing to measure: the run and its source-data id stay as they are
    writer, done, prior, run_dir = opened
    rig: LaunchedRig | AttachedRig
    status = "failed"
    error: str | None = None
    trust: TrustVerdict | None = None
    try:
        endpoint = cfg.rig.base_url if isinstance(cfg.rig, EndpointSpec) else ""
        if url_has_userinfo(endpoint):
            prog.note("the credentials in the --endpoint URL were removed: they are never sent, printed or "
                      "stored. Pass an API key with --api-key-env.")
        rig = open_rig(cfg.rig, writer.log_path, api_key=cfg.api_key, note=prog.note, build_progress=build_progress)
        rig.client.configure(deadlines=cfg.deadlines, max_connections=max(rig.client.max_connections, max_conc),
                             retries=cfg.retries)
        try:
            prog.note("starting the rig" if isinstance(rig, LaunchedRig) else f"attaching to {redact_url(endpoint)}")
            startup = await rig.start()
            if startup is not None and "startup" not in done:
                writer.append(startup)
            fp = rig.fingerprint()
            if cfg.resume is not None:
                _refuse_changed_rig(cfg.resume, writer.header.fingerprint, fp)
            writer.update(fingerprint=fp)
            info = rig.info()
            for suite in cfg.suites:  # what a suite knows of its requests, against the rig: before anything is sent
                check = getattr(suite, "check_rig", None)
                if check is not None:
                    check(info)
            found: list[Finding] = []
            found += _preflight(cfg, rig, info, writer, done)
            # results recorded after a launched engine died would be marked done and never redone
            # ...and so would results recorded after an attached server stopped answering
            suite_writer = cast(RunWriter, _EngineWatch(writer, rig) if isinstance(rig, LaunchedRig)
                                else _EndpointWatch(writer, rig))
            if cfg.sanity:
                found += await _sanity_gate(rig.client, info, suite_writer, prog, done, cfg.sanity_max_tokens,
                                              cfg.sanity_seed)
            else:
                found.append(Finding(kind=FindingKind.SANITY_SKIPPED,
                                     text="the sanity gate was skipped (--no-sanity): answers were not checked"))
            await _run_suites(cfg, rig, info, writer, suite_writer, prog, done)
            found += await _after_suites(cfg, run_dir, writer, rig, info, done)
            trust = TrustVerdict.of(found)
            status = "complete"
        finally:
            gc.unfreeze()  # a plan runs several rigs in one process: let this one's objects go
            await rig.stop()
    except KeyboardInterrupt:
        status, error = "interrupted", "interrupted by the user (Ctrl-C)"
        raise
    except _WrongRig:
        status, error = prior[0], prior[1]  # nothing was measured: leave the run as it was
        raise
    except RigbenchError as e:
        error = str(e)
        if isinstance(e, EndpointLostError | StoreWriteError | LongRunError | BusyHostError):
            status = "interrupted"  # rigbench's setup, not the rig, stopped it: resumable as it is
        raise
    except BaseException as e:  # asyncio.CancelledError on Ctrl-C lands here too
        if isinstance(e, asyncio.CancelledError):
            status, error = "interrupted", "interrupted (cancelled)"
        else:
            error = f"{type(e).__name__}: {e}"
        raise
    finally:
        header = writer.finish(status, trust=trust, error=error)  # type: ignore[arg-type]
    return header


async def _run_suites(cfg: RunConfig, rig: LaunchedRig | AttachedRig, info: Any, writer: RunWriter,
                      suite_writer: RunWriter, prog: Progress, done: set[str]) -> None:
    """Each suite in turn, its own overhead measured, host use watched around each measured window."""
    # who uses the host's CPU around each measured window: the engine is found once; a busy window is said
    # at once and, unless --allow-busy-host, stops the run before the next one
    assert cfg.busy_host is not None  # decided when the config is made
    guard = BusyHostGuard(writer.dir, cfg.busy_host, note=prog.note, write=suite_writer.append)
    host = HostWatch(locate_engine(pid=rig.process.pid) if isinstance(rig, LaunchedRig)
                     else locate_engine(base_url=rig.base_url), judge=guard)
    # Long-lived objects (rig, client, settings) leave the collector's view, so the
    # collections that run during measurement are short (the self-check times them).
    gc.collect()
    gc.freeze()
    for suite in cfg.suites:
        guard.opening(f"the {suite.name} suite")
        ctx = SuiteContext(client=rig.client, writer=suite_writer, rig=info, progress=prog,
                           done_units=done, seed=cfg.seed, host=host, allow_long_run=cfg.allow_long_run)
        try:
            # measures rigbench's own overhead (client CPU, loop lag, send lag) per suite
            async with SelfCheckMonitor(suite.name, emit=writer.append):
                await suite.run(ctx)
        except Exception as e:  # e.g. a connection reset while building prompts
            if isinstance(suite_writer, _WriterWatch):
                suite_writer.raise_if_engine_died(e)
            raise
