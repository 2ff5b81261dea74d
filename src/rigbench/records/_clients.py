"""Records of a run whose load came from several client actors: clock alignments and batch shares."""

from __future__ import annotations

from typing import Literal

from rigbench.records._base import Record

__all__ = ["ClientClock", "ClientShare"]


class ClientClock(Record):
    """One alignment of one client actor's clock (before the load, after it)."""

    kind: Literal["client_clock"] = "client_clock"
    unit_id: str  # "clients/clock/<actor>/<phase>"
    actor: str
    node: str
    phase: Literal["before", "after"]
    offset_ns: int
    uncertainty_ns: int
    rtt_min_ns: int
    samples: int
    method: Literal["udp", "ray"]


class ClientShare(Record):
    """One actor's share of one speed batch or load window, its span on the driver's clock, and the offset used."""

    kind: Literal["client_share"] = "client_share"
    unit_id: str  # "<batch unit id>/<actor>"
    batch_unit_id: str  # a speed batch ("speed/chat_short/c4/r0") or a load window ("load/r0")
    actor: str
    node: str
    indices: list[int]  # request indices of the batch (the window's schedule positions) this actor sent
    output_tokens: int  # as analysis counts them (usage, else chunks)
    started_ns: int  # driver clock
    ended_ns: int
    barrier_late_ns: int  # how long after the common start (a load window: its first due time) this actor began
    offset_ns: int
    offset_uncertainty_ns: int
