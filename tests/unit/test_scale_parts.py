"""The parts of scale-out that need no cluster: streaming a run directory, moving a result onto
another clock, and NTP-style clock alignment (no Ray imported: these run everywhere)."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from rigbench.records import ArrivalStamps, StreamResult
from rigbench.scale._clients import shift_result
from rigbench.scale._clock import ClockEcho, best_sample, ping_udp
from rigbench.scale._stream import Delta, DirTailer, apply_delta, snapshot_dir
from rigbench.store import RunReader


def _mirror(src: Path, dst: Path, tailer: DirTailer) -> list[Delta]:
    got = tailer.poll()
    for d in got:
        apply_delta(dst, d)
    return got


def test_tailer_streams_complete_record_lines_only_and_the_copy_reads_as_a_run(tmp_path: Path) -> None:
    src, dst = tmp_path / "node" / "r1", tmp_path / "driver" / "r1"
    src.mkdir(parents=True)
    (src / "run.json").write_text((Path(__file__).parents[1] / "golden" / "run_v1" / "run.json").read_text())
    (src / "records.jsonl").write_bytes(b'{"kind":"a","unit_id":"u1"}\n{"kind":"a","unit_id":"u2"}\n{"kind":"a","un')
    (src / "engine.log").write_text("line 1\n")
    t = DirTailer(src)
    _mirror(src, dst, t)
    assert (dst / "records.jsonl").read_bytes().count(b"\n") == 2  # the torn third line did not travel
    assert [r["unit_id"] for r in RunReader(dst).raw_records()] == ["u1", "u2"]
    with (src / "records.jsonl").open("ab") as f:  # the line completes, another follows
        f.write(b'it_id":"u3"}\n{"kind":"a","unit_id":"u4"}\n')
    (src / "blobs").mkdir()
    (src / "blobs" / "x-evidence").write_bytes(b"\x00\x01")
    with (src / "engine.log").open("a") as f:
        f.write("line 2\n")
    got = _mirror(src, dst, t)
    assert {d.path for d in got} == {"records.jsonl", "blobs/x-evidence", "engine.log"}  # header unchanged: not resent
    assert (dst / "records.jsonl").read_bytes() == (src / "records.jsonl").read_bytes()
    assert (dst / "engine.log").read_text() == "line 1\nline 2\n"
    assert (dst / "blobs" / "x-evidence").read_bytes() == b"\x00\x01"
    assert _mirror(src, dst, t) == []  # nothing new: nothing sent


def test_a_resumed_rig_never_resends_what_the_driver_has(tmp_path: Path) -> None:
    drv = tmp_path / "driver"
    drv.mkdir()
    (drv / "run.json").write_text("{}")
    (drv / "records.jsonl").write_bytes(b'{"unit_id":"u1"}\n{"unit_id":"u2"}\n{"unit_')  # torn by a kill
    shipped = snapshot_dir(drv)
    assert shipped["records.jsonl"] == b'{"unit_id":"u1"}\n{"unit_id":"u2"}\n'
    node = tmp_path / "node"
    for rel, data in shipped.items():
        (node / rel).parent.mkdir(parents=True, exist_ok=True)
        (node / rel).write_bytes(data)
    t = DirTailer(node, shipped)
    (drv / "records.jsonl").write_bytes(shipped["records.jsonl"])
    assert t.poll() == []
    with (node / "records.jsonl").open("ab") as f:
        f.write(b'{"unit_id":"u3"}\n')
    for d in t.poll():
        apply_delta(drv, d)
    assert (drv / "records.jsonl").read_bytes().splitlines() == [b'{"unit_id":"u1"}', b'{"unit_id":"u2"}',
                                                                 b'{"unit_id":"u3"}']


def test_a_delta_cannot_write_outside_the_run_directory(tmp_path: Path) -> None:
    (tmp_path / "run").mkdir()
    with pytest.raises(ValueError, match="outside the run directory"):
        apply_delta(tmp_path / "run", Delta("replace", "../escape", 0, b"x"))
    assert not (tmp_path / "escape").exists()


def test_shift_result_moves_every_clock_stamp_and_nothing_else() -> None:
    ns_fields = [n for n in StreamResult.model_fields if n.endswith("_ns")]
    lists = {"chunk_ns", "chunk_kernel_ns"}
    r = StreamResult(**{n: ([10, 20, 30] if n in lists else 5) for n in ns_fields},
                     chunk_chars=[1, 1, 1], chunk_kind="ccc", content="abc", http_status=200,
                     arrival=ArrivalStamps(source="kernel", clock_offset_ns=7_000, clock_uncertainty_ns=50))
    s = shift_result(r, -1_000)
    for n in ns_fields:
        assert getattr(s, n) == ([-990, -980, -970] if n in lists else -995), n
    # raw kernel stamp = chunk_kernel_ns + clock_offset_ns stays true after the shift
    assert s.arrival is not None and s.arrival.clock_offset_ns == 8_000
    assert s.model_dump(exclude={*ns_fields, "arrival"}) == r.model_dump(exclude={*ns_fields, "arrival"})
    # a stamp the result does not have stays absent
    assert shift_result(StreamResult(sent_ns=1), 5).connect_ns is None


def test_the_true_offset_lies_within_the_stated_uncertainty_whatever_the_legs_took() -> None:
    skew = 5_000_000_000
    rounds = []
    for out_leg, back_leg, at in ((100, 300, 0), (900, 50, 10_000), (40, 45, 20_000)):
        rounds.append((at, at + out_leg + skew, at + out_leg + back_leg))
    s = best_sample(rounds, "udp")
    assert s.rtt_ns == 85 and s.samples == 3  # the shortest round trip wins
    assert abs(s.offset_ns - skew) <= s.uncertainty_ns


@pytest.fixture
def echo_loop() -> Iterator[asyncio.AbstractEventLoop]:
    loop = asyncio.new_event_loop()
    th = threading.Thread(target=loop.run_forever, daemon=True)
    th.start()
    yield loop
    loop.call_soon_threadsafe(loop.stop)
    th.join(5)
    loop.close()


def _echo(loop: asyncio.AbstractEventLoop, skew_ns: int, delay_s: float) -> tuple[int, asyncio.BaseTransport]:
    fut = asyncio.run_coroutine_threadsafe(loop.create_datagram_endpoint(
        lambda: ClockEcho(lambda: time.perf_counter_ns() + skew_ns, delay_s), local_addr=("127.0.0.1", 0)), loop)
    transport, _ = fut.result(5)
    return transport.get_extra_info("sockname")[1], transport


def test_udp_alignment_measures_a_skewed_clock_and_says_when_it_cannot(echo_loop: asyncio.AbstractEventLoop) -> None:
    skew = -3_000_000_000
    port, tr = _echo(echo_loop, skew, 0.0)
    s = ping_udp("127.0.0.1", port, 20)
    echo_loop.call_soon_threadsafe(tr.close)
    assert s is not None and s.method == "udp"
    assert abs(s.offset_ns - skew) <= s.uncertainty_ns  # same machine: the true offset is exactly the skew
    # an echo that waits 5 ms before answering: the offset is known only to +-2.5 ms, and says so
    port, tr = _echo(echo_loop, 0, 0.005)
    slow = ping_udp("127.0.0.1", port, 5)
    echo_loop.call_soon_threadsafe(tr.close)
    assert slow is not None and slow.uncertainty_ns >= 2_500_000
    assert abs(slow.offset_ns) <= slow.uncertainty_ns
    assert ping_udp("127.0.0.1", 9, 2, timeout_s=0.2) is None  # nobody there: no sample, not a guess


def test_each_client_actor_s_schedule_adherence_is_its_own_and_names_the_late_one(tmp_path: Path) -> None:
    """Rate mode over client actors: each actor's share of a window is judged on its own (send lag, sent
    rate against its share of the schedule). client1 sends every arrival 30 ms late and is the bottleneck;
    client0 keeps the schedule, and the saturation burst (no schedule: every request due at once, so sent
    one after another) does not count against it."""
    from rich.console import Console

    from rigbench.records import ClientShare, LoadRequest, LoadWindow
    from rigbench.scale import summarize_clients
    from rigbench.scale._run import clients_table
    from rigbench.store import RunHeader, RunWriter

    w = RunWriter(tmp_path / "run", RunHeader(run_id="t", created_at="2026-01-01T00:00:00+00:00",
                                              rigbench_version="0", plan={}))
    zero, gap = 10**12, 100_000_000

    def req(window: str, i: int, due: int, late_ns: int) -> LoadRequest:
        sent = due + late_ns
        res = StreamResult(sent_ns=sent, scheduled_ns=due, first_event_ns=sent + 10**7, done_ns=sent + 2 * 10**7,
                           chunk_ns=[sent + 10**7, sent + 2 * 10**7], chunk_chars=[4, 4], chunk_kind="cc",
                           content="a b", finish_reason="length", usage={"completion_tokens": 2}, http_status=200)
        return LoadRequest(unit_id=f"load/{window}/i{i}", window=window, index=i, input_tokens_target=16,
                           output_tokens_target=2, input_tokens_measured=16, result=res)

    for i in range(4):  # the burst: client0 sends its two 50 ms apart, client1 at once
        w.append(req("saturation", i, zero, 50_000_000 * (i // 2) if i % 2 == 0 else 0))
    for i in range(40):
        w.append(req("r0", i, zero + 10**10 + i * gap, 30_000_000 if i % 2 else 100_000))
    for window, n in (("saturation", 4), ("r0", 40)):
        for k in (0, 1):
            idx = list(range(k, n, 2))
            w.append(ClientShare(unit_id=f"load/{window}/client{k}", batch_unit_id=f"load/{window}",
                                 actor=f"client{k}", node="127.0.0.1", indices=idx, output_tokens=2 * len(idx),
                                 started_ns=zero, ended_ns=zero + 10**9, barrier_late_ns=0, offset_ns=0,
                                 offset_uncertainty_ns=20_000))
        w.append(LoadWindow(unit_id=f"load/{window}", window=window, mode="saturation" if window == "saturation"
                            else "rate", arrival=None if window == "saturation" else "constant", burstiness=None,
                            offered_rate_rps=None if window == "saturation" else 10.0, max_concurrency=None,
                            requests=n, failed=0, started_ns=zero, ended_ns=zero + 2 * 10**10))
    w.finish("complete")
    a0, a1 = summarize_clients(RunReader(tmp_path / "run"))
    assert (a0.actor, a0.requests, a1.actor, a1.requests) == ("client0", 22, "client1", 22)
    assert a0.send_lag_p99_s == pytest.approx(0.0001) and a0.sent_vs_scheduled == pytest.approx(1.0)
    assert a0.schedule_kept
    assert a1.send_lag_p99_s == pytest.approx(0.030) and not a1.schedule_kept
    console = Console(width=250, record=True)
    console.print(clients_table([a0, a1]))
    rows = {line.split("│")[1].strip(): line for line in console.export_text().splitlines() if "│ client" in line}
    assert "0.10 / 0.10 ms" in rows["client0"] and rows["client0"].rstrip(" │").endswith("no")
    assert "30.00 / 30.00 ms" in rows["client1"] and rows["client1"].rstrip(" │").endswith("YES")
