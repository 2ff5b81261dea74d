"""How a rig is started: a typed launch spec per engine, a verbatim command or container, or an
endpoint that is already running. `argv_for(spec)` turns a spec into the exact argv to spawn.

Flag spellings are the engines' own (vLLM `vllm serve --help`, SGLang `server_args.py`, llama.cpp
`common/arg.cpp`, Ollama `envconfig`); docs/engines.md names the versions they were read from.
"""

from __future__ import annotations

import json
import shlex
from typing import Annotated, Any, Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, Field, field_validator

from rigbench.errors import UsageError

__all__ = [
    "VLLM_API_SERVER_MODULE",
    "CommandLaunch",
    "ContainerLaunch",
    "EndpointSpec",
    "LaunchCommand",
    "LaunchSpec",
    "LlamaCppLaunch",
    "OllamaLaunch",
    "SGLangLaunch",
    "SGLangSpeculative",
    "VLLMLaunch",
    "argv_for",
    "command_for",
]


class _Spec(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class _EngineSpec(_Spec):
    host: str = "127.0.0.1"
    port: int | None = None  # None: the engine's default port
    executable: list[str] | None = None  # None: the engine's usual command
    extra_args: list[str] = Field(default_factory=list)  # appended verbatim

    @field_validator("extra_args", mode="before")
    @classmethod
    def _split(cls, v: Any) -> Any:
        return shlex.split(v) if isinstance(v, str) else v


class VLLMLaunch(_EngineSpec):
    """`vllm serve MODEL ...`

    `model` is a Hugging Face id or directory, a .gguf (converted once to a bf16 directory), or
    "embedded" (the bundled SmolLM2-135M, converted). With no `executable`, the launched rig finds
    vLLM (`vllm` on PATH or importable) or installs the managed CPU venv (rig/_vllm_env.py).
    """

    kind: Literal["vllm"] = "vllm"
    model: str
    served_model_name: str | None = None
    tensor_parallel_size: int | None = None
    max_model_len: int | None = None
    gpu_memory_utilization: float | None = None
    max_num_seqs: int | None = None
    max_num_batched_tokens: int | None = None
    # --speculative-config JSON, e.g. {"method": "eagle3", "model": "...", "num_speculative_tokens": 4}
    speculative_config: dict[str, Any] | None = None
    tool_call_parser: str | None = None  # also turns on --enable-auto-tool-choice
    reasoning_parser: str | None = None
    generation_config: str | None = None  # "auto" | "vllm" | a folder
    dtype: str | None = None  # --dtype (CPU: bfloat16)
    enforce_eager: bool = False  # --enforce-eager: no torch.compile (faster start, slower decode)
    cpu_kvcache_space_gib: float | None = None  # VLLM_CPU_KVCACHE_SPACE: the KV pool on a CPU build


class SGLangSpeculative(_Spec):
    algorithm: str  # EAGLE, EAGLE3, NEXTN, STANDALONE, NGRAM, ...
    draft_model_path: str | None = None
    num_steps: int | None = None
    eagle_topk: int | None = None
    num_draft_tokens: int | None = None


class SGLangLaunch(_EngineSpec):
    """`python -m sglang.launch_server --model-path MODEL ...`"""

    kind: Literal["sglang"] = "sglang"
    model: str
    served_model_name: str | None = None
    tensor_parallel_size: int | None = None
    context_length: int | None = None
    mem_fraction_static: float | None = None
    max_running_requests: int | None = None
    speculative: SGLangSpeculative | None = None
    tool_call_parser: str | None = None
    reasoning_parser: str | None = None
    enable_metrics: bool = True  # rigbench reads /metrics; SGLang serves it only with this flag


class LlamaCppLaunch(_EngineSpec):
    """`llama-server -m MODEL.gguf ...` (the embedded default rig has its own config in the rig layer)."""

    kind: Literal["llamacpp"] = "llamacpp"
    model: str  # path to a GGUF file
    alias: str | None = None
    ctx_size: int | None = None  # total over all slots
    parallel: int | None = None
    n_gpu_layers: int | None = None
    draft_model: str | None = None
    spec_type: str | None = None  # e.g. "draft-simple"; defaults to that when draft_model is set
    draft_max: int | None = None  # --spec-draft-n-max (--draft-max was removed)
    reasoning_format: str | None = None
    jinja: bool = True  # needed for tool calls and reasoning_effort
    metrics: bool = True


class OllamaLaunch(_EngineSpec):
    """`ollama serve`, configured by environment; the model is pulled and loaded on first request."""

    kind: Literal["ollama"] = "ollama"
    model: str  # the tag requests name, e.g. "qwen3:8b"
    context_length: int | None = None  # OLLAMA_CONTEXT_LENGTH
    num_parallel: int | None = None  # OLLAMA_NUM_PARALLEL
    flash_attention: bool | None = None  # OLLAMA_FLASH_ATTENTION
    kv_cache_type: str | None = None  # OLLAMA_KV_CACHE_TYPE: f16, q8_0, q4_0


class CommandLaunch(_Spec):
    """A command the user gives verbatim (e.g. `vllm serve ...` with flags rigbench does not model)."""

    kind: Literal["command"] = "command"
    argv: list[str]
    host: str = "127.0.0.1"
    port: int  # where the command will listen; rigbench cannot guess it from arbitrary flags
    engine: str | None = None  # None: detect from the endpoint once it is up
    model: str | None = None  # the name requests use; None: the first of /v1/models

    @field_validator("argv", mode="before")
    @classmethod
    def _split(cls, v: Any) -> Any:
        return shlex.split(v) if isinstance(v, str) else v


class ContainerLaunch(CommandLaunch):
    """A container command given verbatim (`docker run ...`, `podman run ...`).

    Stopping it must stop the container, not only the client process: `container_name` is the
    `--name` it was given, if any.
    """

    kind: Literal["container"] = "container"  # type: ignore[assignment]

    @property
    def container_name(self) -> str | None:
        for i, arg in enumerate(self.argv):
            if arg == "--name" and i + 1 < len(self.argv):
                return self.argv[i + 1]
            if arg.startswith("--name="):
                return arg.split("=", 1)[1]
        return None


class EndpointSpec(_Spec):
    """A server that is already running; rigbench attaches and never starts or stops it."""

    kind: Literal["endpoint"] = "endpoint"
    base_url: str  # OpenAI base URL, e.g. http://host:8000/v1
    engine: str | None = None  # None: detect
    model: str | None = None


LaunchSpec = Annotated[
    VLLMLaunch | SGLangLaunch | LlamaCppLaunch | OllamaLaunch
    | CommandLaunch | ContainerLaunch | EndpointSpec,
    Field(discriminator="kind"),
]

_DEFAULT_PORT = {"vllm": 8000, "sglang": 30000, "llamacpp": 8080, "ollama": 11434}


class LaunchCommand(NamedTuple):
    argv: list[str]
    env: dict[str, str]  # variables to add to the inherited environment


def argv_for(spec: Any) -> list[str]:
    """The exact argv that starts `spec` (see `command_for` for the environment it also needs)."""
    return command_for(spec).argv


def command_for(spec: Any) -> LaunchCommand:
    if isinstance(spec, EndpointSpec):
        raise UsageError(f"the rig at {spec.base_url} is an already-running endpoint: rigbench does not "
                         "launch it. Give a launch spec or a command to have rigbench start the server.")
    if isinstance(spec, CommandLaunch):  # ContainerLaunch included
        if not spec.argv:
            raise UsageError(f"the {spec.kind} rig has an empty command: give the full command line to run")
        return LaunchCommand(list(spec.argv), {})
    if isinstance(spec, VLLMLaunch):
        env = {} if spec.cpu_kvcache_space_gib is None else {"VLLM_CPU_KVCACHE_SPACE": f"{spec.cpu_kvcache_space_gib:g}"}
        return LaunchCommand(_vllm_argv(spec), env)
    if isinstance(spec, SGLangLaunch):
        return LaunchCommand(_sglang_argv(spec), {})
    if isinstance(spec, LlamaCppLaunch):
        return LaunchCommand(_llamacpp_argv(spec), {})
    if isinstance(spec, OllamaLaunch):
        return _ollama_command(spec)
    raise TypeError(f"not a launch spec: {type(spec).__name__}")


def _opt(argv: list[str], flag: str, value: Any) -> None:
    if value is not None:
        argv += [flag, str(value)]


def _finish(engine: str, spec: _EngineSpec, argv: list[str]) -> list[str]:
    """Append extra_args, refusing one that repeats a flag the typed config already set."""
    typed = {a.split("=", 1)[0] for a in argv if a.startswith("-")}
    clashes = sorted({a.split("=", 1)[0] for a in spec.extra_args if a.startswith("-")} & typed)
    if clashes:
        raise UsageError(
            f"extra_args repeats {', '.join(clashes)}, which the {engine} config already sets "
            f"(argv so far: {shlex.join(argv)}). Set it in one place only."
        )
    return argv + list(spec.extra_args)


VLLM_API_SERVER_MODULE = "vllm.entrypoints.openai.api_server"


def _vllm_argv(s: VLLMLaunch) -> list[str]:
    exe = s.executable or ["vllm", "serve"]
    # `vllm serve` takes the model as its first argument; the api_server module only as --model
    model = ["--model", s.model] if exe[-1] == VLLM_API_SERVER_MODULE else [s.model]
    argv = [*exe, *model, "--host", s.host, "--port", str(s.port or _DEFAULT_PORT["vllm"])]
    _opt(argv, "--served-model-name", s.served_model_name)
    _opt(argv, "--tensor-parallel-size", s.tensor_parallel_size)
    _opt(argv, "--max-model-len", s.max_model_len)
    _opt(argv, "--gpu-memory-utilization", s.gpu_memory_utilization)
    _opt(argv, "--max-num-seqs", s.max_num_seqs)
    _opt(argv, "--max-num-batched-tokens", s.max_num_batched_tokens)
    if s.speculative_config is not None:
        spec_json = json.dumps(s.speculative_config, sort_keys=True, separators=(",", ":"))
        argv += ["--speculative-config", spec_json]
    if s.tool_call_parser is not None:
        argv += ["--enable-auto-tool-choice", "--tool-call-parser", s.tool_call_parser]
    _opt(argv, "--reasoning-parser", s.reasoning_parser)
    _opt(argv, "--generation-config", s.generation_config)
    _opt(argv, "--dtype", s.dtype)
    if s.enforce_eager:
        argv.append("--enforce-eager")
    return _finish("vllm", s, argv)


def _sglang_argv(s: SGLangLaunch) -> list[str]:
    argv = [*(s.executable or ["python", "-m", "sglang.launch_server"]), "--model-path", s.model,
            "--host", s.host, "--port", str(s.port or _DEFAULT_PORT["sglang"])]
    _opt(argv, "--served-model-name", s.served_model_name)
    _opt(argv, "--tp-size", s.tensor_parallel_size)
    _opt(argv, "--context-length", s.context_length)
    _opt(argv, "--mem-fraction-static", s.mem_fraction_static)
    _opt(argv, "--max-running-requests", s.max_running_requests)
    if s.speculative is not None:
        sp = s.speculative
        argv += ["--speculative-algorithm", sp.algorithm]
        _opt(argv, "--speculative-draft-model-path", sp.draft_model_path)
        _opt(argv, "--speculative-num-steps", sp.num_steps)
        _opt(argv, "--speculative-eagle-topk", sp.eagle_topk)
        _opt(argv, "--speculative-num-draft-tokens", sp.num_draft_tokens)
    _opt(argv, "--tool-call-parser", s.tool_call_parser)
    _opt(argv, "--reasoning-parser", s.reasoning_parser)
    if s.enable_metrics:
        argv.append("--enable-metrics")
    return _finish("sglang", s, argv)


def _llamacpp_argv(s: LlamaCppLaunch) -> list[str]:
    argv = [*(s.executable or ["llama-server"]), "-m", s.model,
            "--host", s.host, "--port", str(s.port or _DEFAULT_PORT["llamacpp"])]
    _opt(argv, "--alias", s.alias)
    _opt(argv, "-c", s.ctx_size)
    _opt(argv, "-np", s.parallel)
    _opt(argv, "-ngl", s.n_gpu_layers)
    if s.draft_model is not None:
        argv += ["-md", s.draft_model, "--spec-type", s.spec_type or "draft-simple"]
        _opt(argv, "--spec-draft-n-max", s.draft_max)
    elif s.spec_type is not None:  # draft-free kinds (n-gram) need no draft model
        argv += ["--spec-type", s.spec_type]
        _opt(argv, "--spec-draft-n-max", s.draft_max)
    _opt(argv, "--reasoning-format", s.reasoning_format)
    if s.jinja:
        argv.append("--jinja")
    if s.metrics:
        argv.append("--metrics")
    return _finish("llamacpp", s, argv)


def _ollama_command(s: OllamaLaunch) -> LaunchCommand:
    env = {"OLLAMA_HOST": f"{s.host}:{s.port or _DEFAULT_PORT['ollama']}"}
    if s.context_length is not None:
        env["OLLAMA_CONTEXT_LENGTH"] = str(s.context_length)
    if s.num_parallel is not None:
        env["OLLAMA_NUM_PARALLEL"] = str(s.num_parallel)
    if s.flash_attention is not None:
        env["OLLAMA_FLASH_ATTENTION"] = "1" if s.flash_attention else "0"
    if s.kv_cache_type is not None:
        env["OLLAMA_KV_CACHE_TYPE"] = s.kv_cache_type
    return LaunchCommand(_finish("ollama", s, [*(s.executable or ["ollama"]), "serve"]), env)
