"""llama.cpp: everything rigbench knows about it, in one package.

`_engine` is the `Engine` (adapter, launch spec and argv, flags, preflight rules), re-exported here;
the embedded rig's setup lives beside it and is imported by its module, not here: `_build` (the pinned
llama-server build), `_smoke` (the one-time smoke test and its CPU fallback), `_crash` (reading a
crash), `_embedded` (the embedded rig: `EmbeddedRig`, its sizing and launch).
"""

from rigbench.rig.engines._llamacpp._engine import (
    LLAMACPP,
    LlamaCppAdapter,
    LlamaCppEngine,
    LlamaCppLaunch,
    llamacpp_command,
    server_argv,
)

__all__ = ["LLAMACPP", "LlamaCppAdapter", "LlamaCppEngine", "LlamaCppLaunch", "llamacpp_command", "server_argv"]
