"""One run, start to finish: rig up, sanity gate, suites, rig down, header closed.

Lives outside `cli/` so plans and tests can drive it; the CLI only parses options, owns the
event loop and prints. One module per job: the run's configuration (`_config`), opening it new or
resumed and the checks that keep a resume the same run (`_resume`), the writer that watches the
server while suites record (`_watch`), the honesty steps around the suites (`_honesty`), and the run
itself (`_run`).
"""

from rigbench.runner._busy import BusyHostPolicy
from rigbench.runner._config import RunConfig, check_concurrency
from rigbench.runner._run import execute_run

__all__ = ["BusyHostPolicy", "RunConfig", "check_concurrency", "execute_run"]
