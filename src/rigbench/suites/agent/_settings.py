"""The agent suite's settings: one typed model from `rigbench run`'s flags or a plan's `agent:` key.

Which parts run (probes, tools, bfcl, tasks) follows the suite names (`agent`, `agent_tools`, ...),
so `parts` is not a setting here; it is added to the recorded form. The plan (or the CLI) validates
the settings once, `AgentSuite` takes this model and hands it to each part; the defaults below are
the only ones.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from rigbench.records import Input

__all__ = ["AGENT_PARTS", "AgentSettings"]

AGENT_PARTS = ("probes", "tools", "bfcl", "tasks")


class AgentSettings(Input):
    """Settings of `--suite agent` and its parts (plan key `agent`)."""

    probe_max_tokens: int = Field(default=128, ge=1)  # per conformance-probe request
    tool_trials: int = Field(default=3, ge=1)  # trials of each tool-call case
    tool_max_tokens: int = Field(default=256, ge=1)
    bfcl_per_category: int = Field(default=10, ge=0)  # BFCL items per category; 0 skips BFCL
    bfcl_trials: int = Field(default=1, ge=1)
    bfcl_max_tokens: int = Field(default=512, ge=1)
    bfcl_data_dir: str | None = None  # local BFCL data files; None: the pinned release, downloaded once
    bfcl_version_label: str | None = None  # recorded data version; None: the release, or local:DIR
    agent_tasks: list[str] | None = None  # task names or directories; None: every shipped task
    task_trials: int = Field(default=3, ge=1)  # trials of each multi-turn task (pass@k's k)
    max_turns: int = Field(default=20, ge=1)  # a task trial stops after this many model turns
    repeat_limit: int = Field(default=3, ge=1)  # ...or when the same calls repeat this many turns in a row
    task_max_tokens: int = Field(default=1024, ge=1)
    context_length: int | None = Field(default=None, ge=1)  # served context when the server does not say
    allow_unconfined: bool = False  # run the tasks' code where bubblewrap cannot confine it (marked)

    def recorded(self, parts: list[str]) -> dict[str, Any]:
        """The form recorded in run.json (`plan.suites.agent`)."""
        return {"parts": list(parts), **self.model_dump(mode="json")}

