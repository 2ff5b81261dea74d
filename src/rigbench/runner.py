"""One run, start to finish: rig up, sanity gate, suites, rig down, header closed.

Lives outside `cli/` so plans and tests can drive it; the CLI only parses options, owns the
event loop and prints.
"""

from __future__ import annotations

import gc
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from rigbench._version import __version__
from rigbench.client import SelfCheckMonitor
from rigbench.errors import RigbenchError, RigError
from rigbench.rig import AttachedRig, LaunchedRig, LlamaCppConfig, prepare_llamacpp_rig
from rigbench.store import RunHeader, RunReader, RunWriter, TrustVerdict, new_run_id
from rigbench.store._run import _now
from rigbench.suites._context import NullProgress, Progress, Suite, SuiteContext

__all__ = ["RunConfig", "execute_run"]


@dataclass
class RunConfig:
    suites: list[Suite]
    suite_settings: dict[str, dict[str, Any]]
    out_dir: Path
    llamacpp: LlamaCppConfig | None = None  # launch the embedded rig with this config...
    endpoint: str | None = None  # ...or attach to this OpenAI base URL
    launch: Any = None  # ...or start this launch spec (rigbench.rig._launch_spec, not an endpoint)
    model: str | None = None
    api_key: str | None = None
    allow_untrusted: bool = False
    sanity: bool = True
    sanity_max_tokens: int = 1024
    bandwidth_gb_s: float | None = None  # for the roofline when the device is not in rigbench's table
    seed: int = 0
    label: str = "run"
    resume: Path | None = None
    run_id: str | None = None  # None: a new id from `label` (a plan picks it up front for its index)
    command: list[str] = field(default_factory=lambda: _redacted_argv(sys.argv))


def _redacted_argv(argv: list[str]) -> list[str]:
    return [("<redacted>" if i > 0 and argv[i - 1] in ("--api-key",) else a) for i, a in enumerate(argv)]


async def execute_run(cfg: RunConfig, progress: Progress | None = None,
                      build_progress: Any = None) -> RunHeader:
    prog = progress or NullProgress()
    plan = {"suites": cfg.suite_settings, "seed": cfg.seed, "sanity": cfg.sanity,
            "sanity_max_tokens": cfg.sanity_max_tokens, "bandwidth_gb_s": cfg.bandwidth_gb_s,
            "rig": _rig_plan(cfg)}
    if cfg.resume is not None:
        reader = RunReader(cfg.resume)
        done = {r["unit_id"] for r in reader.raw_records() if "unit_id" in r}
        header = reader.header.model_copy(update={"status": "running", "finished_at": None, "error": None,
                                                  "source_data_id": None})
        writer = RunWriter(cfg.resume, header, resume=True)
        run_dir = cfg.resume
    else:
        run_id = cfg.run_id or new_run_id(cfg.label)
        run_dir = cfg.out_dir / run_id
        header = RunHeader(run_id=run_id, created_at=_now(), rigbench_version=__version__, command=cfg.command,
                           plan=plan)
        writer = RunWriter(run_dir, header)
        done = set()
    rig: LaunchedRig | AttachedRig
    status = "failed"
    error: str | None = None
    trust: TrustVerdict | None = None
    try:
        if cfg.endpoint:
            rig = AttachedRig(cfg.endpoint, model=cfg.model, api_key=cfg.api_key)
        elif cfg.launch is not None:
            from rigbench.plan._rigs import launched_rig

            rig = launched_rig(cfg.launch, writer.log_path, api_key=cfg.api_key, note=prog.note,
                               build_progress=build_progress)
        else:
            rig = prepare_llamacpp_rig(cfg.llamacpp or LlamaCppConfig(), writer.log_path,
                                       build_progress=build_progress, note=prog.note)
        try:
            prog.note("starting the rig" if isinstance(rig, LaunchedRig) else f"attaching to {cfg.endpoint}")
            startup = await rig.start()
            if startup is not None and "startup" not in done:
                writer.append(startup)
            fp = rig.fingerprint()
            writer.update(fingerprint=fp.model_dump(mode="json"))
            info = rig.info()
            reasons: list[str] = []
            reasons += _preflight(cfg, rig, info, writer, done)
            # results recorded after a launched engine died would be marked done and never redone
            suite_writer = cast(RunWriter, _EngineWatch(writer, rig)) if isinstance(rig, LaunchedRig) else writer
            if cfg.sanity:
                reasons += await _sanity_gate(rig.client, info, suite_writer, prog, done, cfg.sanity_max_tokens)
            else:
                reasons.append("the sanity gate was skipped (--no-sanity): answers were not checked")
            # Long-lived objects (rig, client, settings) leave the collector's view, so the
            # collections that run during measurement are short (the self-check times them).
            gc.collect()
            gc.freeze()
            for suite in cfg.suites:
                ctx = SuiteContext(client=rig.client, writer=suite_writer, rig=info,
                                   settings=cfg.suite_settings.get(suite.name, {}), progress=prog,
                                   done_units=done, seed=cfg.seed)
                try:
                    # measures rigbench's own overhead (client CPU, loop lag, send lag) per suite
                    async with SelfCheckMonitor(suite.name, emit=writer.append):
                        await suite.run(ctx)
                except Exception as e:  # e.g. a connection reset while building prompts
                    if isinstance(suite_writer, _EngineWatch):
                        suite_writer.raise_if_engine_died(e)
                    raise
            reasons += _screen_outputs(RunReader(run_dir), writer)
            trust = TrustVerdict(trusted=not reasons, reasons=reasons)
            status = "complete"
        finally:
            gc.unfreeze()  # a plan runs several rigs in one process: let this one's objects go
            await rig.stop()
    except KeyboardInterrupt:
        status, error = "interrupted", "interrupted by the user (Ctrl-C)"
        raise
    except RigbenchError as e:
        error = str(e)
        raise
    except BaseException as e:  # asyncio.CancelledError on Ctrl-C lands here too
        import asyncio

        if isinstance(e, asyncio.CancelledError):
            status, error = "interrupted", "interrupted (cancelled)"
        else:
            error = f"{type(e).__name__}: {e}"
        raise
    finally:
        header = writer.finish(status, trust=trust, error=error)  # type: ignore[arg-type]
    return header


def _rig_plan(cfg: RunConfig) -> dict[str, Any]:
    if cfg.endpoint:
        return {"mode": "attach", "endpoint": cfg.endpoint, "model": cfg.model}
    if cfg.launch is not None:
        return {"mode": "launched", "engine": cfg.launch.kind, "spec": cfg.launch.model_dump(mode="json")}
    c = cfg.llamacpp or LlamaCppConfig()
    return {"mode": "embedded", "engine": "llamacpp", "model": c.model.describe(),
            "ctx_per_slot": c.ctx_per_slot, "slots": c.slots, "extra_args": c.extra_args,
            "draft_model": c.draft_model.describe() if c.draft_model else None,
            "spec_type": c.spec_type, "draft_max": c.draft_max, "spec_synth_len": c.spec_synth_len}


class _EngineWatch:
    """The run's writer, refusing to record once the launched engine has exited.

    A request against a dead engine fails for rigbench's setup, not the model's: recording it would
    mark its unit done, and --resume would never redo it. Raising instead fails the run with the
    completed units kept, and the engine's exit code and log in the message.
    """

    def __init__(self, writer: RunWriter, rig: LaunchedRig) -> None:
        self._writer = writer
        self._rig = rig

    def __getattr__(self, name: str) -> Any:
        return getattr(self._writer, name)

    def append(self, record: Any) -> None:
        # A request cut off by the engine's death can be recorded before the exit is reaped:
        # a transport failure gets the same short grace as an exception does.
        err = getattr(getattr(record, "result", None), "error", None)
        if err is not None and err.kind in ("connect", "disconnect", "timeout"):
            self.raise_if_engine_died(ConnectionError(err.message))
        else:
            self.raise_if_engine_died()
        self._writer.append(record)

    def raise_if_engine_died(self, cause: BaseException | None = None) -> None:
        """A dead engine explains whatever failed (`cause`): say that, not the symptom."""
        code = self._rig.process.exit_code()
        if code is None and cause is not None:
            time.sleep(0.5)  # a connection reset can arrive before the exit is reaped
            code = self._rig.process.exit_code()
        if code is not None:
            raise RigError(
                f"{self._rig.engine} exited with code {code} during the run; the result in flight was not "
                f"recorded.\n  command: {self._rig.process.command}\n  log: {self._rig.process.log_path}\n"
                f"  last lines:\n{_indent(self._rig.process.log_tail())}\n"
                f"Completed units are kept: fix the cause, then `rigbench run --resume {self._writer.dir}` "
                "(with the same options) measures the rest.") from cause


def _indent(text: str) -> str:
    return "\n".join("    " + line for line in text.splitlines()) or "    (empty)"


def _preflight(cfg: RunConfig, rig: Any, info: Any, writer: RunWriter, done: set[str]) -> list[str]:
    """Config traps (token budgets, parsers, context, slots), checked against the live server's figures.

    Errors make the run untrusted (with the fix in the report); warnings are only shown.
    """
    from rigbench.rig._preflight import PreflightInput, ScenarioLength, preflight

    if "preflight" in done:
        return []
    scen: list[ScenarioLength] = []
    conc: list[int] = []
    speed = cfg.suite_settings.get("speed") or {}
    for name, shape in (speed.get("scenarios") or {}).items():
        scen.append(ScenarioLength(name=name, input_tokens=shape["input_tokens"], output_tokens=shape["output_tokens"]))
    conc = list(speed.get("concurrency") or [])
    given = PreflightInput(uses_tools="agent" in cfg.suite_settings, concurrency=conc, scenarios=scen,
                           served_context_tokens=info.context_length, server_slots=info.slots)
    report = preflight(getattr(rig, "argv", None), given)
    writer.append(report)
    return [f"preflight: {f.problem} (fix: {f.fix})" for f in report.errors]


async def _sanity_gate(client: Any, info: Any, writer: RunWriter, prog: Progress, done: set[str],
                       max_tokens: int) -> list[str]:
    """Known-answer questions before any speed number. Returns reasons for distrust (empty: passed)."""
    from rigbench.rig._sanity import SanityVerdict, run_sanity_gate

    if "sanity" in done:  # resumed run: the gate already ran on this rig
        reader = RunReader(writer.dir)
        prior = reader.records("sanity", SanityVerdict)[-1]
        return list(prior.reasons)
    task = prog.task("sanity gate: known-answer questions", None)
    verdict = await run_sanity_gate(client, info.model, max_tokens=max_tokens)
    prog.done(task)
    writer.append(verdict)
    return list(verdict.reasons)


def _screen_outputs(reader: RunReader, writer: RunWriter) -> list[str]:
    """Screen every speed output for gibberish; one that no working model would write untrusts the run."""
    from rigbench.rig._sanity import screen_outputs

    outputs = [(r["unit_id"], r["result"]["content"]) for r in reader.raw_records("speed_request")
               if r["result"].get("error") is None]
    screen = screen_outputs(outputs, forced_length=True)  # the speed suite forces output length
    writer.append(screen)
    if screen.trusted:
        return []
    return [f"{screen.failed_outputs} of {screen.outputs} measured outputs look like gibberish, e.g. "
            + "; ".join(screen.examples[:2])]
