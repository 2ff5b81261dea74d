"""Rich progress bars behind the suites' Progress protocol.

Redrawn twice a second on a terminal, never in the background elsewhere (a pipe, a CI log: rich
draws nothing live there anyway). rich's default of 10 redraws a second cost 2.4% of a core on
the 2-core VM (2026-11-30), more than the rest of rigbench's standing work at one slow stream;
2 per second costs about 0.5%. Bars still move on every advance, at the next redraw.
"""

from __future__ import annotations

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)

from rigbench.outside import for_console

__all__ = ["RichProgress"]

REDRAWS_PER_S = 2


class RichProgress:
    def __init__(self, console: Console) -> None:
        self.console = console
        self._p = Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                           TimeElapsedColumn(), console=console, transient=False,
                           refresh_per_second=REDRAWS_PER_S, auto_refresh=console.is_terminal)
        self._build_task: int | None = None

    def __enter__(self) -> RichProgress:
        self._p.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._p.__exit__(*exc)  # type: ignore[arg-type]

    def task(self, description: str, total: int | None) -> int:
        return int(self._p.add_task(for_console(description), total=total))

    def advance(self, task_id: int, n: int = 1) -> None:
        self._p.advance(task_id, n)  # type: ignore[arg-type]

    def done(self, task_id: int) -> None:
        t = self._p.tasks[task_id]
        self._p.update(task_id, completed=t.total or t.completed)  # type: ignore[arg-type]

    def note(self, message: str) -> None:
        self._p.console.print(f"[dim]·[/] {for_console(message, multiline=True)}")

    def build(self, done: int, total: int | None, message: str) -> None:
        """Callback for the llama-server build."""
        if self._build_task is None:
            self._build_task = int(self._p.add_task("building llama-server", total=total))
        self._p.update(self._build_task, completed=done, total=total, description=for_console(message))  # type: ignore[arg-type]
