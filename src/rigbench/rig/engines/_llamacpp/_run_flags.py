"""`rigbench run`'s flags for the embedded rig: the plan's `embedded:` section they make."""

from __future__ import annotations

from typing import Any

from rigbench.rig.engines._run_flags import RigFlags

__all__ = ["embedded_from_run_flags"]


def embedded_from_run_flags(f: RigFlags) -> dict[str, Any]:
    """The flags given (None: not given, so the plan's defaults apply); extra engine arguments always."""
    given = {"model": f.model_file, "draft_model": f.draft_model, "spec_type": f.spec_type,
             "draft_max": f.draft_max, "spec_synth_len": f.spec_synth_len, "ctx_per_slot": f.ctx_per_slot,
             "threads": f.threads, "port": f.port, "llama_server": f.llama_server}
    return {**{k: v for k, v in given.items() if v is not None}, "extra_args": list(f.engine_arg)}
