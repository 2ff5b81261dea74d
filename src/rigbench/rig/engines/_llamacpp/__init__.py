"""llama.cpp: everything rigbench knows about it, in one package.

`_engine` is the `Engine` (adapter, launch spec and argv, flags, preflight rules), re-exported here;
the embedded rig's setup lives beside it and is imported by its module, not here: `_prebuilt` (the
pinned xllamacpp wheel, unpacked, and its launcher), `_xserver` (that launcher's script: llama.cpp's
parser and server, run on its own), `_build` (the fallback build from the pinned sdist), `_smoke` (which
llama-server, its one-time smoke test and fallbacks), `_crash` (reading a crash), `_embedded` (the
embedded rig: `EmbeddedRig`, its sizing and launch).
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
