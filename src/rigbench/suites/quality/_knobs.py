"""Request fields that ask an engine for a reasoning effort, or for no thinking at all.

The per-engine knowledge lives in one place, the engine adapters (`EngineAdapter.reasoning_fields`
in `rigbench.rig.engines`, keyed by engine name "llamacpp", "vllm", "sglang", "ollama"). An
endpoint of unknown engine gets every common spelling, since servers ignore fields they do not
read. Whether the model's template honours the fields is what the effort sweep measures:
reasoning tokens observed at "none" mean thinking did not turn off.
"""

from __future__ import annotations

from typing import Any

from rigbench.errors import UsageError
from rigbench.records import OFF_LEVELS
from rigbench.rig.engines import get_adapter

__all__ = ["effort_request_fields"]

def _unknown_engine_fields(level: str) -> dict[str, Any]:
    if level in OFF_LEVELS:
        return {"reasoning_effort": level,
                "chat_template_kwargs": {"enable_thinking": False, "thinking": False}}
    return {"reasoning_effort": level, "chat_template_kwargs": {"reasoning_effort": level}}


def effort_request_fields(engine: str, level: str | None) -> dict[str, Any]:
    """Request fields for `level` on `engine` (None: the server's default, nothing sent)."""
    if level is None:
        return {}
    try:
        adapter = get_adapter(engine)
    except UsageError:
        if engine not in ("unknown", ""):
            raise
        return _unknown_engine_fields(level)
    return dict(adapter.reasoning_fields(level))

