"""KV-cache capacity: how many tokens and concurrent sessions a memory budget holds.

Per token, each attention layer stores a key and a value vector per KV head:

    bytes per token per layer = 2 x kv_heads x head_dim x bytes per element

A sliding-window layer keeps at most `window` tokens per sequence, so at context length C one
session needs

    sum over layers of min(C, window_layer) x bytes per token per layer

and the budget holds `budget / that` sessions. This is why a model with 3 local layers per global
layer and 2 KV heads (seed 003: 52 layers, GQA 32:2, window 2048) fits several times more
long-context sessions than a model of the same size without them. Engines reserve some of the
pool for their own bookkeeping and round to blocks, so a server-reported pool is shown beside
the estimate, never replaced by it.

An engine that cuts its pool into blocks models that through a `BlockAccounting` (its engine
module under rig/engines/ provides one): `kv_capacity(..., blocks=...)` then counts sessions in its
blocks, and the report names the accounting by the label it gives.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal, NamedTuple, Protocol

from pydantic import Field

from rigbench.errors import AnalysisError, UsageError
from rigbench.inputs import load_json
from rigbench.records import Frozen

__all__ = [
    "KV_DTYPE_BYTES",
    "BlockAccounting",
    "KVArchitecture",
    "KVBlocks",
    "KVCapacity",
    "kv_architecture_from_path",
    "kv_capacity",
    "sessions_from_pool",
]

GIB = 1024**3

# Bytes per element of common KV-cache types (the -ctk/-ctv and --kv-cache-dtype values engines take).
# Block-quantized types include their scales (q8_0: 34 bytes per 32 values).
KV_DTYPE_BYTES: dict[str, float] = {
    "f32": 4.0, "fp32": 4.0, "float32": 4.0,
    "f16": 2.0, "fp16": 2.0, "float16": 2.0, "bf16": 2.0, "bfloat16": 2.0, "auto": 2.0,
    "fp8": 1.0, "fp8_e4m3": 1.0, "fp8_e5m2": 1.0, "f8": 1.0,
    "q8_0": 34 / 32, "q5_1": 24 / 32, "q5_0": 22 / 32, "q4_1": 20 / 32, "q4_0": 18 / 32, "iq4_nl": 18 / 32,
}


class KVArchitecture(Frozen):
    layers: int
    kv_heads: int
    head_dim: int
    # Per layer: None for full attention, else the window in tokens. Empty means all full.
    layer_windows: list[int | None] = Field(default_factory=list)
    source: str = "given"

    @classmethod
    def with_pattern(cls, *, layers: int, kv_heads: int, head_dim: int, window: int | None = None,
                     local_per_global: int = 0, source: str = "given") -> KVArchitecture:
        """`local_per_global` sliding-window layers, then one global layer, repeated (3 -> L L L G)."""
        if local_per_global and not window:
            raise UsageError("a sliding-window pattern needs the window size (tokens).")
        period = local_per_global + 1
        windows: list[int | None] = [
            None if (i % period) == local_per_global else window for i in range(layers)
        ] if local_per_global else []
        return cls(layers=layers, kv_heads=kv_heads, head_dim=head_dim, layer_windows=windows, source=source)

    def windows(self) -> list[int | None]:
        return self.layer_windows or [None] * self.layers

    @property
    def global_layers(self) -> int:
        return sum(1 for w in self.windows() if w is None)


class KVBlocks(NamedTuple):
    """A memory budget cut into an engine's KV blocks, for one session length."""

    block_size: int  # tokens per block
    blocks_total: int  # blocks the budget makes
    blocks_per_session: int  # blocks one session of the context reserves
    bytes_per_session: float


class BlockAccounting(Protocol):
    """How an engine cuts its KV pool into blocks (its engine module under rig/engines/ provides one)."""

    @property
    def name(self) -> str:
        """KVCapacity.accounting: the engine's name."""
        ...

    @property
    def label(self) -> str:
        """What the report calls its blocks, e.g. "<engine> blocks" (followed by "of N tokens")."""
        ...

    def blocks(self, windows: list[int | None], bytes_per_token_per_layer: float, budget_bytes: int,
               context_tokens: int) -> KVBlocks:
        """The budget in blocks, for layers of these windows (None: full attention)."""
        ...


class KVCapacity(Frozen):
    kind: Literal["kv_capacity"] = "kv_capacity"
    budget_bytes: int
    kv_dtype: str
    context_tokens: int
    bytes_per_token_per_layer: float
    bytes_per_token_all_layers: float  # if every layer kept every token
    bytes_per_session: float  # one sequence of `context_tokens`, windows applied
    sessions: float  # budget / bytes_per_session (fractional, as vLLM prints "73.54x")
    tokens: int  # sessions x context: the pool in tokens when every session is this long
    tokens_without_windows: int  # budget / bytes_per_token_all_layers: the same model, all layers global
    server_pool_tokens: int | None = None  # what the engine reported, when known
    server_pool_source: str | None = None
    accounting: str = "per-token"  # "per-token" | "server pool" (no architecture) | an engine's (blocks)
    accounting_label: str | None = None  # blocks: what the engine calls them (BlockAccounting.label)
    block_size: int | None = None
    blocks_total: int | None = None  # blocks: pool blocks the budget makes
    blocks_per_session: int | None = None  # blocks: blocks one session of context_tokens reserves
    server_sessions: float | None = None  # server pool / context (exact for a pool printed as sessions x context)
    prediction_error: float | None = None  # (estimate - server) / server, when both pools are known


def sessions_from_pool(pool_tokens: int, context_tokens: int, *, source: str = "given") -> KVCapacity:
    """Sessions from a server-reported pool alone (no architecture needed).

    An engine that prints its pool as concurrency x max context gives, at that context, exactly the
    concurrency it prints.
    """
    if pool_tokens <= 0 or context_tokens <= 0:
        raise UsageError(f"the pool ({pool_tokens}) and the context ({context_tokens}) must be positive.")
    sessions = pool_tokens / context_tokens
    return KVCapacity(budget_bytes=0, kv_dtype="n/a", context_tokens=context_tokens, bytes_per_token_per_layer=0,
                      bytes_per_token_all_layers=0, bytes_per_session=0, sessions=sessions, tokens=pool_tokens,
                      tokens_without_windows=pool_tokens, server_pool_tokens=pool_tokens,
                      server_pool_source=source, accounting="server pool", server_sessions=sessions)


def kv_capacity(arch: KVArchitecture, *, budget_bytes: int, context_tokens: int, kv_dtype: str = "bf16",
                server_pool_tokens: int | None = None, server_pool_source: str | None = None,
                blocks: BlockAccounting | None = None) -> KVCapacity:
    key = kv_dtype.casefold()
    if key not in KV_DTYPE_BYTES:
        raise UsageError(f"unknown KV dtype {kv_dtype!r}; known: {', '.join(sorted(KV_DTYPE_BYTES))}.")
    if budget_bytes <= 0 or context_tokens <= 0:
        raise AnalysisError("the memory budget and the context length must be positive.")
    windows = arch.windows()
    if len(windows) != arch.layers:
        raise UsageError(f"{len(windows)} layer windows given for {arch.layers} layers.")
    per_layer = 2 * arch.kv_heads * arch.head_dim * KV_DTYPE_BYTES[key]
    all_layers = per_layer * arch.layers
    extra: dict[str, Any] = {}
    if blocks is None:
        per_session = sum(per_layer * (context_tokens if w is None else min(context_tokens, w)) for w in windows)
        sessions = budget_bytes / per_session
    else:
        b = blocks.blocks(windows, per_layer, budget_bytes, context_tokens)
        per_session = b.bytes_per_session
        sessions = b.blocks_total / b.blocks_per_session
        extra = {"accounting": blocks.name, "accounting_label": blocks.label, "block_size": b.block_size,
                 "blocks_total": b.blocks_total, "blocks_per_session": b.blocks_per_session}
    tokens = int(sessions * context_tokens)
    if server_pool_tokens:
        extra["server_sessions"] = server_pool_tokens / context_tokens
        extra["prediction_error"] = (tokens - server_pool_tokens) / server_pool_tokens
    return KVCapacity(
        budget_bytes=budget_bytes, kv_dtype=key, context_tokens=context_tokens,
        bytes_per_token_per_layer=per_layer, bytes_per_token_all_layers=all_layers,
        bytes_per_session=per_session, sessions=sessions, tokens=tokens,
        tokens_without_windows=int(budget_bytes / all_layers),
        server_pool_tokens=server_pool_tokens, server_pool_source=server_pool_source, **extra,
    )


def kv_architecture_from_hf_config(cfg: dict[str, Any], *, source: str = "config.json") -> KVArchitecture:
    """From a Hugging Face `config.json` (text_config is used for multimodal models)."""
    c = cfg.get("text_config") or cfg
    try:
        layers = int(c["num_hidden_layers"])
        heads = int(c["num_attention_heads"])
        kv_heads = int(c.get("num_key_value_heads") or heads)
        head_dim = int(c.get("head_dim") or int(c["hidden_size"]) // heads)
    except (KeyError, TypeError, ValueError) as e:
        raise UsageError(f"{source} lacks the attention shape ({e}); pass --layers/--kv-heads/--head-dim.") from e
    window = c.get("sliding_window")
    types = c.get("layer_types")
    windows: list[int | None] = []
    if isinstance(types, list) and window:
        windows = [int(window) if "sliding" in str(t) else None for t in types]
    elif window and c.get("sliding_window_pattern"):
        # Gemma 3: every `pattern`-th layer is global
        pattern = int(c["sliding_window_pattern"])
        windows = [None if (i + 1) % pattern == 0 else int(window) for i in range(layers)]
    return KVArchitecture(layers=layers, kv_heads=kv_heads, head_dim=head_dim, layer_windows=windows, source=source)


def kv_architecture_from_gguf(path: Path) -> KVArchitecture:
    # lazy: gguf adds ~50 ms to every CLI start; only reading a GGUF file needs it
    from gguf import GGUFReader

    reader = GGUFReader(str(path), "r")

    def val(key: str) -> Any:
        f = reader.fields.get(key)
        if f is None:
            return None
        part = f.parts[f.data[0]]
        if f.types and f.types[0].name == "STRING":
            return bytes(part).decode()
        return part.tolist()[0] if len(f.data) == 1 else [f.parts[i].tolist()[0] for i in f.data]

    arch = val("general.architecture")
    layers = val(f"{arch}.block_count")
    heads = val(f"{arch}.attention.head_count")
    kv_heads = val(f"{arch}.attention.head_count_kv") or heads
    head_dim = val(f"{arch}.attention.key_length")
    if head_dim is None and heads:
        head_dim = int(val(f"{arch}.embedding_length")) // int(heads)
    if layers is None or kv_heads is None or head_dim is None:
        raise UsageError(f"{path} does not say its attention shape; pass --layers/--kv-heads/--head-dim.")
    if isinstance(kv_heads, list):  # per-layer head counts (some hybrids): use the maximum
        kv_heads = max(kv_heads)
    window = val(f"{arch}.attention.sliding_window")
    windows: list[int | None] = []
    pattern = val(f"{arch}.attention.sliding_window_pattern")
    if window and isinstance(pattern, list):
        windows = [int(window) if p else None for p in pattern]
    return KVArchitecture(layers=int(layers), kv_heads=int(kv_heads), head_dim=int(head_dim),
                          layer_windows=windows, source=f"gguf:{path.name}")


def kv_architecture_from_path(path: Path | str) -> KVArchitecture:
    """A .gguf file, a config.json, or a model directory holding one."""
    p = Path(path).expanduser()
    if p.is_dir():
        p = p / "config.json"
    if not p.exists():
        raise UsageError(f"{p} does not exist. Pass a .gguf file, a config.json or a model directory.")
    if p.suffix == ".gguf":
        return kv_architecture_from_gguf(p)
    cfg = load_json(p, "--model", max_bytes=64 << 20)  # a model's config.json: kilobytes
    if not isinstance(cfg, dict):
        raise UsageError(f"{p} holds a JSON {type(cfg).__name__}, not a model config object.")
    return kv_architecture_from_hf_config(cfg, source=str(p))
