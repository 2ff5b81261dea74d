"""The retries table (`--retry-on`): requests the server turned away and rigbench sent again, as a Section."""

from __future__ import annotations

from rigbench.analysis import RetrySummary
from rigbench.report._cells import Cell, Note, Section

__all__ = ["retries_section"]

_HEAD = ["requests of", "requests", "retried", "retries", "waited s", "longest wait s", "gave up", "refusals retried"]
_SHORT = ["requests of", "n", "retried", "retries", "waited\ns", "longest\nwait s", "gave\nup", "refusals"]
_KEY = ("A retry waits what the server's Retry-After asks (else 1, 2, 4... s) and is never timed as latency: TTFT, "
        "ITL and e2e come from the attempt that was answered. In rate mode the response time (from the intended "
        "start) includes the waits, the service time does not. A speed batch with a retried request is left out "
        "of the aggregate tok/s (docs/metrics.md, \"Retries\").")


# The suites' request records by kind, as a reader knows them (any other kind is shown as recorded).
_KINDS = {"speed_request": "speed", "load_request": "load (rate mode)", "sanity": "known-answer gate",
          "mmlu_pro_answer": "MMLU-Pro", "pack_answer": "packs", "agent_probe": "agent probes",
          "agent_tool_trial": "agent tool calls", "agent_bfcl_item": "BFCL", "agent_task_trial": "agent tasks"}


def _num(v: object) -> str:
    return f"{v:g}" if isinstance(v, int | float) else str(v)


def _policy(p: dict[str, object] | None) -> str:
    if not p:
        return "retries recorded without --retry-on"
    on = p.get("statuses")
    codes = ",".join(str(c) for c in on) if isinstance(on, list) else "?"
    return (f"--retry-on {codes}, at most {_num(p.get('max_retries'))} per request and {_num(p.get('max_wait_s'))} s "
            "of waiting")


def retries_section(s: RetrySummary) -> Section:
    """One row per kind of record that holds requests; a request that gave up is marked."""
    rows: list[list[str | Cell]] = []
    for r in s.rows:
        refusals = ", ".join(f"HTTP {code} x{n}" for code, n in r.statuses.items()) or "–"
        rows.append([_KINDS.get(r.kind, r.kind), str(r.requests), str(r.retried), str(r.retries), f"{r.wait_s:.1f}",
                     f"{r.wait_max_s:.1f}" if r.retries else "–",
                     Cell(str(r.gave_up), "warn") if r.gave_up else "0", refusals])
    if s.retries or s.gave_up:
        title = (f"Retries ({_policy(s.policy)}): {s.retried} request(s) retried {s.retries} time(s), "
                 f"{s.wait_s:.1f} s waited" + (f"; {s.gave_up} gave up" if s.gave_up else ""))
    else:
        title = f"Retries ({_policy(s.policy)}): none needed"
        rows = []
    notes = [Note(_KEY)] if rows else []
    notes += [Note(f"budget ran out: {why}", "warn") for why in s.stopped]
    return Section(title, _HEAD, rows, notes=notes, short_head=_SHORT, title_severity="warn" if s.gave_up else None)
