"""One run, start to finish: rig up, sanity gate, suites, rig down, header closed.

Lives outside `cli/` so plans and tests can drive it; the CLI only parses options, owns the
event loop and prints.
"""

from __future__ import annotations

import asyncio
import gc
import json
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple, cast

from rigbench._version import __version__
from rigbench.analysis import assess_host, fingerprint_differences, latency_finding, summarize_speed
from rigbench.client import Deadlines, RetryPolicy, SelfCheckMonitor, redact_url, url_has_userinfo
from rigbench.errors import (
    EndpointLostError,
    LongRunError,
    RigbenchError,
    RigError,
    StoreWriteError,
    UsageError,
)
from rigbench.honesty import (
    PreflightInput,
    ScenarioLength,
    generate_questions,
    judge_prefix_cache,
    load_prefix_cache_use,
    new_question_seed,
    prefix_cache_use,
    preflight,
    run_sanity_gate,
    screen_outputs,
)
from rigbench.records import (
    Fingerprint,
    HostConditions,
    LoadRequest,
    SanityVerdict,
    SpeedBatch,
    SpeedRequest,
    TelemetryRecord,
)
from rigbench.rig import (
    AttachedRig,
    EmbeddedRig,
    EndpointSpec,
    HostWatch,
    LaunchedRig,
    RigSpec,
    check_traffic,
    describe_rig,
    locate_engine,
    open_rig,
    requests_from_records,
)
from rigbench.store import RunHeader, RunLock, RunReader, RunWriter, TrustVerdict, new_run_id, now_utc
from rigbench.suites import NullProgress, Progress, Suite, SuiteContext, SuiteSettings, build_suites
from rigbench.suites.speed import SpeedSettings

__all__ = ["RunConfig", "check_concurrency", "execute_run"]

# A failed request of these kinds may be rigbench's setup (the server went away), not the model:
# the writer watches for them, and resume retries the units they are in.
_TRANSPORT_KINDS = ("connect", "disconnect", "timeout", "idle_timeout", "total_timeout")


@dataclass
class RunConfig:
    """Everything one run needs, built by `rigbench.plan.run_config_for` from a plan's rig (the CLI's
    flags are a one-rig plan). Two configs are equal when they would measure the same way."""

    suite_names: list[str]  # as --suite or a plan's `suites` names them
    settings: SuiteSettings  # every suite's typed settings; the named suites use theirs
    out_dir: Path
    rig: RigSpec = field(default_factory=EmbeddedRig)  # what to launch or attach to (`rigbench.rig.open_rig`)
    api_key: str | None = None
    allow_untrusted: bool = False
    allow_busy_host: bool = False  # keep speed figures measured on a busy host trusted (the finding still shows)
    sanity: bool = True
    sanity_max_tokens: int = 1024
    sanity_seed: int | None = None  # seed of the gate's generated questions (None: a fresh one, recorded)
    bandwidth_gb_s: float | None = None  # for the roofline when the device is not in rigbench's table
    seed: int = 0
    label: str = "run"
    resume: Path | None = None
    retry_failed: bool = field(default=False, compare=False)  # a resume also redoes every failed request
    run_id: str | None = None  # None: a new id from `label` (a plan picks it up front for its index)
    deadlines: Deadlines = field(default_factory=Deadlines)  # per-request deadlines, handed to the client
    retries: RetryPolicy = field(default_factory=RetryPolicy)  # refusals sent again (--retry-on), to the client
    allow_long_run: bool = field(default=False, compare=False)  # run past a day when the speed projects it
    cli_options: dict[str, Any] | None = field(default=None, compare=False)  # so --resume can rebuild them
    command: list[str] = field(default_factory=lambda: _redacted_argv(sys.argv), compare=False)
    # The suites themselves, built from the names and settings (scale-out swaps the speed suite's client).
    suites: list[Suite] = field(init=False, compare=False)
    suite_settings: dict[str, dict[str, Any]] = field(init=False, compare=False)  # as run.json records them

    def __post_init__(self) -> None:
        self.suites, self.suite_settings = build_suites(self.suite_names, self.settings)

    def recorded(self) -> dict[str, Any]:
        """The resolved settings as run.json records them (`plan`); a resume must match them."""
        plan = {"suites": self.suite_settings, "seed": self.seed, "sanity": self.sanity,
                "sanity_max_tokens": self.sanity_max_tokens, "sanity_seed": self.sanity_seed,
                "bandwidth_gb_s": self.bandwidth_gb_s,
                "rig": describe_rig(self.rig), "deadlines": self.deadlines.recorded()}
        if self.retries.enabled:  # recorded only when on, so runs from before it resume unchanged
            plan["retries"] = self.retries.recorded()
        if self.cli_options is not None:
            plan["cli_options"] = self.cli_options
        return plan

    @property
    def speed(self) -> SpeedSettings | None:
        """The speed suite's settings when the run measures speed."""
        return self.settings.speed if "speed" in self.suite_settings else None


def _redacted_argv(argv: list[str]) -> list[str]:
    """argv as stored: no API key, no credentials inside a URL (`--endpoint http://u:p@host/v1`)."""
    def one(a: str) -> str:
        if "://" not in a or "@" not in a:
            return a
        flag, eq, url = a.partition("=") if a.startswith("--") else ("", "", a)
        return flag + eq + redact_url(url)

    return [("<redacted>" if i > 0 and argv[i - 1] in ("--api-key",) else one(a)) for i, a in enumerate(argv)]


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
            reasons: list[str] = []
            reasons += _preflight(cfg, rig, info, writer, done)
            # results recorded after a launched engine died would be marked done and never redone
            # ...and so would results recorded after an attached server stopped answering
            suite_writer = cast(RunWriter, _EngineWatch(writer, rig) if isinstance(rig, LaunchedRig)
                                else _EndpointWatch(writer, rig))
            if cfg.sanity:
                reasons += await _sanity_gate(rig.client, info, suite_writer, prog, done, cfg.sanity_max_tokens,
                                              cfg.sanity_seed)
            else:
                reasons.append("the sanity gate was skipped (--no-sanity): answers were not checked")
            await _run_suites(cfg, rig, info, writer, suite_writer, prog, done)
            reasons += await _after_suites(cfg, run_dir, writer, rig, info, done)
            trust = TrustVerdict(trusted=not reasons, reasons=reasons)
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
        if isinstance(e, EndpointLostError | StoreWriteError | LongRunError):
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


class _Opened(NamedTuple):
    writer: RunWriter
    done: set[str]  # units measured already (a resume)
    prior: tuple[str, str | None]  # the run's status and error before this session (left as they were on _WrongRig)
    run_dir: Path


def _open_run(cfg: RunConfig, plan: dict[str, Any], prog: Progress) -> _Opened | RunHeader:
    """The run's writer: a new run directory, or the run being resumed (its lock taken, what is done
    read); the run's header when a resume has nothing to measure (finished, nothing to redo)."""
    if cfg.resume is None:
        run_id = cfg.run_id or new_run_id(cfg.label)
        header = RunHeader(run_id=run_id, created_at=now_utc(), rigbench_version=__version__, command=cfg.command,
                           plan=plan)
        return _Opened(RunWriter(cfg.out_dir / run_id, header), set(), ("failed", None), cfg.out_dir / run_id)
    reader = RunReader(cfg.resume)
    if reader.damage:
        raise UsageError(f"cannot resume {cfg.resume}: it is damaged: {'; '.join(reader.damage)}. Measure the "
                         "rig again in a new run.")
    _refuse_changed_plan(cfg.resume, reader.header.plan, plan)  # a finished run too: same refusal
    if reader.header.status == "complete" and not cfg.retry_failed:
        return reader.header
    lock = RunLock(cfg.resume)  # before reading what is done: no other process appends from here on
    try:
        reader = RunReader(cfg.resume)
        done = _done_units(reader, retry_failed=cfg.retry_failed)
        if cfg.retry_failed:
            failed = _failed_units(reader)
            prog.note(f"--retry-failed: redoing {len(failed)} unit(s) with a failed request"
                      + (f" ({', '.join(sorted(failed)[:5])}{', ...' if len(failed) > 5 else ''})" if failed
                         else ": none failed"))
        if reader.header.status == "complete" and not (cfg.retry_failed and _failed_units(reader)):
            lock.release()  # finished (perhaps by the writer we waited for), nothing to redo: untouched
            return reader.header
        prior = (reader.header.status, reader.header.error)
        header = reader.header.model_copy(update={"status": "running", "finished_at": None, "error": None,
                                                  "source_data_id": None})
        writer = RunWriter(cfg.resume, header, resume=True, lock=lock)
    except BaseException:
        lock.release()
        raise
    if writer.took_over:
        prog.note(writer.took_over)
    return _Opened(writer, done, prior, cfg.resume)


async def _run_suites(cfg: RunConfig, rig: LaunchedRig | AttachedRig, info: Any, writer: RunWriter,
                      suite_writer: RunWriter, prog: Progress, done: set[str]) -> None:
    """Each suite in turn, its own overhead measured, host use watched around each measured window."""
    # who uses the host's CPU around each measured window: the engine is found once
    host = HostWatch(locate_engine(pid=rig.process.pid) if isinstance(rig, LaunchedRig)
                     else locate_engine(base_url=rig.base_url))
    # Long-lived objects (rig, client, settings) leave the collector's view, so the
    # collections that run during measurement are short (the self-check times them).
    gc.collect()
    gc.freeze()
    for suite in cfg.suites:
        ctx = SuiteContext(client=rig.client, writer=suite_writer, rig=info,
                           settings=cfg.suite_settings.get(suite.name, {}), progress=prog,
                           done_units=done, seed=cfg.seed, host=host, allow_long_run=cfg.allow_long_run)
        try:
            # measures rigbench's own overhead (client CPU, loop lag, send lag) per suite
            async with SelfCheckMonitor(suite.name, emit=writer.append):
                await suite.run(ctx)
        except Exception as e:  # e.g. a connection reset while building prompts
            if isinstance(suite_writer, _WriterWatch):
                suite_writer.raise_if_engine_died(e)
            raise


async def _after_suites(cfg: RunConfig, run_dir: Path, writer: RunWriter, rig: LaunchedRig | AttachedRig,
                        info: Any, done: set[str]) -> list[str]:
    """The honesty steps on what the suites recorded: each untrusting reason found."""
    reasons = _rejections(RunReader(run_dir))
    reasons += _screen_outputs(RunReader(run_dir), writer)
    reasons += await _traffic_check(RunReader(run_dir), writer, rig.client, info, done)
    reasons += _buffered_latency(RunReader(run_dir))
    reasons += _host_check(RunReader(run_dir), cfg.allow_busy_host)
    return reasons


class _WriterWatch:
    """The run's writer, with a check before each record that the server is still there.

    Subclasses say what "still there" means (`raise_if_engine_died`) and when to ask (`_check`)."""

    def __init__(self, writer: RunWriter, rig: Any) -> None:
        self._writer = writer
        self._rig = rig

    def __getattr__(self, name: str) -> Any:
        return getattr(self._writer, name)

    def append(self, record: Any) -> None:
        err = getattr(getattr(record, "result", None), "error", None)
        if err is not None and err.kind in _TRANSPORT_KINDS:
            self.raise_if_engine_died(ConnectionError(err.message))
        else:
            self._check()
        self._writer.append(record)

    def _check(self) -> None:
        """Before a record without a transport failure; nothing by default."""

    def raise_if_engine_died(self, cause: BaseException | None = None) -> None:
        raise NotImplementedError


class _EngineWatch(_WriterWatch):
    """The run's writer, refusing to record once the launched engine has exited.

    A request against a dead engine fails for rigbench's setup, not the model's: recording it would
    mark its unit done, and --resume would never redo it. Raising instead fails the run with the
    completed units kept, and the engine's exit code and log in the message.
    """

    _rig: LaunchedRig

    def _check(self) -> None:
        # A request cut off by the engine's death can be recorded before the exit is reaped:
        # a transport failure (`append`) gets the same short grace as an exception does.
        self.raise_if_engine_died()

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


class _EndpointWatch(_WriterWatch):
    """The run's writer, refusing to record once the attached server has stopped answering.

    Adversary: a server that dies (or is unplugged) mid-run. Its remaining requests would fail in
    under a second as "connect" records and the run would end "complete"; instead, a transport
    failure makes rigbench ask the server's model list, and if that gets no answer either the run
    stops, marked interrupted, with the resume command.
    """

    _rig: AttachedRig

    def raise_if_engine_died(self, cause: BaseException | None = None) -> None:
        """Ask `/models` (5 s); no answer means the server, not the model, failed `cause`."""
        url = self._rig.base_url + "/models"
        headers = dict(self._rig.client._headers)
        try:
            with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=5) as r:
                r.read(65536)
            return
        except urllib.error.HTTPError as e:
            if e.code < 500:
                return  # it answers (perhaps 401 to this probe): alive
            seen = f"HTTP {e.code}"
        except (OSError, ValueError) as e:
            seen = f"{type(e).__name__}: {getattr(e, 'reason', e)}"
        raise EndpointLostError(
            f"the server at {self._rig.base_url} stopped answering during the run ({seen}; the request in flight "
            f"failed with: {cause}). The result in flight was not recorded and the run is marked interrupted.\n"
            f"Completed units are kept: once the server is back, `rigbench run --resume {self._writer.dir}` "
            "measures the rest.") from cause


def check_concurrency(levels: list[int]) -> int:
    """The largest concurrency level, refused when this process cannot hold that many connections.

    Each concurrent request holds one socket (a file descriptor). The soft limit is raised to the
    hard one when needed; beyond the hard limit the run is refused before anything starts, with
    the limit and how to raise it (adversary: a typo such as c=100000 that would stall for minutes
    or silently run at the client's cap while the report claims the level).
    """
    need = max(levels, default=1)
    try:
        # POSIX-only: where it is missing, the limit is not checked
        import resource

        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    except (ImportError, OSError, ValueError):
        return need
    margin = 256  # the engine log, run files, the event loop, aiohttp's own sockets
    if hard != resource.RLIM_INFINITY and need + margin > hard:
        raise UsageError(
            f"concurrency {need} needs {need + margin} open files, but this process may open at most {hard} "
            f"(the hard file-descriptor limit). Lower --concurrency to at most {max(1, hard - margin)}, or raise "
            f"the limit (e.g. `ulimit -Hn {need + margin}` as root, or LimitNOFILE in a systemd unit).")
    if soft != resource.RLIM_INFINITY and need + margin > soft:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(need + margin, hard) if hard != resource.RLIM_INFINITY
                                                    else need + margin, hard))
    return need


def _refuse_changed_plan(run_dir: Path, old: dict[str, Any], new: dict[str, Any]) -> None:
    """Resume only the run that was started: a changed rig, endpoint, model, suite or setting is refused."""
    diff = _first_difference(old, new, "")
    if diff is None:
        return
    where, was, now = diff
    raise UsageError(
        f"cannot resume {run_dir}: this command changes {where} from {_show(was)} to {_show(now)}. A resumed "
        f"run must measure the same rig with the same settings: run `rigbench run --resume {run_dir}` with no "
        "other settings (they are read from its run.json), or start a new run.")


class _WrongRig(UsageError):
    """Resume found another rig: the run is left as it was (status and error)."""


def _refuse_changed_rig(run_dir: Path, old: Fingerprint | None, new: Fingerprint) -> None:
    """The server answering now must be the one measured before (adversary: another model or engine
    behind the same URL and model name, whose numbers would be merged into this run)."""

    if old is None:
        return  # the earlier session stopped before fingerprinting
    diffs = [d for d in fingerprint_differences(old, new) if d.matters]
    if diffs:
        d = diffs[0]
        raise _WrongRig(
            f"cannot resume {run_dir}: the rig is not the one this run measured: its {d.field} was "
            f"{_show(d.baseline)} and is now {_show(d.other)}. Measure this rig in a new run.")


def _show(v: Any) -> str:
    text = json.dumps(v, sort_keys=True, default=str)
    return text if len(text) <= 160 else text[:157] + "..."


def _first_difference(old: Any, new: Any, path: str) -> tuple[str, Any, Any] | None:
    if isinstance(old, dict) and isinstance(new, dict):
        for key in sorted(set(old) | set(new), key=str):
            if key not in old:
                continue  # recorded by a newer rigbench than the one that started the run
            sub = f"{path}.{key}" if path else str(key)
            if key not in new:
                return sub, old[key], None
            d = _first_difference(old[key], new[key], sub)
            if d is not None:
                return d
        return None
    return None if old == new else (path, old, new)


def _failed_units(reader: RunReader) -> set[str]:
    """Units whose latest record holds a failed request (any reason), as `--retry-failed` redoes them."""
    failed: set[str] = set()
    for r in reader.raw_records():
        uid, res = r.get("unit_id"), r.get("result")
        if isinstance(uid, str) and isinstance(res, dict) and res.get("error"):
            failed.add(uid.rsplit("/", 1)[0] if r.get("kind") == "speed_request" else uid)
    return failed


def _done_units(reader: RunReader, *, retry_failed: bool = False) -> set[str]:
    """Units that need no measuring again.

    Not done: a speed batch with a failed request or with a request record missing or damaged
    (a crash between a request and its batch record), and any unit whose record failed for a
    transport reason (connect, disconnect, deadline); with `retry_failed`, any unit whose record
    failed for any reason. Their records stay in the file as history.
    """

    if retry_failed:
        return _done_units(reader) - _failed_units(reader)
    done: set[str] = set()
    for r in reader.raw_records():
        uid = r.get("unit_id")
        if not isinstance(uid, str) or r.get("kind") in ("speed_batch", "speed_request"):
            continue
        res = r.get("result")
        err = res.get("error") if isinstance(res, dict) else None
        if isinstance(err, dict) and err.get("kind") in _TRANSPORT_KINDS:
            continue
        done.add(uid)
    per_batch: dict[str, int] = {}
    for q in reader.records("speed_request", SpeedRequest):
        if q.result.ok:
            key = q.unit_id.rsplit("/", 1)[0]
            per_batch[key] = per_batch.get(key, 0) + 1
    for b in reader.records("speed_batch", SpeedBatch):
        if b.failed == 0 and per_batch.get(b.unit_id, 0) >= b.requests:
            done.add(b.unit_id)
    return done


def _indent(text: str) -> str:
    return "\n".join("    " + line for line in text.splitlines()) or "    (empty)"


def _preflight(cfg: RunConfig, rig: Any, info: Any, writer: RunWriter, done: set[str]) -> list[str]:
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
                           served_context_tokens=info.context_length, server_slots=info.slots)
    report = preflight(getattr(rig, "argv", None), given)
    writer.append(report)
    return [f"preflight: {f.problem} (fix: {f.fix})" for f in report.errors]


async def _sanity_gate(client: Any, info: Any, writer: RunWriter, prog: Progress, done: set[str],
                       max_tokens: int, question_seed: int | None = None) -> list[str]:
    """Known-answer questions before any speed number. Returns reasons for distrust (empty: passed)."""

    if "sanity" in done:  # resumed run: the gate already ran on this rig
        reader = RunReader(writer.dir)
        prior = reader.records("sanity", SanityVerdict)[-1]
        return list(prior.reasons)
    seed = new_question_seed() if question_seed is None else question_seed
    questions = generate_questions(seed)
    task = prog.task(f"sanity gate: {len(questions)} known-answer questions (seed {seed})", len(questions))
    verdict = await run_sanity_gate(client, info.model, questions=questions, max_tokens=max_tokens,
                                    on_answer=lambda: prog.advance(task))
    verdict = verdict.model_copy(update={"question_seed": seed})
    prog.done(task)
    writer.append(verdict)
    return list(verdict.reasons)


async def _traffic_check(reader: RunReader, writer: RunWriter, client: Any, info: Any, done: set[str]) -> list[str]:
    """The measured traffic: prompt dependence, reported token counts, server timings (rig/_traffic.py),
    and prompt tokens served from a prefix cache (honesty/_prefix_cache.py)."""

    reqs = requests_from_records([*reader.raw_records("speed_request"), *reader.raw_records("load_request")])
    if not reqs:
        return []
    gates = reader.records("sanity", SanityVerdict)
    earlier = [(f"the gate's answer to {a.question_id}", a.answer) for a in gates[-1].answers] if gates else []
    check = await check_traffic(client, info.engine, reqs, earlier_replies=earlier)
    cache = prefix_cache_use(reader.records("speed_request", SpeedRequest), reader.records("telemetry", TelemetryRecord))
    cache += load_prefix_cache_use(reader.records("load_request", LoadRequest))
    verdict = judge_prefix_cache(cache)
    check = check.model_copy(update={"prefix_cache": cache, "reasons": check.reasons + verdict.reasons,
                                     "warnings": check.warnings + verdict.warnings})
    writer.append(check)
    return list(check.reasons)


def _rejections(reader: RunReader) -> list[str]:
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
    return [f"the server rejected {rejected} of {total} measured requests ({which}{retried}): the figures cover the "
            "few it let through, not the planned load. Lower --concurrency, or measure when the server is not "
            "overloaded or rate-limited"]


def _host_check(reader: RunReader, allow_busy_host: bool) -> list[str]:
    """Speed measured on a busy host (other processes or steal on the engine's cores) untrusts the run,
    unless `--allow-busy-host` keeps the figures (the finding is shown either way: analysis/_host.py)."""

    verdict = assess_host(reader.records("host_conditions", HostConditions))
    if not verdict.busy or allow_busy_host:
        return []
    return [verdict.reason + "; measure on a quiet host, or pass --allow-busy-host to keep these figures"]


def _screen_outputs(reader: RunReader, writer: RunWriter) -> list[str]:
    """Screen every speed output for gibberish; one that no working model would write untrusts the run."""

    outputs = [(r["unit_id"], r["result"]["content"])
               for kind in ("speed_request", "load_request") for r in reader.raw_records(kind)
               if r["result"].get("error") is None]
    screen = screen_outputs(outputs, forced_length=True)  # the speed and load suites force output length
    writer.append(screen)
    if screen.trusted:
        return []
    return [f"{screen.failed_outputs} of {screen.outputs} measured outputs look like gibberish, e.g. "
            + "; ".join(screen.examples[:2])]


def _buffered_latency(reader: RunReader) -> list[str]:
    """Rows whose streams arrived buffered by the server or a proxy: their latency is not the engine's."""
    speed = summarize_speed(reader)
    rows = speed.rows if speed is not None else []
    return [f for r in rows if r.arrival is not None
            and (f := latency_finding(r.scenario, r.concurrency, r.arrival)) is not None]
