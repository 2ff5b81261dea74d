"""llama-server's launch spec and its one command line, below the `Engine` (`_engine`): the embedded rig
(`_embedded`) and the smoke test (`_smoke`) build their argv and stop the server with these, and the
engine object imports them, never the other way round."""

from __future__ import annotations

import signal
from typing import Literal

from rigbench.rig._cpu import affinity_threads
from rigbench.rig._spec import EngineSpec, LaunchCommand, finish_argv, opt

__all__ = ["DEATH_SIGNAL", "DEFAULT_PORT", "LlamaCppLaunch", "llamacpp_command", "server_argv"]

# Sent by the kernel when rigbench dies without stopping it (rig/_process.py). Not SIGTERM:
# llama-server then logs "cleaning up before exit..." and can hang there with SIGTERM blocked
# when its client died mid-connection (seen after kill -9 of rigbench); it has no state to save.
DEATH_SIGNAL = signal.SIGKILL
DEFAULT_PORT = 8080


class LlamaCppLaunch(EngineSpec):
    """`llama-server -m MODEL.gguf ...` (the embedded default rig has its own config in the rig layer)."""

    kind: Literal["llamacpp"] = "llamacpp"
    model: str  # path to a GGUF file
    alias: str | None = None
    ctx_size: int | None = None  # total over all slots
    parallel: int | None = None
    n_gpu_layers: int | None = None
    draft_model: str | None = None
    spec_type: str | None = None  # e.g. "draft-simple"; defaults to that when draft_model is set
    draft_max: int | None = None  # --spec-draft-n-max (--draft-max was removed)
    reasoning_format: str | None = None
    jinja: bool = True  # needed for tool calls and reasoning_effort
    metrics: bool = True

    @property
    def served_name(self) -> str | None:
        return self.alias


def server_argv(s: LlamaCppLaunch, *, kv_unified: bool = False, webui: bool = True, threads: int | None = None,
                spec_synth_len: float | None = None) -> list[str]:
    """The one llama-server command line, for launched specs and the embedded rig; extra_args not included.

    The keyword options are the embedded rig's own choices, not plan settings. The order is the one
    the embedded rig has always recorded in its fingerprint, so `rigbench compare` against older
    runs shows no argv difference that is only a reordering.
    """
    argv = [*(s.executable or ["llama-server"]), "-m", s.model,
            "--host", s.host, "--port", str(s.port or DEFAULT_PORT)]
    opt(argv, "-c", s.ctx_size)
    opt(argv, "-np", s.parallel)
    if kv_unified:  # one KV pool shared by all slots, so -c is not divided per slot
        argv.append("--kv-unified")
    if s.jinja:
        argv.append("--jinja")
    if s.metrics:
        argv.append("--metrics")
    if not webui:
        argv.append("--no-webui")
    opt(argv, "--alias", s.alias)
    # confined to fewer CPUs than the host has (taskset, a cpuset), llama.cpp would still start a
    # thread per host core: give it the usable count (a spec's extra_args -t comes later and wins)
    opt(argv, "-t", threads or affinity_threads())
    opt(argv, "-ngl", s.n_gpu_layers)
    if s.draft_model is not None:
        argv += ["-md", s.draft_model, "--spec-type", s.spec_type or "draft-simple"]
    elif s.spec_type is not None:  # draft-free kinds (n-gram) need no draft model
        argv += ["--spec-type", s.spec_type]
    if s.draft_model is not None or s.spec_type is not None:
        opt(argv, "--spec-draft-n-max", s.draft_max)
        opt(argv, "--spec-synth-len", spec_synth_len)
    opt(argv, "--reasoning-format", s.reasoning_format)
    return argv


def llamacpp_command(s: LlamaCppLaunch) -> LaunchCommand:
    return LaunchCommand(finish_argv("llamacpp", s, server_argv(s)), {})
