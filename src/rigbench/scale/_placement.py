"""From a plan rig's `resources:` to Ray task options, and the check that some node can hold it."""

from __future__ import annotations

from typing import Any

from rigbench.errors import UsageError
from rigbench.plan import LoadedPlan, RigResources, expand_rigs
from rigbench.scale._ray import cluster_summary

__all__ = ["check_placeable", "rig_resources", "task_options"]


def rig_resources(loaded: LoadedPlan) -> dict[str, RigResources]:
    """Each resolved rig's resources (a swept rig's copies all ask what the rig asks)."""
    out: dict[str, RigResources] = {}
    for rig in loaded.plan.rigs:
        one = loaded.plan.model_copy(update={"rigs": [rig]})
        for resolved in expand_rigs(one):
            out[resolved.name] = rig.resources or RigResources()
    return out


def task_options(res: RigResources) -> dict[str, Any]:
    opts: dict[str, Any] = {"num_cpus": res.cpus, "num_gpus": res.gpus}
    if res.custom:
        opts["resources"] = dict(res.custom)
    if res.labels:
        opts["label_selector"] = dict(res.labels)
    return opts


def _demand(res: RigResources) -> dict[str, float]:
    d = {"CPU": res.cpus, "GPU": res.gpus, **res.custom}
    return {k: v for k, v in d.items() if v > 0}


def check_placeable(ray: Any, name: str, res: RigResources) -> None:
    """Raise a UsageError naming what no live node has, with what the cluster does have."""
    nodes = [n for n in ray.nodes() if n.get("Alive")]
    demand = _demand(res)
    for n in nodes:
        have = n.get("Resources", {})
        labels = n.get("Labels") or {}
        if all(have.get(k, 0) >= v for k, v in demand.items()) and \
                all(labels.get(k) == v for k, v in res.labels.items()):
            return
    missing = [f"{k} {v:g}" for k, v in demand.items() if not any(n.get("Resources", {}).get(k, 0) >= v
                                                                   for n in nodes)]
    missing += [f"label {k}={v}" for k, v in res.labels.items()
                if not any((n.get("Labels") or {}).get(k) == v for n in nodes)]
    what = ", ".join(missing) if missing else "all of " + ", ".join(f"{k} {v:g}" for k, v in demand.items()) + \
        " on one node"
    raise UsageError(
        f"rig {name!r} asks for {what}, which no node of the Ray cluster has. The cluster has:\n  "
        + "\n  ".join(cluster_summary(ray))
        + "\nChange the rig's `resources:` in the plan, or add a node that has them "
          "(`ray start --address HEAD --resources '{\"NAME\": N}' --labels KEY=VALUE`).")
