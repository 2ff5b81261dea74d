"""No input ends in a traceback; every refusal is one line on stderr and exit 2 (issue 14).

In-process (`cli_inproc.invoke`), against copies of the golden run and the reference emulator.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rigbench.client import AiohttpTransport, StampedTransport, StreamTransport
from rigbench.store import RunReader
from rigbench.testing import Delay, EmulatorProcess, EmulatorScript, Fault
from tests.needs import missing
from tests.unit.cli_inproc import Result, invoke

GOLDEN = Path(__file__).parent.parent / "golden" / "run_v1"
FAST = EmulatorScript(ttft=Delay(mean_ms=2), itl=Delay(mean_ms=1), output_tokens=16)


def refused(res: Result, *needles: str) -> str:
    assert res.traceback is None, res.traceback
    assert res.code == 2, (res.code, res.stdout, res.stderr)
    msg = " ".join(res.stderr.split())
    for n in needles:
        assert n in msg, (n, msg)
    return msg


def _without_privileges(*args: str) -> Result:
    """`rigbench *args` in a child that cannot write past permissions: as root (CI), the same uid
    with every capability dropped (so no CAP_DAC_OVERRIDE), which also keeps the checkout readable."""
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        missing("running as root, and `setpriv` (util-linux) is not there to drop the capabilities")
    p = subprocess.run([setpriv, "--bounding-set=-all", "--inh-caps=-all", "--no-new-privs",
                        sys.executable, "-m", "rigbench", *args],
                       capture_output=True, text=True, timeout=120, env={**os.environ, "COLUMNS": "200"})
    trace = p.stderr if "Traceback (most recent call last)" in p.stderr else None
    return Result(p.returncode, p.stdout, p.stderr, trace)


def _copy(tmp: Path, name: str) -> Path:
    d = tmp / name
    shutil.copytree(GOLDEN, d)
    return d


def test_output_paths_are_checked_before_anything_runs(tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    a_file = tmp_path / "file"
    a_file.write_text("x")
    try:
        for opt in ("--html", "--markdown", "--json", "--vllm-json"):
            refused(invoke("report", str(GOLDEN), opt, str(tmp_path)), opt, "is a directory")
            refused(invoke("report", str(GOLDEN), opt, str(tmp_path / "no" / "x")), opt, "does not exist")
            args = ("report", str(GOLDEN), opt, str(locked / "x"))
            refused(invoke(*args) if not os.access(locked, os.W_OK) else _without_privileges(*args),
                    opt, "permission denied")
    finally:
        locked.chmod(0o700)
    # run: refused before attaching (the endpoint is closed: reaching it would say "cannot reach")
    dead = ["--endpoint", "http://127.0.0.1:9/v1"]
    refused(invoke("run", *dead, "--out", str(a_file)), "--out", "not a directory")
    refused(invoke("run", *dead, "--markdown", str(tmp_path)), "--markdown", "is a directory")
    refused(invoke("compare", str(GOLDEN), str(GOLDEN), "--markdown", str(tmp_path)), "--markdown")


def test_report_of_runs_where_a_later_one_has_no_speed_records(tmp_path: Path) -> None:
    a, b = _copy(tmp_path, "a"), _copy(tmp_path, "b")
    rec = b / "records.jsonl"
    rec.write_text("".join(line for line in rec.read_text().splitlines(keepends=True) if '"speed_' not in line))
    md = tmp_path / "r.md"
    res = invoke("report", str(a), str(b), "--markdown", str(md))
    assert res.traceback is None and res.code == 0, (res.traceback, res.stderr)
    assert "chat_short" in md.read_text()


def test_damaged_records_are_counted_and_shown(tmp_path: Path) -> None:
    d = _copy(tmp_path, "run")
    lines = (d / "records.jsonl").read_text().splitlines(keepends=True)
    lines[3] = lines[3].replace('"concurrency":1', '"concurrency":"one"')  # a wrong field type
    lines[5] = '{"kind": "speed_request", "unit_id": \n'  # an invalid line mid-file
    (d / "records.jsonl").write_text("".join(lines))
    md = tmp_path / "r.md"
    res = invoke("report", str(d), "--markdown", str(md))
    assert res.traceback is None and res.code == 0, (res.traceback, res.stderr)
    assert "2 damaged records skipped" in " ".join(res.stdout.split())
    assert "2 damaged records skipped" in md.read_text()
    assert "damaged" not in invoke("report", str(GOLDEN)).stdout


@pytest.mark.parametrize("bad", ["inf", "nan", "-1", "0", "1e308"])
def test_roofline_and_kv_numbers_are_range_checked(bad: str) -> None:
    refused(invoke("roofline", "--weights-gb", bad, "--bandwidth-gbs", "273"), "--weights-gb", "finite")
    refused(invoke("roofline", "--weights-gb", "4", "--bandwidth-gbs", bad), "--bandwidth-gbs")
    refused(invoke("kv", "--budget-gib", bad, "--context", "4096", "--layers", "32", "--kv-heads", "8",
                   "--head-dim", "128"), "--budget-gib")
    if bad != "0":
        refused(invoke("roofline", "--weights-gb", "4", "--bandwidth-gbs", "273", "--tok-s", bad), "--tok-s")


def test_kv_model_file_that_is_not_a_model_is_one_line(tmp_path: Path) -> None:
    junk = tmp_path / "junk.gguf"
    junk.write_bytes(b"not a gguf at all" * 10)
    truncated = tmp_path / "trunc.gguf"
    truncated.write_bytes(b"GGUF\x03\x00\x00\x00" + b"\x05" * 7)
    for f in (junk, truncated):
        refused(invoke("kv", "--budget-gib", "8", "--context", "4096", "--model", str(f)), "--model", str(f))
        refused(invoke("roofline", "--model", str(f), "--bandwidth-gbs", "273"), str(f))
    refused(invoke("kv", "--budget-gib", "8", "--context", "4096", "--layers", "32", "--kv-heads", "8",
                   "--head-dim", "128", "--window", "-1"), "--window", "-1")


def test_kv_takes_the_model_file_as_model_file_and_says_model_is_deprecated(tmp_path: Path) -> None:
    junk = tmp_path / "junk.gguf"
    junk.write_bytes(b"not a gguf at all" * 10)
    new = refused(invoke("kv", "--budget-gib", "8", "--context", "4096", "--model-file", str(junk)), str(junk))
    assert "deprecated" not in new
    old = refused(invoke("kv", "--budget-gib", "8", "--context", "4096", "--model", str(junk)), str(junk))
    assert "--model is deprecated here, use --model-file" in old
    refused(invoke("kv", "--budget-gib", "8", "--context", "4096", "--model", str(junk), "--model-file", str(junk)),
            "give the model once")


def test_roofline_above_the_ceiling_is_said_to_be_a_finding_about_the_inputs() -> None:
    res = invoke("roofline", "--weights-gb", "59.6", "--bandwidth-gbs", "273", "--tok-s", "400")
    assert res.code == 0 and res.traceback is None
    out = " ".join(res.stdout.split())
    assert "the inputs cannot all be right" in out and "--weights-gb" in out
    assert "cannot all be right" not in invoke("roofline", "--weights-gb", "59.6", "--bandwidth-gbs", "273",
                                               "--tok-s", "4.3").stdout


@pytest.mark.parametrize("alpha", ["5", "-1", "0", "1", "nan"])
def test_compare_alpha_is_a_probability(alpha: str) -> None:
    refused(invoke("compare", str(GOLDEN), str(GOLDEN), "--alpha", alpha), "--alpha", "(0, 1)")


def test_compare_refuses_different_served_models(tmp_path: Path) -> None:
    b = _copy(tmp_path, "b")
    head = json.loads((b / "run.json").read_text())
    head["fingerprint"]["model"]["served_name"] = "another-model"
    (b / "run.json").write_text(json.dumps(head))
    refused(invoke("compare", str(GOLDEN), str(b)), "model.served_name", "another-model")
    res = invoke("compare", str(GOLDEN), str(b), "--allow-mismatch")
    assert res.code == 0 and res.traceback is None, res.stderr


@pytest.mark.parametrize(("args", "needles"), [
    (["--suite", ","], ["--suite", "names no suite"]),
    (["--suite", " "], ["--suite", "names no suite"]),
    (["--ctx-per-slot", "-5"], ["--ctx-per-slot", "-5"]),
    (["--ctx-per-slot", "0"], ["--ctx-per-slot"]),
    (["--effort-levels", "bogus"], ["--effort-levels", "bogus", "none, minimal, low"]),
    (["--effort-levels", ","], ["--effort-levels", "no level"]),
    (["--concurrency", "100000", "--max-requests", "100000000"], ["concurrency 100000", "ulimit"]),
    (["--concurrency", "100000"], ["--max-requests", "2,400,000 requests"]),
    (["--idle-timeout", "0"], ["--idle-timeout"]),
    (["--request-timeout", "nan"], ["--request-timeout"]),
    (["--bandwidth-gbs", "inf"], ["--bandwidth-gbs"]),
    (["--port", "70000"], ["--port", "1..65535"]),
])
def test_run_options_are_range_checked_before_anything_starts(args: list[str], needles: list[str]) -> None:
    # no --endpoint, so the embedded rig's options are checked too; a missing --llama-server makes a
    # check that let the value through fail fast instead of building or launching the engine
    refused(invoke("run", "--llama-server", "/nonexistent/llama-server", *args), *needles)


def test_credentials_in_the_url_are_stored_nowhere_and_loopback_is_local(tmp_path: Path) -> None:
    with EmulatorProcess(FAST) as emu:
        url = emu.url.replace("http://", "http://alice:s3cr3t-pw@")
        res = invoke("run", "--endpoint", url, "--no-sanity", "--allow-untrusted", "--scenarios", "chat_short",
                     "--repetitions", "1", "--warmup", "0", "--out", str(tmp_path / "runs"))
        assert res.code == 0 and res.traceback is None, res.stderr
    assert "s3cr3t" not in res.stdout + res.stderr and "alice" not in res.stdout + res.stderr
    (run_dir,) = (tmp_path / "runs").iterdir()
    for f in run_dir.rglob("*"):
        if f.is_file():
            assert b"s3cr3t" not in f.read_bytes() and b"alice" not in f.read_bytes(), f
    fp = RunReader(run_dir).header.fingerprint
    assert fp is not None and fp.host_is_server is True and fp.endpoint == emu.url
    assert "remote" not in res.stdout


def test_a_model_the_endpoint_does_not_list_is_refused_with_what_it_serves(tmp_path: Path) -> None:
    with EmulatorProcess(FAST) as emu:
        refused(invoke("run", "--endpoint", emu.url, "--model", "gpt-17", "--out", str(tmp_path)),
                "--model 'gpt-17' is not served", "emulated-model")


def test_idle_and_total_deadlines_are_typed_failures_a_user_can_set(tmp_path: Path) -> None:
    # keep-alive comments every 20 ms, no token after the 2nd for 60 s: bytes flow, tokens do not
    stall = FAST.model_copy(update={"keepalive_ms": 20.0,
                                    "faults": [Fault(kind="stall", at_token=2, stall_ms=60_000, every=2)]})
    with EmulatorProcess(stall) as emu:
        res = invoke("run", "--endpoint", emu.url, "--no-sanity", "--allow-untrusted", "--scenarios", "chat_short",
                     "--repetitions", "2", "--warmup", "0", "--idle-timeout", "0.5", "--out", str(tmp_path / "a"))
        assert res.code == 0 and res.traceback is None, res.stderr
        (run_dir,) = (tmp_path / "a").iterdir()
        errors = [r["result"]["error"] for r in RunReader(run_dir).raw_records("speed_request")]
        kinds = sorted(e["kind"] if e else "ok" for e in errors)
        assert kinds == ["idle_timeout", "ok"], errors
        assert "keep-alive" in next(e["message"] for e in errors if e)
        slow = FAST.model_copy(update={"itl": Delay(mean_ms=50), "output_tokens": 64})
    with EmulatorProcess(slow) as emu:
        res = invoke("run", "--endpoint", emu.url, "--no-sanity", "--allow-untrusted", "--scenarios", "chat_short",
                     "--repetitions", "1", "--warmup", "0", "--request-timeout", "0.8", "--out", str(tmp_path / "b"))
        assert res.code == 0 and res.traceback is None, res.stderr
        (run_dir,) = (tmp_path / "b").iterdir()
        (err,) = [r["result"]["error"] for r in RunReader(run_dir).raw_records("speed_request")]
        assert err["kind"] == "total_timeout" and "0.8 s" in err["message"]
        assert RunReader(run_dir).header.plan["deadlines"] == {"idle_s": 600.0, "total_s": 0.8}


def test_a_crash_between_requests_and_their_batch_record_leaves_no_duplicates(tmp_path: Path) -> None:
    with EmulatorProcess(FAST) as emu:
        out = tmp_path / "runs"
        res = invoke("run", "--endpoint", emu.url, "--no-sanity", "--allow-untrusted", "--scenarios", "chat_short",
                     "--repetitions", "4", "--warmup", "0", "--concurrency", "2", "--out", str(out))
        assert res.code == 0, res.stderr
        (run_dir,) = out.iterdir()
        rec = run_dir / "records.jsonl"
        lines = rec.read_text().splitlines(keepends=True)
        last_batch = max(i for i, line in enumerate(lines) if '"speed_batch"' in line)
        lines = lines[:last_batch]  # killed after the requests were written, before their batch record
        lines[-1] = lines[-1][:40]  # ... in the middle of the last request's line
        rec.write_text("".join(lines))
        head = json.loads((run_dir / "run.json").read_text())
        head.update(status="running", finished_at=None, source_data_id=None)
        (run_dir / "run.json").write_text(json.dumps(head))
        res = invoke("run", "--resume", str(run_dir), "--allow-untrusted")
        assert res.code == 0 and res.traceback is None, res.stderr
    v = tmp_path / "v.json"
    res = invoke("report", str(run_dir), "--vllm-json", str(v))
    assert res.code == 0, res.stderr
    exported = json.loads(v.read_text())
    assert exported["completed"] == 8 and len(exported["ttfts"]) == 8  # 4 batches x 2, none twice
    assert not math.isnan(exported["median_ttft_ms"])


def test_a_rejected_api_key_is_not_told_to_pass_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Denies(BaseHTTPRequestHandler):  # plays a server that rejects every key
        def do_GET(self) -> None:
            self.send_response(401)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(b'{"error": "invalid api key"}')

        def log_message(self, *args: object) -> None:
            pass

    srv = ThreadingHTTPServer(("127.0.0.1", 0), Denies)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{srv.server_address[1]}/v1"
    try:
        refused(invoke("run", "--endpoint", url, "--out", str(tmp_path)), "wants an API key", "--api-key-env")
        monkeypatch.setenv("RB_TEST_KEY", "wrong-key")
        msg = refused(invoke("run", "--endpoint", url, "--api-key-env", "RB_TEST_KEY", "--out", str(tmp_path)),
                      "rejected the API key", "--api-key-env")
        assert "wants an API key" not in msg and "wrong-key" not in msg
    finally:
        srv.shutdown()


def test_the_report_says_the_concurrency_actually_reached(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from rigbench.client import ChatClient

    slow = FAST.model_copy(update={"itl": Delay(mean_ms=5), "output_tokens": 32})
    runs: dict[str, Path] = {}
    real = ChatClient.configure

    def capped(self: ChatClient, **kw: object) -> None:
        real(self, **{**kw, "max_connections": 2})  # type: ignore[arg-type]

    with EmulatorProcess(slow) as emu:
        for name in ("full", "capped"):
            if name == "capped":  # plays a client whose connection cap is below the asked level
                monkeypatch.setattr(ChatClient, "configure", capped)
            res = invoke("run", "--endpoint", emu.url, "--no-sanity", "--allow-untrusted", "--scenarios",
                         "chat_short", "--repetitions", "2", "--warmup", "0", "--concurrency", "4",
                         "--out", str(tmp_path / name))
            assert res.code == 0 and res.traceback is None, res.stderr
            (runs[name],) = (tmp_path / name).iterdir()
    for name, want in (("full", 4), ("capped", 2)):
        js = tmp_path / f"{name}.json"
        res = invoke("report", str(runs[name]), "--json", str(js))
        (row,) = json.loads(js.read_text())["speed"]["rows"]
        assert row["concurrency"] == 4 and row["concurrency_reached"] == want
        said = "concurrency actually reached: 2" in " ".join(res.stdout.split())
        assert said == (name == "capped")


@pytest.mark.parametrize("transport", [StampedTransport, AiohttpTransport])
async def test_idle_deadline_counts_tokens_not_keepalives_on_both_transports(transport: type[StreamTransport]) -> None:
    from rigbench.client import ChatClient, Deadlines
    from rigbench.testing import Emulator

    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}],
            "x_emulator": {"faults": [{"kind": "stall", "at_token": 2, "stall_ms": 60_000}]}}
    async with Emulator(FAST.model_copy(update={"keepalive_ms": 30.0})) as emu, \
            ChatClient(emu.url, deadlines=Deadlines(idle_s=0.3), transport=transport()) as c:
        r = await c.stream_chat(body)
        assert r.error is not None and r.error.kind == "idle_timeout" and r.comment_events >= 3
        assert len(r.chunk_ns) == 2  # what arrived before the stall is kept
        assert (await c.stream_chat({"model": "m", "messages": body["messages"]})).ok


def test_a_speed_suite_that_ends_before_the_first_probe_still_reports() -> None:
    # issue 22, item 1: a block shorter than the probe's first interval left no loop-lag samples and
    # the self-check crashed (zip strict); it must emit a record that says "no samples"
    import asyncio

    from rigbench.client import SelfCheckMonitor
    from rigbench.records import SelfCheck

    got: list[SelfCheck] = []

    async def instant() -> None:
        async with SelfCheckMonitor("instant", got.append, interval_s=10.0):
            pass

    asyncio.run(instant())
    (rec,) = got
    assert rec.loop_lag_samples == 0 and rec.loop_lag_p99_s is None


@pytest.mark.parametrize("reps", ["1", "3"])
def test_a_server_that_fails_every_request_ends_the_run_with_records_not_a_crash(tmp_path: Path, reps: str) -> None:
    # issue 22, item 1: HTTP 503 on every request crashed the run 4 times in 4 (run left "failed")
    failing = FAST.model_copy(update={"faults": [Fault(kind="http_status", status=503, message="overloaded")]})
    with EmulatorProcess(failing) as emu:
        res = invoke("run", "--endpoint", emu.url, "--no-sanity", "--allow-untrusted", "--scenarios", "chat_short",
                     "--repetitions", reps, "--warmup", "0", "--out", str(tmp_path / "runs"))
    assert res.traceback is None, res.traceback
    (run_dir,) = (tmp_path / "runs").iterdir()
    reader = RunReader(run_dir)
    assert reader.header.status == "complete", reader.header.status
    errors = [r["result"]["error"] for r in reader.raw_records("speed_request")]
    assert len(errors) == int(reps) and all(e and "503" in json.dumps(e) for e in errors), errors
    assert reader.raw_records("selfcheck"), "the self-check record is written even when every request failed"


# -- issue 22, item 5: the probe's tracebacks and accepted-when-they-should-be-refused cases -----


def test_the_probes_tracebacks_are_one_line_refusals(tmp_path: Path) -> None:
    import socket

    plan = tmp_path / "random.yaml"
    plan.write_bytes(bytes(range(256)) * 3)
    listed = tmp_path / "runs" / "list_header"
    listed.mkdir(parents=True)
    (listed / "run.json").write_text("[]")
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen()
    try:
        refused(invoke("run", str(plan)), str(plan), "not UTF-8")
        refused(invoke("report", str(listed)), "run.json holds a JSON list")
        refused(invoke("run", "--resume", str(listed)), "run.json holds a JSON list")
        res = invoke("ls", str(tmp_path / "runs"))  # a damaged run among others: listed around, not a crash
        assert res.code == 0 and res.traceback is None, res.traceback
        refused(invoke("run", "--endpoint", "http://127.0.0.1:9/v1", "--out", str(tmp_path / "\udcff")),
                "--out", "not valid UTF-8")
        refused(invoke("report", str(GOLDEN), "--json", "/proc/x.json"), "--json /proc/x.json: that is a kernel interface")
        refused(invoke("emulate", "--port", "-1"), "--port -1", "0..65535")
        refused(invoke("emulate", "--port", "70000"), "--port 70000")
        refused(invoke("emulate", "--port", str(busy.getsockname()[1])), "cannot listen", "--port")
    finally:
        busy.close()


def test_the_probes_accepted_cases_are_refused(tmp_path: Path) -> None:
    a_file = tmp_path / "file"
    a_file.write_text("x")
    refused(invoke("run", "--endpoint", "", "--out", str(tmp_path)), "--endpoint is empty")
    refused(invoke("ls", str(a_file)), "is a file, not a directory of runs")
    refused(invoke("emulate", "--dist", "nosuch", "--port", "1"), "--dist 'nosuch'")
    refused(invoke("check", "--concurrency", "-1", "--", "vllm", "serve", "m"), "--concurrency -1")
    refused(invoke("run", "--endpoint", "http://127.0.0.1:9/v1", "--concurrency", "1,,2", "--out", str(tmp_path)),
            "--concurrency", "'1,,2'")
    res = invoke("ls", str(tmp_path / "none"))  # control: a directory that does not exist yet is "no runs"
    assert res.code == 0 and "no runs" in res.stdout

def test_check_takes_concurrency_as_a_comma_list_like_run() -> None:
    res = invoke("check", "--concurrency", "1,4", "--", "llama-server", "-m", "m.gguf", "-np", "1")
    assert res.code == 0, res.stderr
    assert "concurrency levels [4]" in " ".join(res.stdout.split())
    repeated = invoke("check", "--concurrency", "1", "--concurrency", "4", "--", "llama-server", "-m", "m.gguf",
                      "-np", "1")
    assert "concurrency levels [4]" in " ".join(repeated.stdout.split())  # the old form still works
    refused(invoke("check", "--concurrency", "1,x", "--", "llama-server", "-m", "m.gguf"), "--concurrency", "1,x")
