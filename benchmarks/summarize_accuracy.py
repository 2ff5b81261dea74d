"""Summarise timing_accuracy.py JSON lines: median [min-max] of the p99 errors per configuration.

python benchmarks/summarize_accuracy.py results.jsonl
"""

from __future__ import annotations

import json
import statistics
import sys
from collections import defaultdict


def main() -> None:
    groups: dict[tuple[str, ...], list[dict[str, float]]] = defaultdict(list)
    with open(sys.argv[1]) as f:
        lines = f.readlines()
    for line in lines:
        if line.startswith("{"):
            d = json.loads(line)
            key: tuple[str, ...] = (
                d["stack"],
                d["loop"],
                str(d["streams"]),
                str(d.get("itl_jitter_ms", "")),
                str(d.get("spec_depth", "")),
            )
            groups[key].append(d)
    print(
        "| stack | loop | streams | ITL jitter ms | spec depth | n | TTFT err p99 ms | ITL err p99 ms "
        "| delivery p99 ms | mismatches | zero gaps |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for key in sorted(groups):
        rows = groups[key]

        def cell(k: str, rows: list[dict[str, float]] = rows) -> str:
            xs = [r[k] for r in rows]
            return f"{statistics.median(xs):.2f} [{min(xs):.2f}–{max(xs):.2f}]"

        mism = sum(int(r["token_count_mismatches"]) for r in rows)
        zero = sum(int(r["zero_itl"]) for r in rows)
        print(
            f"| {' | '.join(key)} | {len(rows)} | {cell('ttft_err_p99_ms')} | {cell('itl_err_p99_ms')} "
            f"| {cell('delivery_p99_ms')} | {mism} | {zero} |"
        )


if __name__ == "__main__":
    main()
