"""The quality suites' settings: what a plan's `mmlu_pro:`, `packs:` and `effort:` keys and
`rigbench run`'s flags resolve to (docs/plans.md lists every key)."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from rigbench.records import Input

__all__ = ["EffortSettings", "MMLUProSettings", "PackSettings"]


class MMLUProSettings(Input):
    """Settings of `--suite mmlu_pro` (plan key `mmlu_pro`). Defaults follow the first seed."""

    data: str | None = None  # None/"hf": download TIGER-Lab/MMLU-Pro; else a local directory
    revision: str = "main"  # hub revision (a commit pins the data)
    subjects: list[str] | None = None  # None: all fourteen
    questions_per_subject: int | None = 200  # None: every question (12,032 in total)
    sample_seed: int = 12345  # the official scripts' seed; recorded in the run
    shots: int = 5  # validation examples per subject (the split has five)
    max_tokens: int = 4000  # the official API script's limit
    concurrency: int | None = None  # None: the rig's slot count, else 1
    temperature: float = 0.0  # greedy, as the official scripts
    extra_body: dict[str, Any] = Field(default_factory=dict)  # extra request fields (e.g. chat_template_kwargs)


class PackSettings(Input):
    """Settings of `--suite packs` (plan key `packs`)."""

    packs: list[str] = Field(default_factory=lambda: ["multilingual"])  # shipped pack names or paths to YAML packs
    tasks: list[str] | None = None  # only these task ids (None: every task)
    repetitions: int = Field(1, ge=1)
    concurrency: int = Field(1, ge=1)  # 1 keeps per-task wall time free of queueing
    max_tokens: int | None = None  # None: the pack's (per task, else pack default)
    extra_body: dict[str, Any] = Field(default_factory=dict)
    allow_unconfined: bool = False  # run `code` graders even where the sandbox cannot confine them


class EffortSettings(Input):
    """Settings of `--suite effort` (plan key `effort`): one pack at each reasoning-effort level."""

    pack: str = "multilingual"
    tasks: list[str] | None = None  # only these task ids (None: every task)
    levels: list[str] = Field(default_factory=lambda: ["none", "low", "medium", "high"])  # add "xhigh" etc. where the engine names it
    engine: str | None = None  # knob table key; None: the rig's engine
    repetitions: int = Field(1, ge=1)
    concurrency: int = Field(1, ge=1)
    max_tokens: int | None = None
    extra_body: dict[str, Any] = Field(default_factory=dict)
    allow_unconfined: bool = False
