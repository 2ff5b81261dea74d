"""Scale-out on Ray (`pip install 'rigbench[ray]'`): a plan's rigs across a cluster, and the speed
suite's load from many client actors. Nothing here imports Ray until a function that needs it runs,
so `import rigbench.scale` is free on a machine without Ray (docs/scale-out.md).
"""

from rigbench.scale._plan import execute_plan_on_ray
from rigbench.scale._ray import INSTALL_HINT, connect, import_ray
from rigbench.scale._run import (
    ActorSummary,
    check_client_options,
    execute_run_with_clients,
    summarize_clients,
)

__all__ = [
    "INSTALL_HINT",
    "ActorSummary",
    "check_client_options",
    "connect",
    "execute_plan_on_ray",
    "execute_run_with_clients",
    "import_ray",
    "summarize_clients",
]
