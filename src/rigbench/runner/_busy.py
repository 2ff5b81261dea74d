"""A busy host, said at once: each measured window judged as it runs and as it ends (`BusyHostGuard`).

A multi-threaded llama.cpp beside one busy neighbour on 2 cores decodes at 0.3 tok/s: a default run would
take an hour and only then say UNTRUSTED. Instead the first window judged busy is named on the console (the
same words as the final finding), and by default the run stops before it measures anything more: what was
measured is kept, the run is marked interrupted, and the message says how to go on. `--allow-busy-host`
measures on (the figures kept, the finding shown live and in the report); so does `--allow-untrusted`,
whose user asked for the whole run whatever its verdict (it ends UNTRUSTED for speed, exit 0). A busy
window that is the run's last measurement does not stop anything: the run ends with its verdict.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum
from pathlib import Path

from rigbench.analysis import assess_host
from rigbench.errors import BusyHostError
from rigbench.records import HostConditions

__all__ = ["BusyHostGuard", "BusyHostPolicy"]


class BusyHostPolicy(StrEnum):
    """What a run does at a busy window: one decision (`decide`), read by the guard and the trust verdict."""

    STOP = "stop"  # stop before the next window; what was measured is kept, the run interrupted (resumable)
    MEASURE_UNTRUSTED = "measure_untrusted"  # measure on; the busy-host finding untrusts the run
    MEASURE_TRUSTED = "measure_trusted"  # measure on; the figures stay trusted, the finding shown (kept)

    @classmethod
    def decide(cls, *, allow_busy_host: bool, measure_untrusted: bool) -> BusyHostPolicy:
        """`allow_busy_host` (`--allow-busy-host`, a plan's `allow_busy_host: true`) keeps the figures trusted;
        else `measure_untrusted` (a single run's `--allow-untrusted`: the whole run, whatever its verdict)
        measures on untrusted; else the run stops. A plan's rigs keep going past an untrusted rig, but stop
        at a busy window: they never measure untrusted."""
        if allow_busy_host:
            return cls.MEASURE_TRUSTED
        return cls.MEASURE_UNTRUSTED if measure_untrusted else cls.STOP


class BusyHostGuard:
    """The runner's `WindowJudge` (rig/_host.py): says a busy window live, and stops the run when the
    policy is STOP."""

    def __init__(self, run_dir: Path, policy: BusyHostPolicy, *, note: Callable[[str], None],
                 write: Callable[[HostConditions], None]) -> None:
        self.run_dir = run_dir
        self.keep = policy is not BusyHostPolicy.STOP  # measure on, the finding shown
        # why it measures on, as the console says it
        self._why = ("kept by --allow-busy-host" if policy is BusyHostPolicy.MEASURE_TRUSTED
                     else "the run will be UNTRUSTED for speed; --allow-untrusted")
        self._note = note
        self._write = write
        self._finding: str | None = None  # the first busy window's, in the final verdict's words
        self._said: set[str] = set()  # windows already named on the console while they ran

    def opening(self, window: str) -> None:
        """Before the next window (or suite): stop here when a window of this run was busy."""
        if self._finding is not None and not self.keep:
            raise BusyHostError(self._message(f"stopped before {window}"))

    def interim(self, record: HostConditions) -> bool:
        verdict = assess_host([record])
        if not verdict.busy:
            return False
        if self.keep and record.window not in self._said:
            self._said.add(record.window)
            self._note(f"{verdict.reason} (so far, {record.wall_s:.0f} s into the window; measuring on: "
                       f"{self._why})")
        if self.keep:
            return False
        self._finding = self._finding or verdict.reason
        return True

    def ended(self, record: HostConditions, *, cut: bool) -> str | None:
        verdict = assess_host([record])
        if cut:
            # the batches this window completed are in the run: its figures so far go with them, under an id of
            # their own (a resumed window of the same level writes the level's id and must not supersede it)
            self._write(record.model_copy(update={"unit_id": f"{record.unit_id}/cut{record.started_ns}"}))
        if cut:
            return self._message(f"stopped {record.wall_s:.0f} s into {record.window} (its unfinished requests left "
                                 "out)")
        if not verdict.busy:
            return None
        self._finding = self._finding or verdict.reason
        if self.keep:
            self._note(f"{verdict.reason} ({self._why}: measuring on)")
        else:
            self._note(verdict.reason)
        return None

    def _message(self, where: str) -> str:
        return (f"{self._finding}. The run {where}: what was measured is kept, and the run is marked interrupted. "
                "Measure on a quiet host for figures of the rig alone (a new run; the windows above stay busy in "
                f"this one), or go on here with `rigbench run --resume {self.run_dir} --allow-busy-host`, which "
                "keeps these figures with the finding shown (a plan's rig: set `allow_busy_host: true` in the plan "
                "file and resume the plan).")
