"""What the door fuzz tests share: the seed, hostile values, the judge of a CLI case, export checks.

The seed is fixed in CI (`SEED`); `RIGBENCH_FUZZ_SEED=N` replays another table and `RIGBENCH_FUZZ_SEED=random`
draws one (printed in any failure, so the case reproduces); `RIGBENCH_FUZZ_SCALE=X` runs X times the cases per
door (a long run: docs/benchmarks.md, "Door fuzz").
"""

from __future__ import annotations

import contextlib
import csv
import functools
import json
import os
import random
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tests.unit.cli_inproc import Result, invoke

_seed_env = os.environ.get("RIGBENCH_FUZZ_SEED", "34")
SEED = random.SystemRandom().randrange(1 << 30) if _seed_env == "random" else int(_seed_env)
SCALE = float(os.environ.get("RIGBENCH_FUZZ_SCALE", "1"))
CASES = max(500, int(500 * SCALE))  # per door, at least the 500
# A case that runs longer than this is a hang (the slowest legitimate case, a run with reports on this
# 2-core machine, takes a few seconds).
CASE_BOUND_S = 60.0

# Anything a terminal or a spreadsheet acts on: C0 controls but tab and newline, DEL, C1 controls, bidi.
RAW_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")

# Text a user or a server may give: markup, escapes, formulas, bidi, a BOM, paths, huge and empty.
TEXTS = ["", " ", "x", "chat_short", "speed", "=HYPERLINK(\"http://x\",\"y\")", "+1+1", "-1+1", "@SUM(A1)", "\tx",
         "\rx", "\x1b[2J\x1b[1A", "[bold red]x[/]", ":x:", "<script>alert(1)</script>", "**b** [l](javascript:x)",
         "\u202etxt", "\ufeffname", "a\nb", "a\x00b", "../../etc/passwd", "☃" * 3, "x" * 5000, "%s%n{0}", "None",
         "true", "null", "-", "1e999", "nan", "\\x1b", "'", '"', "a,b", "a:b:c", "#h"]
NUMBERS = ["0", "-1", "1", "2", "3", "0.5", "1e-300", "1e308", "inf", "-inf", "nan", "abc", "", "1,2", "-0", "1e999",
           "99999999999999999999", "2147483648", " 7 ", "0x10", "9" * 400, "\udcff"]


def rng(salt: str) -> random.Random:
    """The seeded generator of one door (its own stream: adding cases to one door leaves the others)."""
    return random.Random(f"{SEED}:{salt}")


@contextlib.contextmanager
def fast_commands() -> Iterator[None]:
    """Build the typer command once for many in-process cases (typer builds it per call: ~0.1 s each, most
    of a refused case); the command is a function of the registered commands, which no case changes."""
    import typer.main

    real = typer.main.get_command
    cached = functools.lru_cache(maxsize=4)(real)
    typer.main.get_command = cached
    try:
        yield
    finally:
        typer.main.get_command = real


def judge(args: list[str], res: Result, took_s: float) -> list[str]:
    """A CLI case's faults: a traceback, a hang, an exit other than 0/1/2, a refusal that is not one `error:`
    line (indented lines may follow), a failure that says nothing, or a live control character on the
    terminal."""
    where = f"seed {SEED} {args!r}"
    if res.traceback is not None:
        return [f"{where}: traceback\n{res.traceback[-1500:]}"]
    out: list[str] = []
    if took_s > CASE_BOUND_S:
        out.append(f"{where}: took {took_s:.0f} s, past the {CASE_BOUND_S:.0f} s bound")
    if res.code not in (0, 1, 2):
        out.append(f"{where}: exit {res.code}")
    if res.code != 0 and not res.stderr.strip():
        out.append(f"{where}: exit {res.code} with nothing on stderr (stdout: {res.stdout[-300:]!r})")
    if res.code == 2:
        lines = res.stderr.rstrip().splitlines()
        at = [i for i, line in enumerate(lines) if line.startswith("error:")]
        if len(at) != 1 or any(not line.startswith("  ") for line in lines[at[0] + 1:]):
            out.append(f"{where}: a refusal that is not one `error:` line: {res.stderr[-600:]!r}")
    m = RAW_CONTROL.search(res.stdout + res.stderr)
    if m is not None:
        text = res.stdout + res.stderr
        out.append(f"{where}: a live control character {m.group(0)!r} on the terminal: "
                   f"{text[max(0, m.start() - 80):m.end() + 40]!r}")
    return out


def timed(*args: str) -> tuple[Result, float]:
    t0 = time.monotonic()
    res = invoke(*args)
    return res, time.monotonic() - t0


def export_faults(path: Path) -> list[str]:
    """What makes an export unsafe to open: a raw control character anywhere; in a CSV, a text cell a
    spreadsheet would evaluate; in JSON, a value a strict parser refuses (NaN)."""
    if not path.is_file():
        return []
    text = path.read_text(encoding="utf-8", errors="replace")
    faults = []
    m = RAW_CONTROL.search(text)
    if m is not None:
        faults.append(f"{path.name}: raw control character {m.group(0)!r}: {text[max(0, m.start() - 60):m.end() + 20]!r}")
    if path.suffix == ".csv":
        for row in csv.reader(text.splitlines()):
            for cell in row:
                if cell.startswith(FORMULA_START) and not is_number(cell):
                    faults.append(f"{path.name}: a cell a spreadsheet evaluates: {cell[:80]!r}")
    elif path.suffix in (".jsonl", ".json"):
        docs = text.splitlines() if path.suffix == ".jsonl" else [text]
        for doc in docs:
            try:
                json.loads(doc, parse_constant=_refuse_constant)
            except ValueError as e:
                faults.append(f"{path.name}: not strict JSON ({e}): {doc[:120]!r}")
    return faults


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is no JSON")


def is_number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True
