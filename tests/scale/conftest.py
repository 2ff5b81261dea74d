"""A Ray cluster on 127.0.0.1 for the scale-out tests: a head and two worker nodes, each a separate
set of processes, with custom resources standing in for GPUs (`gpu_a` on one node, `gpu_b` on the
other). Every Ray process listens on and talks to loopback only (rigbench.scale._loopback)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from rigbench.scale._loopback import LoopbackCluster


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/scale/" in str(item.fspath).replace("\\", "/"):
            item.add_marker(pytest.mark.ray)


@pytest.fixture(scope="session")
def cluster() -> Iterator[LoopbackCluster]:
    with LoopbackCluster(head_cpus=4) as c:
        c.add_node({"gpu_a": 1}, {"zone": "a"})
        c.add_node({"gpu_b": 1}, {"zone": "b"})
        saved = {k: os.environ.get(k) for k in c.driver_env}
        os.environ.update(c.driver_env)  # this process and the CLIs it starts join with the cluster's token
        try:
            yield c
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v


@pytest.fixture(scope="session")
def ray_driver(cluster: LoopbackCluster) -> Iterator[Any]:
    """This process joined to the cluster (for looking at its nodes, and the client-actor tests)."""
    from rigbench.scale import connect

    with connect(cluster.address) as ray:
        cluster.wait_for_nodes(ray, 3)
        yield ray


def node_with(ray: Any, resource: str) -> str:
    return next(n["NodeID"] for n in ray.nodes() if n["Alive"] and n["Resources"].get(resource))
