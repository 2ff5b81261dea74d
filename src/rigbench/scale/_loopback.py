"""A Ray cluster of several nodes on one machine, every process on 127.0.0.1 (tests, benchmarks, trials).

Ray resolves 127.0.0.1 to the machine's network address; `RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0` stops
that, but `ray start` then refuses to add a worker node. So a worker node is started through this
module (`python -m rigbench.scale._loopback start --address 127.0.0.1:PORT ...`), which runs Ray's own
`ray start` with the node's address pinned to 127.0.0.1. Each node runs in its own session, so
`kill_node` ends exactly that node's processes (its raylet and workers) and nothing else.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

__all__ = ["LoopbackCluster", "LoopbackNode"]


def _env(token: str) -> dict[str, str]:
    # A node that stops answering is declared dead after ~3 s (Ray's default: ~15-30 s), so a
    # killed node's task fails promptly (the node-loss test); on loopback a slow answer is not the network.
    return {**os.environ, "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "RAY_USAGE_STATS_ENABLED": "0",
            "RAY_health_check_period_ms": "1000", "RAY_health_check_timeout_ms": "2000",
            "RAY_health_check_failure_threshold": "3", **_auth(token)}


def _auth(token: str) -> dict[str, str]:
    # The cluster's own token (Ray's token authentication), never written to ~/.ray: drivers get it from
    # `LoopbackCluster.driver_env`, so a token left in ~/.ray by something else cannot lock them out.
    return {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": token}


def _session_pids(sid: int) -> list[int]:
    out = []
    for p in Path("/proc").iterdir():
        if not p.name.isdigit():
            continue
        try:
            fields = (p / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[3]) == sid:  # fields after the name: state ppid pgrp session ...
            out.append(int(p.name))
    return out


@dataclass
class LoopbackNode:
    sid: int  # the session id of its `ray start` (= that process's pid): all its processes share it
    resources: dict[str, float]
    labels: dict[str, str]
    log: Path

    def kill(self) -> None:
        """SIGKILL every process of this node (as a machine losing power would)."""
        for pid in _session_pids(self.sid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


@dataclass
class LoopbackCluster:
    """`with LoopbackCluster(head_cpus=4) as c: c.add_node({"gpu_a": 1}); ... c.address`"""

    head_cpus: int = 2
    head_resources: dict[str, float] = field(default_factory=dict)
    nodes: list[LoopbackNode] = field(default_factory=list)
    address: str = ""
    temp_dir: Path | None = None
    token: str = field(default_factory=lambda: secrets.token_hex(32))

    @property
    def driver_env(self) -> dict[str, str]:
        """Environment a driver process needs to join (put it in os.environ, or a subprocess's env)."""
        return {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "RAY_USAGE_STATS_ENABLED": "0", **_auth(self.token)}

    def _start(self, args: list[str], resources: dict[str, float], labels: dict[str, str], name: str,
               cpus: int) -> LoopbackNode:
        assert self.temp_dir is not None
        log = self.temp_dir / f"{name}.log"
        argv = [sys.executable, "-m", "rigbench.scale._loopback", "start", *args, "--num-cpus", str(cpus),
                "--disable-usage-stats", "--temp-dir", str(self.temp_dir / "ray")]
        if resources:
            argv += ["--resources", json.dumps(resources)]
        if labels:
            argv += ["--labels", ",".join(f"{k}={v}" for k, v in labels.items())]
        with log.open("w") as f:
            proc = subprocess.Popen(argv, stdout=f, stderr=subprocess.STDOUT, env=_env(self.token), start_new_session=True)
        node = LoopbackNode(sid=proc.pid, resources=resources, labels=labels, log=log)
        self.nodes.append(node)
        try:
            rc = proc.wait(timeout=180)
        except subprocess.TimeoutExpired:
            node.kill()
            raise RuntimeError(f"ray start did not return within 180 s; log: {log}") from None
        if rc != 0:
            raise RuntimeError(f"ray start exited {rc}: {log.read_text()[-2000:]}")
        return node

    def start(self) -> LoopbackCluster:
        # short path: Ray's unix sockets live under it (at most ~107 characters)
        self.temp_dir = Path(tempfile.mkdtemp(prefix="rbray-", dir="/tmp"))
        self._start(["--head", "--port", "0", "--include-dashboard", "false"], self.head_resources, {}, "head",
                    self.head_cpus)
        self.address = (self.temp_dir / "ray" / "ray_current_cluster").read_text().strip()
        if not self.address.startswith("127.0.0.1:"):
            self.stop()
            raise RuntimeError(f"the head is not on loopback: {self.address}")
        return self

    def add_node(self, resources: dict[str, float] | None = None, labels: dict[str, str] | None = None, *,
                 cpus: int = 1) -> LoopbackNode:
        return self._start(["--address", self.address], resources or {}, labels or {}, f"node{len(self.nodes)}",
                           cpus)

    def wait_for_nodes(self, ray: Any, n: int, timeout_s: float = 60) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if len([x for x in ray.nodes() if x.get("Alive")]) >= n:
                return
            time.sleep(0.2)
        raise RuntimeError(f"fewer than {n} live Ray nodes after {timeout_s} s")

    def stop(self) -> None:
        for node in reversed(self.nodes):
            node.kill()
        self.nodes = []
        if self.temp_dir is not None:
            time.sleep(0.5)  # let the killed processes go before their files
            shutil.rmtree(self.temp_dir, ignore_errors=True)
            self.temp_dir = None

    def __enter__(self) -> LoopbackCluster:
        return self.start()

    def __exit__(self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()


def _main(argv: list[str]) -> None:
    """`ray start ...` with this node's address pinned to 127.0.0.1."""
    # lazy: ray is optional; this runs only as the `ray start` wrapper process
    import ray._private.ray_constants as rc
    import ray._private.services as services

    rc.ENABLE_RAY_CLUSTER = True  # allow a worker node; the address below keeps it on loopback
    services.node_ip_address_from_perspective = lambda address=None: "127.0.0.1"
    # lazy as above, and only once the two patches are in place
    from ray.scripts.scripts import main

    sys.argv = ["ray", *argv]
    main()


if __name__ == "__main__":
    _main(sys.argv[1:])
