"""How reliably does a healthy model answer each kind of known-answer question? Per kind and per
question instance, over many rounds: what the gate's design (docs/honesty.md) is derived from.

    python benchmarks/gate_kinds.py --rounds 40 [--slots 1] [--llama-server PATH --model PATH]
        [--out benchmarks/results/gate_kinds-HOST-DATE.json]

Starts the embedded rig as `rigbench run` does (llama-server + SmolLM2-135M-Instruct; `--slots`
as the rig's, default 1), then asks `--rounds` gates of a wide calibration mix: every candidate
kind in every language the generator knows, every capital of the table each round (with
`--candidate-capitals`, more countries tried), each round's operands,
words and ranges drawn from a random 32-bit seed, asked the way the gate asks (greedy, its token
budgets, 4 at a time). Records every answer, then per kind and per instance (country, sum, count
end, word) the share answered right. Many questions per launch: one server for all rounds.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import platform
import random
import re
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from rigbench.client import ChatClient
from rigbench.honesty import _sanity
from rigbench.honesty._sanity import CheckKind, SanityQuestion, generate_questions, run_sanity_gate
from rigbench.rig._models import LocalFile
from rigbench.rig.engines._llamacpp import LLAMACPP
from rigbench.rig.engines._llamacpp._embedded import LlamaCppConfig, prepare_llamacpp_rig

LANGS = ("en", "fr", "es", "de", "ja")
# Capitals tried beyond the gate's table (each a candidate; the gate keeps those answered reliably).
CANDIDATE_CAPITALS: dict[str, tuple[str, ...]] = {
    "Portugal": ("lisbon",), "Poland": ("warsaw",), "Ireland": ("dublin",), "Austria": ("vienna",),
    "Norway": ("oslo",), "Sweden": ("stockholm",), "Thailand": ("bangkok",), "Peru": ("lima",),
    "Cuba": ("havana",), "Kenya": ("nairobi",), "Canada": ("ottawa",), "Australia": ("canberra",),
    "Turkey": ("ankara",), "Denmark": ("copenhagen",), "Finland": ("helsinki",), "Hungary": ("budapest",),
    "Belgium": ("brussels",), "Argentina": ("buenos aires",), "Brazil": ("brasilia", "brasília"),
    "India": ("new delhi",), "Mexico": ("mexico city",), "Netherlands": ("amsterdam",),
}


def calibration_mix(kinds: set[str]) -> tuple[tuple[CheckKind, str], ...]:
    mix: list[tuple[CheckKind, str]] = []
    if "capital" in kinds:
        mix += [("capital", "en")] * len(_sanity.CAPITALS)  # every country, every round
    if "count" in kinds:
        mix += [("count", "en"), ("count", "en"), ("count", "fr")]
    if "add" in kinds:
        mix += [("add", lang) for lang in LANGS]
    if "copy" in kinds:
        mix += [("copy", lang) for lang in LANGS]
    return tuple(mix)


def instances(q: SanityQuestion) -> list[str]:
    """What the answer depends on, beyond kind and language: the country, the sum, the count's end,
    each word to copy."""
    if q.check == "capital":
        m = re.search(r"capital of (\w+)", q.prompt)
        return [m.group(1) if m else "?"]
    if q.check == "add":
        return ["+".join(q.operands)]
    if q.check == "count":
        return [q.operands[-1]]
    return q.expected.split()


async def _rounds(base_url: str, model: str, seeds: list[int], mix: tuple[tuple[CheckKind, str], ...]
                  ) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    async with ChatClient(base_url) as client:
        for k, seed in enumerate(seeds):
            qs = generate_questions(seed, mix)
            t0 = time.perf_counter()
            v = await run_sanity_gate(client, model, questions=qs)
            by_id = {q.id: q for q in qs}
            for a in v.answers:
                q = by_id[a.question_id]
                rows.append({"seed": seed, "kind": q.check, "lang": q.language, "prompt": q.prompt,
                             "expected": q.expected, "answer": a.answer[:200], "correct": a.correct,
                             "gibberish": [f.kind for f in a.gibberish], "instances": instances(q)})
            right = sum(a.correct for a in v.answers)
            print(f"round {k + 1}/{len(seeds)} seed {seed}: {right}/{len(qs)} in {time.perf_counter() - t0:.1f} s",
                  file=sys.stderr, flush=True)
    return rows


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    by_kind: dict[str, list[bool]] = defaultdict(list)
    by_instance: dict[str, list[bool]] = defaultdict(list)
    for r in rows:
        key = f"{r['kind']}_{r['lang']}"
        by_kind[key].append(r["correct"])
        for inst in r["instances"]:
            by_instance[f"{key}:{inst}"].append(r["correct"])

    def share(v: list[bool]) -> dict[str, Any]:
        return {"right": sum(v), "of": len(v), "share": round(sum(v) / len(v), 4)}

    return {"by_kind": {k: share(v) for k, v in sorted(by_kind.items())},
            "by_instance": {k: share(v) for k, v in sorted(by_instance.items(), key=lambda kv: sum(kv[1]) / len(kv[1]))}}


def design(miss_rate_upper: float, *, n_capitals_table: int, max_questions: int = 16,
           target: float = 1e-3) -> list[dict[str, Any]]:
    """For each question count K and misses tolerated m: the false-alarm bound P(Binom(K, q) > m) at
    the healthy model's per-question miss rate q (its 95% upper bound), and the chance that a rogue
    passes when it answers every count right (a canned "1, 2, ..., 10" holds any count from 1) and
    each capital at chance (1 in the table). Counts are a third of the questions."""
    from scipy import stats

    out = []
    for k in range(6, max_questions + 1):
        counts = k // 3
        for m in range(0, k // 2):
            fa = float(stats.binom.sf(m, k, miss_rate_upper))
            rogue = float(stats.binom.sf(k - m - counts - 1, k - counts, 1 / n_capitals_table))
            out.append({"questions": k, "misses_tolerated": m, "false_alarm_bound": fa, "chance_rogue_passes": rogue,
                        "meets": fa <= target and rogue <= target})
    return out


async def _main(a: argparse.Namespace, seeds: list[int], mix: tuple[tuple[CheckKind, str], ...]
                ) -> list[dict[str, Any]]:
    cfg = LlamaCppConfig(slots=a.slots, llama_server=a.llama_server)
    if a.model:
        cfg = dataclasses.replace(cfg, model=LocalFile(a.model))
    with tempfile.TemporaryDirectory() as d:
        rig = prepare_llamacpp_rig(cfg, Path(d) / "engine.log", llamacpp=LLAMACPP)
        await rig.start()
        try:
            info = rig.info()
            return await _rounds(info.base_url, info.model, seeds, mix)
        finally:
            await rig.stop()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=40)
    p.add_argument("--seed", type=int, default=None, help="Seed of the round seeds (default: fresh).")
    p.add_argument("--slots", type=int, default=1, help="llama-server parallel slots (the rig's default: 1).")
    p.add_argument("--llama-server", type=Path, default=None, help="llama-server binary (default: as rigbench run).")
    p.add_argument("--model", type=Path, default=None, help="GGUF model (default: the embedded SmolLM2-135M).")
    p.add_argument("--kinds", default="capital,count,add,copy", help="Question kinds to ask, comma-separated.")
    p.add_argument("--candidate-capitals", action="store_true",
                   help="Also ask the capitals of CANDIDATE_CAPITALS (added to the answer table for this run).")
    p.add_argument("--keep", default="", help="Kinds kept for the gate (e.g. capital_en,count_en): print the "
                   "question counts and bars whose false-alarm bound and chance-rogue pass rate are both <= 1e-3.")
    p.add_argument("--out", type=Path, default=None, help="Write every answer and the summary as JSON here.")
    a = p.parse_args()
    master = a.seed if a.seed is not None else random.SystemRandom().getrandbits(32)
    rng = random.Random(master)
    seeds = [rng.getrandbits(32) for _ in range(a.rounds)]
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    if a.candidate_capitals:
        _sanity.CAPITALS.update(CANDIDATE_CAPITALS)  # this process only: extraction knows their names
    mix = calibration_mix(set(a.kinds.split(",")))
    rows = asyncio.run(_main(a, seeds, mix))
    s = summarize(rows)
    for k, v in s["by_kind"].items():
        print(f"{k:12s} {v['right']:5d}/{v['of']:<5d} {v['share']:.3f}")
    worst = [(k, v) for k, v in s["by_instance"].items() if v["share"] < 1][:25]
    print("instances missed at least once:", ", ".join(f"{k} {v['right']}/{v['of']}" for k, v in worst))
    kept = [k for k in a.keep.split(",") if k] if a.keep else []
    d = None
    if kept:
        from scipy import stats

        right = sum(s["by_kind"][k]["right"] for k in kept if k in s["by_kind"])
        n = sum(s["by_kind"][k]["of"] for k in kept if k in s["by_kind"])
        q = float(stats.binomtest(n - right, n).proportion_ci(0.95, method="exact").high)
        d = {"kept": kept, "answers": n, "missed": n - right, "miss_rate_upper95": q,
             "table": design(q, n_capitals_table=len(_sanity.CAPITALS))}
        print(f"kept {kept}: {n - right} missed of {n}, per-question miss rate <= {q:.4f} (95%)")
        for row in d["table"]:
            if row["meets"]:
                print(f"  K={row['questions']} m={row['misses_tolerated']}: false alarm <= "
                      f"{row['false_alarm_bound']:.1e}, chance rogue passes {row['chance_rogue_passes']:.1e}")
    if a.out:
        a.out.write_text(json.dumps({"started": started, "host": platform.node(), "command": " ".join(sys.argv),
                                     "master_seed": master, "slots": a.slots, "mix": mix, "design": d, "summary": s, "answers": rows},
                                    indent=1))


if __name__ == "__main__":
    main()
