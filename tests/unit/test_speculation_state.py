"""The fingerprint's speculation state (issue 24): on / off / unknown with where it was learnt, never "off"
from silence. Seen live: attached to a vLLM running n-gram speculation, the fingerprint said "off / not
configured" while its spec_decode counters moved. The emulator plays a vLLM (its /version, vllm: metrics)
with and without the spec_decode counters; an engine rigbench cannot name tells nothing.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from rigbench.client import ChatClient
from rigbench.records import Speculation
from rigbench.report._fingerprint import fingerprint_rows
from rigbench.rig import AttachedRig
from rigbench.rig.engines import known_engines
from rigbench.rig.engines._llamacpp._engine import llamacpp_speculation
from rigbench.rig.engines._vllm._speculation import vllm_speculation
from rigbench.store import RunReader
from rigbench.testing import Emulator, EmulatorScript

ROOT = Path(__file__).resolve().parents[2]
EMU_B = ROOT / "tests" / "golden" / "emulator_b"  # format 1, attached to the emulator


async def _attached(script: EmulatorScript, *, requests: int = 0) -> tuple[Speculation | None, str]:
    async with Emulator(script) as emu:
        async with ChatClient(emu.url) as c:
            for _ in range(requests):  # the measured requests: they move the counters
                res = await c.stream_chat({"model": script.model, "max_tokens": 16, "stream": True,
                                           "messages": [{"role": "user", "content": "hi"}]})
                assert res.ok
        rig = AttachedRig(emu.url, model=None, candidates=known_engines())
        await rig.start()
        fp = rig.fingerprint()
        await rig.stop()
    return fp.speculation, dict(fingerprint_rows(fp))["speculative"]


async def test_a_vllm_whose_spec_decode_counters_moved_is_on_with_the_source() -> None:
    script = EmulatorScript(version="0.32.0", spec_metrics=True, spec_depth=4, output_tokens=16)
    spec, row = await _attached(script, requests=2)
    assert spec is not None and spec.state == "on" and spec.method is None
    assert row.startswith("on (seen in the server's spec_decode counters: ") and "drafts so far" in row
    assert row.endswith("; method not reported)")


async def test_a_fresh_vllm_with_counters_registered_is_on_before_any_request() -> None:
    spec, row = await _attached(EmulatorScript(version="0.32.0", spec_metrics=True, spec_depth=4))
    assert spec is not None and spec.state == "on"
    assert "exports only with a speculative config" in row


async def test_a_vllm_without_spec_decode_counters_is_off_and_says_why() -> None:
    """The control: the same vLLM, no speculative config, so no spec_decode counters at all."""
    spec, row = await _attached(EmulatorScript(version="0.32.0"), requests=1)
    assert spec is not None and spec.state == "off"
    assert row.startswith("off (no spec_decode counters in the server's /metrics (vLLM 0.32.0")


async def test_an_engine_rigbench_cannot_name_is_unknown_never_off() -> None:
    spec, row = await _attached(EmulatorScript(spec_depth=4), requests=1)  # no /version: not a vLLM
    assert spec is not None and spec.state == "unknown"
    assert row.startswith("unknown (") and "off" not in row


@pytest.mark.parametrize(("version", "metrics", "dev", "state", "method"), [
    # dev-mode /server_info names the method (the config text vLLM prints)
    ("0.32.0", None, {"vllm_config": "model='m', speculative_config=SpeculativeConfig(method='ngram', model=None, "
                                     "num_spec_tokens=4), tokenizer='m'"}, "on", "ngram"),
    ("0.32.0", None, {"vllm_config": "model='m', speculative_config=None, tokenizer='m'"}, "off", None),
    # no /metrics and no config: nothing tells
    ("0.32.0", None, None, "unknown", None),
    # an old (V0) vLLM: counters may exist unconfigured, so only drafts counted tell, and absence tells nothing
    ("0.6.3", "vllm:spec_decode_num_drafts_total 0\nvllm:num_requests_running 0\n", None, "unknown", None),
    ("0.6.3", "vllm:spec_decode_num_drafts_total 7\n", None, "on", None),
    ("0.6.3", "vllm:num_requests_running 0\n", None, "unknown", None),
])
def test_what_each_vllm_signal_says(version: str, metrics: str | None, dev: Any, state: str,
                                    method: str | None) -> None:
    got = Speculation.model_validate(vllm_speculation(version, metrics, dev))
    assert (got.state, got.method) == (state, method)


def test_a_run_before_format_10_attached_says_not_recorded_and_launched_keeps_its_reading(tmp_path: Path) -> None:
    fp = RunReader(EMU_B).header.fingerprint
    assert fp is not None and fp.mode == "attached" and fp.speculation is None
    assert dict(fingerprint_rows(fp))["speculative"].startswith("not recorded (attached")
    # a v9 header (the format before this field) loads the same way
    run = tmp_path / "v9"
    shutil.copytree(EMU_B, run)
    head = json.loads((run / "run.json").read_text())
    head.update(format_version=9, fingerprint={**head["fingerprint"], "mode": "launched", "older_fields": None})
    (run / "run.json").write_text(json.dumps(head))
    fp9 = RunReader(run).header.fingerprint
    assert fp9 is not None and fp9.speculation is None
    assert dict(fingerprint_rows(fp9))["speculative"] == "off / not configured"  # its argv was read


def _props(types: str) -> dict[str, Any]:
    return {"default_generation_settings": {"n_ctx": 4096, "params": {"speculative.types": types}}}


@pytest.mark.parametrize(("props", "slots", "state", "method"), [
    # /slots (on by default) tells per slot whether it can speculate: the server's own word
    (_props("ngram-simple"), [{"id": 0, "speculative": True}, {"id": 1, "speculative": True}], "on", "ngram-simple"),
    (_props("none"), [{"id": 0, "speculative": True}], "on", None),  # a draft model, its kind not in /props
    (_props("none"), [{"id": 0, "speculative": False}], "off", None),
    # --no-slots: /props' types are the requests' default ("none" seen live on an n-gram server): no proof
    (_props("draft-simple"), None, "unknown", None),
    (_props("none"), None, "unknown", None),
    ({}, [{"id": 0}], "unknown", None),  # slots without the field (an older build)
])
def test_what_each_llamacpp_signal_says(props: dict[str, Any], slots: Any, state: str, method: str | None) -> None:
    got = Speculation.model_validate(llamacpp_speculation(props, slots))
    assert (got.state, got.method) == (state, method)
