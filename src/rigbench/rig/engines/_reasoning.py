"""Reasoning switches for engines that leave them to the model's chat template (vLLM, SGLang)."""

from __future__ import annotations

from typing import Any

__all__ = ["template_reasoning_fields"]


def template_reasoning_fields(effort: str | None) -> dict[str, Any]:
    """vLLM and SGLang: the switch lives in the model's chat template, so send every spelling.

    Templates ignore kwargs they do not read. Qwen3-style templates read `enable_thinking`,
    DeepSeek-V3.1-style ones `thinking`; effort-level templates (gpt-oss, Muse Glimmer) read
    `reasoning_effort`, which both engines also accept as a top-level request field.
    """
    if effort is None:
        return {}
    if effort == "none":
        return {"chat_template_kwargs": {"enable_thinking": False, "thinking": False}}
    return {"reasoning_effort": effort,
            "chat_template_kwargs": {"enable_thinking": True, "thinking": True, "reasoning_effort": effort}}
