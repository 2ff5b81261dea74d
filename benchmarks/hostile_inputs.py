"""Peak memory and time of `rigbench run` on the worst inputs tried (issue 34, item 2).

    python benchmarks/hostile_inputs.py [--out FILE.json] [--only NAME,...]

Each case is one `rigbench run` in a fresh process, against the reference emulator (no tokenizer: the
prompts are written word by word, the costliest path) where it needs a server; its peak resident memory
is the child's `ru_maxrss` (one child per wrapper process, so the figure is that case's alone). A case
passes when it ends the way the table says (refused in one line, or run to the end) within its bound.
The table printed is what docs/benchmarks.md ("Hostile inputs: peak memory") records; before issue 34,
the first case grew to 9.1 GB and ignored SIGTERM.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from rigbench.testing import Delay, EmulatorProcess, EmulatorScript

_WRAP = ("import resource, subprocess, sys, time; t = time.monotonic(); "
         "p = subprocess.run(sys.argv[1:], capture_output=True, text=True); "
         "sys.stdout.write(f'{resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss} {time.monotonic() - t} "
         "{p.returncode}\\n' + p.stderr[-600:])")


class Case(NamedTuple):
    name: str
    what: str
    args: Callable[[Path, str], list[str]]  # (scratch dir, emulator URL) -> rigbench arguments
    expect: int  # exit code
    said: str  # in stderr (refusals) or "" (a run)


def _write(path: Path, text: str | bytes) -> str:
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return str(path)


def _million_lines(d: Path, n: int) -> str:
    p = d / f"lines{n}.csv"
    with p.open("w") as f:
        f.write("arrival_s,input_tokens,output_tokens\n")
        f.writelines(f"{i / 1000:.3f},16,2\n" for i in range(n))
    return str(p)


RUN = ["run", "--no-sanity", "--allow-untrusted", "--allow-long-run"]
CASES = [
    Case("trace_length_1e12", "a trace line of 10^12 input tokens (the issue's case)",
         lambda d, url: [*RUN, "--endpoint", url, "--trace", _write(
             d / "huge.jsonl", '{"timestamp": 0, "input_length": 1000000000000, "output_length": 4}\n')],
         2, "a token count must be 1..16,777,216"),
    Case("trace_cell_10MB", "an Azure trace with a 10 MB cell",
         lambda d, url: [*RUN, "--endpoint", url, "--trace", _write(
             d / "cell.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.4,151," + "7" * (10 << 20)
             + "\n")], 2, "a line longer than 1,048,576 bytes"),
    Case("trace_nested_json", "a JSON line nested 10^6 deep",
         lambda d, url: [*RUN, "--endpoint", url, "--trace", _write(d / "deep.jsonl", '{"a":' + "[" * 1_000_000 + "\n")],
         2, "not a JSON object rigbench can read: values nested deeper than rigbench reads"),
    Case("trace_2M_lines", "a trace of 2,000,001 lines (one past the most one replay holds)",
         lambda d, url: [*RUN, "--endpoint", url, "--trace", _million_lines(d, 2_000_001)],
         2, "more than 2,000,000 requests"),
    Case("plan_yaml_bomb", "a plan whose aliases expand to 10^9 values",
         lambda d, url: ["run", _write(d / "bomb.yaml", "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
             f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join([f'*{chr(97 + i)}'] * 10)}]\n" for i in range(8)))],
         2, "expand to more than 1,000,000 values"),
    Case("input_tokens_1e12", "--input-tokens 10^12",
         lambda d, url: [*RUN, "--endpoint", url, "--rate", "1", "--requests", "1", "--input-tokens", "1000000000000"],
         2, "must be at most 16,777,216 tokens"),
    Case("prompts_past_memory", "2,000 prompts of 16,777,216 tokens (each length allowed; together ~500 GiB)",
         lambda d, url: [*RUN, "--endpoint", url, "--rate", "100", "--requests", "2000", "--input-tokens", "16777216"],
         2, "more than half of the"),
    Case("longest_prompt", "one prompt of 16,777,216 tokens, built and sent (the longest any door takes)",
         lambda d, url: [*RUN, "--endpoint", url, "--rate", "1", "--requests", "1", "--input-tokens", "16777216",
                         "--output-tokens", "4"], 0, ""),
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=None, help="write the results as JSON here")
    ap.add_argument("--only", default="", help="comma-separated case names")
    ap.add_argument("--timeout", type=float, default=900)
    a = ap.parse_args()
    only = {x for x in a.only.split(",") if x}
    results: list[dict[str, object]] = []
    with tempfile.TemporaryDirectory() as td, EmulatorProcess(EmulatorScript(
            ttft=Delay(mean_ms=1), itl=Delay(mean_ms=1), output_tokens=4)) as emu:
        d = Path(td)
        for case in CASES:
            if only and case.name not in only:
                continue
            args = case.args(d, emu.url)
            wrap = [sys.executable, "-c", _WRAP, sys.executable, "-m", "rigbench", *args, "--out", str(d / "runs")]
            t0 = time.monotonic()
            try:
                p = subprocess.run(["timeout", "-k", "10", str(a.timeout), *wrap], capture_output=True, text=True,
                                   env={**os.environ, "COLUMNS": "200"})
                head, _, said = p.stdout.partition("\n")
                peak_kib, took, code = head.split()
            except ValueError:
                peak_kib, took, code, said = "0", f"{time.monotonic() - t0}", "timeout", ""
            ok = (str(case.expect) == code or case.expect == -1) and case.said in " ".join(said.split())
            row = {"case": case.name, "what": case.what, "exit": code, "peak_rss_mib": round(int(peak_kib) / 1024),
                   "seconds": round(float(took), 1), "as_expected": ok, "said": " ".join(said.split())[:200]}
            results.append(row)
            print(f"{case.name:22s} exit {code:>7s}  peak {int(peak_kib) // 1024:>6,} MiB  {float(took):>7.1f} s  "
                  f"{'ok' if ok else 'UNEXPECTED'}  {' '.join(said.split())[:110]}", flush=True)
    if a.out is not None:
        a.out.write_text(json.dumps({"results": results, "python": sys.version.split()[0],
                                     "cpus": os.cpu_count(), "load": os.getloadavg()}, indent=1))


if __name__ == "__main__":
    main()
