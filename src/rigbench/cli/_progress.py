"""Rich progress bars behind the suites' Progress protocol."""

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

__all__ = ["RichProgress"]


class RichProgress:
    def __init__(self, console: Console) -> None:
        self.console = console
        self._p = Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                           TimeElapsedColumn(), console=console, transient=False)
        self._build_task: int | None = None

    def __enter__(self) -> RichProgress:
        self._p.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._p.__exit__(*exc)  # type: ignore[arg-type]

    def task(self, description: str, total: int | None) -> int:
        return int(self._p.add_task(description, total=total))

    def advance(self, task_id: int, n: int = 1) -> None:
        self._p.advance(task_id, n)  # type: ignore[arg-type]

    def done(self, task_id: int) -> None:
        t = self._p.tasks[task_id]
        self._p.update(task_id, completed=t.total or t.completed)  # type: ignore[arg-type]

    def note(self, message: str) -> None:
        self._p.console.print(f"[dim]·[/] {message}")

    def build(self, done: int, total: int | None, message: str) -> None:
        """Callback for the llama-server build."""
        if self._build_task is None:
            self._build_task = int(self._p.add_task("building llama-server", total=total))
        self._p.update(self._build_task, completed=done, total=total, description=message)  # type: ignore[arg-type]
