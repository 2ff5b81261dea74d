"""The known-answer gate's false-alarm rate and cost on the embedded rig, and its catch rate on rogues.

    python benchmarks/gate_false_alarm.py --random-seeds 500 [--slots 1] [--llama-server PATH --model PATH]
        [--jsonl benchmarks/results/gate_false_alarm-HOST-DATE.jsonl] [--out ...json]
    python benchmarks/gate_false_alarm.py --runs 40 --first-seed 1876959270   # fixed seeds, replayable
    python benchmarks/gate_false_alarm.py --random-seeds 1000 --workers 4 ...  # 4 rigs on a quiet 16-core host

Starts the embedded rig exactly as `rigbench run` does (llama-server + SmolLM2-135M-Instruct,
default flags; `--slots` to try the live tests' 4), then runs the default gate once per question
seed: `--random-seeds N` draws N random 32-bit seeds (as a run would; each recorded, so any run can
be replayed with `rigbench run --sanity-seed S`), else seeds first-seed..first-seed+runs-1. Per run:
trusted or not, the gate's wall time, which questions were missed; `--jsonl` appends each run as it
ends, so a stopped benchmark keeps what it measured. The summary gives the false alarms with their
95% Clopper-Pearson upper bound. Then runs seeds against each rogue persona of the emulator
(`rigbench.testing._rogue`): every one must fail.
Target (issue 25): false alarm at most 1 in 1,000 over random seeds, gate time at most 20 s.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import multiprocessing
import os
import platform
import random
import statistics
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from rigbench.client import ChatClient
from rigbench.honesty._sanity import SanityVerdict, run_sanity_gate
from rigbench.rig._models import LocalFile
from rigbench.rig.engines._llamacpp import LLAMACPP
from rigbench.rig.engines._llamacpp._embedded import LlamaCppConfig, prepare_llamacpp_rig
from rigbench.testing import Emulator, EmulatorScript
from rigbench.testing._rogue import ROGUES
from rigbench.testing._script import Delay

# Rogues whose answers are right: the gate passes them by design; the traffic check after the
# suites catches them (tests/unit/test_rogue_gallery.py proves it end to end).
CAUGHT_AFTER_GATE = {"inflated_usage": "usage recount", "lying_timings": "timings vs client clock",
                     "long_prompt_garbage": "output screen on measured outputs"}


def _summary(label: str, verdicts: list[SanityVerdict]) -> dict[str, Any]:
    from scipy import stats

    times = [v.elapsed_s or 0.0 for v in verdicts]
    missed = Counter(a.question_id.rsplit("_", 1)[0] for v in verdicts for a in v.answers if not a.passed)
    alarms = sum(not v.trusted for v in verdicts)
    upper = (float(stats.binomtest(alarms, len(verdicts)).proportion_ci(0.95, method="exact").high)
             if verdicts else None)
    return {
        "server": label,
        "runs": len(verdicts),
        "trusted": sum(v.trusted for v in verdicts),
        "untrusted": alarms,
        "untrusted_rate_upper95": round(upper, 5) if upper is not None else None,
        "gate_s_median": round(statistics.median(times), 2) if times else None,
        "gate_s_max": round(max(times), 2) if times else None,
        "missed_by_kind": dict(missed.most_common()),
        "per_run": [{"question_seed": v.question_seed, "trusted": v.trusted, "gate_s": v.elapsed_s,
                     "right": sum(a.passed for a in v.answers), "of": len(v.answers),
                     "reasons": v.reasons[:3], "notes": v.notes} for v in verdicts],
    }


async def _gates(base_url: str, model: str, seeds: list[int], label: str,
                 jsonl: Path | None = None) -> list[SanityVerdict]:
    out = []
    async with ChatClient(base_url) as client:
        for s in seeds:
            v = await run_sanity_gate(client, model, question_seed=s)
            out.append(v)
            if jsonl is not None:
                with jsonl.open("a") as f:
                    f.write(json.dumps({"server": label, "question_seed": s, "trusted": v.trusted,
                                        "gate_s": v.elapsed_s, "right": sum(a.passed for a in v.answers),
                                        "of": len(v.answers), "reasons": v.reasons, "notes": v.notes,
                                        "missed": [[a.question_id, a.prompt, a.answer[:200]]
                                                   for a in v.answers if not a.passed]}) + "\n")
            print(f"{label} seed {s}: {'trusted' if v.trusted else 'UNTRUSTED'} "
                  f"{sum(a.passed for a in v.answers)}/{len(v.answers)} in {v.elapsed_s:.1f} s"
                  + ("" if v.trusted else f"  ({v.reasons[0][:100]})"), file=sys.stderr, flush=True)
            for a in v.answers:
                if not a.passed:
                    print(f"    missed {a.question_id}: {a.prompt!r} -> {a.answer[:90]!r}", file=sys.stderr, flush=True)
    return out


async def _embedded(seeds: list[int], a: argparse.Namespace) -> list[SanityVerdict]:
    cfg = LlamaCppConfig(slots=a.slots, llama_server=a.llama_server, threads=a.threads)
    if a.model:
        cfg = dataclasses.replace(cfg, model=LocalFile(a.model))
    with tempfile.TemporaryDirectory() as d:
        rig = prepare_llamacpp_rig(cfg, Path(d) / "engine.log", llamacpp=LLAMACPP)
        await rig.start()
        try:
            info = rig.info()
            return await _gates(info.base_url, info.model, seeds, "smollm2", a.jsonl)
        finally:
            await rig.stop()


async def _rogue(name: str, seeds: list[int]) -> list[SanityVerdict]:
    script = EmulatorScript(persona=name, ttft=Delay(mean_ms=1.0), itl=Delay(mean_ms=0.2))
    async with Emulator(script) as emu:
        return await _gates(emu.url, "m", seeds, name)


def _worker(job: tuple[list[int], argparse.Namespace, list[int] | None]) -> list[dict[str, Any]]:
    """One embedded rig on its own cores (`cpus`, inherited by llama-server), gating its share of seeds."""
    seeds, a, cpus = job
    if cpus:
        os.sched_setaffinity(0, cpus)
    return [v.model_dump(mode="json") for v in asyncio.run(_embedded(seeds, a))]


def _embedded_runs(seeds: list[int], a: argparse.Namespace) -> list[SanityVerdict]:
    if a.workers <= 1:
        return asyncio.run(_embedded(seeds, a))
    cpus = sorted(os.sched_getaffinity(0))
    per = max(1, len(cpus) // a.workers)
    if a.threads is None:
        a.threads = per
    jobs = [(seeds[i::a.workers], a, cpus[i * per:(i + 1) * per] or None) for i in range(a.workers)]
    with ProcessPoolExecutor(a.workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        return [SanityVerdict.model_validate(v) for part in pool.map(_worker, jobs) for v in part]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=20)
    p.add_argument("--first-seed", type=int, default=1)
    p.add_argument("--random-seeds", type=int, default=None, metavar="N",
                   help="Draw N random 32-bit question seeds instead of first-seed..first-seed+runs-1.")
    p.add_argument("--slots", type=int, default=1, help="llama-server parallel slots (the rig's default: 1).")
    p.add_argument("--llama-server", type=Path, default=None, help="llama-server binary (default: as rigbench run).")
    p.add_argument("--model", type=Path, default=None, help="GGUF model (default: the embedded SmolLM2-135M).")
    p.add_argument("--jsonl", type=Path, default=None, help="Append each embedded run here as it ends.")
    p.add_argument("--workers", type=int, default=1,
                   help="Embedded rigs side by side, each on its own share of the CPUs (a quiet many-core host).")
    p.add_argument("--threads", type=int, default=None, help="llama-server --threads (default: its own; with "
                   "--workers, the worker's cores).")
    p.add_argument("--rogue-seeds", type=int, default=5, help="Seeds asked of each rogue persona.")
    p.add_argument("--no-rogues", action="store_true", help="Skip the rogue personas.")
    p.add_argument("--no-embedded", action="store_true", help="Only the emulator personas (no llama-server).")
    p.add_argument("--out", type=Path, default=None, help="Write the results as JSON here.")
    a = p.parse_args()
    if a.random_seeds is not None:
        rng = random.SystemRandom()
        seeds = [rng.getrandbits(32) for _ in range(a.random_seeds)]
    else:
        seeds = list(range(a.first_seed, a.first_seed + a.runs))
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    results = [] if a.no_embedded else [
        _summary(f"embedded llama-server + SmolLM2-135M-Instruct Q4_1, {a.slots} slot(s)", _embedded_runs(seeds, a))]
    if not a.no_rogues:
        for name in ("healthy", *ROGUES):
            r = _summary(f"emulator --rogue {name}" if name != "healthy" else "emulator --answers",
                         asyncio.run(_rogue(name, seeds[:a.rogue_seeds])))
            if name in CAUGHT_AFTER_GATE:
                r["caught_after_the_gate_by"] = CAUGHT_AFTER_GATE[name]
            results.append(r)
    doc = {"started": started, "host": platform.node(), "machine": platform.processor() or platform.machine(),
           "command": " ".join(sys.argv), "results": results}
    for r in results:
        rate = (f" (false-alarm rate <= {r['untrusted_rate_upper95']} at 95%)" if r["server"].startswith("embedded")
                else "")
        print(f"{r['server']}: trusted {r['trusted']}/{r['runs']}{rate}, gate median {r['gate_s_median']} s, "
              f"max {r['gate_s_max']} s, missed {r['missed_by_kind']}")
    if a.out:
        a.out.write_text(json.dumps(doc, indent=1))


if __name__ == "__main__":
    main()
