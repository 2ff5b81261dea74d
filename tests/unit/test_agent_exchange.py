"""An agent exchange holds the client's StreamResult (format 3); exchanges stored by formats 1-2,
with the response fields copied at the top level, read back with the same values and errors."""

from __future__ import annotations

import json

import pytest

from rigbench.records import Exchange, ProbeRecord, RequestError, StreamResult

LEGACY_FIELDS = ("http_status", "content", "reasoning", "reasoning_field", "tool_calls", "finish_reason", "usage",
                 "error")


@pytest.mark.parametrize("old", [
    {"streamed": True, "request": {"model": "m"}, "http_status": 400, "content": "", "reasoning": "",
     "reasoning_field": None, "tool_calls": [], "finish_reason": None, "usage": None,
     "error": 'http_status: HTTP 400 | {"error": "tool_choice required | not supported"}', "elapsed_s": 0.5},
    {"streamed": True, "http_status": 200, "error": "disconnect: stream closed before [DONE]", "content": "par"},
    {"streamed": False, "request_blob": "blobs/ab.json", "http_status": 500, "error": "HTTP 500: upstream: boom",
     "response_blob": None, "elapsed_s": 1.0},
    {"streamed": False, "http_status": 200, "error": 'HTTP 200: "not a completion"'},
    {"streamed": False, "http_status": 200, "content": "sunny", "tool_calls": [{"id": "c1"}],
     "finish_reason": "stop", "usage": {"completion_tokens": 3}},
])
def test_a_format_2_exchange_reads_back_the_same_values(old: dict) -> None:
    ex = Exchange.model_validate(old)
    assert {k: getattr(ex, k) for k in old} == old
    # and it is written in the new shape, which loads back to the same exchange
    again = Exchange.model_validate_json(ex.model_dump_json())
    assert "result" in json.loads(ex.model_dump_json()) and again == ex


def test_a_streamed_exchange_keeps_the_clients_chunk_stamps() -> None:
    r = StreamResult(sent_ns=10, first_event_ns=20, chunk_ns=[25, 30], chunk_chars=[3, 4], chunk_kind="cc",
                     content="sunny day", http_status=200, finish_reason="stop")
    rec = ProbeRecord(unit_id="agent/probe/x", probe="x", verdict="pass", detail="ok",
                      exchanges=[Exchange(streamed=True, result=r)])
    back = ProbeRecord.model_validate_json(rec.model_dump_json())
    assert back.exchanges[0].result.chunk_ns == [25, 30] and back.exchanges[0].content == "sunny day"


def test_errors_read_as_the_verdicts_quote_them() -> None:
    err = RequestError(kind="http_status", message="HTTP 400", http_status=400, body="x" * 3000)
    streamed = Exchange(streamed=True, result=StreamResult(sent_ns=0, http_status=400, error=err))
    assert streamed.error == "http_status: HTTP 400 | " + "x" * 1800
    plain = Exchange(streamed=False, result=StreamResult(sent_ns=0, http_status=400, error=err))
    assert plain.error == "HTTP 400: " + "x" * 3000
