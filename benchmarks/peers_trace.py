"""Write the trace benchmarks/peers.py replays: the public Mooncake layout, made here (no line of it
comes from a real trace).

    python benchmarks/peers_trace.py benchmarks/data/peers_mooncake.jsonl

One JSON object per line, as Mooncake's published traces (github.com/kvcache-ai/Mooncake, FAST'25
traces): `timestamp` (ms from the trace's start, integer), `input_length` and `output_length`
(tokens), `hash_ids` (one id per 512-token block of the prompt: ceil(input_length / 512) ids, as
GuideLLM's mooncake reader checks). Every request has ids of its own, so no two prompts share a
block: rigbench does not reproduce shared prefixes, and a trace that had them would be served from
a prefix cache for the peers that do (AIPerf, GuideLLM) and not for rigbench, which is a different
workload, not a comparison. 40 requests, Poisson arrivals at 5 req/s (seed 32), input 96..700 tokens
(above rigbench's rendered opening, about 60 on SmolLM2, and above the peers' chat template, about 30,
so every length can be met), output 8..48 tokens.
"""

import json
import math
import random
import sys
from pathlib import Path

rng = random.Random(32)
t, block, next_id, lines = 0.0, 512, 0, []
for _ in range(40):
    n_in, n_out = rng.randint(96, 700), rng.randint(8, 48)
    ids = list(range(next_id, next_id + math.ceil(n_in / block)))
    next_id += len(ids)
    lines.append(json.dumps({"timestamp": round(t), "input_length": n_in, "output_length": n_out, "hash_ids": ids}))
    t += rng.expovariate(5.0) * 1000
Path(sys.argv[1]).write_text("\n".join(lines) + "\n")
print(f"{len(lines)} requests over {t / 1000:.1f} s -> {sys.argv[1]}")
