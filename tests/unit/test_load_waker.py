"""How the load dispatcher wakes at each send time (`sleep_until_ns`): never before the intended start,
close after it, without a busy wait (issue 20: 1,000 req/s from one client process)."""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable, Coroutine, Iterator
from typing import Any

import pytest

from rigbench.suites.load import _schedule, sleep_until_ns

_perf_ns = time.perf_counter_ns


def _run(kind: str, main: Coroutine[Any, Any, Any]) -> Any:
    if kind == "uvloop":
        import uvloop

        return uvloop.run(main)
    return asyncio.run(main)


@pytest.fixture(params=["uvloop", "asyncio"])
def loop_kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def waker() -> Iterator[Callable[[str], None]]:
    saved = _schedule.WAKER

    def use(name: str) -> None:
        _schedule.WAKER = name

    yield use
    _schedule.WAKER = saved


async def _paced(n: int, gap_ns: int, clock: Callable[[], int] = _perf_ns) -> tuple[list[int], float, float]:
    """Wake n times, gap_ns apart on `clock`; each wake's lateness (ns), and the process CPU and wall it took."""
    late = []
    c0, t0 = time.process_time(), time.perf_counter()
    start = clock() + gap_ns
    for i in range(n):
        due = start + i * gap_ns
        await sleep_until_ns(due, clock)
        late.append(clock() - due)
    return late, time.process_time() - c0, time.perf_counter() - t0


def test_the_dispatcher_waits_for_each_send_without_burning_a_core_and_never_wakes_early(
        loop_kind: str, waker: Callable[[str], None]) -> None:
    """300 sends 2 ms apart (500 req/s): every wake at or after its due time, most within a millisecond,
    and the wait costs a small share of a core. The old wait (the loop's timer, then yielding to the loop
    for the last 2 ms) spends every gap this short busy: it fails the CPU bound."""
    waker("timerfd")
    assert _schedule.waker() == "timerfd"
    late, cpu_s, wall_s = _run(loop_kind, _paced(300, 2_000_000))
    assert min(late) >= 0
    assert sorted(late)[len(late) // 2] < 1_000_000, sorted(late)[len(late) // 2]
    # CPU time is only counted while the process runs, so a busy neighbour cannot push this up
    assert cpu_s < 0.25 * wall_s, (cpu_s, wall_s)


def test_without_a_timerfd_the_dispatcher_still_never_wakes_early_and_says_how_it_waits(
        loop_kind: str, waker: Callable[[str], None]) -> None:
    """The fallback (other platforms, or a timerfd the OS refuses): the same guarantees on lateness, at the
    cost of a busy wait, and `waker()` names it so a benchmark can say which it measured."""
    waker("spin")
    assert _schedule.waker().startswith("spin")
    late, _, _ = _run(loop_kind, _paced(100, 2_000_000))
    assert min(late) >= 0
    assert sorted(late)[len(late) // 2] < 1_000_000


def test_a_client_actor_s_own_clock_is_kept_whatever_its_skew_from_perf_counter(loop_kind: str) -> None:
    """A Ray client actor waits on its own clock (perf_counter plus a skew measured against the driver):
    a clock 5 s ahead or behind wakes at its own due times, neither 5 s early nor 5 s late."""
    for skew in (5_000_000_000, -5_000_000_000):
        late, _, wall_s = _run(loop_kind, _paced(20, 5_000_000, lambda s=skew: _perf_ns() + s))
        assert min(late) >= 0 and wall_s < 2.0, (skew, wall_s)


def test_sleepers_due_in_any_order_each_wake_at_their_own_time_and_a_cancelled_one_holds_none(
        loop_kind: str) -> None:
    """Several waits at once (sessions starting while others wait) share the loop's one alarm: each wakes
    at or after its own due time, none much later, and cancelling one does not stop the alarm for the rest."""

    async def main() -> tuple[list[tuple[int, int]], bool]:
        base = _perf_ns() + 20_000_000
        dues = [base + k * 3_000_000 for k in range(12)]
        random.Random(4).shuffle(dues)
        woke: list[tuple[int, int]] = []

        async def one(due: int) -> None:
            await sleep_until_ns(due)
            woke.append((due, _perf_ns()))

        tasks = [asyncio.create_task(one(d)) for d in dues]
        victim = tasks[dues.index(min(dues))]  # the earliest: the alarm is armed at it
        await asyncio.sleep(0.005)
        victim.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        return woke, victim.cancelled()

    woke, cancelled = _run(loop_kind, main())
    assert cancelled and len(woke) == 11
    assert all(at >= due for due, at in woke)
    assert [d for d, _ in woke] == sorted(d for d, _ in woke)  # in due order
    assert sorted(at - due for due, at in woke)[5] < 2_000_000
