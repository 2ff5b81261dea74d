"""`RunConfig`: everything one run needs, and the concurrency levels it may ask for."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rigbench.client import Deadlines, RetryPolicy, redact_url
from rigbench.errors import (
    UsageError,
)
from rigbench.rig import (
    EmbeddedRig,
    RigSpec,
    describe_rig,
)
from rigbench.runner._busy import BusyHostPolicy
from rigbench.suites import Suite, SuiteSettings, build_suites
from rigbench.suites.speed import SpeedSettings


@dataclass
class RunConfig:
    """Everything one run needs, built by `rigbench.plan.run_config_for` from a plan's rig (the CLI's
    flags are a one-rig plan). Two configs are equal when they would measure the same way."""

    suite_names: list[str]  # as --suite or a plan's `suites` names them
    settings: SuiteSettings  # every suite's typed settings; the named suites use theirs
    out_dir: Path
    rig: RigSpec = field(default_factory=EmbeddedRig)  # what to launch or attach to (`rigbench.rig.open_rig`)
    api_key: str | None = None
    allow_untrusted: bool = False
    sanity: bool = True
    sanity_max_tokens: int = 1024
    sanity_seed: int | None = None  # seed of the gate's generated questions (None: a fresh one, recorded)
    bandwidth_gb_s: float | None = None  # for the roofline when the device is not in rigbench's table
    seed: int = 0
    label: str = "run"
    resume: Path | None = None
    retry_failed: bool = field(default=False, compare=False)  # a resume also redoes every failed request
    run_id: str | None = None  # None: a new id from `label` (a plan picks it up front for its index)
    deadlines: Deadlines = field(default_factory=Deadlines)  # per-request deadlines, handed to the client
    retries: RetryPolicy = field(default_factory=RetryPolicy)  # refusals sent again (--retry-on), to the client
    allow_long_run: bool = field(default=False, compare=False)  # run past a day when the speed projects it
    # at a busy window: stop, measure on untrusted, or measure on trusted (`BusyHostPolicy.decide`; a plan's rigs:
    # `plan.run_config_for`). None: a config made in code, decided from `allow_untrusted` (measure on untrusted)
    busy_host: BusyHostPolicy | None = None
    cli_options: dict[str, Any] | None = field(default=None, compare=False)  # so --resume can rebuild them
    command: list[str] = field(default_factory=lambda: _redacted_argv(sys.argv), compare=False)
    # The suites themselves, built from the names and settings (scale-out swaps the speed suite's client).
    suites: list[Suite] = field(init=False, compare=False)
    suite_settings: dict[str, dict[str, Any]] = field(init=False, compare=False)  # as run.json records them

    def __post_init__(self) -> None:
        self.suites, self.suite_settings = build_suites(self.suite_names, self.settings)
        if self.busy_host is None:
            self.busy_host = BusyHostPolicy.decide(allow_busy_host=False, measure_untrusted=self.allow_untrusted)

    def recorded(self) -> dict[str, Any]:
        """The resolved settings as run.json records them (`plan`); a resume must match them."""
        plan = {"suites": self.suite_settings, "seed": self.seed, "sanity": self.sanity,
                "sanity_max_tokens": self.sanity_max_tokens, "sanity_seed": self.sanity_seed,
                "bandwidth_gb_s": self.bandwidth_gb_s,
                "rig": describe_rig(self.rig), "deadlines": self.deadlines.recorded()}
        if self.retries.enabled:  # recorded only when on, so runs from before it resume unchanged
            plan["retries"] = self.retries.recorded()
        if self.cli_options is not None:
            plan["cli_options"] = self.cli_options
        return plan

    @property
    def speed(self) -> SpeedSettings | None:
        """The speed suite's settings when the run measures speed."""
        return self.settings.speed if "speed" in self.suite_settings else None


def _redacted_argv(argv: list[str]) -> list[str]:
    """argv as stored: no API key, no credentials inside a URL (`--endpoint http://u:p@host/v1`)."""
    def one(a: str) -> str:
        if "://" not in a or "@" not in a:
            return a
        flag, eq, url = a.partition("=") if a.startswith("--") else ("", "", a)
        return flag + eq + redact_url(url)

    return [("<redacted>" if i > 0 and argv[i - 1] in ("--api-key",) else one(a)) for i, a in enumerate(argv)]


def check_concurrency(levels: list[int]) -> int:
    """The largest concurrency level, refused when this process cannot hold that many connections.

    Each concurrent request holds one socket (a file descriptor). The soft limit is raised to the
    hard one when needed; beyond the hard limit the run is refused before anything starts, with
    the limit and how to raise it (adversary: a typo such as c=100000 that would stall for minutes
    or silently run at the client's cap while the report claims the level).
    """
    need = max(levels, default=1)
    try:
        # POSIX-only: where it is missing, the limit is not checked
        import resource

        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    except (ImportError, OSError, ValueError):
        return need
    margin = 256  # the engine log, run files, the event loop, aiohttp's own sockets
    if hard != resource.RLIM_INFINITY and need + margin > hard:
        raise UsageError(
            f"concurrency {need} needs {need + margin} open files, but this process may open at most {hard} "
            f"(the hard file-descriptor limit). Lower --concurrency to at most {max(1, hard - margin)}, or raise "
            f"the limit (e.g. `ulimit -Hn {need + margin}` as root, or LimitNOFILE in a systemd unit).")
    if soft != resource.RLIM_INFINITY and need + margin > soft:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(need + margin, hard) if hard != resource.RLIM_INFINITY
                                                    else need + margin, hard))
    return need
