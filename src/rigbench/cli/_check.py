"""`rigbench check -- <engine command line>`: preflight checks without starting anything."""

from __future__ import annotations

from typing import Annotated

import typer

from rigbench.cli._app import app
from rigbench.cli._console import make_console
from rigbench.errors import UsageError
from rigbench.honesty import PreflightInput, ScenarioLength, preflight
from rigbench.report import preflight_terminal

__all__ = ["check"]


@app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def check(
    ctx: typer.Context,
    tools: Annotated[bool, typer.Option("--tools", metavar="", help="The workload sends tools (agent suites).")] = False,
    concurrency: Annotated[list[str] | None, typer.Option(metavar="LIST", help="Client concurrency levels, "
                                                          "comma-separated as in `run` (e.g. 1,4,8; repeating the "
                                                          "option works too).")] = None,
    scenario: Annotated[list[str] | None, typer.Option(metavar="LIST", help="Scenario shapes as "
                                                       "NAME:INPUT:OUTPUT tokens, comma-separated (e.g. "
                                                       "chat:128:256,long:8192:256; repeating the option works "
                                                       "too).")] = None,
    stop: Annotated[list[str] | None, typer.Option(metavar="TEXT", help="A stop string the client will send; "
                                                   "repeatable (a stop string may hold commas).")] = None,
) -> None:
    """Check a vLLM / SGLang / llama-server command line for known traps. Exits 1 on an error finding.

    Example: rigbench check -- vllm serve MODEL --speculative-config '{"method": "dflash", ...}'
    """
    argv = list(ctx.args)
    if not argv:
        raise UsageError("give the engine command line after `--`: `rigbench check -- <the command that starts your "
                         "server>` (`rigbench check --help` shows one).")
    levels: list[int] = []
    for item in concurrency or []:
        for part in item.split(","):
            try:
                levels.append(int(part))
            except ValueError as e:
                raise UsageError(f"--concurrency {item}: expected comma-separated positive integers, e.g. 1,4,8.") from e
            if levels[-1] < 1:
                raise UsageError(f"--concurrency {item}: a concurrency level is a positive number of requests in flight; got {levels[-1]}.")
    scen = []
    for s in (part for item in scenario or [] for part in item.split(",")):
        try:
            name, i, o = s.split(":")
            scen.append(ScenarioLength(name=name, input_tokens=int(i), output_tokens=int(o)))
        except ValueError as e:
            raise UsageError(f"--scenario {s!r}: expected NAME:INPUT_TOKENS:OUTPUT_TOKENS.") from e
    report = preflight(argv, PreflightInput(uses_tools=tools, concurrency=levels, scenarios=scen,
                                            stop=stop or []))
    preflight_terminal(report, make_console())
    if report.errors:
        make_console(stderr=True).print(f"[bold red]{len(report.errors)} error finding(s) above; exiting 1.[/]")
        raise typer.Exit(1)
