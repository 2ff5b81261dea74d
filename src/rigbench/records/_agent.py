"""Records the agent suites write: raw observations plus the evidence behind every verdict.

Verdicts of the conformance probes are decided in the suite (they are observations of one
exchange, like an HTTP status); every aggregate (accuracy, pass^k, distributions) is derived
later in `rigbench.analysis`.
"""

from __future__ import annotations

from typing import Any, Literal, get_args

from pydantic import Field, model_validator

from rigbench.records._base import Frozen, Record
from rigbench.records._stream import RequestErrorKind, StreamResult

__all__ = [
    "BFCLItemRecord",
    "Exchange",
    "ProbeRecord",
    "ProbeVerdict",
    "TaskStopReason",
    "TaskTrialRecord",
    "ToolTrialRecord",
    "TurnObservation",
]

# pass: the server did what was asked. fail: it did not, and said so or broke visibly.
# silently_ignored: HTTP 200, no error, and the request's instruction had no effect (the dangerous
# kind: agent code breaks without an exception). not_applicable: nothing to judge (e.g. the model
# made no tool call, so streamed-vs-non-streamed call assembly cannot be compared).
ProbeVerdict = Literal["pass", "fail", "silently_ignored", "not_applicable"]


TaskStopReason = Literal[
    "model_stopped",  # the model answered without a tool call
    "answer_submitted",  # the root-cause task's report tool was called
    "max_turns",
    "repeated_call",  # the same call with the same arguments in consecutive turns
    "request_error",  # the server failed a request (HTTP error, broken stream)
]


class Exchange(Frozen):
    """One request and what came back, kept as evidence. Large bodies go to a blob.

    `result` is what the one client returned: for a streamed request with its per-chunk stamps; for
    a non-streamed one the same fields filled from the JSON response (no chunks, `sent_ns` and
    `done_ns` around the call). Exchanges of format 1 and 2 kept copies of those fields at the top
    level; `_legacy` reads them into `result`.
    """

    streamed: bool
    request: dict[str, Any] | None = None  # the body, inline when small
    request_blob: str | None = None  # run-relative path of the body when large
    response_blob: str | None = None  # the raw non-streamed response, when kept
    elapsed_s: float = 0.0
    result: StreamResult

    @model_validator(mode="before")
    @classmethod
    def _legacy(cls, data: Any) -> Any:
        if not isinstance(data, dict) or "result" in data:
            return data
        data = dict(data)
        result = {k: data.pop(k) for k in _LEGACY_FIELDS if k in data}
        error = result.pop("error", None)
        if error is not None:
            result["error"] = _legacy_error(str(error), bool(data.get("streamed")), result.get("http_status"))
        data["result"] = {"sent_ns": 0, **result}  # format 1-2 kept no stamps
        return data

    @property
    def content(self) -> str:
        return self.result.content

    @property
    def reasoning(self) -> str:
        return self.result.reasoning

    @property
    def reasoning_field(self) -> str | None:
        return self.result.reasoning_field

    @property
    def tool_calls(self) -> list[dict[str, Any]]:
        return self.result.tool_calls

    @property
    def finish_reason(self) -> str | None:
        return self.result.finish_reason

    @property
    def usage(self) -> dict[str, Any] | None:
        return self.result.usage

    @property
    def http_status(self) -> int | None:
        return self.result.http_status

    @property
    def error(self) -> str | None:
        """The failure in one line, as verdicts quote it: `kind: message | body` when streamed,
        `HTTP status: body` when not."""
        e = self.result.error
        if e is None:
            return None
        if not self.streamed:
            return f"{e.message}: {e.body or ''}"
        return f"{e.kind}: {e.message}" + (f" | {e.body[:1800]}" if e.body else "")


_LEGACY_FIELDS = ("http_status", "content", "reasoning", "reasoning_field", "tool_calls", "finish_reason", "usage",
                  "error")


def _legacy_error(text: str, streamed: bool, status: int | None) -> dict[str, Any]:
    """The error string of a format 1-2 exchange as a RequestError that `Exchange.error` prints
    back unchanged."""
    if not streamed:
        head, _, body = text.partition(": ")
        return {"kind": "http_status" if status != 200 else "not_openai", "message": head, "http_status": status,
                "body": body}
    kind, sep, rest = text.partition(": ")
    if not sep or kind not in get_args(RequestErrorKind):
        kind, rest = "malformed_sse", text  # not written by any rigbench; kept whole in the message
    message, _, body = rest.partition(" | ")
    return {"kind": kind, "message": message, "http_status": status, "body": body or None}


class ProbeRecord(Record):
    kind: Literal["agent_probe"] = "agent_probe"
    unit_id: str  # "agent/probe/<probe>"
    probe: str
    verdict: ProbeVerdict
    detail: str  # why this verdict, in one sentence a user can act on
    observed: dict[str, Any] = Field(default_factory=dict)  # the facts the verdict rests on
    exchanges: list[Exchange] = Field(default_factory=list)


class ToolTrialRecord(Record):
    """One trial of one tool-call case (possibly several messages for the parallel case)."""

    kind: Literal["agent_tool_trial"] = "agent_tool_trial"
    unit_id: str  # "agent/tool/<case>/t<trial>"
    case: str
    trial: int
    passed: bool
    reason: str  # "ok" or what was wrong
    calls_per_message: list[int]  # tool calls in each assistant message of the trial
    exchanges: list[Exchange]


class BFCLItemRecord(Record):
    kind: Literal["agent_bfcl_item"] = "agent_bfcl_item"
    unit_id: str  # "agent/bfcl/<category>/<item id>/t<trial>"
    category: str  # simple | multiple | parallel | parallel_multiple | irrelevance
    item_id: str
    trial: int
    bfcl_version: str  # the bfcl-eval wheel version the data came from
    valid: bool
    error_type: str | None  # BFCL-style error type, e.g. "value_error:string"
    error: str | None
    decoded_calls: list[dict[str, Any]]  # [{name: {param: value}}], as graded
    exchange: Exchange


class TurnObservation(Frozen):
    tool_calls: int
    prompt_tokens: int | None
    completion_tokens: int | None
    elapsed_s: float
    finish_reason: str | None
    invalid_arguments: int  # calls whose arguments were not a JSON object


class TaskTrialRecord(Record):
    """One trial of a multi-turn agent task; `passed` is decided by rigbench, never the model."""

    kind: Literal["agent_task_trial"] = "agent_task_trial"
    unit_id: str  # "agent/task/<task>/t<trial>"
    task: str
    task_kind: Literal["repo_fix", "root_cause"]
    trial: int
    passed: bool
    stop_reason: TaskStopReason
    turns: list[TurnObservation]
    wall_s: float
    grade_detail: str  # pytest summary, or the submitted answer vs the expected one
    tests_failed_before: int | None = None  # repo_fix only
    tests_passed_after: int | None = None
    tests_failed_after: int | None = None
    refused_paths: int = 0  # file-tool calls refused for leaving the task directory
    sandbox: dict[str, Any] = Field(default_factory=dict)  # limits and network isolation used
    transcript_blob: str | None = None  # the full message list, run-relative
