"""The decode roofline: how fast a memory-bound machine can possibly decode, and how close a rig got.

Decoding one token of a dense model reads every weight once, so a single stream cannot decode
faster than `bandwidth / weight bytes`. Seed 000: 59.6 GB of BF16 weights on a 273 GB/s GB10 gives
a 4.58 tok/s ceiling; the measured 4.3 tok/s is 94% of it ("there was no configuration left to
find"). Speculative decoding does not raise the ceiling; it verifies several tokens per weight
sweep, so it multiplies the decode part of a request by the mean acceptance length and leaves
prefill alone; see `predict_speedup`.
"""

from __future__ import annotations

import json
import re
import struct
from pathlib import Path
from typing import Literal

from rigbench.errors import AnalysisError, UsageError
from rigbench.records import Frozen

__all__ = [
    "KNOWN_DEVICES",
    "DeviceBandwidth",
    "Roofline",
    "SpeedupPrediction",
    "WeightsInfo",
    "lookup_device",
    "over_ceiling_finding",
    "predict_speedup",
    "roofline",
    "weights_from_gguf",
    "weights_from_path",
    "weights_from_safetensors",
]

GB = 1e9  # bandwidth and weight sizes are decimal GB, as vendors quote bandwidth


class DeviceBandwidth(Frozen):
    name: str
    bandwidth_gb_s: float  # peak theoretical memory bandwidth, decimal GB/s
    source: str  # where the figure comes from
    aliases: tuple[str, ...] = ()  # lower-case substrings that identify it (nvidia-smi names...)


def _d(name: str, gb_s: float, source: str, *aliases: str) -> DeviceBandwidth:
    return DeviceBandwidth(name=name, bandwidth_gb_s=gb_s, source=source, aliases=aliases)


_NV = "NVIDIA product datasheet"
_APPLE = "Apple newsroom / tech specs"
# Order matters: the first entry whose alias matches wins, so specific names precede general ones.
KNOWN_DEVICES: tuple[DeviceBandwidth, ...] = (
    _d("NVIDIA DGX Spark (GB10)", 273, "NVIDIA DGX Spark datasheet: 128 GB LPDDR5x, 273 GB/s", "gb10", "dgx spark"),
    _d("NVIDIA H200 NVL", 4800, f"{_NV}: H200 NVL 141 GB HBM3e, 4.8 TB/s", "h200 nvl"),
    _d("NVIDIA H200 SXM", 4800, f"{_NV}: H200 SXM 141 GB HBM3e, 4.8 TB/s", "h200"),
    _d("NVIDIA H100 NVL", 3900, f"{_NV}: H100 NVL 94 GB HBM3, 3.9 TB/s", "h100 nvl"),
    _d("NVIDIA H100 PCIe", 2000, f"{_NV}: H100 PCIe 80 GB HBM2e, 2.0 TB/s", "h100 pcie"),
    _d("NVIDIA H100 SXM", 3350, f"{_NV}: H100 SXM 80 GB HBM3, 3.35 TB/s", "h100"),
    _d("NVIDIA GH200 (H100 96 GB)", 4000, f"{_NV}: GH200 96 GB HBM3, 4 TB/s", "gh200"),
    _d("NVIDIA A100 80GB PCIe", 1935, f"{_NV}: A100 80 GB PCIe HBM2e, 1,935 GB/s", "a100 80gb pcie", "a100-pcie-80gb"),
    _d("NVIDIA A100 80GB SXM", 2039, f"{_NV}: A100 80 GB SXM HBM2e, 2,039 GB/s", "a100 80gb", "a100-sxm4-80gb"),
    _d("NVIDIA A100 40GB", 1555, f"{_NV}: A100 40 GB HBM2, 1,555 GB/s", "a100"),
    _d("NVIDIA L40S", 864, f"{_NV}: L40S 48 GB GDDR6, 864 GB/s", "l40s"),
    _d("NVIDIA L4", 300, f"{_NV}: L4 24 GB GDDR6, 300 GB/s", " l4", "nvidia l4"),
    _d("NVIDIA GeForce RTX 5090", 1792, "NVIDIA RTX 5090 spec page: 32 GB GDDR7, 1,792 GB/s", "5090"),
    _d("NVIDIA GeForce RTX 4090", 1008, "NVIDIA RTX 4090 spec page: 24 GB GDDR6X, 1,008 GB/s", "4090"),
    _d("NVIDIA GeForce RTX 3090 Ti", 1008, "NVIDIA RTX 3090 Ti spec page: 24 GB GDDR6X, 1,008 GB/s", "3090 ti"),
    _d("NVIDIA GeForce RTX 3090", 936, "NVIDIA RTX 3090 spec page: 24 GB GDDR6X, 936 GB/s", "3090"),
    _d("AMD Instinct MI300X", 5300, "AMD MI300X datasheet: 192 GB HBM3, 5.3 TB/s", "mi300x"),
    _d("AMD Ryzen AI Max+ 395 (Strix Halo)", 256, "AMD spec: 256-bit LPDDR5x-8000, 256 GB/s", "strix halo",
       "ryzen ai max"),
    _d("Apple M4 Max (16-core CPU)", 546, f"{_APPLE}: M4 Max, 546 GB/s", "m4 max"),
    _d("Apple M4 Pro", 273, f"{_APPLE}: M4 Pro, 273 GB/s", "m4 pro"),
    _d("Apple M4", 120, f"{_APPLE}: M4, 120 GB/s", "apple m4"),
    _d("Apple M3 Ultra", 819, f"{_APPLE}: M3 Ultra, 819 GB/s", "m3 ultra"),
    _d("Apple M3 Max (16-core CPU)", 400, f"{_APPLE}: M3 Max, 400 GB/s (300 GB/s on the 14-core part)", "m3 max"),
    _d("Apple M3 Pro", 150, f"{_APPLE}: M3 Pro, 150 GB/s", "m3 pro"),
    _d("Apple M3", 100, f"{_APPLE}: M3, 100 GB/s", "apple m3"),
    _d("Apple M2 Ultra", 800, f"{_APPLE}: M2 Ultra, 800 GB/s", "m2 ultra"),
    _d("Apple M2 Max", 400, f"{_APPLE}: M2 Max, 400 GB/s", "m2 max"),
    _d("Apple M2 Pro", 200, f"{_APPLE}: M2 Pro, 200 GB/s", "m2 pro"),
    _d("Apple M2", 100, f"{_APPLE}: M2, 100 GB/s", "apple m2"),
    _d("Apple M1 Ultra", 800, f"{_APPLE}: M1 Ultra, 800 GB/s", "m1 ultra"),
    _d("Apple M1 Max", 400, f"{_APPLE}: M1 Max, 400 GB/s", "m1 max"),
    _d("Apple M1 Pro", 200, f"{_APPLE}: M1 Pro, 200 GB/s", "m1 pro"),
    _d("Apple M1", 68.25, f"{_APPLE}: M1, 68.25 GB/s", "apple m1"),
)


def lookup_device(name: str) -> DeviceBandwidth | None:
    """The known device a free-form name (nvidia-smi, `sysctl machdep.cpu.brand_string`) refers to."""
    norm = " " + re.sub(r"[\s_]+", " ", name.casefold()).strip()
    for dev in KNOWN_DEVICES:
        if norm.strip() == dev.name.casefold() or any(a in norm for a in dev.aliases):
            return dev
    return None


class WeightsInfo(Frozen):
    source: Literal["gguf", "safetensors"]
    path: str
    weights_bytes: int  # bytes of tensor data (what one decode step reads for a dense model)
    tensors: int
    parameters: int | None  # element count, when the format says
    architecture: str | None = None
    file_type: str | None = None  # GGUF quantization (e.g. "Q4_1"), when known


def weights_from_gguf(path: Path) -> WeightsInfo:
    """Tensor bytes from a GGUF header, via the `gguf` package (no tensor data is read)."""
    try:
        # lazy: gguf adds ~50 ms to every CLI start; only reading a GGUF file needs it
        from gguf import GGUFReader
    except ImportError as e:  # pragma: no cover - gguf is a dependency
        raise UsageError("reading GGUF needs the `gguf` package: pip install gguf") from e
    try:
        reader = GGUFReader(str(path), "r")
    except (OSError, ValueError) as e:
        raise UsageError(f"{path} could not be read as GGUF ({e}). Pass a .gguf model file.") from e
    total = sum(int(t.n_bytes) for t in reader.tensors)
    params = sum(int(t.n_elements) for t in reader.tensors)
    arch = _gguf_str(reader, "general.architecture")
    ftype = None
    field = reader.fields.get("general.file_type")
    if field is not None:
        try:
            # lazy: as GGUFReader above
            from gguf import LlamaFileType

            ftype = LlamaFileType(int(field.parts[field.data[0]][0])).name.removeprefix("MOSTLY_")
        except (ValueError, IndexError):
            ftype = None
    return WeightsInfo(source="gguf", path=str(path), weights_bytes=total, tensors=len(reader.tensors),
                       parameters=params, architecture=arch, file_type=ftype)


def _gguf_str(reader: object, key: str) -> str | None:
    field = getattr(reader, "fields", {}).get(key)
    if field is None:
        return None
    try:
        return bytes(field.parts[field.data[0]]).decode()
    except (IndexError, UnicodeDecodeError):
        return None


_ST_DTYPE_BYTES = {"F64": 8, "I64": 8, "U64": 8, "F32": 4, "I32": 4, "U32": 4, "F16": 2, "BF16": 2,
                   "I16": 2, "U16": 2, "F8_E4M3": 1, "F8_E5M2": 1, "I8": 1, "U8": 1, "BOOL": 1}


def weights_from_safetensors(path: Path) -> WeightsInfo:
    """Tensor bytes from safetensors headers: one file, or every shard of a directory."""
    files = sorted(path.glob("*.safetensors")) if path.is_dir() else [path]
    if not files:
        raise UsageError(f"no *.safetensors files in {path}. Pass a model directory or one .safetensors file.")
    total = tensors = params = 0
    for f in files:
        with f.open("rb") as fh:
            raw = fh.read(8)
            if len(raw) != 8:
                raise UsageError(f"{f} is too short to be safetensors.")
            (n,) = struct.unpack("<Q", raw)
            if n > 100_000_000:
                raise UsageError(f"{f} declares a {n}-byte header; it is not a safetensors file.")
            try:
                header = json.loads(fh.read(n))
            except ValueError as e:
                raise UsageError(f"{f} has an unreadable safetensors header ({e}).") from e
        for name, meta in header.items():
            if name == "__metadata__":
                continue
            begin, end = meta["data_offsets"]
            total += end - begin
            tensors += 1
            elems = 1
            for dim in meta["shape"]:
                elems *= dim
            # packed dtypes (FP4 in U8...) make element counts meaningless; count bytes honestly
            params += elems if meta["dtype"] in _ST_DTYPE_BYTES else 0
    return WeightsInfo(source="safetensors", path=str(path), weights_bytes=total, tensors=tensors,
                       parameters=params or None)


def weights_from_path(path: Path | str) -> WeightsInfo:
    p = Path(path).expanduser()
    if not p.exists():
        raise UsageError(f"{p} does not exist. Pass a .gguf file, a .safetensors file or a model directory.")
    if p.is_file() and p.suffix == ".gguf":
        return weights_from_gguf(p)
    return weights_from_safetensors(p)


class Roofline(Frozen):
    kind: Literal["roofline"] = "roofline"
    weights_bytes: int
    bandwidth_gb_s: float
    bandwidth_source: str  # a known device's datasheet, a `rigbench probe` measurement, or "given"
    ceiling_tok_s: float  # bandwidth / weights: single-stream decode ceiling
    measured_tok_s: float | None = None
    efficiency: float | None = None  # measured / ceiling
    implied_bandwidth_gb_s: float | None = None  # measured tok/s x weights: the traffic it moved
    bandwidth_basis: Literal["override", "datasheet", "probed", "given"] = "given"
    finding: str | None = None  # said plainly when the measurement beats the ceiling


def over_ceiling_finding(efficiency: float | None, basis: str) -> str | None:
    """An efficiency above 100% is impossible for a memory-bound decode: one of the inputs is wrong."""
    if efficiency is None or efficiency <= 1.0:
        return None
    why = {"probed": "the probed bandwidth is a copy speed, a lower bound of the peak, so the ceiling is too low",
           "override": "the --bandwidth-gbs given is lower than what the machine delivered",
           "datasheet": "the datasheet figure is not this device's (check the device name)",
           "given": "the bandwidth given is lower than what the machine delivered"}[basis]
    return (f"measured decode is {efficiency:.0%} of the ceiling, which a memory-bound decode cannot reach: an "
            f"input is wrong. Likely: {why}; or each token reads fewer bytes than the weights file "
            "(mixture-of-experts, or a model small enough for the CPU caches to hold part of it).")


def roofline(weights_bytes: int, bandwidth_gb_s: float, *, measured_tok_s: float | None = None,
             bandwidth_source: str = "given",
             bandwidth_basis: Literal["override", "datasheet", "probed", "given"] = "given") -> Roofline:
    if weights_bytes <= 0:
        raise AnalysisError(f"weights must be positive bytes, got {weights_bytes}.")
    if bandwidth_gb_s <= 0:
        raise AnalysisError(f"bandwidth must be positive GB/s, got {bandwidth_gb_s}.")
    ceiling = bandwidth_gb_s * GB / weights_bytes
    eff = implied = None
    if measured_tok_s is not None:
        eff = measured_tok_s / ceiling
        implied = measured_tok_s * weights_bytes / GB
    return Roofline(weights_bytes=weights_bytes, bandwidth_gb_s=bandwidth_gb_s, bandwidth_source=bandwidth_source,
                    ceiling_tok_s=ceiling, measured_tok_s=measured_tok_s, efficiency=eff,
                    implied_bandwidth_gb_s=implied, bandwidth_basis=bandwidth_basis,
                    finding=over_ceiling_finding(eff, bandwidth_basis))


class SpeedupPrediction(Frozen):
    kind: Literal["speedup_prediction"] = "speedup_prediction"
    scenario: str
    prefill_share: float  # baseline's time before the first token / its whole request time
    mean_acceptance_length: float  # tokens emitted per target forward pass, bonus token included
    draft_cost_ratio: float  # a draft step's cost relative to one target decode step
    predicted_speedup: float
    measured_speedup: float | None = None


def predict_speedup(scenario: str, *, prefill_share: float, mean_acceptance_length: float,
                    draft_cost_ratio: float = 0.0, measured_speedup: float | None = None) -> SpeedupPrediction:
    """Amdahl over one request: speculation divides decode time by the acceptance length and leaves
    prefill alone.

        speed-up = 1 / (p + (1 - p) (1 + c) / L)

    p: prefill share of the baseline request's wall time; L: mean acceptance length; c: draft cost
    per verification step relative to a target step (0 for a free drafter). Bounded by L / (1 + c)
    as p -> 0, which is why summarization (mostly prefill) gains least.
    """
    if not 0.0 <= prefill_share <= 1.0:
        raise AnalysisError(f"prefill share must be within [0, 1], got {prefill_share}.")
    if mean_acceptance_length < 1.0:
        raise AnalysisError(f"mean acceptance length counts the bonus token, so it is >= 1; got "
                            f"{mean_acceptance_length}.")
    if draft_cost_ratio < 0:
        raise AnalysisError(f"draft cost ratio must be >= 0, got {draft_cost_ratio}.")
    decode = (1.0 - prefill_share) * (1.0 + draft_cost_ratio) / mean_acceptance_length
    return SpeedupPrediction(scenario=scenario, prefill_share=prefill_share,
                             mean_acceptance_length=mean_acceptance_length, draft_cost_ratio=draft_cost_ratio,
                             predicted_speedup=1.0 / (prefill_share + decode), measured_speedup=measured_speedup)
