"""What a running vLLM shows about its speculative decoding, and which of its features a version has.

vLLM V1 registers its `vllm:spec_decode_*` counters only when a speculative config is set
(`vllm/v1/spec_decode/metrics.py`, `SpecDecodingProm`: `spec_decoding_enabled = speculative_config
is not None`, read in 0.32), so on a version of that line their presence in /metrics says "on" and
their absence "off". Its config text (dev-mode `/server_info`, the start-up log) also names the method:
`speculative_config=SpeculativeConfig(method='ngram', ...)` or `speculative_config=None`.
"""

from __future__ import annotations

import re
from typing import Any

from rigbench.rig.engines._prometheus import parse_prometheus
from rigbench.rig.engines._vllm._versions import SPEC_COUNTERS_MEAN_ON_SINCE, version_at_least

__all__ = ["vllm_speculation"]

_DRAFTS = "vllm:spec_decode_num_drafts_total"
_DRAFT_TOKENS = "vllm:spec_decode_num_draft_tokens_total"
_CONFIG = re.compile(r"speculative_config=(None|SpeculativeConfig\(method='?([\w-]*))")


def _from_config_text(text: str, where: str) -> dict[str, Any] | None:
    m = _CONFIG.search(text)
    if m is None:
        return None
    if m.group(1) == "None":
        return {"state": "off", "source": f"{where}: speculative_config=None"}
    return {"state": "on", "source": f"{where}: speculative_config set", "method": m.group(2) or None}


def vllm_speculation(version: str | None, metrics_text: str | None, dev_info: Any) -> dict[str, Any]:
    """`rigbench.records.Speculation`'s fields as this server shows them: its dev-mode config when served
    (which names the method), else its spec_decode counters."""
    if isinstance(dev_info, dict) and isinstance(dev_info.get("vllm_config"), str):
        found = _from_config_text(dev_info["vllm_config"], "the server's /server_info")
        if found is not None:
            return found
    if metrics_text is None:
        return {"state": "unknown", "source": "the server's /metrics could not be read; it exposes no config"}
    samples = parse_prometheus(metrics_text)
    exported = _DRAFTS in samples or _DRAFT_TOKENS in samples
    drafts = sum(s.value for s in samples.get(_DRAFTS, []))
    new_enough = version_at_least(version, SPEC_COUNTERS_MEAN_ON_SINCE)
    if exported and (drafts > 0 or new_enough):
        seen = f": {drafts:.0f} drafts so far" if drafts > 0 else ", which vLLM exports only with a speculative config"
        return {"state": "on", "source": f"seen in the server's spec_decode counters{seen}"}
    if not exported and new_enough and any(name.startswith("vllm:") for name in samples):
        return {"state": "off", "source": f"no spec_decode counters in the server's /metrics (vLLM {version} "
                                          "exports them whenever a speculative config is set)"}
    return {"state": "unknown", "source": (f"vLLM {version or '(version unknown)'} does not show it: its /metrics "
                                           "has no drafts counted and it exposes no config")}
