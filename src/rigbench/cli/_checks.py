"""Range checks on `rigbench run`'s options, before anything is built, launched or measured.

Each check names the option, the value seen and the accepted range (adversary: a typo that would
reach the engine and abort it, run nothing and exit 0, or stall for minutes).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from rigbench.cli._paths import check_output_dir, check_output_file
from rigbench.errors import RigbenchError, UsageError

__all__ = ["EFFORT_LEVELS", "check_finite", "check_run_options"]

EFFORT_LEVELS = ("none", "minimal", "low", "medium", "high", "xhigh")


_T = TypeVar("_T")


def read_model_file(read: Callable[[Path], _T], model: Path, what: str, fix: str) -> _T:
    """`read(model)`, with a foreign or truncated file a usage error naming it (the GGUF, JSON and
    safetensors parsers raise many types) rather than a traceback from the parser."""
    try:
        return read(model)
    except RigbenchError:
        raise
    except Exception as e:
        raise UsageError(f"--model {model}: cannot read {what} from it ({type(e).__name__}: {str(e)[:200]}). "
                         f"{fix}") from e


def check_finite(value: float | None, option: str, *, low: float = 0.0, high: float = math.inf,
                 low_inclusive: bool = False) -> None:
    """A finite number in (low, high] (or [low, high] with `low_inclusive`); None passes."""
    if value is None:
        return
    ok = math.isfinite(value) and (value >= low if low_inclusive else value > low) and value <= high
    if not ok:
        lo = "[" if low_inclusive else "("
        hi = f"{high:g}]" if math.isfinite(high) else "∞)"
        raise UsageError(f"{option} must be a finite number in {lo}{low:g}, {hi}; got {value!r}.")


def _positive_int(value: int | None, option: str, *, high: int | None = None) -> None:
    if value is None:
        return
    if value < 1 or (high is not None and value > high):
        rng = f"1..{high}" if high is not None else "a positive integer"
        raise UsageError(f"{option} must be {rng}; got {value}.")


_LOAD_FLAGS = ("rate", "arrival", "burstiness", "duration", "requests", "max_concurrency", "sweep_points", "slo",
               "slo_attainment", "input_tokens", "output_tokens", "trace", "sessions",
               "turns")


def check_load_options(o: dict[str, Any]) -> None:
    """The load flags where they cannot apply: a plan (its `load:` key), and client actors (not built)."""
    given = [f"--{k.replace('_', '-')}" for k in _LOAD_FLAGS if o.get(k) is not None] + (["--sweep"] if o.get("sweep") else [])
    if not given:
        return
    if o.get("plan") is not None:
        raise UsageError(f"{given[0]} sets a single run's load; for the plan {o['plan']} write it in the plan's "
                         "`load:` key (e.g. `load: {rate_rps: 5, duration_s: 30}`; docs/plans.md).")
    if o.get("ray") is not None or (o.get("clients") or 1) > 1:
        raise UsageError(f"{given[0]} with --ray/--clients: splitting one arrival schedule across client actors is "
                         "not built yet. Offer the load from this process (drop --ray and --clients); one process "
                         "holds about 1,000 req/s (docs/benchmarks.md).")


def check_run_options(o: dict[str, Any]) -> None:
    """Every numeric and list option of `rigbench run`, and the output paths."""
    check_output_dir(Path(o["out"]), "--out")
    check_output_file(o.get("markdown"), "--markdown")
    if o.get("endpoint") is not None and not str(o["endpoint"]).strip():
        # an empty URL is not "no endpoint": it must not quietly launch the embedded rig instead
        raise UsageError("--endpoint is empty; give the server's OpenAI base URL (e.g. http://host:8000/v1), or "
                         "leave --endpoint out to launch the embedded rig.")
    check_output_file(o.get("csv"), "--csv")
    check_output_file(o.get("jsonl"), "--jsonl")
    check_load_options(o)
    if o.get("plan") is not None:
        return  # a plan's settings are checked when it loads
    names = [s.strip() for s in str(o.get("suite", "")).split(",") if s.strip()]
    if not names:
        raise UsageError(f"--suite {o.get('suite')!r} names no suite; give one or more, e.g. speed or speed,agent.")
    if o.get("scenarios") is not None and not [s for s in o["scenarios"].split(",") if s.strip()]:
        raise UsageError(f"--scenarios {o['scenarios']!r} names no scenario; leave it out to run all four.")
    _positive_int(o.get("ctx_per_slot"), "--ctx-per-slot")
    _positive_int(o.get("threads"), "--threads")
    _positive_int(o.get("draft_max"), "--draft-max")
    _positive_int(o.get("port"), "--port", high=65535)
    check_finite(o.get("spec_synth_len"), "--spec-synth-len")
    check_finite(o.get("bandwidth_gbs"), "--bandwidth-gbs")
    check_finite(o.get("idle_timeout"), "--idle-timeout")
    check_finite(o.get("request_timeout"), "--request-timeout")
    levels = o.get("effort_levels")
    if levels is not None:
        got = [x.strip() for x in levels.split(",") if x.strip()]
        bad = [x for x in got if x not in EFFORT_LEVELS]
        if not got or bad:
            raise UsageError(f"--effort-levels {levels!r}: {'unknown level(s) ' + ', '.join(bad) if bad else 'no level'};"
                             f" give comma-separated levels from {', '.join(EFFORT_LEVELS)}.")
        if len(set(got)) != len(got):
            raise UsageError(f"--effort-levels {levels!r} repeats a level; give each once.")
    # concurrency: parsed and checked once, by the speed settings and the runner (check_concurrency)
