"""Range checks on `rigbench run`'s options, before anything is built, launched or measured.

Each check names the option, the value seen and the accepted range (adversary: a typo that would
reach the engine and abort it, run nothing and exit 0, or stall for minutes).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from rigbench.cli._paths import check_output_dir, check_output_file
from rigbench.errors import RigbenchError, UsageError
from rigbench.suites import suite_spec

if TYPE_CHECKING:
    from rigbench.cli._run_args import RunArgs

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


def check_load_options(o: RunArgs) -> None:
    """The load flags where they cannot apply: a plan (its `load:` key); with client actors, a concurrency
    cap and sessions (the actors split one schedule, but share no count and no session's replies)."""
    load = suite_spec("load")  # the load flags are listed once, in the load suite's spec
    settings = load.options(o)
    given = [f.flag for f in load.flags if f.setting in settings]
    if not given:
        return
    if o.plan is not None:
        raise UsageError(f"{given[0]} sets a single run's load; for the plan {o.plan} write it in the plan's "
                         "`load:` key (e.g. `load: {rate_rps: 5, duration_s: 30}`; docs/plans.md).")
    if o.ray is not None or o.clients > 1:
        if o.max_concurrency is not None:
            raise UsageError(f"--max-concurrency {o.max_concurrency} caps requests in flight across one process; "
                             "with --clients the actors share no count. Drop --max-concurrency, or offer the load "
                             "from one process (drop --ray and --clients).")
        if o.sessions is not None:
            raise UsageError("--sessions with --clients is not built: a session's turns wait on its own replies, "
                             "which one process keeps. Drop --ray and --clients for multi-turn sessions.")


_RETRY_FLAGS = ("retry_on", "max_retries", "max_retry_wait")


def check_retry_options(o: RunArgs) -> None:
    """The retry flags: a budget needs --retry-on; a plan and client actors are not where they apply."""
    given = [f"--{k.replace('_', '-')}" for k in _RETRY_FLAGS if getattr(o, k) is not None]
    if not given:
        return
    if o.plan is not None:
        raise UsageError(f"{given[0]} sets a single run's retries; for the plan {o.plan} write them in the plan's "
                         "`retries:` key (e.g. `retries: {statuses: [429, 503]}`; docs/plans.md).")
    if o.retry_on is None:
        raise UsageError(f"{given[0]} is the budget of --retry-on; give the statuses to retry too, e.g. "
                         "--retry-on 429,503.")
    if o.ray is not None or o.clients > 1:
        raise UsageError("--retry-on with --ray/--clients: the client actors do not retry yet. Drop --retry-on, or "
                         "offer the load from this process (drop --ray and --clients).")


def check_run_options(o: RunArgs) -> None:
    """Every numeric and list option of `rigbench run`, and the output paths."""
    check_output_dir(o.out, "--out")
    check_output_file(o.markdown, "--markdown")
    if o.rig.endpoint is not None and not o.rig.endpoint.strip():
        # an empty URL is not "no endpoint": it must not quietly launch the embedded rig instead
        raise UsageError("--endpoint is empty; give the server's OpenAI base URL (e.g. http://host:8000/v1), or "
                         "leave --endpoint out to launch the embedded rig.")
    check_output_file(o.csv, "--csv")
    check_output_file(o.jsonl, "--jsonl")
    check_output_file(o.html, "--html")
    check_output_file(o.json_out, "--json")
    check_load_options(o)
    check_retry_options(o)
    if o.plan is not None:
        return  # a plan's settings are checked when it loads
    names = [s.strip() for s in o.suite.split(",") if s.strip()]
    if not names:
        raise UsageError(f"--suite {o.suite!r} names no suite; give one or more, e.g. speed or speed,agent.")
    if o.scenarios is not None and not [s for s in o.scenarios.split(",") if s.strip()]:
        raise UsageError(f"--scenarios {o.scenarios!r} names no scenario; leave it out to run all four.")
    _positive_int(o.rig.ctx_per_slot, "--ctx-per-slot")
    _positive_int(o.rig.threads, "--threads")
    _positive_int(o.rig.draft_max, "--draft-max")
    _positive_int(o.rig.port, "--port", high=65535)
    check_finite(o.rig.spec_synth_len, "--spec-synth-len")
    # bounds checked here, not by typer: a range in the help's type column would narrow its descriptions
    check_finite(o.bandwidth_gbs, "--bandwidth-gbs", low=0.001, low_inclusive=True)
    check_finite(o.rig.kv_cache_gib, "--kv-cache-gib", low=0.125, low_inclusive=True)
    check_finite(o.idle_timeout, "--idle-timeout")
    check_finite(o.request_timeout, "--request-timeout")
    _positive_int(o.max_retries, "--max-retries", high=100)
    check_finite(o.max_retry_wait, "--max-retry-wait", high=3600)
    levels = o.effort_levels
    if levels is not None:
        got = [x.strip() for x in levels.split(",") if x.strip()]
        bad = [x for x in got if x not in EFFORT_LEVELS]
        if not got or bad:
            raise UsageError(f"--effort-levels {levels!r}: {'unknown level(s) ' + ', '.join(bad) if bad else 'no level'};"
                             f" give comma-separated levels from {', '.join(EFFORT_LEVELS)}.")
        if len(set(got)) != len(got):
            raise UsageError(f"--effort-levels {levels!r} repeats a level; give each once.")
    # concurrency: parsed and checked once, by the speed settings and the runner (check_concurrency)
