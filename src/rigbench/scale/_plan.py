"""A plan's rigs as Ray tasks: each placed by its `resources:`, its run directory streamed back.

The driver keeps the plan directory exactly as `execute_plan` does (the same index, the same run
directories, the same resume rule); each rig runs on whatever node Ray places it, through the same
`run_config_for` + `execute_run` a local plan uses, into a scratch directory on that node that is
tailed and streamed to the driver as it grows. A node that dies takes with it at most the last
poll interval (0.2 s) of records; the rig is marked failed with the --resume command, and the resumed
rig (shipped the records the driver holds) redoes only the units that are missing.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from rigbench._version import __version__
from rigbench.client import run as run_loop
from rigbench.errors import RigbenchError
from rigbench.plan import (
    LoadedPlan,
    PlanIndex,
    ResolvedRig,
    check_plan_length,
    open_index,
    run_config_for,
    write_plan_index,
)
from rigbench.rig.engines import engine_source, known_engines
from rigbench.runner import execute_run
from rigbench.scale._placement import check_placeable, rig_resources, task_options
from rigbench.scale._ray import connect
from rigbench.scale._stream import Delta, DirTailer, apply_delta, snapshot_dir
from rigbench.store import RunReader, new_run_id, now_utc
from rigbench.suites import NullProgress, Progress

__all__ = ["PLACEMENT_FILE", "POLL_S", "execute_plan_on_ray", "rig_task"]

POLL_S = 0.2
PLACEMENT_FILE = "ray.json"


def rig_task(loaded: LoadedPlan, rig: ResolvedRig, run_id: str, prior: dict[str, bytes] | None,
             command: list[str]) -> Iterator[tuple[str, Any]]:
    """Runs on a Ray node: measure one rig, yielding ("node", (ip, id, rigbench version)), ("delta", Delta)... then
    ("end", (status, error))."""
    # lazy: ray is optional; this runs only on a Ray node
    import ray

    yield ("node", (ray.util.get_node_ip_address(), ray.get_runtime_context().get_node_id(), __version__))

    scratch = Path(tempfile.mkdtemp(prefix="rigbench-ray-"))
    run_dir = scratch / run_id
    try:
        if prior:
            for rel, data in prior.items():
                (run_dir / rel).parent.mkdir(parents=True, exist_ok=True)
                (run_dir / rel).write_bytes(data)
        outcome: dict[str, Any] = {}

        def work() -> None:
            try:
                cfg = run_config_for(loaded.plan, rig, scratch, run_id=run_id, resume=run_dir if prior else None)
                cfg.command = command  # the driver's command line, not the Ray worker's
                header = run_loop(execute_run(cfg))
                outcome["end"] = (header.status, header.error)
            except RigbenchError as e:
                outcome["end"] = ("failed", str(e))
            except BaseException as e:
                outcome["end"] = ("failed", f"{type(e).__name__}: {e}")

        tailer = DirTailer(run_dir, prior)
        t = threading.Thread(target=work, name=f"rigbench-rig-{rig.name}", daemon=True)
        t.start()
        while t.is_alive():
            t.join(POLL_S)
            for d in tailer.poll():
                yield ("delta", d)
        for d in tailer.poll():
            yield ("delta", d)
        yield ("end", outcome.get("end", ("failed", "the rig's thread ended without a result")))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _package_needed(rig: ResolvedRig) -> str:
    """For a rig whose engine an installed package adds: that the node needs the package too."""
    kind = getattr(rig.spec, "kind", None)
    if not isinstance(kind, str) or kind not in {e.name for e in known_engines()}:
        return ""
    source = engine_source(kind)
    if source == "rigbench":
        return ""
    if source == "register_engine":
        return (f", and its engine {kind!r}, which register_engine added in this driver only: install it as a "
                "package with a `rigbench.engines` entry point (docs/engines.md)")
    return f", and the package of its engine {kind!r}, {source}, which this driver has"


def _last_line(e: BaseException) -> str:
    lines = [ln.strip() for ln in str(e).strip().splitlines() if ln.strip()]
    return lines[-1] if lines else type(e).__name__


class _Plan:
    """The driver's side: one thread per rig consuming its stream, one lock around the index."""

    def __init__(self, ray: Any, loaded: LoadedPlan, plan_dir: Path, index: PlanIndex, prog: Progress) -> None:
        self.ray, self.loaded, self.plan_dir, self.index, self.prog = ray, loaded, plan_dir, index, prog
        self.lock = threading.Lock()
        self.resources = rig_resources(loaded)
        self.remote = ray.remote(rig_task)
        self.error: BaseException | None = None

    def _update(self, name: str, **changes: Any) -> None:
        with self.lock:
            self.index = self.index.with_entry(self.index.entry(name).model_copy(update=changes))
            write_plan_index(self.plan_dir, self.index)

    def _placed(self, name: str, run_id: str, node_ip: str, node_id: str, version: str) -> None:
        """Where each attempt of each rig ran: PLAN_DIR/ray.json (beside the index, which stays as a local plan's)."""
        with self.lock:
            path = self.plan_dir / PLACEMENT_FILE
            data = json.loads(path.read_text()) if path.exists() else {}
            data.setdefault(name, []).append({"run_dir": run_id, "node_ip": node_ip, "node_id": node_id,
                                              "started_at": now_utc()})
            path.write_text(json.dumps(data, indent=2))
        self._update(name, status="running")
        self.prog.note(f"{name}: running on node {node_ip} ({node_id[:12]})")
        if version != __version__:
            self.prog.note(f"{name}: WARNING: node {node_ip} runs rigbench {version}, this driver {__version__}; "
                           "install the same version on every node for comparable results")

    def run_rig(self, rig: ResolvedRig, address: str) -> None:
        try:
            self._run_rig(rig, address)
        except BaseException as e:  # a bug of the driver: fail the rig, keep its records
            self._update(rig.name, status="failed", error=f"{type(e).__name__}: {e}")
            self.error = e

    def _run_rig(self, rig: ResolvedRig, address: str) -> None:
        entry = self.index.entry(rig.name)
        prior_dir = self.plan_dir / entry.run_dir if entry.run_dir else None
        if prior_dir is not None and not (prior_dir / "run.json").exists():
            prior_dir = None
        run_id = prior_dir.name if prior_dir is not None else new_run_id(rig.name)
        run_dir = self.plan_dir / run_id
        prior = snapshot_dir(prior_dir) if prior_dir is not None else None
        if prior is not None and prior_dir is not None:  # drop a torn last line here too, as the node will
            (prior_dir / "records.jsonl").write_bytes(prior.get("records.jsonl", b""))
        # "pending" until Ray places it (a rig can wait for a busy resource), then "running"
        self._update(rig.name, run_dir=run_id, status="pending", error=None)
        opts = task_options(self.resources[rig.name])
        gen = self.remote.options(**opts, max_retries=0, num_returns="streaming").remote(
            self.loaded, rig, run_id, prior, list(sys.argv))
        status, error = "failed", "the rig's stream ended without a result"
        try:
            for ref in gen:
                kind, body = self.ray.get(ref)
                if kind == "delta":
                    apply_delta(run_dir, Delta(*body))  # (a Delta arrives as one; rebuilt to be sure)
                elif kind == "node":
                    self._placed(rig.name, run_id, *body)
                else:
                    status, error = body
        except self.ray.exceptions.RayTaskError as e:  # the task itself broke (not the rig: that ends in "end")
            status = "failed"
            error = (f"the rig's Ray task failed on its node: {_last_line(e)}. Check that every node has rigbench "
                     f"and the same Ray as this driver (pip install 'rigbench[ray]'){_package_needed(rig)}; what "
                     f"reached the driver is kept in {run_dir}, and `--resume {self.plan_dir}` continues it.")
        except self.ray.exceptions.RayError as e:
            first = _last_line(e)
            status = "failed"
            error = (f"the Ray node running this rig was lost ({type(e).__name__}: {first}). What it had "
                     f"recorded is kept in {run_dir}; continue with `rigbench run {self.loaded.path} --ray "
                     f"{address} --resume {self.plan_dir}` (completed units are not redone).")
        changes: dict[str, Any] = {"status": status, "error": error}
        if (run_dir / "run.json").exists():
            header = RunReader(run_dir).header
            changes.update(source_data_id=header.source_data_id,
                           trusted=header.trust.trusted if header.trust else None)
        else:
            changes["run_dir"] = None  # failed before its run began
        self._update(rig.name, **changes)
        self.prog.note(f"{rig.name}: {status}" + (f": {error.splitlines()[0]}" if error else ""))


async def execute_plan_on_ray(
    loaded: LoadedPlan,
    plan_dir: Path,
    *,
    address: str,
    resume: bool = False,
    progress: Progress | None = None,
    on_rig: Callable[[str, int, int], None] = lambda name, i, n: None,
) -> PlanIndex:
    """`execute_plan`, with every unfinished rig a Ray task running in parallel where its resources are."""
    prog = progress or NullProgress()
    # the rigs run side by side: the longest one's known schedule is the plan's (refused before connecting)
    check_plan_length(loaded.plan, [r.suites for r in loaded.rigs if "load" in r.suites][:1],
                      fix=f"set `allow_long_run: true` in {loaded.path}")
    with connect(address) as ray:
        res = rig_resources(loaded)
        # a new plan is checked before its directory exists; a resumed one once its index says what is left
        index = open_index(loaded, plan_dir, resume) if resume else None
        done = {e.name for e in index.rigs if e.status == "complete"} if index else set()
        todo = [rig for rig in loaded.rigs if rig.name not in done]
        for rig in todo:
            check_placeable(ray, rig.name, res[rig.name])
        for name in done:
            prog.note(f"{name}: already complete, skipped")
        if index is None:
            index = open_index(loaded, plan_dir, resume)
        state = _Plan(ray, loaded, plan_dir, index, prog)
        for i, rig in enumerate(todo):
            on_rig(rig.name, i, len(todo))
        start = time.monotonic()
        await asyncio.gather(*(asyncio.to_thread(state.run_rig, rig, address) for rig in todo))
        prog.note(f"{len(todo)} rig(s) ran on the Ray cluster in {time.monotonic() - start:.0f} s")
        if state.error is not None and not isinstance(state.error, Exception):
            raise state.error  # KeyboardInterrupt and the like
        index = state.index.model_copy(update={"finished_at": now_utc()})
        write_plan_index(plan_dir, index)
        return index
