"""Outside text is text in the calculators too (issue 22, item 9): `probe`, `kv`, `roofline`, `ls`, `report`.

Adversary: a model file or directory, a CPU or GPU name, a device name or a run label that carries
terminal escapes (cursor up, erase line, colour), console markup and an emoji code. Each command must
show it as written: no live control character, the markup's brackets and the emoji code on screen.
Control: an ordinary name prints unchanged.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.unit.cli_inproc import invoke
from tests.unit.test_roofline import _write_safetensors

# No "/" (it is a file name too); everything else a terminal would act on or a console would render.
NAME = "m\x1b[1A\x1b[2K\r\x1b[32m[bold green]TRUSTED :x: \x07\u202e"
SHOWN = "[bold green]TRUSTED :x:"  # what a reader must see of it
LIVE_CONTROL = re.compile(r"[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
GOLDEN = Path(__file__).parent.parent / "golden" / "run_v1"


def _shown_as_text(out: str, control: bool = False) -> None:
    m = LIVE_CONTROL.search(out)
    assert m is None, f"a live control character {m.group(0)!r}: {out[max(0, m.start() - 80):m.end() + 80]!r}"
    if not control:
        assert SHOWN in out and "\\x1b[2K" in out, out[-1500:]


@pytest.mark.parametrize("name", [NAME, "plain-model"])
def test_kv_shows_a_hostile_model_path_as_text(tmp_path: Path, name: str) -> None:
    model = tmp_path / name
    model.mkdir()
    (model / "config.json").write_text(json.dumps({"num_hidden_layers": 4, "num_attention_heads": 4,
                                                   "num_key_value_heads": 2, "head_dim": 64}))
    res = invoke("kv", "--model-file", str(model), "--budget-gib", "1", "--context", "4096")
    assert res.code == 0 and res.traceback is None, res.stderr
    _shown_as_text(res.stdout, control=name != NAME)
    assert name != "plain-model" or f"{model}/config.json" in "".join(res.stdout.split("\n"))


@pytest.mark.parametrize("name", [NAME, "plain-model"])
def test_roofline_shows_a_hostile_model_and_device_as_text(tmp_path: Path, name: str) -> None:
    model = tmp_path / f"{name}.safetensors"
    _write_safetensors(model, {"w": ("BF16", [64, 64])})
    res = invoke("roofline", "--model", str(model), "--bandwidth-gbs", "100", "--tok-s", "1")
    assert res.code == 0 and res.traceback is None, res.stderr
    _shown_as_text(res.stdout, control=True)  # the file's name is not printed; what is, is checked
    res = invoke("roofline", "--model", str(model), "--device", name)
    assert res.code == 2 and res.traceback is None
    _shown_as_text(res.stderr, control=name != NAME)
    res = invoke("roofline", "--model", str(tmp_path / f"{name}.gguf"), "--bandwidth-gbs", "100")
    assert res.code == 2
    _shown_as_text(res.stderr, control=name != NAME)


@pytest.mark.parametrize("name", [NAME, "Plain CPU"])
def test_probe_shows_hostile_cpu_and_gpu_names_as_text(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    import rigbench.cli._probe as probe
    from rigbench.rig import host_info

    real = host_info(probe_bandwidth=False)
    monkeypatch.setattr(probe, "host_info", lambda **_: real.model_copy(update={"cpu_model": name, "gpus": [name]}))

    def bandwidth(*_: Any, **__: Any) -> dict[str, object]:  # the measurement itself is not under test
        return {"host_gb_s": 12.5, "host_method": name, "gpu_gb_s": 900.0, "gpu_name": name, "gpu_method": name,
                "machine_key": "k" + name}

    monkeypatch.setattr(probe, "machine_bandwidth", bandwidth)
    res = invoke("probe")
    assert res.code == 0 and res.traceback is None, res.stderr
    _shown_as_text(res.stdout, control=name != NAME)
    assert res.stdout.count(SHOWN if name == NAME else name) >= 4, res.stdout


def test_ls_and_report_show_a_hostile_directory_as_text(tmp_path: Path) -> None:
    out = tmp_path / NAME
    shutil.copytree(GOLDEN, out / "run_v1")
    res = invoke("ls", str(out))
    assert res.code == 0 and res.traceback is None, res.stderr
    _shown_as_text(res.stdout)
    copy = tmp_path / ("r" + NAME)
    shutil.copytree(GOLDEN, copy)
    res = invoke("report", str(copy), str(GOLDEN))  # the first run names the comparison
    assert res.traceback is None, res.traceback
    _shown_as_text(res.stdout)
