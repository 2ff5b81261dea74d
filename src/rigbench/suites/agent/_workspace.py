"""What a multi-turn task's tools act on: a sandboxed copy of the project (repo fix) or the
root-cause task's in-memory files, and the tools the model is given for it. Every path the model
names is checked; its mistakes come back to it as an error string, never as an exception."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from rigbench.sandbox import Limits, PathRefused, TestOutcome, Workdir, run_pytest
from rigbench.suites.agent._exchange import parse_arguments
from rigbench.suites.agent._task import AgentTask
from rigbench.suites.agent._toolcalls import tool

__all__ = ["LIST", "READ", "REPORT", "RUN_TESTS", "WRITE", "PseudoFS", "Workspace"]

READ = tool("read_file", "Read a text file of the project.", {"path": {"type": "string"}}, ["path"])
WRITE = tool(
    "write_file",
    "Replace the whole content of a file of the project.",
    {"path": {"type": "string"}, "content": {"type": "string"}},
    ["path", "content"],
)
LIST = tool(
    "list_files",
    "List the files under a directory of the project ('.' for all).",
    {"path": {"type": "string"}},
    [],
)
RUN_TESTS = tool("run_tests", "Run the project's test suite with pytest and return the summary.", {}, [])
REPORT = tool(
    "report_root_cause",
    "Report the root cause of the failure. Call once, when sure.",
    {"file": {"type": "string"}, "function": {"type": "string"}, "explanation": {"type": "string"}},
    ["file", "function", "explanation"],
)


class PseudoFS:
    """The root-cause task's in-memory files; same path rules as the on-disk sandbox."""

    def __init__(self, files_: dict[str, str]) -> None:
        self.files = files_
        self.refused = 0

    def _key(self, rel: str) -> str:
        if not isinstance(rel, str) or rel.startswith(("/", "\\", "~")) or ".." in Path(rel).parts:
            self.refused += 1
            raise PathRefused(f"path {rel!r} refused: use a relative path inside the repository")
        return str(Path(rel)) if rel not in (".", "") else "."

    def read_file(self, rel: str) -> str:
        key = self._key(rel)
        if key not in self.files:
            raise FileNotFoundError(f"no such file: {rel}")
        return self.files[key]

    def list_files(self, rel: str = ".") -> list[str]:
        key = self._key(rel or ".")
        return sorted(f for f in self.files if key == "." or f.startswith(key.rstrip("/") + "/"))


class Workspace:
    """One trial's files and tools. A repo fix gets a fresh sandboxed copy of the project (call
    `cleanup`); a root-cause task gets the task's files in memory and a tool to report its answer."""

    def __init__(self, task: AgentTask, limits: Limits, *, allow_unconfined: bool) -> None:
        self.task = task
        self.limits = limits
        self.allow_unconfined = allow_unconfined
        self.sandbox: Workdir | None = None
        self.fs: PseudoFS | Workdir
        if task.kind == "repo_fix":
            self.sandbox = Workdir.copy_of(task.path / "project")
            self.fs = self.sandbox
            self.tools = [READ, WRITE, LIST, RUN_TESTS]
        else:
            self.fs = PseudoFS(dict(task.spec["files"]))
            self.tools = [READ, LIST, REPORT]

    @property
    def refused(self) -> int:
        """File-tool calls refused for leaving the task directory."""
        return self.fs.refused

    def run_tests(self) -> TestOutcome:
        """The project's tests in the sandbox (blocking: call it in a thread)."""
        assert self.sandbox is not None, "run_tests on a task without a project copy"
        tests = str(self.task.spec.get("tests_dir", "tests"))
        return run_pytest(self.sandbox.root, tests, self.limits, allow_unconfined=self.allow_unconfined)

    async def call(self, call: dict[str, Any]) -> tuple[str, dict[str, Any] | None]:
        """Run one tool call: (the tool result for the model, the submitted answer if this call was one)."""
        name = (call.get("function") or {}).get("name")
        args = parse_arguments(call)
        if args is None:
            return "error: arguments are not a JSON object", None
        fs, sandbox = self.fs, self.sandbox
        try:
            if name == "read_file":
                return fs.read_file(str(args.get("path", ""))), None
            if name == "list_files":
                return "\n".join(fs.list_files(str(args.get("path") or "."))) or "(no files)", None
            if name == "write_file" and sandbox is not None:
                return sandbox.write_file(str(args.get("path", "")), str(args.get("content", ""))), None
            if name == "run_tests" and sandbox is not None:
                out = await asyncio.to_thread(self.run_tests)
                return f"{out.passed} passed, {out.failed} failed\n{out.output_tail[-2000:]}", None
            if name == "report_root_cause" and isinstance(fs, PseudoFS):
                return "recorded", args
        except (PathRefused, FileNotFoundError, ValueError, OSError) as e:
            return f"error: {e}", None
        return f"error: unknown tool {name!r}", None

    def cleanup(self) -> None:
        if self.sandbox is not None:
            self.sandbox.cleanup()
