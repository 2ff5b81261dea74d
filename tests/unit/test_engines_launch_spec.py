"""Launch specs -> argv: the exact command lines a user would otherwise type (and forget to record)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import TypeAdapter, ValidationError

from rigbench.errors import UsageError
from rigbench.rig._launch_spec import (
    CommandLaunch,
    ContainerLaunch,
    EndpointSpec,
    LaunchSpec,
    argv_for,
    command_for,
)
from rigbench.rig.engines._llamacpp import LlamaCppLaunch
from rigbench.rig.engines._ollama import OllamaLaunch
from rigbench.rig.engines._vllm import VLLMLaunch

SPEC = TypeAdapter(LaunchSpec)


def _flag(argv: list[str], flag: str) -> str:
    return argv[argv.index(flag) + 1]


def test_vllm_seed_command_with_dflash_drafter() -> None:
    # The first seed's recommended configuration, as a plan would write it.
    spec = SPEC.validate_python({
        "kind": "vllm", "model": "Inferact/Muse-Glimmer-30B-NVFP4-W4A4", "served_model_name": "muse-glimmer",
        "tool_call_parser": "muse_glimmer", "reasoning_parser": "muse_glimmer", "generation_config": "auto",
        "max_num_batched_tokens": 8192,
        "speculative_config": {"method": "dflash", "model": "meta-models/Muse-Glimmer-30B-assistant",
                               "num_speculative_tokens": 15},
    })
    argv = argv_for(spec)
    assert argv[:3] == ["vllm", "serve", "Inferact/Muse-Glimmer-30B-NVFP4-W4A4"]
    assert _flag(argv, "--port") == "8000" and _flag(argv, "--host") == "127.0.0.1"
    assert _flag(argv, "--served-model-name") == "muse-glimmer"
    assert "--enable-auto-tool-choice" in argv and _flag(argv, "--tool-call-parser") == "muse_glimmer"
    assert _flag(argv, "--reasoning-parser") == "muse_glimmer"
    assert _flag(argv, "--generation-config") == "auto"
    assert _flag(argv, "--max-num-batched-tokens") == "8192"
    assert json.loads(_flag(argv, "--speculative-config"))["num_speculative_tokens"] == 15
    assert "--tensor-parallel-size" not in argv  # unset fields add no flags


def test_vllm_speculative_config_is_one_stable_json_argument() -> None:
    a = argv_for(VLLMLaunch(model="m", speculative_config={"num_speculative_tokens": 4, "method": "eagle3"}))
    b = argv_for(VLLMLaunch(model="m", speculative_config={"method": "eagle3", "num_speculative_tokens": 4}))
    assert a == b
    assert _flag(a, "--speculative-config") == '{"method":"eagle3","num_speculative_tokens":4}'


def test_vllm_parallel_and_memory_flags() -> None:
    argv = argv_for(VLLMLaunch(model="m", tensor_parallel_size=2, max_model_len=32768,
                               gpu_memory_utilization=0.85, max_num_seqs=64, port=9000, host="0.0.0.0"))
    assert _flag(argv, "--tensor-parallel-size") == "2" and _flag(argv, "--max-model-len") == "32768"
    assert _flag(argv, "--gpu-memory-utilization") == "0.85" and _flag(argv, "--max-num-seqs") == "64"
    assert _flag(argv, "--port") == "9000" and _flag(argv, "--host") == "0.0.0.0"


def test_sglang_eagle3_command() -> None:
    spec = SPEC.validate_python({
        "kind": "sglang", "model": "meta-llama/Llama-3.1-8B-Instruct", "tensor_parallel_size": 1,
        "context_length": 65536, "mem_fraction_static": 0.8,
        "speculative": {"algorithm": "EAGLE3", "draft_model_path": "lmsys/sglang-EAGLE3-LLaMA3.1-Instruct-8B",
                        "num_steps": 3, "eagle_topk": 1, "num_draft_tokens": 4},
        "reasoning_parser": "qwen3", "tool_call_parser": "qwen25",
    })
    argv = argv_for(spec)
    assert argv[:3] == ["python", "-m", "sglang.launch_server"]
    assert _flag(argv, "--model-path") == "meta-llama/Llama-3.1-8B-Instruct"
    assert _flag(argv, "--port") == "30000"
    assert _flag(argv, "--tp-size") == "1" and _flag(argv, "--context-length") == "65536"
    assert _flag(argv, "--speculative-algorithm") == "EAGLE3"
    assert _flag(argv, "--speculative-num-steps") == "3" and _flag(argv, "--speculative-eagle-topk") == "1"
    assert _flag(argv, "--speculative-num-draft-tokens") == "4"
    assert "--enable-metrics" in argv  # rigbench needs /metrics
    assert "--enable-auto-tool-choice" not in argv  # a vLLM flag, not SGLang's


def test_llamacpp_command_uses_current_speculative_flag_names() -> None:
    argv = argv_for(LlamaCppLaunch(model="/m.gguf", draft_model="/d.gguf", draft_max=8, ctx_size=8192,
                                   parallel=2, alias="smol"))
    assert argv[:3] == ["llama-server", "-m", "/m.gguf"]
    assert _flag(argv, "-md") == "/d.gguf" and _flag(argv, "--spec-type") == "draft-simple"
    assert _flag(argv, "--spec-draft-n-max") == "8" and "--draft-max" not in argv  # removed upstream
    assert "--jinja" in argv and "--metrics" in argv
    assert _flag(argv, "-c") == "8192" and _flag(argv, "-np") == "2" and _flag(argv, "--alias") == "smol"


def test_ollama_is_configured_by_environment() -> None:
    cmd = command_for(OllamaLaunch(model="qwen3:8b", port=11500, context_length=8192, num_parallel=4,
                                   flash_attention=True, kv_cache_type="q8_0"))
    assert cmd.argv == ["ollama", "serve"]
    assert cmd.env == {"OLLAMA_HOST": "127.0.0.1:11500", "OLLAMA_CONTEXT_LENGTH": "8192",
                       "OLLAMA_NUM_PARALLEL": "4", "OLLAMA_FLASH_ATTENTION": "1",
                       "OLLAMA_KV_CACHE_TYPE": "q8_0"}


def test_extra_args_are_appended_verbatim_and_may_be_a_string() -> None:
    argv = argv_for(VLLMLaunch(model="m", extra_args="--enforce-eager --kv-cache-dtype fp8"))  # type: ignore[arg-type]
    assert argv[-3:] == ["--enforce-eager", "--kv-cache-dtype", "fp8"]


@pytest.mark.parametrize("extra", [["--port", "9"], ["--max-model-len=4096"]])
def test_extra_args_that_repeat_a_typed_flag_are_refused(extra: list[str]) -> None:
    spec = VLLMLaunch(model="m", max_model_len=8192, extra_args=extra)
    with pytest.raises(UsageError, match="extra_args repeats"):
        argv_for(spec)


def test_container_command_is_verbatim_and_knows_its_name() -> None:
    line = ("docker run --rm --gpus all --name glimmer -p 8000:8000 vllm/vllm-openai:latest "
            "--model Inferact/Muse-Glimmer-30B-NVFP4-W4A4 --speculative-config '{\"method\": \"dflash\"}'")
    spec = SPEC.validate_python({"kind": "container", "argv": line, "port": 8000})
    assert isinstance(spec, ContainerLaunch)
    argv = argv_for(spec)
    assert argv[:2] == ["docker", "run"] and argv[-1] == '{"method": "dflash"}'
    assert spec.container_name == "glimmer"
    assert ContainerLaunch(argv=["docker", "run", "--name=x", "img"], port=1).container_name == "x"
    assert ContainerLaunch(argv=["docker", "run", "img"], port=1).container_name is None


def test_verbatim_command() -> None:
    spec = CommandLaunch(argv=["vllm", "serve", "m", "--port", "8123"], port=8123, engine="vllm")
    assert argv_for(spec) == ["vllm", "serve", "m", "--port", "8123"]
    with pytest.raises(UsageError, match="empty command"):
        argv_for(CommandLaunch(argv=[], port=1))


def test_endpoint_is_never_launched() -> None:
    with pytest.raises(UsageError, match="already-running endpoint"):
        argv_for(EndpointSpec(base_url="http://gpu-box:8000/v1"))


@pytest.mark.parametrize("bad", [
    {"kind": "vllm", "model": "m", "tensor_parallel": 2},  # misspelt key
    {"kind": "sglang"},  # model missing
    {"kind": "tgi", "model": "m"},  # unknown engine
])
def test_bad_specs_fail_validation(bad: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        SPEC.validate_python(bad)


def test_specs_are_frozen() -> None:
    spec = VLLMLaunch(model="m")
    with pytest.raises(ValidationError):
        spec.model = "other"  # type: ignore[misc]
