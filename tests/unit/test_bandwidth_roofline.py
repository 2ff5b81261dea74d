"""The decode roofline in every report: bandwidth probed once per machine, recorded in the
fingerprint, overridable, its source named, and an impossible efficiency called out (issue 16)."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from rigbench.analysis import _bandwidth
from rigbench.analysis._bandwidth import machine_bandwidth
from rigbench.analysis._roofline import roofline
from rigbench.analysis._run import analyze_run
from rigbench.report._run import render_markdown, render_terminal
from rigbench.store import RunReader

GOLDEN = Path(__file__).parent.parent / "golden" / "run_v1"


def _tiny_gguf(path: Path, n_bytes: int) -> Path:
    import gguf  # a dependency of rigbench: never missing
    import numpy as np

    w = gguf.GGUFWriter(str(path), "llama")
    w.add_tensor("w", np.zeros((n_bytes // 4,), dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def _run_dir(tmp_path: Path, *, bandwidth: dict[str, Any] | None, override: float | None = None,
             gpus: list[str] | None = None, origin: str | None = "built", weights: int = 40_000_000) -> RunReader:
    run = tmp_path / "run"
    shutil.copytree(GOLDEN, run)
    head = json.loads((run / "run.json").read_text())
    fp = head["fingerprint"]
    fp["model"]["path"] = str(_tiny_gguf(tmp_path / "m.gguf", weights))
    fp["host"]["memory_bandwidth"] = bandwidth
    fp["host"]["gpus"] = gpus or []
    if origin:
        fp["engine_binary"] = {"path": "/x/llama-server", "origin": origin, "build_variant": "isa",
                               "cpu_key": "abc", "fallback": "--no-repack",
                               "fallback_reason": "exit -11 (SIGSEGV) without it"}
    head["plan"]["bandwidth_gb_s"] = override
    (run / "run.json").write_text(json.dumps(head))
    return RunReader(run)


PROBED = {"machine_key": "k", "host_gb_s": 20.0, "host_method": "numpy copy, 2 threads", "gpu_name": None,
          "gpu_gb_s": None, "gpu_method": "no GPU (nvidia-smi lists none)", "measured_at": "2026-11-30T10:00:00+00:00"}


def test_default_report_has_the_roofline_from_the_probe(tmp_path: Path) -> None:
    a = analyze_run(_run_dir(tmp_path, bandwidth=PROBED))
    rl = a.sections["roofline"]
    assert rl.roofline is not None and rl.roofline.bandwidth_basis == "probed"
    assert rl.roofline.bandwidth_gb_s == 20.0
    assert rl.roofline.ceiling_tok_s == pytest.approx(20e9 / rl.roofline.weights_bytes)
    # every speed row carries its decode efficiency, not only the headline scenario
    assert {r.scenario for r in rl.rows} == {r.scenario for r in a.speed.rows if r.decode_tok_s}
    for r in rl.rows:
        assert r.efficiency == pytest.approx(r.decode_tok_s / rl.roofline.ceiling_tok_s)
    out = io.StringIO()
    render_terminal(a, Console(file=out, width=200))
    text = out.getvalue()
    assert "Decode roofline" in text and "probed" in text and "Decode efficiency per row" in text
    assert "CPU fallback: --no-repack" in text and "host 20 GB/s" in text  # fingerprint shows both


def test_override_wins_and_is_named(tmp_path: Path) -> None:
    a = analyze_run(_run_dir(tmp_path, bandwidth=PROBED, override=50.0))
    rl = a.sections["roofline"].roofline
    assert rl.bandwidth_gb_s == 50.0 and rl.bandwidth_basis == "override"
    assert "override: given with --bandwidth-gbs" in render_markdown(a)


def test_known_gpu_uses_the_datasheet_unless_the_engine_is_rigbenchs_cpu_build(tmp_path: Path) -> None:
    gpu = ["NVIDIA H200, 143771 MiB, 570.86"]
    a = analyze_run(_run_dir(tmp_path / "a", bandwidth=PROBED, gpus=gpu, origin="PATH"))
    assert a.sections["roofline"].roofline.bandwidth_basis == "datasheet"
    assert a.sections["roofline"].roofline.bandwidth_gb_s == 4800
    # rigbench's own llama-server build runs on the CPU: the host's bandwidth bounds it, not the GPU's
    b = analyze_run(_run_dir(tmp_path / "b", bandwidth=PROBED, gpus=gpu, origin="built"))
    assert b.sections["roofline"].roofline.bandwidth_gb_s == 20.0


def test_unmeasured_unknown_gpu_says_why(tmp_path: Path) -> None:
    bw = dict(PROBED, gpu_method="unknown: nvidia-smi lists a GPU but torch with CUDA is not installed here")
    a = analyze_run(_run_dir(tmp_path, bandwidth=bw, gpus=["NVIDIA Nonesuch 9000"], origin="PATH"))
    rl = a.sections["roofline"]
    assert rl.roofline is None and "torch with CUDA is not installed" in (rl.unavailable or "")
    assert "--bandwidth-gbs" in (rl.unavailable or "")


def test_run_without_a_probe_says_so(tmp_path: Path) -> None:
    a = analyze_run(_run_dir(tmp_path, bandwidth=None))
    assert "not probed" in (a.sections["roofline"].unavailable or "")


def test_efficiency_above_100_percent_is_a_finding_about_the_inputs() -> None:
    r = roofline(100_000_000, 1.0, measured_tok_s=25.0, bandwidth_source="probed here", bandwidth_basis="probed")
    assert r.efficiency == pytest.approx(2.5)
    assert r.finding is not None and "250%" in r.finding and "an input is wrong" in r.finding
    assert "lower bound" in r.finding
    assert roofline(100_000_000, 10.0, measured_tok_s=25.0).finding is None


def test_bandwidth_is_probed_once_per_machine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    kw: dict[str, Any] = {"cpu_model": "AMD EPYC", "cores": 2, "memory_bytes": 24 << 30, "gpus": []}
    real = _bandwidth.measure_host_bandwidth
    monkeypatch.setattr(_bandwidth, "measure_host_bandwidth",
                        lambda **_: real(buffer_bytes=32 * 1024**2, repeats=2))  # a real copy, kept small
    first = machine_bandwidth(tmp_path, **kw)
    assert first is not None and float(first["host_gb_s"]) > 0  # type: ignore[arg-type]
    assert first["gpu_method"] == "no GPU (nvidia-smi lists none)"

    def no_probe(**_: Any) -> None:
        raise AssertionError("probed again although the machine's figure is cached")

    monkeypatch.setattr(_bandwidth, "measure_host_bandwidth", no_probe)
    assert machine_bandwidth(tmp_path, **kw) == first
    # another machine (a cache copied elsewhere) does not reuse the figure
    assert machine_bandwidth(tmp_path, **{**kw, "cpu_model": "Intel Xeon"}, probe=False) is None


def test_gpu_without_torch_is_unknown_not_guessed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_bandwidth, "measure_gpu_bandwidth", lambda **_: None)
    real = _bandwidth.measure_host_bandwidth
    monkeypatch.setattr(_bandwidth, "measure_host_bandwidth", lambda **_: real(buffer_bytes=32 * 1024**2, repeats=2))
    got = machine_bandwidth(tmp_path, cpu_model="x", cores=2, memory_bytes=1, gpus=["NVIDIA H200"])
    assert got is not None and got["gpu_gb_s"] is None and "torch with CUDA is not installed" in str(got["gpu_method"])
