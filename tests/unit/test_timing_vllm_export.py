"""The vLLM --save-detailed export: vLLM's keys, and each semantics computed as documented."""

from __future__ import annotations

import json

import pytest

from rigbench.analysis import arrival_ns
from rigbench.client import ChatClient
from rigbench.records import SpeedRequest
from rigbench.report._vllm_export import VLLM_DETAILED_COLUMNS, vllm_detailed_result, vllm_request_rows
from rigbench.testing import Delay, Emulator, EmulatorScript, Fault


async def _records() -> list[SpeedRequest]:
    script = EmulatorScript(ttft=Delay(mean_ms=5), itl=Delay(mean_ms=2), output_tokens=6,
                            faults=[Fault(kind="http_status", every=4, offset=3)])
    async with Emulator(script) as emu, ChatClient(emu.url) as c:
        out = []
        for i in range(4):
            r = await c.stream_chat({"model": "m", "messages": [{"role": "user", "content": "a b c"}]})
            out.append(SpeedRequest(unit_id=f"speed/s/c1/r0/i{i}", scenario="s", concurrency=1, repetition=0,
                                    warmup=False, index=i, input_tokens_target=3, output_tokens_target=6,
                                    input_tokens_measured=None, result=r))
        return out


async def test_columns_and_summary_follow_vllm() -> None:
    recs = await _records()
    res = vllm_detailed_result(recs)
    for col in VLLM_DETAILED_COLUMNS:
        assert len(res[col]) == 4, col
    assert res["completed"] == 3 and res["failed"] == 1
    assert res["output_lens"] == [6, 6, 6, 0] and res["input_lens"][:3] == [3, 3, 3]
    assert res["errors"][:3] == ["", "", ""] and res["errors"][3] == "HTTP 500"
    assert all(len(x) == 5 for x in res["itls"][:3])
    for k in ("mean_ttft_ms", "median_tpot_ms", "p99_itl_ms", "std_e2el_ms"):
        assert res[k] > 0, k
    json.dumps(res)  # serialisable as is


async def test_vllm_semantics_start_ttft_at_the_role_only_event() -> None:
    recs = await _records()
    ours = vllm_request_rows(recs)
    theirs = vllm_request_rows(recs, semantics="vllm")
    assert len(ours) == len(theirs) == len(recs) == 4  # the loop below judges the first three (the fourth failed)
    for a, b, rec in zip(ours[:3], theirs[:3], recs, strict=False):
        r = rec.result
        assert b["ttft"] == pytest.approx((r.first_event_ns - r.sent_ns) / 1e9)  # type: ignore[operator]
        assert a["ttft"] == pytest.approx((arrival_ns(r)[0][0] - r.sent_ns) / 1e9)  # the token's arrival
        assert b["ttft"] < a["ttft"]
        assert len(b["itl"]) == len(a["itl"]) + 1  # vLLM counts the gap role event -> first token
