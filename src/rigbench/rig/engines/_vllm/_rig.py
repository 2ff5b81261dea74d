"""A launched vLLM rig: find or install vLLM, make the model servable, start, and read its facts.

What vLLM decides at start-up and tells only in its log (the KV pool in tokens, the engine
configuration, whether torch.compile ran or loaded its cache) is read from the log rigbench
captures; the pool is cross-checked with `vllm:cache_config_info` on /metrics. The patterns are
the vLLM engine module's (`parse_vllm_log`, `pool_from_metrics` in rig/engines/_vllm.py).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rigbench.analysis import kv_architecture_from_path, kv_capacity
from rigbench.records import StartupTiming
from rigbench.rig._fingerprint import ModelInfo, model_info
from rigbench.rig._models import EMBEDDED_MODEL, LocalFile
from rigbench.rig._process import EngineProcess, free_port
from rigbench.rig._rig import LaunchedRig, RigEngine
from rigbench.rig.engines._vllm._adapter import VLLMAdapter
from rigbench.rig.engines._vllm._env import (
    Progress,
    find_vllm,
    hf_copy_of_gguf,
    install_vllm,
    vllm_serve_argv,
)
from rigbench.rig.engines._vllm._kv import VLLMAccounting
from rigbench.rig.engines._vllm._launch import (
    START_TIMEOUT_S,
    VLLMLaunch,
    vllm_command,
    with_cached_token_counts,
)
from rigbench.rig.engines._vllm._log import parse_vllm_log, pool_from_metrics

__all__ = ["VLLMRig"]

def _chat_template(model_dir: Path) -> str | None:
    """The chat template vLLM loads from a Hugging Face directory (chat_template.jinja, else tokenizer_config)."""
    jinja = model_dir / "chat_template.jinja"
    try:
        if jinja.is_file():
            return jinja.read_text()
        cfg = model_dir / "tokenizer_config.json"
        if cfg.is_file():
            t = json.loads(cfg.read_text()).get("chat_template")
            return t if isinstance(t, str) else None
    except (OSError, ValueError):
        return None
    return None


class VLLMRig(LaunchedRig):
    """vLLM started by rigbench from a `VLLMLaunch` spec (plan rigs and `rigbench run --engine vllm`)."""

    def __init__(self, spec: VLLMLaunch, log_path: Path, *, engine: RigEngine, api_key: str | None = None,
                 note: Callable[[str], None] = lambda msg: None, progress: Progress | None = None,
                 start_timeout_s: float = START_TIMEOUT_S) -> None:
        if spec.port is None:
            spec = spec.model_copy(update={"port": free_port(spec.host)})
        self.spec = spec
        self._note = note
        self._progress = progress
        self._prepared = False
        cmd = vllm_command(spec)
        model = ModelInfo(path=spec.model, served_name=spec.served_model_name, source="as given to vllm")
        assert spec.port is not None
        super().__init__(cmd.argv, engine=engine, port=spec.port, log_path=log_path, model=model, host=spec.host,
                         health_path=VLLMAdapter.health_path, start_timeout_s=start_timeout_s, api_key=api_key,
                         env=cmd.env)
        self.vllm_python: Path | None = None

    def prepare(self) -> None:
        """Find or install vLLM and convert the model if needed (slow once, cached); idempotent."""
        if self._prepared:
            return
        spec = self.spec
        updates: dict[str, Any] = {}
        install = None
        if spec.executable is None:
            install = find_vllm()
            if install is None:
                self._note("vLLM not found: installing the managed CPU venv once (about 3 min and 3.4 GB "
                           "under the user cache; cached afterwards)")
                install = install_vllm(self._progress)
            self._note(f"vLLM {install.version or '?'} ({install.origin}): {install.python}")
            self.vllm_python = install.python
            updates["executable"] = vllm_serve_argv(install.python)
        gguf: Path | None = None
        source = None
        if spec.model == "embedded":
            gguf = EMBEDDED_MODEL.resolve()
            source = f"converted from {EMBEDDED_MODEL.describe()} (sha256 {EMBEDDED_MODEL.sha256[:16]}…)"
        elif spec.model.endswith(".gguf"):
            gguf = LocalFile(Path(spec.model)).resolve()
            source = f"converted from {gguf}"
        if gguf is not None:
            if install is None:
                install = find_vllm() or install_vllm(self._progress)
            hf_dir = hf_copy_of_gguf(gguf, install, self._progress)
            updates["model"] = str(hf_dir)
            if spec.served_model_name is None:
                updates["served_model_name"] = hf_dir.name
        # the version of the vLLM that runs it: unknown when the spec names its own executable
        version = install.version if install is not None and spec.executable is None else None
        self.spec, said = with_cached_token_counts(spec.model_copy(update=updates), version)
        self._note(said)
        cmd = vllm_command(self.spec)
        self.argv = cmd.argv
        self.process = EngineProcess(cmd.argv, self.process.log_path, env=cmd.env,
                                     death_signal=self.process.death_signal)
        served = self.spec.served_model_name
        model_dir = Path(self.spec.model)
        weights = model_dir / "model.safetensors"
        if weights.is_file():
            self.model = model_info(weights, source=source or "local Hugging Face directory", served_name=served)
        else:
            self.model = ModelInfo(path=self.spec.model, served_name=served, source=source or "as given to vllm")
        self.served_name = served
        self._prepared = True

    async def start(self) -> StartupTiming:
        if not self._prepared:
            await asyncio.to_thread(self.prepare)
        log_start = self.process.log_path.stat().st_size if self.process.log_path.exists() else 0
        startup = await super().start()
        try:
            text = self.process.log_path.read_bytes()[log_start:].decode(errors="replace")
        except OSError:
            text = ""
        facts = parse_vllm_log(text)
        try:
            status, metrics = await self.client.get_text(self.client.server_root + "/metrics", timeout_s=10)
            if status == 200:
                facts.update(pool_from_metrics(metrics))
        except Exception:  # /metrics is a cross-check; the log figure stands alone without it
            pass
        facts.update(self._argv_facts())
        if self.spec.max_num_seqs is not None:  # launched by rigbench: the flag is the slot count
            facts["slots"] = self.spec.max_num_seqs
        template = _chat_template(Path(self.spec.model))
        if template and not self._facts.get("chat_template"):
            facts["chat_template"] = template  # what vLLM renders with (its own API does not expose it)
        self._facts.update(facts)
        self._facts["kv_prediction"] = self._kv_prediction()
        self.startup = startup.model_copy(update={"compile_cache": facts.get("compile_cache"),
                                                  "compile_s": facts.get("compile_s")})
        return self.startup

    def _kv_prediction(self) -> dict[str, Any] | None:
        """rigbench's KV planner for this rig (vLLM's block accounting), to set beside the pool vLLM reports."""

        f = self._facts
        gib = self.spec.cpu_kvcache_space_gib
        context = f.get("context_length")
        config = Path(self.spec.model) / "config.json"
        if gib is None or not context or not config.is_file():
            return None  # on a GPU the budget is what vLLM measured free, which only its log tells
        try:
            arch = kv_architecture_from_path(config)
            acc = VLLMAccounting(block_size=int(f.get("block_size") or 16),
                                 max_num_batched_tokens=int(f.get("max_num_batched_tokens_log") or 2048),
                                 batches_in_flight=2 if f.get("async_scheduling_log") else 1)
            dtype = str(self.spec.dtype or "bf16")
            cap = kv_capacity(arch, budget_bytes=int(gib * 1024**3), context_tokens=int(context), blocks=acc,
                              kv_dtype=dtype if dtype != "auto" else "bf16",
                              server_pool_tokens=f.get("kv_pool_tokens_log"), server_pool_source="vLLM log")
        except Exception as e:  # a config the planner cannot read: say so, do not fail the run
            return {"error": f"{type(e).__name__}: {e}"}
        return {"tokens": cap.tokens, "sessions": round(cap.sessions, 3), "budget_gib": gib,
                "context": int(context), "block_size": acc.block_size, "architecture": arch.source,
                "server_pool_tokens": cap.server_pool_tokens, "error_vs_server": cap.prediction_error}

    def _argv_facts(self) -> dict[str, Any]:
        s = self.spec
        out: dict[str, Any] = {"argv": list(self.argv), "dtype": s.dtype or "auto",
                               "max_model_len_flag": s.max_model_len, "max_num_seqs": s.max_num_seqs,
                               "max_num_batched_tokens": s.max_num_batched_tokens,
                               "cpu_kvcache_space_gib": s.cpu_kvcache_space_gib,
                               "tool_call_parser": s.tool_call_parser}
        if s.speculative_config is not None:
            out["speculative_config"] = json.loads(json.dumps(s.speculative_config))
        return out
