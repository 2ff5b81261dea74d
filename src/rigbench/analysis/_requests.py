"""One row per measured request (speed and load suites), every per-request figure: the table that
`rigbench run/report --csv/--jsonl` write and pandas users load.

Times (`*_s` columns ending in `_at_s`) are seconds from the zero of the request's window (a load
window's schedule zero, a speed batch's start), on the client's monotonic clock.
"""

from __future__ import annotations

from typing import Any

from rigbench.analysis import _metrics as m
from rigbench.analysis._goodput import meets_slo
from rigbench.analysis._load import load_timing
from rigbench.analysis._timing import arrival_ns, request_timing
from rigbench.records import LoadRequest, LoadWindow, SpeedBatch, SpeedRequest, StreamResult
from rigbench.store import RunReader

__all__ = ["REQUEST_COLUMNS", "request_rows"]

REQUEST_COLUMNS = (
    "run_id", "suite", "unit_id", "group", "offered_rate_rps", "index", "session", "turn",
    "intended_start_at_s", "slot_free_at_s", "sent_at_s", "first_token_at_s", "end_at_s",
    "send_lag_s", "input_tokens", "input_tokens_target", "input_tokens_server", "output_tokens", "output_tokens_target",
    "ttft_s", "ttft_response_s", "itl_s", "e2e_s", "e2e_response_s", "decode_tok_s",
    "slo_met", "finish_reason", "error_kind", "error_message", "retries", "retry_wait_s",
)


def _at(ns: int | None, zero: int) -> float | None:
    return None if ns is None else (ns - zero) / 1e9


def _common(res: StreamResult, zero: int) -> dict[str, Any]:
    err = res.error
    stamps, _ = arrival_ns(res)  # the kernel's receive stamps where recorded, as every timing figure uses
    return {"sent_at_s": _at(res.sent_ns, zero), "first_token_at_s": _at(stamps[0] if stamps else None, zero),
            "end_at_s": _at(res.done_ns, zero), "finish_reason": res.finish_reason,
            "error_kind": err.kind if err else None, "error_message": err.message if err else None,
            # --retry-on: attempts the server turned away before this one, and the time waited for them
            "retries": len(res.retries), "retry_wait_s": sum(a.wait_s for a in res.retries)}


def request_rows(reader: RunReader) -> list[dict[str, Any]]:
    """Every speed and load request of the run (latest record of each), in the order they were written."""
    run_id = reader.header.run_id
    rows: list[dict[str, Any]] = []
    batches = {b.unit_id: b for b in reader.records("speed_batch", SpeedBatch)}
    for q in reader.records("speed_request", SpeedRequest):
        res = q.result
        b = batches.get(q.unit_id.rsplit("/", 1)[0])
        zero = b.started_ns if b is not None else (res.scheduled_ns or res.sent_ns)
        t = request_timing(res, output_tokens_target=q.output_tokens_target)
        intended = res.scheduled_ns if res.scheduled_ns is not None else res.sent_ns
        first = res.retries[0] if res.retries else res  # the send lag is the first attempt's
        rows.append({"run_id": run_id, "suite": "speed", "unit_id": q.unit_id,
                     "group": f"{q.scenario}/c{q.concurrency}/r{q.repetition}" + ("/warmup" if q.warmup else ""),
                     "offered_rate_rps": None, "index": q.index, "session": None, "turn": None,
                     "intended_start_at_s": _at(intended, zero),
                     "slot_free_at_s": None, **_common(res, zero),
                     "send_lag_s": m.send_lag_s(m.Schedule(intended_ns=intended, ready_ns=intended, sent_ns=res.sent_ns,
                                                           first_sent_ns=first.sent_ns,
                                                           first_connect_ns=first.connect_ns)),
                     "input_tokens": q.input_tokens_measured if q.input_tokens_measured is not None else res.prompt_tokens,
                     "input_tokens_target": q.input_tokens_target, "input_tokens_server": res.prompt_tokens,
                     "output_tokens": t.output_tokens, "output_tokens_target": q.output_tokens_target,
                     "ttft_s": t.ttft_s, "ttft_response_s": t.ttft_s, "itl_s": t.itl_mean_s,
                     "e2e_s": t.e2e_latency_s, "e2e_response_s": t.e2e_latency_s, "decode_tok_s": t.decode_tok_s,
                     "slo_met": None})
    windows = {w.window: w for w in reader.records("load_window", LoadWindow)}
    for lq in reader.records("load_request", LoadRequest):
        res = lq.result
        w = windows.get(lq.window)
        zero = w.started_ns if w is not None else (res.scheduled_ns or res.sent_ns)
        lt = load_timing(lq)
        t = lt.timing
        met = None
        if w is not None and w.slo is not None:
            met = meets_slo(w.slo, ok=res.ok, ttft_s=lt.ttft_response_s, itl_s=t.itl_mean_s,
                            e2e_s=lt.e2e_response_s).met
        rows.append({"run_id": run_id, "suite": "load", "unit_id": lq.unit_id, "group": lq.window,
                     "offered_rate_rps": w.offered_rate_rps if w is not None else None, "index": lq.index,
                     "session": lq.session, "turn": lq.turn,
                     "intended_start_at_s": _at(res.scheduled_ns, zero), "slot_free_at_s": _at(lq.slot_ns, zero),
                     **_common(res, zero), "send_lag_s": lt.send_lag_s,
                     "input_tokens": lq.input_tokens_measured if lq.input_tokens_measured is not None else res.prompt_tokens,
                     "input_tokens_target": lq.input_tokens_target, "input_tokens_server": res.prompt_tokens,
                     "output_tokens": t.output_tokens, "output_tokens_target": lq.output_tokens_target,
                     "ttft_s": t.ttft_s, "ttft_response_s": lt.ttft_response_s, "itl_s": t.itl_mean_s,
                     "e2e_s": t.e2e_latency_s, "e2e_response_s": lt.e2e_response_s, "decode_tok_s": t.decode_tok_s,
                     "slo_met": met})
    return rows
