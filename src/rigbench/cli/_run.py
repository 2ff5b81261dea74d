"""`rigbench run`: measure a rig (the embedded default, or an endpoint) and report."""

from __future__ import annotations

from pathlib import Path

import typer

from rigbench.cli._app import app
from rigbench.cli._checks import check_run_options
from rigbench.cli._console import make_console
from rigbench.cli._export import check_export_suites
from rigbench.cli._progress import RichProgress
from rigbench.cli._report import ReportFiles, report_runs
from rigbench.cli._resume import recorded_options, resumed_options
from rigbench.cli._run_args import RunArgs
from rigbench.cli._signals import interrupt_exit_code, interrupt_name, run_stoppable
from rigbench.cli._typed import options_command
from rigbench.errors import BusyHostError, UsageError
from rigbench.outside import for_console
from rigbench.rig.engines import engine_problems
from rigbench.store import new_run_id

__all__ = ["run"]


@app.command()
@options_command(RunArgs)
def run(ctx: typer.Context | None, o: RunArgs) -> None:
    """Measure a rig: set up (or attach), check it answers correctly, run the suites, report.

    With no options: builds/fetches the embedded llama.cpp + SmolLM2-135M rig (cached after the
    first time) and runs the quick speed profile.
    """
    if o.resume is not None and o.plan is None and ctx is not None:
        merged = resumed_options(ctx, o, o.resume)
        if merged is not None:
            o = merged
    check_run_options(o)
    for problem in engine_problems():  # an installed engine package that is broken: said, and left out
        make_console(stderr=True).print(f"[yellow]warning: {for_console(problem)}[/]")
    if o.retry_failed and (o.resume is None or o.plan is not None):
        raise UsageError("--retry-failed redoes the failed requests of a run being resumed: give it with "
                         "--resume RUN_DIR (a single run; a plan's runs are resumed one by one with their run directory).")
    if o.plan is not None:
        _run_plan(o, o.plan)
        return
    if o.ray is not None or o.clients > 1:
        # lazy: start-up; only --ray / --clients need rigbench.scale
        from rigbench.scale import check_client_options

        check_client_options(ray=o.ray, clients=o.clients, endpoint=o.rig.endpoint, suites=o.suite)
    _run_one(o)


def _run_plan(o: RunArgs, plan: Path) -> None:
    """`rigbench run PLAN`: the plan file holds the settings; the flags say only where output goes."""
    # lazy: start-up; cli._plan loads rigbench.plan and every suite (~0.3 s)
    from rigbench.cli._plan import run_plan

    if o.allow_unconfined:
        raise UsageError(f"--allow-unconfined applies to single runs; for {plan} set "
                         "`allow_unconfined: true` in the plan file (it is recorded with the plan).")
    if o.allow_busy_host:
        raise UsageError(f"--allow-busy-host applies to single runs; for {plan} set `allow_busy_host: true` "
                         "in the plan file.")
    if o.set_:
        raise UsageError(f"--set changes a single run's suite settings; for {plan} write them in the plan "
                         "file (e.g. `agent: {tool_trials: 5}`; every key: docs/plans.md).")
    if o.clients > 1:
        raise UsageError("--clients spreads one endpoint's speed load; a plan's rigs are spread with "
                         "--ray alone. Drop --clients, or run --endpoint URL --clients N --ray ADDRESS.")
    run_plan(plan, resume=o.resume, out=o.out, markdown=o.markdown, allow_untrusted=o.allow_untrusted, ray=o.ray,
             files=ReportFiles(html=o.html, json_out=o.json_out, csv=o.csv, jsonl=o.jsonl))


def _run_one(o: RunArgs) -> None:
    """One run from the flags (a plan of one rig), then its report; exit 1 when it is untrusted."""
    resume, out, label = o.resume, o.out, o.label
    console = make_console()
    # lazy: start-up; rigbench.plan loads every suite and the runner (~0.3 s)
    from rigbench.plan import plan_from_options, run_config_for

    # the flags are a plan of one rig, typed (RunOptions): the same models validate them as a plan file's
    flags = plan_from_options(o)
    check_export_suites(flags.plan.suites, csv=o.csv, jsonl=o.jsonl)  # before the run, not after it
    # asked for the whole run whatever its verdict (--allow-untrusted): a busy window measures on
    cfg = run_config_for(flags.plan, flags.rig, out, label=label, resume=resume, allow_untrusted=o.allow_untrusted,
                         cli_options=recorded_options(o), measure_untrusted=o.allow_untrusted)
    cfg.retry_failed = o.retry_failed
    cfg.run_id = cfg.run_id or (None if resume else new_run_id(label))  # chosen now: an interrupt names the dir
    run_dir = resume or out / str(cfg.run_id)
    with RichProgress(console) as prog:
        try:
            if o.ray is not None:  # the speed load from client actors (rigbench.scale)
                # lazy: start-up; only --ray needs rigbench.scale
                from rigbench.scale import execute_run_with_clients

                header = run_stoppable(execute_run_with_clients(cfg, prog, address=o.ray, clients=o.clients,
                                                           console=console))
            else:
                # lazy: start-up; the runner loads every suite
                from rigbench.runner import execute_run

                header = run_stoppable(execute_run(cfg, prog, build_progress=prog.build))
        except KeyboardInterrupt:
            console.print(f"[yellow]interrupted ({interrupt_name()}): the partial run is kept; continue it with "
                          f"`rigbench run --resume {for_console(run_dir)}`[/]")
            raise typer.Exit(interrupt_exit_code()) from None
        except BusyHostError as e:  # not bad input (exit 2): its figures cannot be trusted, as an UNTRUSTED run's
            make_console(stderr=True).print(f"[bold red]stopped:[/] {for_console(e, multiline=True)}", highlight=False,
                                            soft_wrap=True)
            raise typer.Exit(1) from None
    files = ReportFiles(html=o.html, markdown=o.markdown, json_out=o.json_out, csv=o.csv, jsonl=o.jsonl)
    run_dir = out / header.run_id if resume is None else resume
    try:
        report_runs([run_dir], console, files)  # as `rigbench report`
    except KeyboardInterrupt:  # the run is whole: only its report was cut short
        console.print(f"[yellow]interrupted ({interrupt_name()}) while writing the report; the run is complete: "
                      f"`rigbench report {for_console(run_dir)}` shows it (with the file options to write them).[/]")
        raise typer.Exit(interrupt_exit_code()) from None
    if header.trust is not None and not header.trust.trusted and not o.allow_untrusted:
        make_console(stderr=True).print("[bold red]The run is UNTRUSTED (reasons in its panel above); exiting 1. "
                                   "Pass --allow-untrusted to exit 0 anyway.[/]")
        raise typer.Exit(1)
