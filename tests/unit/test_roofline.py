"""Roofline arithmetic against seed 000, weights from real headers, speed-up prediction."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

from rigbench.analysis._roofline import (
    lookup_device,
    predict_speedup,
    roofline,
    weights_from_path,
    weights_from_safetensors,
)
from rigbench.errors import AnalysisError, UsageError


def test_seed_baseline_is_94_percent_of_the_gb10() -> None:
    r = roofline(int(59.6e9), 273, measured_tok_s=4.3)
    assert r.ceiling_tok_s == pytest.approx(4.58, abs=0.01)
    assert r.efficiency == pytest.approx(0.94, abs=0.005)
    assert r.implied_bandwidth_gb_s == pytest.approx(256, abs=0.5)


def test_rejects_nonsense_inputs() -> None:
    with pytest.raises(AnalysisError):
        roofline(0, 273)
    with pytest.raises(AnalysisError):
        roofline(10, -1)


@pytest.mark.parametrize(("name", "expected"), [
    ("NVIDIA GB10", 273), ("NVIDIA H100 80GB HBM3", 3350), ("NVIDIA H100 PCIe", 2000), ("NVIDIA H200", 4800),
    ("NVIDIA A100-SXM4-80GB", 2039), ("NVIDIA A100-SXM4-40GB", 1555), ("NVIDIA GeForce RTX 4090", 1008),
    ("NVIDIA GeForce RTX 5090", 1792), ("NVIDIA GeForce RTX 3090", 936), ("Apple M2 Max", 400),
])
def test_known_devices(name: str, expected: float) -> None:
    dev = lookup_device(name)
    assert dev is not None and dev.bandwidth_gb_s == expected and dev.source


def test_unknown_device_is_none() -> None:
    assert lookup_device("Commodore 64") is None


def _write_safetensors(path: Path, tensors: dict[str, tuple[str, list[int]]]) -> int:
    header: dict[str, object] = {"__metadata__": {"format": "pt"}}
    off = 0
    for name, (dtype, shape) in tensors.items():
        n = {"BF16": 2, "F32": 4}[dtype]
        for d in shape:
            n *= d
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [off, off + n]}
        off += n
    raw = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + b"\0" * off)
    return off


def test_safetensors_shards_are_summed(tmp_path: Path) -> None:
    a = _write_safetensors(tmp_path / "model-00001-of-00002.safetensors", {"w1": ("BF16", [64, 32])})
    b = _write_safetensors(tmp_path / "model-00002-of-00002.safetensors", {"w2": ("F32", [16]), "w3": ("BF16", [8, 8])})
    w = weights_from_safetensors(tmp_path)
    assert w.weights_bytes == a + b == 64 * 32 * 2 + 16 * 4 + 64 * 2
    assert w.tensors == 3 and w.parameters == 64 * 32 + 16 + 64


def test_not_safetensors_is_a_usage_error(tmp_path: Path) -> None:
    p = tmp_path / "x.safetensors"
    p.write_bytes(b"\xff" * 16)
    with pytest.raises(UsageError):
        weights_from_safetensors(p)


def test_gguf_header(tmp_path: Path) -> None:
    import gguf  # a dependency of rigbench: never missing
    import numpy as np

    path = tmp_path / "tiny.gguf"
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_tensor("a", np.zeros((4, 8), dtype=np.float32))
    w.add_tensor("b", np.zeros((16,), dtype=np.float16))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    info = weights_from_path(path)
    assert info.source == "gguf" and info.architecture == "llama"
    assert info.weights_bytes == 4 * 8 * 4 + 16 * 2
    assert info.parameters == 48


def test_speedup_prediction_is_amdahl_over_prefill() -> None:
    # all decode: the speed-up is the acceptance length
    assert predict_speedup("code", prefill_share=0.0, mean_acceptance_length=3.4).predicted_speedup == pytest.approx(3.4)
    # all prefill: nothing to gain
    assert predict_speedup("x", prefill_share=1.0, mean_acceptance_length=3.4).predicted_speedup == pytest.approx(1.0)
    # half prefill at L=3: 1 / (0.5 + 0.5/3) = 1.5
    assert predict_speedup("x", prefill_share=0.5, mean_acceptance_length=3.0).predicted_speedup == pytest.approx(1.5)
    # drafting cost eats into it
    free = predict_speedup("x", prefill_share=0.1, mean_acceptance_length=3.0).predicted_speedup
    costly = predict_speedup("x", prefill_share=0.1, mean_acceptance_length=3.0, draft_cost_ratio=0.2)
    assert costly.predicted_speedup < free


def test_more_prefill_means_less_speedup() -> None:
    # seed 000: summarization (mostly prefill) gains least, code generation (all decode) most
    s = [predict_speedup("s", prefill_share=p, mean_acceptance_length=3.4).predicted_speedup for p in (0.0, 0.3, 0.6)]
    assert s[0] > s[1] > s[2]


def test_acceptance_length_below_one_is_refused() -> None:
    with pytest.raises(AnalysisError):
        predict_speedup("x", prefill_share=0.1, mean_acceptance_length=0.5)
