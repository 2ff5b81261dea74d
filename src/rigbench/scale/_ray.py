"""Connecting to Ray: the only module that imports it, and only when `--ray` is given.

`--ray` takes `auto` (the cluster this machine belongs to: `RAY_ADDRESS`, else the one `ray start`
recorded), `local` (a private one-node instance, stopped afterwards) or an address (`HOST:PORT` of the
head's GCS, or `ray://HOST:PORT` for Ray Client).

Loopback: Ray resolves `127.0.0.1` to the machine's network address unless told it is not part of a
multi-node cluster (`RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0`, Ray's own switch). A loopback address or
`local` sets that switch, so every Ray process of such a run talks over 127.0.0.1 only.
"""

from __future__ import annotations

import os
import secrets
import socket
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

from rigbench.errors import UsageError

__all__ = ["INSTALL_HINT", "cluster_summary", "connect", "import_ray", "is_loopback_host", "use_loopback"]

INSTALL_HINT = "pip install 'rigbench[ray]'"
_LOOPBACK = ("127.0.0.1", "localhost", "::1")


def import_ray() -> ModuleType:
    """`import ray`, or a UsageError saying how to install it."""
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # no usage report leaves the machine
    try:
        # lazy: ray is optional, and reads the RAY_* settings above when imported
        import ray
    except ImportError as e:
        raise UsageError(f"--ray needs Ray, which is not installed here ({e}). Install rigbench's Ray extra: "
                         f"{INSTALL_HINT}") from None
    return ray


def is_loopback_host(host: str) -> bool:
    return host in _LOOPBACK or host.startswith("127.")


def use_loopback() -> None:
    """Keep every Ray process this one starts or joins on 127.0.0.1 (see the module docstring)."""
    os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    if "ray" in sys.modules:  # already imported (a second run in one process): flip the constant too
        import ray._private.ray_constants as rc  # (never imported here: Ray reads its settings on import)

        rc.ENABLE_RAY_CLUSTER = False


def _split(address: str) -> tuple[str, int]:
    hostport = address.split("://", 1)[-1].rstrip("/")
    host, sep, port = hostport.rpartition(":")
    if not sep or not port.isdigit() or not host:
        raise UsageError(f"--ray {address!r} is not an address: pass HOST:PORT of the cluster's head (what "
                         "`ray start --head` printed), ray://HOST:PORT, `auto` or `local`.")
    return host.strip("[]"), int(port)


def _auto_address() -> str | None:
    """Where `ray.init(address="auto")` would look: RAY_ADDRESS, then the file `ray start` wrote."""
    env = os.environ.get("RAY_ADDRESS")
    if env:
        return env
    path = Path("/tmp/ray/ray_current_cluster")  # Ray's documented default location
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    return text or None


def _reachable(host: str, port: int, address: str) -> None:
    try:
        with socket.create_connection((host, port), timeout=5.0):
            pass
    except OSError as e:
        raise UsageError(f"cannot reach the Ray cluster at {address} ({e.strerror or e}). Check that its head "
                         "is running (`ray status` on the head) and the address is the one `ray start --head` "
                         "printed; `--ray local` starts a private one-node instance instead.") from None


@contextmanager
def connect(address: str) -> Iterator[ModuleType]:
    """Connect this process to Ray for the duration of the block; yields the `ray` module."""
    if address == "local":
        use_loopback()
        # Ray 2.60 turns token auth on for a new local instance and saves the token in ~/.ray, where
        # every later `ray start` on this machine finds it; a token of this run's own keeps it private
        # and leaves nothing behind
        os.environ.setdefault("RAY_AUTH_MODE", "token")
        os.environ.setdefault("RAY_AUTH_TOKEN", secrets.token_hex(32))
        ray = import_ray()
        ray.init(include_dashboard=False, logging_level="ERROR", log_to_driver=False,
                 configure_logging=False)
        try:
            yield ray
        finally:
            ray.shutdown()
        return
    target = _auto_address() if address == "auto" else address
    if target is None:
        raise UsageError("--ray auto found no running Ray cluster on this machine (no RAY_ADDRESS and no "
                         "/tmp/ray/ray_current_cluster). Start one with `ray start --head`, join this machine "
                         "to one, or pass its address: --ray HOST:PORT.")
    host, port = _split(target)
    _reachable(host, port, target)
    if is_loopback_host(host):
        use_loopback()
    ray = import_ray()
    if ray.is_initialized():  # a caller (a test, a notebook) already connected this process
        yield ray
        return
    try:
        ray.init(address=target, logging_level="ERROR", log_to_driver=False, configure_logging=False)
    except (ConnectionError, RuntimeError, ValueError, ray.exceptions.RayError) as e:
        raise UsageError(f"could not join the Ray cluster at {target}: {_last_line(e)}. Check the address "
                         "(`ray status` on the head), that this machine runs the same Ray version as the "
                         "cluster, and, if the cluster uses token authentication, that its token is in "
                         "RAY_AUTH_TOKEN or ~/.ray/auth_token here.") from None
    try:
        yield ray
    finally:
        ray.shutdown()


def _last_line(e: BaseException) -> str:
    lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
    return lines[-1] if lines else type(e).__name__


def cluster_summary(ray: Any) -> list[str]:
    """One line per live node: its address, resources and labels (for error messages)."""
    out = []
    for n in ray.nodes():
        if not n.get("Alive"):
            continue
        res = {k: v for k, v in n.get("Resources", {}).items()
               if not k.startswith("node:") and k not in ("memory", "object_store_memory")}
        labels = {k: v for k, v in (n.get("Labels") or {}).items() if not k.startswith("ray.io/")}
        line = f"{n.get('NodeManagerAddress', '?')}: " + (", ".join(f"{k} {v:g}" for k, v in sorted(res.items()))
                                                          or "no resources")
        if labels:
            line += " (labels " + ", ".join(f"{k}={v}" for k, v in sorted(labels.items())) + ")"
        out.append(line)
    return out or ["(no live node)"]
