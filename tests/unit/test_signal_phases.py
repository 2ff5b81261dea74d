"""A stop signal ends the run within seconds in every phase, marked and resumable (issue 34, item 3).

Adversary: what keeps a run from taking its signal: a server that never answers (attach, the gate), work
in the event loop's thread that never yields (building prompts of millions of tokens: before, SIGTERM
was ignored for 619 s), a trace of a million lines parsed before the loop starts, a window of load in
flight, reports being drawn. Each case runs `rigbench run` (or `report`) as a subprocess, brings it to
its phase (told by what the server has seen, or by the process's own output), and sends SIGTERM, SIGHUP
or SIGINT: it must exit 128 + the signal within `BOUND_S`, without a traceback, and a run directory it
made must read `interrupted` and resume. The watchdog itself (`cli/_signals.py`) is tested on a loop
stuck in pure computation, in a blocking call and in a task, and on a clean-up that hangs (the hard exit).
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from rigbench.cli._signals import BACKSTOP_MARGIN_S, GRACE_S
from rigbench.store import RunReader
from rigbench.testing import Delay, EmulatorProcess, EmulatorScript
from tests.children import spawned

# The watchdog's grace, the run's own clean-up (closing connections, finishing run.json), a Python start-up,
# and room for a busy 2-core host.
BOUND_S = GRACE_S + 12.0


def _foreground() -> None:  # as a terminal's foreground job: the stop signals at their defaults
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)


def _start(*args: str) -> contextlib.AbstractContextManager[subprocess.Popen[str]]:
    """`rigbench *args` as a child that is SIGKILLed with its group when the test leaves the block, however."""
    return spawned([sys.executable, "-m", "rigbench", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                   text=True, env={**os.environ, "COLUMNS": "200"}, preexec_fn=_foreground)


def _stop(proc: subprocess.Popen[str], sig: signal.Signals) -> tuple[str, str]:
    """Send `sig`; the process must be gone within BOUND_S, with 128 + sig and no traceback."""
    t0 = time.monotonic()
    proc.send_signal(sig)
    try:
        out, err = proc.communicate(timeout=BOUND_S)
    except subprocess.TimeoutExpired:
        pytest.fail(f"still running {BOUND_S:.0f} s after {sig.name}")  # `_start`'s block kills it
    took = time.monotonic() - t0
    assert proc.returncode == 128 + sig, (proc.returncode, took, out[-1500:], err[-1500:])
    assert "Traceback" not in err, err[-3000:]
    assert f"interrupted ({'Ctrl-C' if sig == signal.SIGINT else sig.name}" in out + err, (out[-800:], err[-800:])
    return out, err


class _Server:
    """A server that answers the attach calls (`/v1/models`; 404 for the rest) and never answers `hang`
    (a path prefix): it records what it saw, so a test knows the phase the client is in."""

    def __init__(self, hang: str) -> None:
        self.hang = hang
        self.seen: list[str] = []
        self.hanging = threading.Event()
        self._sock = socket.socket()
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(64)
        self.url = f"http://127.0.0.1:{self._sock.getsockname()[1]}/v1"
        self._open: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            self._open.append(conn)
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        buf = b""
        with conn:
            while True:
                try:
                    data = conn.recv(65536)
                except OSError:
                    return
                if not data:
                    return
                buf += data
                while b"\r\n\r\n" in buf:
                    head, _, rest = buf.partition(b"\r\n\r\n")
                    lines = head.decode("latin-1").split("\r\n")
                    method, path = lines[0].split(" ")[:2]
                    length = next((int(v) for k, _, v in (h.partition(":") for h in lines[1:])
                                   if k.strip().lower() == "content-length"), 0)
                    if len(rest) < length:
                        break
                    buf = rest[length:]
                    self.seen.append(f"{method} {path}")
                    if path.startswith(self.hang):
                        self.hanging.set()
                        threading.Event().wait(600)  # never answers; the client must give up or be stopped
                        return
                    if path.rstrip("/").endswith("/models"):
                        body = b'{"object": "list", "data": [{"id": "m", "object": "model"}]}'
                        status = b"200 OK"
                    else:
                        body, status = b'{"error": {"message": "no route"}}', b"404 Not Found"
                    conn.sendall(b"HTTP/1.1 " + status + b"\r\nContent-Type: application/json\r\nContent-Length: "
                                 + str(len(body)).encode() + b"\r\n\r\n" + body)

    def chats(self) -> list[str]:
        return [s for s in self.seen if "/completions" in s]

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)  # wakes the accepting thread (a close alone leaves it listening)
        self._sock.close()
        for c in self._open:
            with contextlib.suppress(OSError):
                c.shutdown(socket.SHUT_RDWR)
            c.close()


@contextmanager
def _server(hang: str) -> Iterator[_Server]:
    s = _Server(hang)
    try:
        yield s
    finally:
        s.close()


def _wait(what: str, ok: object, proc: subprocess.Popen[str], timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if callable(ok) and ok():
            return
        if proc.poll() is not None:
            out, err = proc.communicate()
            pytest.fail(f"ended ({proc.returncode}) before {what}: {out[-800:]} {err[-1500:]}")
        time.sleep(0.05)
    pytest.fail(f"never reached {what} in {timeout_s:.0f} s")  # `_start`'s block kills it


def _has_open(pid: int, path: Path) -> bool:
    """Whether process `pid` has `path` open now (its phase: reading that file)."""
    try:
        fds = list(Path(f"/proc/{pid}/fd").iterdir())
    except OSError:
        return False
    for fd in fds:
        with contextlib.suppress(OSError):
            if os.readlink(fd) == str(path):
                return True
    return False


def _only_run(out: Path) -> Path:
    (d,) = [p for p in out.iterdir() if p.is_dir()]
    return d


# -- each phase ------------------------------------------------------------------------------------

def test_attach_to_a_server_that_never_answers(tmp_path: Path) -> None:
    with _server(hang="/v1/models") as srv, _start("run", "--endpoint", srv.url, "--out", str(tmp_path / "runs")) as proc:
        _wait("the attach request", srv.hanging.is_set, proc)
        _stop(proc, signal.SIGTERM)


def test_the_gate_waiting_on_an_answer_is_marked_interrupted_and_resumes(tmp_path: Path) -> None:
    out = tmp_path / "runs"
    with _server(hang="/v1/chat/completions") as srv:
        port = int(srv.url.rsplit(":", 1)[1].split("/")[0])
        with _start("run", "--endpoint", srv.url, "--scenarios", "chat_short", "--repetitions", "2",
                    "--out", str(out)) as proc:
            _wait("the gate's first question", srv.hanging.is_set, proc)
            _stop(proc, signal.SIGHUP)
    run_dir = _only_run(out)
    assert RunReader(run_dir).header.status == "interrupted"
    # the server comes back (an answering one, on the same address, serving the same model): the run resumes
    back = EmulatorScript(model="m", ttft=Delay(mean_ms=2), itl=Delay(mean_ms=1), persona="healthy")
    with EmulatorProcess(back, port=port) as emu:
        assert emu.url == srv.url
        res = subprocess.run([sys.executable, "-m", "rigbench", "run", "--resume", str(run_dir), "--allow-untrusted"],
                             capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    assert RunReader(run_dir).header.status == "complete"


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_building_prompts_of_millions_of_tokens_in_the_loop_thread(sig: signal.Signals, tmp_path: Path) -> None:
    """The issue's case: no tokenizer on the server, so prompts are written word by word in the loop's thread
    (4 x 3M tokens: minutes on this host); before, SIGTERM waited for all of it."""
    out = tmp_path / "runs"
    with _server(hang="/v1/chat/completions") as srv, \
            _start("run", "--endpoint", srv.url, "--no-sanity", "--allow-untrusted", "--rate", "1", "--requests", "4",
                   "--input-tokens", "3000000", "--out", str(out)) as proc:
        _wait("attached", lambda: any(s.endswith("/models") for s in srv.seen), proc)
        time.sleep(1.5)  # attach done: the loop's thread now builds the first prompt (tens of seconds)
        assert srv.chats() == [], srv.seen  # still building: nothing sent
        _stop(proc, sig)
        assert srv.chats() == []
    reader = RunReader(_only_run(out))
    assert reader.header.status == "interrupted", reader.header.status


def test_a_million_line_trace_being_read_before_the_loop_starts(tmp_path: Path) -> None:
    trace = tmp_path / "big.csv"
    with trace.open("w") as f:
        f.write("arrival_s,input_tokens,output_tokens\n")
        f.writelines(f"{i / 1000:.3f},10,4\n" for i in range(1_000_000))
    with _server(hang="/v1/chat/completions") as srv, \
            _start("run", "--endpoint", srv.url, "--trace", str(trace), "--out", str(tmp_path / "runs")) as proc:
        _wait("the trace open for reading", lambda: _has_open(proc.pid, trace), proc)
        assert srv.seen == [], srv.seen  # still reading: not attached yet
        _stop(proc, signal.SIGTERM)
    assert not (tmp_path / "runs").exists()  # stopped before a run directory was made


def test_a_load_window_in_flight_is_marked_interrupted_and_resumes(tmp_path: Path) -> None:
    out = tmp_path / "runs"
    slow = EmulatorScript(ttft=Delay(mean_ms=5), itl=Delay(mean_ms=40), output_tokens=32)
    with EmulatorProcess(slow) as emu:
        with _start("run", "--endpoint", emu.url, "--no-sanity", "--allow-untrusted", "--rate", "4", "--requests",
                    "40", "--out", str(out)) as proc:
            _wait("requests answered", lambda: len(emu.fetch_truth()) >= 2, proc)
            _stop(proc, signal.SIGTERM)
        run_dir = _only_run(out)
        assert RunReader(run_dir).header.status == "interrupted"
        res = subprocess.run([sys.executable, "-m", "rigbench", "run", "--resume", str(run_dir), "--allow-untrusted"],
                             capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    reader = RunReader(run_dir)
    assert reader.header.status == "complete" and len(list(reader.raw_records("load_request"))) >= 40


def test_reports_being_written(tmp_path: Path) -> None:
    golden = Path(__file__).parent.parent / "golden" / "run_v1"
    html = tmp_path / "r.html"
    with _start("report", str(golden), "--html", str(html)) as proc:
        assert proc.stdout is not None
        proc.stdout.readline()  # the terminal report has begun; the HTML (plots) comes after it
        proc.send_signal(signal.SIGSTOP)  # held here: the signal lands in the report, whatever the host's pace
        try:
            assert not html.exists(), "the report was written before it could be stopped"
        finally:
            proc.send_signal(signal.SIGCONT)
        _stop(proc, signal.SIGTERM)
    assert not html.exists()


# -- the watchdog, on a loop that does not yield, and the backstop, on a call that holds the interpreter --------

_STUCK = textwrap.dedent("""
    import asyncio, sys, time
    from rigbench.cli import _signals
    _signals.HARD_S = float(sys.argv[2])

    async def main(kind):
        try:
            print("ready", flush=True)
            if kind == "compute":
                while True:
                    sum(range(1000))
            elif kind == "blocking":
                time.sleep(1000)
            elif kind == "task":
                async def burn():
                    while True:
                        sum(range(1000))
                await asyncio.gather(asyncio.create_task(burn()))
            elif kind in ("await", "hung_clean_up"):
                await asyncio.sleep(1000)
            elif kind == "c_call":
                sum(range(10**12))  # one C call, hours long: no handler and no other thread runs in it
        finally:
            await asyncio.sleep(1000 if kind == "hung_clean_up" else 0.1)  # clean-up that awaits: it must still run
            print("cleaned up", flush=True)

    with _signals.handle_stop_signals():
        try:
            if sys.argv[1] == "c_call_outside_the_loop":  # as a trace or plan being read
                print("ready", flush=True)
                sum(range(10**12))
            _signals.run_stoppable(main(sys.argv[1]))
        except KeyboardInterrupt:
            print("interrupted", flush=True)
            sys.exit(_signals.interrupt_exit_code())
""")


def _stuck(kind: str, hard_s: float, loop: str = "") -> contextlib.AbstractContextManager[subprocess.Popen[str]]:
    return spawned([sys.executable, "-c", _STUCK, kind, str(hard_s)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                   text=True, env={**os.environ, "RIGBENCH_EVENT_LOOP": loop}, preexec_fn=_foreground)


def _cpu_s(pid: int) -> float:
    """CPU seconds `pid` has used (user + system, from /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _signal_when_ready(proc: subprocess.Popen[str], sig: signal.Signals, timeout_s: float,
                       busy_s: float = 0.0) -> tuple[str, str, float]:
    """Send `sig` once the child says ready (and, with `busy_s`, has then spent that much CPU: it is inside the
    work that follows, whatever the host's pace); its output and the seconds it took to end (fails past
    timeout_s)."""
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    start = _cpu_s(proc.pid)
    deadline = time.monotonic() + 60
    while _cpu_s(proc.pid) < start + busy_s:
        assert time.monotonic() < deadline, "the child never got to work"
        time.sleep(0.05)
    t0 = time.monotonic()
    proc.send_signal(sig)
    try:
        out, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        pytest.fail(f"still running {timeout_s:.0f} s after {sig.name}")  # the `spawned` block kills it
    return out, err, time.monotonic() - t0


@pytest.mark.parametrize(("kind", "loop"), [("compute", "uvloop"), ("blocking", "asyncio"), ("task", "uvloop"),
                                            ("await", "asyncio")])
def test_the_watchdog_raises_in_a_loop_thread_that_does_not_take_the_cancel(kind: str, loop: str) -> None:
    with _stuck(kind, 60, loop if loop == "asyncio" else "") as proc:
        out, err, took = _signal_when_ready(proc, signal.SIGTERM, 60)
    assert proc.returncode == 143 and out.split() == ["cleaned", "up", "interrupted"], (proc.returncode, out, err)
    # an awaiting loop takes the cancel at once; one that does not yield, at the watchdog's grace
    assert took < (GRACE_S + 8 if kind != "await" else 5), took


def test_a_run_whose_clean_up_hangs_is_ended_at_the_hard_deadline() -> None:
    with _stuck("hung_clean_up", 8) as proc:
        out, err, took = _signal_when_ready(proc, signal.SIGTERM, 60)
    # its own exit, with its code and message, comes before the backstop's (at 8 + BACKSTOP_MARGIN_S)
    assert proc.returncode == 143 and 8 <= took < 8 + BACKSTOP_MARGIN_S, (proc.returncode, took, out, err)
    assert "SIGTERM 8 s ago and the run has not stopped: exiting now; the partial run is kept" in err, err[-2000:]
    assert "killed" not in err


def _backstops_of(pid: int) -> list[int]:
    """Backstop processes still watching `pid` (`python -I -S -c _BACKSTOP PID SECONDS`)."""
    found = []
    for p in Path("/proc").iterdir():
        with contextlib.suppress(OSError):
            cmd = (p / "cmdline").read_bytes().split(b"\0")
            if p.name.isdigit() and b"-I" in cmd and b"-S" in cmd and str(pid).encode() in cmd:
                found.append(int(p.name))
    return found


@pytest.mark.parametrize(("kind", "loop"), [("c_call", "uvloop"), ("c_call_outside_the_loop", "asyncio")])
def test_one_c_call_that_holds_the_interpreter_is_killed_by_the_backstop(kind: str, loop: str) -> None:
    """No handler, no watchdog thread and no hard exit can run inside `sum(range(10**12))`: before, SIGTERM
    waited hours for it. The backstop process kills it at HARD_S + BACKSTOP_MARGIN_S after the signal."""
    hard = 2.0
    with _stuck(kind, hard, loop if loop == "asyncio" else "") as proc:
        out, err, took = _signal_when_ready(proc, signal.SIGTERM, hard + BACKSTOP_MARGIN_S + 20, busy_s=0.3)
    assert proc.returncode == -signal.SIGKILL, (proc.returncode, out, err[-2000:])
    after = hard + BACKSTOP_MARGIN_S
    assert after - 0.5 <= took, took  # not before its time: the process's own hard exit comes first where it can
    assert out.split() == []  # nothing in the process ran after the signal: no clean-up, no message of its own
    said = " ".join(err.split())
    assert (f"A stop signal came {after:.0f} s ago and rigbench has not stopped (one call holds Python's interpreter "
            "lock, so no handler runs): killed; the partial run is kept and `rigbench run --resume RUN_DIR` "
            "continues it.") in said
    assert _backstops_of(proc.pid) == []  # the backstop went with it


_LEFT_ALONE = textwrap.dedent("""
    import os, signal, sys, time
    from rigbench.cli import _signals
    _signals.HARD_S = 1.0
    signal.signal(signal.SIGHUP, signal.SIG_IGN)  # as under nohup
    with _signals.handle_stop_signals():
        child = os.fork()
        if child == 0:  # a forked child takes a stop signal of its own: not rigbench's
            try:
                os.kill(os.getpid(), signal.SIGTERM)
                time.sleep(10)
            except KeyboardInterrupt:
                os._exit(0)
            os._exit(1)
        assert os.waitpid(child, 0)[1] == 0
        os.kill(os.getpid(), signal.SIGHUP)  # ignored: stays ignored
        print("ready", _signals._backstop.pid, flush=True)
        time.sleep(_signals.HARD_S + _signals.BACKSTOP_MARGIN_S + 2)  # past when a backstop armed would kill
        print("alive", flush=True)
""")


def test_the_backstop_leaves_alone_a_process_that_took_no_stop_signal() -> None:
    """Controls: an ignored SIGHUP (nohup), a forked child's own SIGTERM and no signal at all arm nothing:
    the process lives on past the time a backstop would have killed it, its backstop running all along."""
    with spawned([sys.executable, "-c", _LEFT_ALONE], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                 preexec_fn=_foreground) as proc:
        assert proc.stdout is not None
        ready = proc.stdout.readline().split()
        assert ready[0] == "ready", (ready, proc.stderr.read() if proc.stderr else "")
        assert _backstops_of(proc.pid) == [int(ready[1])]  # the backstop is up: the control can judge
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0 and out.split() == ["alive"], (proc.returncode, out, err[-2000:])
    assert _backstops_of(proc.pid) == []  # and it went with the process
