"""Host conditions: who used the CPU (and the GPUs) while one window was measured.

    host = HostWatch(locate_engine(pid=rig.process.pid))       # or base_url=... for an attached endpoint
    async with host.window("chat_short", concurrency=1) as w:
        <run the window>
    writer.append(w.record)

Counters are read once at each end of the window (per-CPU busy and steal time from /proc/stat, the
CPU time of the engine's process tree and of rigbench's own process); the run queue and the CPU clock
are sampled every `interval_s` in between. That is a few file reads per window plus a handful per
second, on rigbench's event loop. A figure that cannot be read (no /proc, a process of another user,
no cpufreq in a VM) is recorded as unknown with the reason, never as zero. Judging happens in
`rigbench.analysis` (`assess_host`).

A `WindowJudge` given to the watch (the runner's: `rigbench.runner._busy`) sees each window as it opens
and ends, and, every `judge_every_s` once a window has run `judge_after_s`, its figures so far: a window
that crawls on a busy host is judged while it runs, not an hour later. When the judge says stop, the
window's task is cancelled and the window ends with `BusyHostError` (as `asyncio.timeout` ends with
`TimeoutError`).
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import os
import shutil
import socket
import subprocess
import time
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple, Protocol

import psutil

from rigbench.errors import BusyHostError
from rigbench.records import EngineLocation, GpuProcess, HostConditions
from rigbench.rig._background import stop_task

__all__ = ["EngineRef", "HostWatch", "HostWindow", "WindowJudge", "cpu_stat", "locate_engine"]

_TICK_S = 1.0 / (os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100)
# A listening socket owned by one of these is a port forwarded into a container or a VM: the engine
# is somewhere behind it, and its CPU time would be counted as "other processes".
# A reverse proxy in front of the engine is the same: the listener is not the engine.
_FORWARDERS = frozenset({"docker-proxy", "rootlessport", "slirp4netns", "pasta", "gvproxy", "vpnkit",
                         "qemu-system-x86_64", "kubectl", "ssh", "socat", "nginx", "haproxy", "envoy", "caddy",
                         "traefik", "httpd", "apache2", "litellm"})

_CONTAINER_CLIENTS = frozenset({"docker", "podman", "nerdctl"})


class EngineRef(NamedTuple):
    """Where the engine runs, as far as this host can tell."""

    location: EngineLocation
    pid: int | None = None  # root of the engine's process tree (launched, local)
    reason: str | None = None  # why it is remote or unknown


class CpuStat(NamedTuple):
    """/proc/stat at one moment: per CPU (busy, steal) in seconds, and procs_running."""

    per_cpu: dict[int, tuple[float, float]]
    procs_running: int | None


def cpu_stat(text: str) -> CpuStat:
    """Parse /proc/stat: busy = user + nice + system (guest time is inside user). Interrupt time (irq,
    softirq) is left out: no process is charged for it, and most of it during a window is the loopback
    traffic between rigbench and the engine, which would otherwise read as "other processes"."""
    per: dict[int, tuple[float, float]] = {}
    running: int | None = None
    for line in text.splitlines():
        parts = line.split()
        if not parts:
            continue
        head = parts[0]
        if head.startswith("cpu") and head != "cpu" and head[3:].isdigit():
            v = [int(x) for x in parts[1:]] + [0] * 8
            busy = v[0] + v[1] + v[2]
            per[int(head[3:])] = (busy * _TICK_S, v[7] * _TICK_S)
        elif head == "procs_running" and len(parts) > 1 and parts[1].isdigit():
            running = int(parts[1])
    return CpuStat(per, running)


def _is_local_host(host: str) -> tuple[bool, str]:
    """Is `host` this machine? (True for loopback, a wildcard or one of this host's addresses.)"""
    try:
        infos = socket.getaddrinfo(host, None)
    except OSError as e:
        return False, f"{host} does not resolve ({e})"
    addrs = {str(i[4][0]).split("%")[0] for i in infos}
    mine: set[str] = set()
    with contextlib.suppress(OSError, AttributeError):
        mine = {a.address.split("%")[0] for nics in psutil.net_if_addrs().values() for a in nics}
    for a in addrs:
        with contextlib.suppress(ValueError):
            ip = ipaddress.ip_address(a)
            if ip.is_loopback or ip.is_unspecified or a in mine:
                return True, a
    return False, ", ".join(sorted(addrs))


def locate_engine(*, pid: int | None = None, base_url: str | None = None) -> EngineRef:
    """The engine's process: the one rigbench launched (`pid`), or the one listening on `base_url`'s port."""
    if pid is not None:
        try:
            name = psutil.Process(pid).name()
        except psutil.Error:
            name = ""
        if name in _CONTAINER_CLIENTS:
            return EngineRef("unknown", reason=f"the engine runs in a container (`{name} run`, pid {pid}): its "
                                               "processes are not rigbench's children, so its CPU time cannot be "
                                               "told from other processes'")
        return EngineRef("launched", pid)
    if not base_url:
        return EngineRef("unknown", reason="no engine process and no endpoint were given")
    u = urllib.parse.urlsplit(base_url)
    host = u.hostname or "localhost"
    port = u.port or (443 if u.scheme == "https" else 80)
    local, seen = _is_local_host(host)
    if not local:
        return EngineRef("remote", reason=f"the endpoint is on another host ({host}: {seen})")
    try:
        conns = psutil.net_connections(kind="tcp")
    except (psutil.AccessDenied, OSError) as e:
        return EngineRef("unknown", reason=f"the listening sockets of this host could not be read ({e})")
    owners = {c.pid for c in conns if c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port == port}
    if not owners:
        return EngineRef("unknown", reason=f"no process on this host listens on port {port} (a port forwarded "
                                           "from a container or another network namespace?)")
    if None in owners and len(owners) == 1:
        return EngineRef("unknown", reason=f"the process listening on port {port} belongs to another user: its "
                                           "CPU time cannot be told apart (run rigbench as that user, or as root)")
    found = min(p for p in owners if p is not None)
    try:
        name = psutil.Process(found).name()
    except psutil.Error:
        name = ""
    if name in _FORWARDERS:
        return EngineRef("unknown", reason=f"port {port} is served by {name} (pid {found}), a forwarder or proxy: "
                                           "the engine behind it could not be found, so its CPU time cannot be told "
                                           "from other processes'")
    return EngineRef("local", found)


def _tree(root: int) -> list[psutil.Process]:
    p = psutil.Process(root)
    return [p, *p.children(recursive=True)]


@dataclass
class _Snapshot:
    stat: CpuStat | None
    engine: dict[int, float] | None  # pid -> CPU seconds
    own: dict[int, float] | None


class WindowJudge(Protocol):
    """Judges windows while they are measured (the verdict itself is `rigbench.analysis.assess_host`)."""

    def opening(self, window: str) -> None:
        """Before a window measures anything; raises `BusyHostError` to stop the run there."""

    def interim(self, record: HostConditions) -> bool:
        """A running window's figures so far; True stops it now."""

    def ended(self, record: HostConditions, *, cut: bool) -> str | None:
        """A window's record as it ends (`cut`: stopped by `interim`); for a cut window, the message of the
        `BusyHostError` it ends with."""


@dataclass
class HostWatch:
    """Measures host conditions around windows; one per run (the engine found once)."""

    engine: EngineRef
    interval_s: float = 0.25
    judge: WindowJudge | None = None
    judge_after_s: float = 10.0  # a running window is judged once it has run this long (5x the calibrated 2 s)...
    judge_every_s: float = 5.0  # ...and again this often
    proc: Path = Path("/proc")
    sys_cpu: Path = Path("/sys/devices/system/cpu")
    nvidia_smi: str | None = field(default_factory=lambda: shutil.which("nvidia-smi"))

    def window(self, scenario: str, *, concurrency: int | None = None, rate_rps: float | None = None) -> HostWindow:
        return HostWindow(self, scenario, concurrency, rate_rps)

    # --- readers: each returns a value or raises OSError / psutil.Error, turned into `unknown` by the window

    def read_stat(self) -> CpuStat:
        return cpu_stat((self.proc / "stat").read_text())

    def engine_tree(self) -> list[psutil.Process]:
        if self.engine.pid is None:
            return []
        return _tree(self.engine.pid)

    def cpus(self, engine: list[psutil.Process]) -> set[int]:
        mask = set(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else set()
        for p in engine:
            with contextlib.suppress(psutil.Error, OSError, AttributeError):  # no cpu_affinity on macOS
                mask |= set(p.cpu_affinity() or [])
        return mask

    def mhz(self, cpus: set[int]) -> float | None:
        vals = []
        for c in sorted(cpus):
            with contextlib.suppress(OSError, ValueError):
                vals.append(int((self.sys_cpu / f"cpu{c}" / "cpufreq" / "scaling_cur_freq").read_text()) / 1000)
        return sum(vals) / len(vals) if vals else None

    def max_mhz(self, cpus: set[int]) -> float | None:
        vals = []
        for c in sorted(cpus):
            with contextlib.suppress(OSError, ValueError):
                vals.append(int((self.sys_cpu / f"cpu{c}" / "cpufreq" / "cpuinfo_max_freq").read_text()) / 1000)
        return max(vals) if vals else None

    def gpu_apps(self) -> list[tuple[int, str, str, float | None]]:
        """nvidia-smi's compute processes: (pid, name, gpu uuid, MiB)."""
        assert self.nvidia_smi is not None
        out = subprocess.run([self.nvidia_smi, "--query-compute-apps=pid,process_name,gpu_uuid,used_memory",
                              "--format=csv,noheader,nounits"], capture_output=True, text=True, timeout=10,
                             check=True).stdout
        rows = []
        for line in out.splitlines():
            parts = [x.strip() for x in line.split(",")]
            if len(parts) >= 3 and parts[0].isdigit():
                mib = float(parts[3]) if len(parts) > 3 and parts[3].replace(".", "", 1).isdigit() else None
                rows.append((int(parts[0]), parts[1], parts[2], mib))
        return rows


def _cpu_times(procs: list[psutil.Process]) -> dict[int, float]:
    out: dict[int, float] = {}
    for p in procs:
        try:
            t = p.cpu_times()
        except psutil.NoSuchProcess:
            continue  # exited meanwhile: its time is lost to both ends alike
        out[p.pid] = t.user + t.system
    return out


def _delta(a: dict[int, float], b: dict[int, float]) -> float:
    """CPU seconds between two snapshots; a process born in between counts from its start."""
    return sum(v - a.get(pid, 0.0) for pid, v in b.items())


class HostWindow:
    """`async with watch.window(...) as w:` ...; then `w.record` (a HostConditions)."""

    def __init__(self, watch: HostWatch, scenario: str, concurrency: int | None, rate_rps: float | None) -> None:
        self.watch = watch
        self.scenario = scenario
        self.concurrency = concurrency
        self.rate_rps = rate_rps
        self.unknown: dict[str, str] = {}
        self.run_queue: list[int] = []
        self.cpu_mhz: list[float] = []
        self.record: HostConditions | None = None
        self._task: asyncio.Task[None] | None = None
        self._cpus: set[int] = set()
        self._engine_procs: list[psutil.Process] = []
        self._owner: asyncio.Task[object] | None = None  # the task measuring inside the window
        self._cut = False  # the judge stopped this window while it ran

    def _note(self, figure: str, why: str) -> None:
        self.unknown.setdefault(figure, why)

    def _engine(self) -> list[psutil.Process]:
        ref = self.watch.engine
        if ref.location not in ("launched", "local"):
            self._note("engine_cpu_s", ref.reason or "the engine's process is not on this host")
            return []
        try:
            return self.watch.engine_tree()
        except psutil.NoSuchProcess:
            self._note("engine_cpu_s", f"the engine's process (pid {ref.pid}) is gone")
        except (psutil.AccessDenied, PermissionError) as e:
            self._note("engine_cpu_s", f"permission refused reading the engine's process (pid {ref.pid}): {e}")
        except OSError as e:
            self._note("engine_cpu_s", f"the engine's process (pid {ref.pid}) could not be read: {e}")
        return []

    def _snapshot(self) -> _Snapshot:
        stat: CpuStat | None = None
        try:
            stat = self.watch.read_stat()
            if not stat.per_cpu:
                raise OSError("no per-CPU lines")
        except OSError as e:
            stat = None
            self._note("busy_cpu_s", f"{self.watch.proc / 'stat'} could not be read ({e}): not Linux, or /proc "
                                     "is not mounted")
        procs = self._engine()
        self._engine_procs = procs or self._engine_procs
        engine: dict[int, float] | None = None
        if procs:
            try:
                engine = _cpu_times(procs)
            except (psutil.AccessDenied, PermissionError) as e:
                self._note("engine_cpu_s", f"permission refused reading the engine's CPU time (pid "
                                           f"{self.watch.engine.pid}): {e}")
            except (psutil.Error, OSError) as e:
                self._note("engine_cpu_s", f"the engine's CPU time could not be read: {e}")
        own: dict[int, float] | None = None
        try:
            own = _cpu_times([psutil.Process()])
        except (psutil.Error, OSError) as e:
            self._note("rigbench_cpu_s", f"rigbench's own CPU time could not be read: {e}")
        return _Snapshot(stat, engine, own)

    def _sample(self) -> None:
        with contextlib.suppress(OSError):
            r = self.watch.read_stat().procs_running
            if r is not None:
                self.run_queue.append(r)
        m = self.watch.mhz(self._cpus)
        if m is not None:
            self.cpu_mhz.append(m)

    async def _loop(self) -> None:
        judge, owner = self.watch.judge, self._owner
        next_judge = self._t0 + int(self.watch.judge_after_s * 1e9)
        while True:
            await asyncio.sleep(self.watch.interval_s)
            self._sample()
            now = time.perf_counter_ns()
            if judge is None or owner is None or now < next_judge:
                continue
            next_judge = now + int(self.watch.judge_every_s * 1e9)
            # so far: no nvidia-smi here (a subprocess every few seconds on the loop that stamps chunks)
            if judge.interim(self._build(self._snapshot(), now, gpus=False)):
                self._cut = True
                owner.cancel()
                return

    async def __aenter__(self) -> HostWindow:
        if self.watch.judge is not None:
            self.watch.judge.opening(self.label)
        self._owner = asyncio.current_task()
        self._start = self._snapshot()
        self._cpus = self.watch.cpus(self._engine_procs)
        if self._start.stat is not None:
            self._cpus &= set(self._start.stat.per_cpu)
        self._t0 = time.perf_counter_ns()
        self._sample()
        self._task = asyncio.create_task(self._loop())
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, *exc: object) -> None:
        if self._task is not None:
            await stop_task(self._task)
            self._task = None
        self._sample()
        end = self._snapshot()
        t1 = time.perf_counter_ns()
        self.record = self._build(end, t1)
        judge = self.watch.judge
        if judge is None:
            return
        if not self._cut:
            if exc_type is None:
                judge.ended(self.record, cut=False)
            return
        if self._owner is not None and self._owner.cancelling() and self._owner.uncancel() > 0 \
                and exc_type is asyncio.CancelledError:
            return  # cancelled by someone else too (Ctrl-C): that cancellation goes on
        raise BusyHostError(judge.ended(self.record, cut=True) or f"host busy during {self.label}") from None

    @property
    def label(self) -> str:
        """The window as findings name it: "chat_short c=1", "load/r0 rate=5/s"."""
        return f"{self.scenario} " + (f"c={self.concurrency}" if self.concurrency is not None
                                      else f"rate={self.rate_rps:g}/s")

    def _build(self, end: _Snapshot, t1: int, *, gpus: bool = True) -> HostConditions:
        a, cpus = self._start, self._cpus
        busy = steal = None
        if a.stat is not None and end.stat is not None and cpus:
            busy = sum(end.stat.per_cpu[c][0] - a.stat.per_cpu[c][0] for c in cpus if c in end.stat.per_cpu)
            steal = sum(end.stat.per_cpu[c][1] - a.stat.per_cpu[c][1] for c in cpus if c in end.stat.per_cpu)
        engine_cpu = _delta(a.engine, end.engine) if a.engine is not None and end.engine is not None else None
        own_cpu = _delta(a.own, end.own) if a.own is not None and end.own is not None else None
        me = os.getpid()
        in_rigbench = any(p.pid == me for p in self._engine_procs)
        if in_rigbench:
            engine_cpu = own_cpu
        if not self.cpu_mhz:
            self._note("cpu_mhz", f"no CPU clock readable under {self.watch.sys_cpu} (cpufreq absent: common in VMs)")
        if not self.run_queue:
            self._note("run_queue", f"procs_running not readable in {self.watch.proc / 'stat'}")
        gpu_other, gpu_note = self._gpus() if gpus else (None, None)
        if gpu_note:
            self._note("gpu", gpu_note)
        name = None
        if self._engine_procs:
            with contextlib.suppress(psutil.Error):
                name = self._engine_procs[0].name()
        window = self.label
        unit = (f"host/{self.scenario}/c{self.concurrency}" if self.concurrency is not None
                else f"host/{self.scenario}/rate{self.rate_rps:g}")
        return HostConditions(
            unit_id=unit, window=window, scenario=self.scenario, concurrency=self.concurrency,
            rate_rps=self.rate_rps, started_ns=self._t0, ended_ns=t1, engine=self.watch.engine.location,
            engine_pids=sorted(p.pid for p in self._engine_procs), engine_name=name, cpus=sorted(cpus),
            busy_cpu_s=busy, engine_cpu_s=engine_cpu, rigbench_cpu_s=own_cpu, steal_s=steal,
            engine_in_rigbench=in_rigbench, run_queue=self.run_queue, cpu_mhz=[round(m, 1) for m in self.cpu_mhz],
            cpu_max_mhz=self.watch.max_mhz(cpus), gpu_other=gpu_other, unknown=dict(self.unknown),
        )

    def _gpus(self) -> tuple[list[GpuProcess] | None, str | None]:
        """Compute processes on the engine's GPUs that are not the engine's (None + why when not known)."""
        if self.watch.engine.location not in ("launched", "local") or not self._engine_procs:
            return None, None  # the engine's own note (engine_cpu_s) says why; its GPUs are unknown with it
        if self.watch.nvidia_smi is None:
            return None, "not applicable: no nvidia-smi on this host"
        try:
            apps = self.watch.gpu_apps()
        except (OSError, subprocess.SubprocessError) as e:
            return None, f"nvidia-smi failed ({e})"
        engine_pids = {p.pid for p in self._engine_procs}
        with contextlib.suppress(psutil.Error):
            engine_pids |= {c.pid for p in self._engine_procs for c in p.children(recursive=True)}
        mine = {uuid for pid, _, uuid, _ in apps if pid in engine_pids}
        if not mine:
            if apps and not any(psutil.pid_exists(pid) for pid, *_ in apps):
                return None, ("nvidia-smi's process ids are not this host's (rigbench runs in a container?): the "
                              "engine's GPUs and other processes on them cannot be told apart")
            return None, "not applicable: the engine holds no GPU nvidia-smi lists"
        return [GpuProcess(pid=pid, name=name, gpu_uuid=uuid, used_memory_mib=mib)
                for pid, name, uuid, mib in apps if uuid in mine and pid not in engine_pids], None
