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
