"""The known-answer gate's false-alarm rate and cost on the embedded rig, and its catch rate on rogues.

    python benchmarks/gate_false_alarm.py --runs 20 [--out benchmarks/results/gate_false_alarm-HOST-DATE.json]

Starts the embedded rig exactly as `rigbench run` does (llama-server + SmolLM2-135M-Instruct,
default flags), then runs the default gate `--runs` times, each with a different question seed
(1..N, so any run can be replayed with `rigbench run --sanity-seed S`), and records per run:
trusted or not, the gate's wall time, and which questions were missed. Then runs the same seeds
against each rogue persona of the emulator (`rigbench.testing._rogue`): every one must fail.
Target (issue 11): trusted in at least 19 of 20 runs, gate time at most 20 s.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from rigbench.client import ChatClient
from rigbench.honesty._sanity import SanityVerdict, run_sanity_gate
from rigbench.rig import LlamaCppConfig, prepare_llamacpp_rig
from rigbench.testing import Emulator, EmulatorScript
from rigbench.testing._rogue import ROGUES
from rigbench.testing._script import Delay

# Rogues whose answers are right: the gate passes them by design; the traffic check after the
# suites catches them (tests/unit/test_rogue_gallery.py proves it end to end).
CAUGHT_AFTER_GATE = {"inflated_usage": "usage recount", "lying_timings": "timings vs client clock",
                     "long_prompt_garbage": "output screen on measured outputs"}


def _summary(label: str, verdicts: list[SanityVerdict]) -> dict[str, Any]:
    times = [v.elapsed_s or 0.0 for v in verdicts]
    missed = Counter(a.question_id.rsplit("_", 1)[0] for v in verdicts for a in v.answers if not a.passed)
    return {
        "server": label,
        "runs": len(verdicts),
        "trusted": sum(v.trusted for v in verdicts),
        "gate_s_median": round(statistics.median(times), 2) if times else None,
        "gate_s_max": round(max(times), 2) if times else None,
        "missed_by_kind": dict(missed.most_common()),
        "per_run": [{"question_seed": v.question_seed, "trusted": v.trusted, "gate_s": v.elapsed_s,
                     "right": sum(a.passed for a in v.answers), "of": len(v.answers),
                     "reasons": v.reasons[:3], "notes": v.notes} for v in verdicts],
    }


async def _gates(base_url: str, model: str, seeds: list[int], label: str) -> list[SanityVerdict]:
    out = []
    async with ChatClient(base_url) as client:
        for s in seeds:
            v = await run_sanity_gate(client, model, question_seed=s)
            out.append(v)
            print(f"{label} seed {s}: {'trusted' if v.trusted else 'UNTRUSTED'} "
                  f"{sum(a.passed for a in v.answers)}/{len(v.answers)} in {v.elapsed_s:.1f} s"
                  + ("" if v.trusted else f"  ({v.reasons[0][:100]})"), file=sys.stderr, flush=True)
            for a in v.answers:
                if not a.passed:
                    print(f"    missed {a.question_id}: {a.prompt!r} -> {a.answer[:90]!r}", file=sys.stderr, flush=True)
    return out


async def _embedded(seeds: list[int]) -> list[SanityVerdict]:
    with tempfile.TemporaryDirectory() as d:
        rig = prepare_llamacpp_rig(LlamaCppConfig(), Path(d) / "engine.log")
        await rig.start()
        try:
            info = rig.info()
            return await _gates(info.base_url, info.model, seeds, "smollm2")
        finally:
            await rig.stop()


async def _rogue(name: str, seeds: list[int]) -> list[SanityVerdict]:
    script = EmulatorScript(persona=name, ttft=Delay(mean_ms=1.0), itl=Delay(mean_ms=0.2))
    async with Emulator(script) as emu:
        return await _gates(emu.url, "m", seeds, name)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=20)
    p.add_argument("--first-seed", type=int, default=1)
    p.add_argument("--no-rogues", action="store_true", help="Skip the rogue personas.")
    p.add_argument("--out", type=Path, default=None, help="Write the results as JSON here.")
    a = p.parse_args()
    seeds = list(range(a.first_seed, a.first_seed + a.runs))
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    results = [_summary("embedded llama-server + SmolLM2-135M-Instruct Q4_1", asyncio.run(_embedded(seeds)))]
    if not a.no_rogues:
        for name in ("healthy", *ROGUES):
            r = _summary(f"emulator --rogue {name}" if name != "healthy" else "emulator --answers",
                         asyncio.run(_rogue(name, seeds[:5])))
            if name in CAUGHT_AFTER_GATE:
                r["caught_after_the_gate_by"] = CAUGHT_AFTER_GATE[name]
            results.append(r)
    doc = {"started": started, "host": platform.node(), "machine": platform.processor() or platform.machine(),
           "command": " ".join(sys.argv), "results": results}
    for r in results:
        print(f"{r['server']}: trusted {r['trusted']}/{r['runs']}, gate median {r['gate_s_median']} s, "
              f"max {r['gate_s_max']} s, missed {r['missed_by_kind']}")
    if a.out:
        a.out.write_text(json.dumps(doc, indent=1))


if __name__ == "__main__":
    main()
