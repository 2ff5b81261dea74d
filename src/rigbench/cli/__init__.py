"""Thin typer commands. They parse options, own `asyncio.run`, and print; no logic lives here.

Command modules register themselves on `app` when imported below.
"""

from __future__ import annotations

import sys

import typer
from typer.exceptions import TyperException

from rigbench.cli import _check as _check
from rigbench.cli import _compare as _compare
from rigbench.cli import _emulate as _emulate
from rigbench.cli import _kv as _kv
from rigbench.cli import _probe as _probe
from rigbench.cli import _proxy as _proxy
from rigbench.cli import _report as _report
from rigbench.cli import _roofline as _roofline
from rigbench.cli import _run as _run
from rigbench.cli import _setup as _setup
from rigbench.cli._app import app
from rigbench.cli._console import make_console
from rigbench.cli._signals import handle_stop_signals, interrupt_exit_code, interrupt_name, stopped
from rigbench.errors import RigbenchError
from rigbench.outside import for_console

__all__ = ["app", "main"]


def main() -> None:
    if len(sys.argv) <= 1:
        sys.argv.append("--help")  # `rigbench` alone: the help, exit 0 (not click's usage error with exit 2)
    try:
        with handle_stop_signals():
            # click's own errors come back here: one line, like ours; `rigbench` in usage lines however started
            code = app(prog_name="rigbench", standalone_mode=False)
        if code == 130 and stopped():  # typer returns a KeyboardInterrupt that left a command as 130, silently
            raise KeyboardInterrupt
        sys.exit(code if isinstance(code, int) else 0)
    except TyperException as e:  # click's usage errors: an unknown option, a wrong type, a missing argument
        ctx = getattr(e, "ctx", None)
        where = f" (`{ctx.command_path} --help` lists the options)" if ctx is not None else ""
        message = e.format_message() if hasattr(e, "format_message") else str(e)
        make_console(stderr=True).print(f"[bold red]error:[/] {for_console(message)}{where}", highlight=False,
                                        soft_wrap=True)
        sys.exit(getattr(e, "exit_code", 2))
    except typer.Abort:
        make_console(stderr=True).print(f"[yellow]interrupted ({interrupt_name()})[/]")
        sys.exit(interrupt_exit_code())
    except RigbenchError as e:
        # as text: a message holds brackets (pip install 'rigbench[ray]') and what a server said (rigbench.outside)
        make_console(stderr=True).print(f"[bold red]error:[/] {for_console(e, multiline=True)}", highlight=False,
                                        soft_wrap=True)
        sys.exit(2)
    except KeyboardInterrupt:
        make_console(stderr=True).print(f"[yellow]interrupted ({interrupt_name()})[/]")
        sys.exit(interrupt_exit_code())
