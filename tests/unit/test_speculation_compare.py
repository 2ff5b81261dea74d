"""`rigbench compare` and run labels read the fingerprint's speculation state (run format 10), so an
attached rig whose server shows speculation on gets the speed-up table and a label that says it drafts,
as a launched one always did; a run recorded before format 10 is read from its command's flags as then.

The runs are the recorded H200 pair (benchmarks/results/h200: no draft, then a depth-4 draft), rewritten
as rigbench would now record them attached: no command, the speculation state the server showed.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from rigbench.report import rig_labels
from rigbench.store import RunReader
from tests.unit.cli_inproc import invoke

H200 = Path(__file__).resolve().parents[2] / "benchmarks" / "results" / "h200"
TABLE = "Speculative decoding: predicted vs measured speed-up"
ON = {"state": "on", "source": "/slots: every slot can speculate", "method": "draft-simple"}
OFF = {"state": "off", "source": "/slots: no slot can speculate"}


def _recorded(label: str) -> Path:
    return next(p for p in H200.iterdir() if p.is_dir() and f"-{label}-" in p.name)


def _attached(tmp: Path, label: str, speculation: dict[str, Any], tail: str) -> Path:
    """The recorded run `label` as a format-10 attached run (run id `...-run-<tail>`) whose server showed
    `speculation`: no argv, no speculative flags, nothing about a draft in the plan."""
    run_id = f"20261201-120000-run-{tail}"
    run = tmp / run_id
    shutil.copytree(_recorded(label), run)
    head = json.loads((run / "run.json").read_text())
    fp = {k: v for k, v in head["fingerprint"].items() if k != "engine_build"}
    fp.update(mode="attached", argv=None, speculative=None, draft_model=None, speculation=speculation,
              endpoint="http://127.0.0.1:8080/v1")
    head.update(format_version=10, run_id=run_id, fingerprint=fp,
                plan={**head["plan"], "rig": {"mode": "attach", "endpoint": "http://127.0.0.1:8080/v1", "model": None}})
    (run / "run.json").write_text(json.dumps(head))
    return run


def _compare(*runs: Path) -> str:
    res = invoke("compare", *map(str, runs))
    assert res.code == 0 and res.traceback is None, res.stderr
    return " ".join(res.stdout.split())  # a long title wraps


def _labels(*runs: Path) -> list[str]:
    return rig_labels([r.name for r in runs], [RunReader(r).header for r in runs])


def test_an_attached_run_with_speculation_on_gets_the_speed_up_table(tmp_path: Path) -> None:
    base = _attached(tmp_path, "nodraft", OFF, "aaaa")
    spec = _attached(tmp_path, "depth4", ON, "bbbb")
    out = _compare(base, spec)
    assert TABLE in out
    assert "calibrated on code_generation" in out  # the fit ran on the server's acceptance lengths


def test_an_attached_run_with_speculation_on_is_labelled_as_drafting(tmp_path: Path) -> None:
    base = _attached(tmp_path, "nodraft", OFF, "aaaa")
    spec = _attached(tmp_path, "depth4", ON, "bbbb")
    assert _labels(base, spec) == ["llamacpp", "llamacpp-draft"]


def test_an_attached_run_with_speculation_off_or_unknown_gets_neither(tmp_path: Path) -> None:
    """The control: the same measured runs, the server showing speculation off (or not telling)."""
    base = _attached(tmp_path, "nodraft", OFF, "aaaa")
    off = _attached(tmp_path, "depth4", OFF, "bbbb")
    unknown = _attached(tmp_path, "depth4", {"state": "unknown", "source": "the server does not show it"}, "cccc")
    labels = _labels(base, off, unknown)
    assert not any("draft" in label for label in labels), labels
    out = _compare(base, off, unknown)
    assert TABLE not in out
    # "unknown" is said, naming the run and why, not left out in silence; "off" needs no word
    assert "whether this rig drafted tokens is unknown (the server does not show it)" in out
    assert out.count("drafted tokens is unknown") == 1


def test_a_run_before_format_10_is_read_from_its_command_as_before(tmp_path: Path) -> None:
    """The recorded v1 pair as it is (launched; the depth-4 run's command sets a draft), under run-id
    names so the label is derived: picked and labelled from the command's flags. A v1 attached run has
    no flags: neither."""
    old = {}
    for label, tail in (("nodraft", "aaaa"), ("depth4", "bbbb")):
        old[label] = tmp_path / f"20261129-191900-run-{tail}"
        shutil.copytree(_recorded(label), old[label])
        head = json.loads((old[label] / "run.json").read_text())
        (old[label] / "run.json").write_text(json.dumps({**head, "run_id": old[label].name}))
    assert RunReader(old["depth4"]).header.format_version == 1
    assert _labels(old["nodraft"], old["depth4"]) == ["llamacpp", "llamacpp-draft4-synth3.4"]
    assert f"{TABLE} (llamacpp-draft4-synth3.4 [synthetic L=3.4])" in _compare(old["nodraft"], old["depth4"])

    head = json.loads((old["depth4"] / "run.json").read_text())
    head["fingerprint"].update(mode="attached", argv=None, speculative=None)
    head["plan"]["rig"] = {"mode": "attach", "endpoint": "http://127.0.0.1:8080/v1", "model": None}
    (old["depth4"] / "run.json").write_text(json.dumps(head))
    assert not any("draft" in label for label in _labels(old["nodraft"], old["depth4"]))
    assert TABLE not in _compare(old["nodraft"], old["depth4"])
