"""Typed trust findings (store/_header.py) and the busy-host policy (runner/_busy.py).

A run's header keeps each finding as its text (the run format's `trust.reasons`); a report reads the kind
back: from the record that named it (the gate's, the traffic check's), else from its check's lead. The
adversary: a text that begins like another kind's (a traffic finding quoting a server's reply that reads
"host busy: ..."), which matching on words would take for the busy-host finding, and so hide that a busy
host was kept. The busy-host policy is one decision with three outcomes.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from rigbench.analysis import HostVerdict
from rigbench.analysis._run import run_findings
from rigbench.records import SanityVerdict, TrafficCheck
from rigbench.runner import BusyHostPolicy
from rigbench.store import Finding, FindingKind, RunReader

GOLDEN = Path(__file__).parent.parent / "golden" / "emulator_a"

SANITY = "the model answered 2 of 12 known-answer questions correctly"
TRAFFIC = "host busy: the server said so in 9 of 12 measured outputs, which are identical to each other"
BUSY = HostVerdict(recorded=True, busy=True, findings=["during chat_short c=1, other processes used 0.98 of 2 cores"]
                   ).reason + "; measure on a quiet host, or pass --allow-busy-host to keep these figures"
OLD = "a finding an older rigbench wrote in words no check writes now"


def _stored_run(tmp_path: Path, reasons: list[str]) -> Path:
    run = tmp_path / "run"
    shutil.copytree(GOLDEN, run)
    header = json.loads((run / "run.json").read_text())
    header["trust"] = {"trusted": False, "reasons": reasons}
    (run / "run.json").write_text(json.dumps(header, indent=2))
    gate = SanityVerdict(trusted=False, answers=[], reasons=[SANITY], max_tokens=64)
    traffic = TrafficCheck(outputs=12, duplicate_outputs=9, usage_checked=0, usage_method="none", usage_inflated=0,
                           timings_checked=0, timings_inconsistent=0, reasons=[TRAFFIC])
    with (run / "records.jsonl").open("a") as f:
        f.write(gate.model_dump_json() + "\n" + traffic.model_dump_json() + "\n")
    return run


def test_a_stored_runs_findings_read_back_by_kind_not_by_their_first_words(tmp_path: Path) -> None:
    skipped = "the sanity gate was skipped (--no-sanity): answers were not checked"
    run = _stored_run(tmp_path, [skipped, SANITY, TRAFFIC, BUSY, OLD])
    found = run_findings(RunReader(run))
    assert [f.kind for f in found] == [FindingKind.SANITY_SKIPPED, FindingKind.SANITY, FindingKind.TRAFFIC,
                                       FindingKind.HOST_BUSY, FindingKind.OTHER], found
    assert [f.text for f in found] == [skipped, SANITY, TRAFFIC, BUSY, OLD]  # the words as the report shows them


def test_a_traffic_finding_that_begins_like_a_busy_host_is_no_busy_host_finding(tmp_path: Path) -> None:
    # without the busy-host finding, a busy host in the records was kept (--allow-busy-host): said as kept
    found = run_findings(RunReader(_stored_run(tmp_path, [TRAFFIC])))
    assert [f.kind for f in found] == [FindingKind.TRAFFIC]
    assert FindingKind.HOST_BUSY not in {f.kind for f in found}


@pytest.mark.parametrize(("text", "kind"), [
    (BUSY, FindingKind.HOST_BUSY),
    ("preflight: --n-predict 16 caps every reply (fix: drop it)", FindingKind.PREFLIGHT),
    ("the server rejected 30 of 40 measured requests (HTTP 429 x30): the figures cover", FindingKind.REJECTED),
    ("3 of 12 measured outputs look like gibberish, e.g. 'zz'", FindingKind.GIBBERISH),
    ("latency figures: chat_short (c=1) arrived in one burst; TTFT and ITL not measurable",
     FindingKind.BUFFERED_LATENCY),
    ("client actor 1 (node-a): its clock drifted +3.00 ms", FindingKind.CLIENTS),
    ("the server rejected most requests", FindingKind.OTHER),  # not the check's sentence: no guess
])
def test_each_checks_text_reads_back_as_its_kind(text: str, kind: FindingKind) -> None:
    assert Finding.read(text).kind is kind


@pytest.mark.parametrize(("allow_busy_host", "measure_untrusted", "policy"), [
    (False, False, BusyHostPolicy.STOP),  # the default, and a plan's rig
    (False, True, BusyHostPolicy.MEASURE_UNTRUSTED),  # rigbench run --allow-untrusted
    (True, False, BusyHostPolicy.MEASURE_TRUSTED),  # --allow-busy-host / allow_busy_host: true
    (True, True, BusyHostPolicy.MEASURE_TRUSTED),  # keeping the figures trusted wins
])
def test_the_busy_host_policy_is_decided_once(allow_busy_host: bool, measure_untrusted: bool,
                                              policy: BusyHostPolicy) -> None:
    assert BusyHostPolicy.decide(allow_busy_host=allow_busy_host, measure_untrusted=measure_untrusted) is policy
