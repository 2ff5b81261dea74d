"""Rich progress bars behind the suites' Progress protocol.

One line per task, readable at 80 columns: what runs (cut with an ellipsis when the line is short,
never the figures), a bar, the measured count (warm-up requests are never counted in it: "warm-up
k/n" stands in for the figures while they run), the last request's decode tok/s and TTFT as the report
defines them
(analysis.request_timing), and an ETA, or elapsed/duration for a rate window of fixed length.

Redrawn twice a second on a terminal, never in the background elsewhere (a pipe, a CI log: rich
draws nothing live there; the final state is printed once when the bars close). rich's default of
10 redraws a second cost 2.4% of a core on the 2-core VM (2026-11-30), more than the rest of
rigbench's standing work at one slow stream; 2 per second costs about 0.5%. Bars still move on
every advance, at the next redraw.
"""

from __future__ import annotations

import io
from collections.abc import Callable

from rich.console import Console
from rich.progress import BarColumn, Progress, ProgressColumn, SpinnerColumn, Task, TextColumn
from rich.table import Column
from rich.text import Text

from rigbench.analysis import request_timing
from rigbench.outside import for_console
from rigbench.records import StreamResult
from rigbench.report import NOT_COMPARABLE

__all__ = ["RichProgress", "live_figures"]

REDRAWS_PER_S = 2


def _clock(seconds: float | None) -> str:
    if seconds is None:
        return "-:--"
    s = max(0, round(seconds))
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60}:{s % 60:02d}"


def live_figures(result: StreamResult) -> str:
    """One request's figures for the progress line: decode tok/s and TTFT (client-measured)."""
    if not result.ok:
        return f"failed ({result.error.kind})" if result.error is not None else "failed"
    t = request_timing(result)
    tok_s = "– tok/s" if t.decode_tok_s is None else (
        f"{t.decode_tok_s:.1f} tok/s" if t.decode_tok_s < 100 else f"{t.decode_tok_s:.0f} tok/s")
    if t.ttft_s is None:
        ttft = f"TTFT {NOT_COMPARABLE}" if t.ttft_not_comparable else "TTFT –"
    else:
        ttft = f"TTFT {t.ttft_s * 1e3:.0f} ms" if t.ttft_s < 1 else f"TTFT {t.ttft_s:.2f} s"
    return f"{tok_s}, {ttft}"


class _Count(ProgressColumn):
    """Measured requests done / planned (warm-up requests are never counted here)."""

    def render(self, task: Task) -> Text:
        if task.total is None:
            return Text(f"{int(task.completed)}" if task.completed else "")
        return Text(f"{int(task.completed)}/{int(task.total)}")


class _Figures(ProgressColumn):
    """The last measured request's figures, or "warm-up k/n" while warm-up requests run. Derived when
    drawn (twice a second on a terminal, once at the end elsewhere), not per request: at hundreds of
    streams a per-request derivation would cost the client's core while it measures."""

    def __init__(self) -> None:
        super().__init__(table_column=Column(min_width=21, justify="right", no_wrap=True))
        self._drawn: dict[int, tuple[StreamResult, str]] = {}

    def render(self, task: Task) -> Text:
        warm_total = task.fields.get("warmup_total") or 0
        if task.fields.get("warming") and warm_total:
            return Text(f"warm-up {task.fields.get('warmup_done', 0)}/{warm_total}", style="yellow")
        last: StreamResult | None = task.fields.get("last")
        if last is None:
            return Text("")
        seen = self._drawn.get(int(task.id))
        if seen is None or seen[0] is not last:
            seen = (last, live_figures(last))
            self._drawn[int(task.id)] = seen
        return Text(seen[1], style="cyan")


class _Clock(ProgressColumn):
    """ETA at the pace up to the last unit done (warm-up requests take as long as measured ones, so they
    count towards the pace, not the count), counting down until the next; elapsed/duration for a window
    of fixed length; elapsed once done."""

    max_refresh = 0.5

    def render(self, task: Task) -> Text:
        elapsed = task.finished_time if task.finished else task.elapsed
        duration = task.fields.get("duration_s")
        if duration:
            return Text(f"{_clock(elapsed)}/{_clock(duration)}", style="dim")
        done = task.completed + (task.fields.get("warmup_done") or 0)
        planned = (task.total or 0) + (task.fields.get("warmup_total") or 0)
        paced_at = task.fields.get("paced_at")  # elapsed at the last unit done
        if task.finished or task.total is None or not done or not paced_at or done >= planned:
            return Text(_clock(elapsed), style="dim")
        # the pace up to the last unit done, counted down since: no drift while a long unit runs
        eta = paced_at * (planned - done) / done - ((elapsed or paced_at) - paced_at)
        return Text(f"ETA {_clock(max(eta, 0.0))}", style="dim")


class RichProgress:
    def __init__(self, console: Console, *, get_time: Callable[[], float] | None = None) -> None:
        """`get_time`: the clock of elapsed times and the ETA (tests pass a fake one)."""
        self.console = console
        self._p = Progress(
            SpinnerColumn(),
            # the one column that gives way on a narrow terminal: the figures are never cut
            TextColumn("{task.description}", table_column=Column(ratio=1, no_wrap=True, overflow="ellipsis",
                                                                  min_width=12)),
            BarColumn(bar_width=8), _Count(table_column=Column(min_width=3, justify="right", no_wrap=True)),
            _Figures(), _Clock(table_column=Column(min_width=8, justify="right", no_wrap=True)),
            console=console, transient=False, expand=True,
            refresh_per_second=REDRAWS_PER_S, auto_refresh=console.is_terminal, get_time=get_time)
        self._build_task: int | None = None

    def __enter__(self) -> RichProgress:
        self._p.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._p.__exit__(*exc)  # type: ignore[arg-type]

    def task(self, description: str, total: int | None, *, warmup: int = 0, duration_s: float | None = None) -> int:
        return int(self._p.add_task(for_console(description), total=total, warmup_total=warmup, warmup_done=0,
                                    warming=warmup > 0, last=None, duration_s=duration_s, paced_at=None))

    def advance(self, task_id: int, n: int = 1, *, result: StreamResult | None = None,
                warmup: bool = False) -> None:
        tid = task_id  # rich's TaskID is an int
        task = self._p.tasks[self._index(tid)]
        if warmup:  # not measured: neither counted nor shown as figures
            self._p.update(tid, warmup_done=task.fields.get("warmup_done", 0) + n, warming=True,  # type: ignore[arg-type]
                           paced_at=task.elapsed)
        else:
            figures = {} if result is None else {"last": result}
            self._p.update(tid, advance=n, warming=False, paced_at=task.elapsed, **figures)  # type: ignore[arg-type]

    def done(self, task_id: int) -> None:
        t = self._p.tasks[self._index(task_id)]
        self._p.update(task_id, completed=t.total or t.completed, warming=False)  # type: ignore[arg-type]

    def note(self, message: str) -> None:
        self._p.console.print(f"[dim]·[/] {for_console(message, multiline=True)}")

    def build(self, done: int, total: int | None, message: str) -> None:
        """Callback for an engine's build (llama.cpp's `llama-server`): its progress and what it is doing."""
        if self._build_task is None:
            self._build_task = int(self._p.add_task(for_console(message), total=total, warmup_total=0,
                                                    warming=False, last=None, duration_s=None))
        self._p.update(self._build_task, completed=done, total=total, description=for_console(message))  # type: ignore[arg-type]

    def lines(self, width: int = 80) -> list[str]:
        """The bars as a terminal of `width` columns shows them now (plain text)."""
        console = Console(width=width, file=io.StringIO(), color_system=None, emoji=False)
        with console.capture() as cap:
            console.print(self._p.get_renderable())
        return [line.rstrip() for line in cap.get().splitlines()]

    def _index(self, task_id: int) -> int:
        return next(i for i, t in enumerate(self._p.tasks) if t.id == task_id)

