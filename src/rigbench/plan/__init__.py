"""Plan files: a matrix of rigs x suites x settings, validated, expanded and run rig by rig."""

from rigbench.plan._config import CliPlan, plan_from_options, run_config_for
from rigbench.plan._execute import execute_plan, open_index, plan_runs
from rigbench.plan._index import PlanIndex, PlanRigEntry, is_plan_dir, read_plan_index, write_plan_index
from rigbench.plan._length import check_plan_length
from rigbench.plan._load import LoadedPlan, PlanError, ResolvedRig, expand_rigs, load_plan
from rigbench.plan._models import EmbeddedRig, Plan, PlanRig, RigResources, SpeedPlan
from rigbench.plan._options import RunOptions

__all__ = [
    "CliPlan",
    "EmbeddedRig",
    "LoadedPlan",
    "Plan",
    "PlanError",
    "PlanIndex",
    "PlanRig",
    "PlanRigEntry",
    "ResolvedRig",
    "RigResources",
    "RunOptions",
    "SpeedPlan",
    "check_plan_length",
    "execute_plan",
    "expand_rigs",
    "is_plan_dir",
    "load_plan",
    "open_index",
    "plan_from_options",
    "plan_runs",
    "read_plan_index",
    "run_config_for",
    "write_plan_index",
]
