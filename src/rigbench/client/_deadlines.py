"""Per-request deadlines: one settings object, its defaults beside it, handed to the client whole.

Built once (from `rigbench run --idle-timeout/--request-timeout` or a plan's `deadlines:`), recorded
in run.json's `plan.deadlines`, and read by the client's timers under these same names.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from rigbench.records import Input

__all__ = ["Deadlines"]


class Deadlines(Input):
    """How long one request may take before it fails as a typed record (never a hang)."""

    # no generated token for this long; prefill counts (the clock starts at the send) and
    # keep-alive comments do not (record kind `idle_timeout`)
    idle_s: float = Field(default=600.0, gt=0, allow_inf_nan=False)
    # the whole request, send to last token (`total_timeout`)
    total_s: float = Field(default=3600.0, gt=0, allow_inf_nan=False)
    # opening the TCP (and TLS) connection (`connect`)
    connect_s: float = Field(default=10.0, gt=0, allow_inf_nan=False)
    # no byte at all from the server, keep-alive comments included (`timeout`)
    read_s: float = Field(default=600.0, gt=0, allow_inf_nan=False)

    def recorded(self) -> dict[str, Any]:
        """As run.json's `plan.deadlines` holds them: idle and total always (as every run since the
        first recorded them, so older runs resume), connect and read only when set away from their
        defaults."""
        out: dict[str, Any] = {"idle_s": self.idle_s, "total_s": self.total_s}
        for name in ("connect_s", "read_s"):
            if getattr(self, name) != type(self).model_fields[name].default:
                out[name] = getattr(self, name)
        return out
