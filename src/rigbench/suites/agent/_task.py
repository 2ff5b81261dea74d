"""A multi-turn agent task: what it asks, where its project lives, and its task.json (shipped under
`rigbench/data/agent_tasks/`, or a directory of the user's). The workspace, the grader and the suite
all read it; it imports none of them."""

from __future__ import annotations

from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from typing import Any

from rigbench.errors import UsageError
from rigbench.inputs import load_json

__all__ = ["AgentTask", "load_task", "shipped_tasks"]


@dataclass(frozen=True)
class AgentTask:
    name: str
    kind: str  # "repo_fix" | "root_cause"
    prompt: str
    path: Path
    spec: dict[str, Any]


# A task.json holds a prompt and the grading settings: kilobytes.
_TASK_MAX_BYTES = 1 << 20


def _tasks_root() -> Path:
    return Path(str(files("rigbench") / "data" / "agent_tasks"))


def shipped_tasks() -> list[str]:
    return sorted(p.name for p in _tasks_root().iterdir() if (p / "task.json").exists())


def load_task(name_or_path: str) -> AgentTask:
    p = Path(name_or_path)
    d = p if (p / "task.json").exists() else _tasks_root() / name_or_path
    if not (d / "task.json").exists():
        raise UsageError(
            f"no agent task {name_or_path!r}: expected a task.json there. "
            f"Shipped tasks: {', '.join(shipped_tasks())}."
        )
    path = d / "task.json"
    spec = load_json(path, "agent task", max_bytes=_TASK_MAX_BYTES)
    missing = [k for k in ("name", "kind", "prompt") if not isinstance(spec, dict) or not isinstance(spec.get(k), str)]
    if missing:
        raise UsageError(f"agent task {path}: a task.json is a JSON object whose name, kind and prompt are text "
                         f"(docs/agent.md); {', '.join(missing)} {'is' if len(missing) == 1 else 'are'} not.")
    return AgentTask(spec["name"], spec["kind"], spec["prompt"], d, spec)
