"""KV-cache capacity: per-token bytes, sliding windows, sessions at a context."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rigbench.analysis._kvcache import (
    KVArchitecture,
    kv_architecture_from_path,
    kv_capacity,
)
from rigbench.errors import UsageError

GIB = 1024**3


def test_dense_bytes_per_token() -> None:
    # SmolLM2-135M: 30 layers, 3 KV heads, head dim 64, f16 -> 2*3*64*2*30 = 23040 B/token
    arch = KVArchitecture(layers=30, kv_heads=3, head_dim=64)
    cap = kv_capacity(arch, budget_bytes=GIB, context_tokens=8192, kv_dtype="f16")
    assert cap.bytes_per_token_all_layers == 23040
    assert cap.tokens == cap.tokens_without_windows == GIB // 23040
    assert cap.sessions == pytest.approx(GIB / (23040 * 8192))


def test_sliding_windows_multiply_sessions_at_long_context() -> None:
    # seed 003's shape: 52 layers, GQA 32:2, head dim 6656/32, 3 local (2048) per global layer
    glimmer = KVArchitecture.with_pattern(layers=52, kv_heads=2, head_dim=208, window=2048, local_per_global=3)
    dense = KVArchitecture(layers=52, kv_heads=2, head_dim=208)
    assert glimmer.global_layers == 13
    a = kv_capacity(glimmer, budget_bytes=int(76.6 * GIB), context_tokens=65536)
    b = kv_capacity(dense, budget_bytes=int(76.6 * GIB), context_tokens=65536)
    # 13 of 52 layers keep the full 64K; 39 keep 2048: (13*65536 + 39*2048) / (52*65536) of the dense bytes
    assert a.sessions / b.sessions == pytest.approx((52 * 65536) / (13 * 65536 + 39 * 2048))
    # same order as vLLM's reported 73.54 sessions / 4,819,435 tokens; engines differ in bookkeeping
    assert 40 < a.sessions < 110


def test_windows_do_not_help_short_contexts() -> None:
    glimmer = KVArchitecture.with_pattern(layers=52, kv_heads=2, head_dim=208, window=2048, local_per_global=3)
    dense = KVArchitecture(layers=52, kv_heads=2, head_dim=208)
    a = kv_capacity(glimmer, budget_bytes=GIB, context_tokens=1024)
    b = kv_capacity(dense, budget_bytes=GIB, context_tokens=1024)
    assert a.sessions == pytest.approx(b.sessions)


def test_kv_dtype_halves_bytes() -> None:
    arch = KVArchitecture(layers=10, kv_heads=8, head_dim=128)
    bf16 = kv_capacity(arch, budget_bytes=GIB, context_tokens=4096, kv_dtype="bf16")
    fp8 = kv_capacity(arch, budget_bytes=GIB, context_tokens=4096, kv_dtype="fp8")
    assert fp8.tokens == pytest.approx(2 * bf16.tokens, rel=1e-6)
    with pytest.raises(UsageError):
        kv_capacity(arch, budget_bytes=GIB, context_tokens=4096, kv_dtype="int3")


def test_server_pool_is_carried_beside_the_estimate() -> None:
    arch = KVArchitecture(layers=10, kv_heads=8, head_dim=128)
    cap = kv_capacity(arch, budget_bytes=GIB, context_tokens=4096, server_pool_tokens=12345,
                      server_pool_source="vLLM log")
    assert cap.server_pool_tokens == 12345 and cap.tokens != 12345


def test_hf_config_with_layer_types(tmp_path: Path) -> None:
    cfg = {"num_hidden_layers": 4, "num_attention_heads": 8, "num_key_value_heads": 2, "hidden_size": 512,
           "sliding_window": 128,
           "layer_types": ["sliding_attention", "sliding_attention", "sliding_attention", "full_attention"]}
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    arch = kv_architecture_from_path(tmp_path)
    assert (arch.layers, arch.kv_heads, arch.head_dim) == (4, 2, 64)
    assert arch.layer_windows == [128, 128, 128, None]


def test_gemma_style_pattern(tmp_path: Path) -> None:
    cfg = {"text_config": {"num_hidden_layers": 12, "num_attention_heads": 8, "num_key_value_heads": 4,
                           "head_dim": 256, "hidden_size": 1000, "sliding_window": 512, "sliding_window_pattern": 6}}
    p = tmp_path / "config.json"
    p.write_text(json.dumps(cfg))
    arch = kv_architecture_from_path(p)
    assert arch.head_dim == 256 and arch.global_layers == 2


def test_missing_shape_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(UsageError):
        kv_architecture_from_path(tmp_path)


# -- vLLM's block accounting and the server pool -------------------------------------------------


def test_server_pool_alone_gives_sessions_without_an_architecture() -> None:
    from rigbench.analysis._kvcache import sessions_from_pool

    cap = sessions_from_pool(4_819_435, 65_536)  # the second seed's vLLM log
    assert round(cap.sessions, 2) == 73.54
    with pytest.raises(UsageError):
        sessions_from_pool(0, 65_536)


def test_vllm_accounting_reproduces_the_seeds_pool_with_the_configs_head_dim() -> None:
    """Seed 003: 76.6 GiB of KV, 52 layers (3 sliding of 2048 per global), GQA 32:2 -> 4,819,435 tokens, 73.54x.

    With head_dim = hidden/heads (208) the estimate is far off; with the config's head_dim (128)
    and vLLM's blocks (16 tokens; a sliding layer keeps ceil((2048 - 1 + 2 x 2048) / 16) + 1 = 385
    blocks, not 2048/16 = 128) it lands on the reported pool.
    """
    from rigbench.rig.engines._vllm import VLLMAccounting

    arch = KVArchitecture.with_pattern(layers=52, kv_heads=2, head_dim=128, window=2048, local_per_global=3)
    acc = VLLMAccounting(block_size=16, max_num_batched_tokens=2048, batches_in_flight=2)
    assert acc.blocks_per_request(2048, 65536) == 385
    assert acc.blocks_per_request(None, 65536) == 4096
    cap = kv_capacity(arch, budget_bytes=int(76.6 * GIB), context_tokens=65536, blocks=acc,
                      server_pool_tokens=4_819_435)
    assert round(cap.sessions, 2) == 73.54
    assert cap.prediction_error is not None and abs(cap.prediction_error) < 1e-4
    # the window alone (what the per-token estimate keeps) overstates sessions by 8%
    plain = kv_capacity(arch, budget_bytes=int(76.6 * GIB), context_tokens=65536)
    assert plain.sessions > cap.sessions * 1.05
    wrong_dim = KVArchitecture.with_pattern(layers=52, kv_heads=2, head_dim=208, window=2048, local_per_global=3)
    assert kv_capacity(wrong_dim, budget_bytes=int(76.6 * GIB), context_tokens=65536, blocks=acc).sessions < 50


def test_vllm_accounting_rounds_the_pool_to_blocks() -> None:
    """SmolLM2-135M on vLLM CPU with VLLM_CPU_KVCACHE_SPACE=1: the pool is whole 16-token blocks."""
    from rigbench.rig.engines._vllm import VLLMAccounting

    arch = KVArchitecture(layers=30, kv_heads=3, head_dim=64)
    cap = kv_capacity(arch, budget_bytes=GIB, context_tokens=2048, blocks=VLLMAccounting())
    assert cap.blocks_total == GIB // (30 * 16 * 2 * 3 * 64 * 2)  # 2912
    assert cap.tokens == cap.blocks_total * 16 == 46_592  # what the live server logs (docs/engines.md)
    assert cap.sessions == pytest.approx(2912 / 128)


def test_head_dim_is_read_from_the_config_when_given(tmp_path: Path) -> None:
    cfg = {"num_hidden_layers": 4, "num_attention_heads": 32, "num_key_value_heads": 2, "hidden_size": 6656,
           "head_dim": 128}
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    assert kv_architecture_from_path(tmp_path).head_dim == 128
    del cfg["head_dim"]
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    assert kv_architecture_from_path(tmp_path).head_dim == 208


def test_kv_command_with_only_the_server_pool() -> None:
    from typer.testing import CliRunner

    from rigbench.cli import app

    res = CliRunner().invoke(app, ["kv", "--server-pool", "4819435", "--context", "65536"],
                             env={"COLUMNS": "120"})
    assert res.exit_code == 0, res.output
    assert "73.54" in res.output and "4,819,435" in res.output
    res = CliRunner().invoke(app, ["kv", "--context", "65536"], env={"COLUMNS": "120"})
    assert isinstance(res.exception, UsageError) and "--server-pool alone" in str(res.exception)


def test_kv_command_takes_block_accounting_from_the_engine() -> None:
    """`--engine vllm` counts in vLLM's blocks (from its engine module); an engine without blocks is refused."""
    from typer.testing import CliRunner

    from rigbench.cli import app

    shape = ["kv", "--layers", "52", "--kv-heads", "2", "--head-dim", "128", "--window", "2048",
             "--local-per-global", "3", "--budget-gib", "76.6", "--context", "65536"]
    res = CliRunner().invoke(app, [*shape, "--engine", "vllm"], env={"COLUMNS": "120"})
    assert res.exit_code == 0, res.output
    assert "vLLM blocks of 16 tokens: 386,158 in the pool, 5,251 per session" in res.output
    assert "73.54" in res.output
    res = CliRunner().invoke(app, [*shape, "--engine", "vllm", "--block-size", "32"], env={"COLUMNS": "120"})
    assert "vLLM blocks of 32 tokens" in res.output
    plain = CliRunner().invoke(app, shape, env={"COLUMNS": "120"})
    assert plain.exit_code == 0 and "blocks" not in plain.output
    res = CliRunner().invoke(app, [*shape, "--engine", "llamacpp"], env={"COLUMNS": "120"})
    assert isinstance(res.exception, UsageError) and "only vllm's block accounting" in str(res.exception)


def test_the_kv_help_names_the_engines_without_loading_engine_packages() -> None:
    """The CLI's help lists the built-in engines with block accounting; importing the CLI reads no installed
    engine package (a slow or broken one must not cost every command)."""
    import subprocess
    import sys

    code = ("import rigbench.cli, rigbench.rig.engines._registry as r; assert not r._loaded, 'registry read'; "
            "from rigbench.cli._kv import _BLOCKS; print(_BLOCKS)")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "vllm"
