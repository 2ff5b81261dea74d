"""Shared fixtures. Live tests (marker `live`) run against the real embedded rig: llama.cpp
`llama-server` (found or built once, cached) serving SmolLM2-135M-Instruct (fetched once, cached).

Set RIGBENCH_LLAMA_SERVER / RIGBENCH_LLAMA_MODEL to use other files; the session fixture below
exports both so every live test sees the same binary and model.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from rigbench.client import ChatClient
from rigbench.rig import (
    EMBEDDED_MODEL,
    EngineProcess,
    RigInfo,
    free_port,
)
from rigbench.rig.engines._llamacpp._smoke import ensure_llama_server
from tests.skip_check import (  # noqa: F401  (hooks: `requires` marker, CI skip check)
    pytest_collectreport,
    pytest_runtest_logreport,
    pytest_runtest_setup,
    pytest_sessionfinish,
    pytest_terminal_summary,
)


def _embedded_files() -> tuple[Path, Path]:
    """The llama-server `rigbench run` would use here (RIGBENCH_LLAMA_SERVER's, else the prebuilt, else the
    build: fetched or built once, smoke-tested, cached) and the model."""
    model = Path(os.environ["RIGBENCH_LLAMA_MODEL"]) if os.environ.get("RIGBENCH_LLAMA_MODEL") else EMBEDDED_MODEL.resolve()

    def report(done: int, total: int | None, msg: str) -> None:
        if total and done % 25 == 0:
            print(f"[rigbench tests] {msg}: {done}/{total}", file=sys.stderr, flush=True)

    def note(msg: str) -> None:
        print(f"[rigbench tests] {msg}", file=sys.stderr, flush=True)

    engine = ensure_llama_server(None, lambda: model, progress=report, note=note)
    return Path(engine.path), model


@pytest.fixture(scope="session", autouse=True)
def _embedded_env(request: pytest.FixtureRequest) -> None:
    """When live tests are selected, make sure the binary and model exist and export their paths."""
    if not any(item.get_closest_marker("live") for item in request.session.items):
        return
    binary, model = _embedded_files()
    os.environ["RIGBENCH_LLAMA_SERVER"] = str(binary)
    os.environ["RIGBENCH_LLAMA_MODEL"] = str(model)


@dataclass(frozen=True)
class LiveRig:
    info: RigInfo
    binary: Path
    model: Path
    log: Path

    def client(self) -> ChatClient:
        return ChatClient(self.info.base_url)


def wait_for_batches(out: Path, n: int, timeout_s: float = 300) -> Path:
    """The run directory under `out` once its records hold `n` speed batches (a run to interrupt)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for d in out.iterdir() if out.exists() else []:
            rec = d / "records.jsonl"
            if rec.exists() and rec.read_text().count('"speed_batch"') >= n:
                return d
        time.sleep(0.2)
    raise AssertionError(f"no run reached {n} speed batches in {timeout_s} s")


def start_llama_server(binary: Path, model: Path, log: Path, *, ctx: int = 8192, slots: int = 4,
                       extra: list[str] | None = None, timeout_s: float = 120) -> tuple[EngineProcess, str]:
    """Start llama-server on a free port and wait for /health; returns (process, base URL)."""
    import urllib.request

    port = free_port()
    argv = [str(binary), "-m", str(model), "--host", "127.0.0.1", "--port", str(port), "-c", str(ctx),
            "-np", str(slots), "--kv-unified", "--jinja", "--metrics", "--no-webui", "--alias", "smollm2",
            *(extra or [])]
    proc = EngineProcess(argv, log)
    proc.start(port=port)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.exit_code() is not None:
            raise RuntimeError(f"llama-server exited: {proc.log_tail()}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as r:
                if r.status == 200:
                    return proc, f"http://127.0.0.1:{port}/v1"
        except OSError:
            pass
        time.sleep(0.2)
    proc.stop()
    raise RuntimeError(f"llama-server not healthy in {timeout_s} s: {proc.log_tail()}")


@pytest.fixture(scope="session")
def live_rig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveRig]:
    """One running embedded llama-server (SmolLM2-135M, --jinja --metrics, 4 slots x 2048 ctx) per session."""
    binary, model = _embedded_files()
    log = tmp_path_factory.mktemp("live_rig") / "llama-server.log"
    proc, base = start_llama_server(binary, model, log)
    info = RigInfo(engine="llamacpp", model="smollm2", base_url=base, server_root=base[:-3],
                   context_length=8192, slots=4)
    try:
        yield LiveRig(info=info, binary=binary, model=model, log=log)
    finally:
        proc.stop()


@pytest.fixture
def run_async() -> Iterator[object]:
    """Run a coroutine to completion from a sync test."""
    yield lambda coro: asyncio.run(coro)
