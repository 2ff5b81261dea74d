"""`rigbench run --html/--json/--markdown` write what `rigbench report RUN` writes for the same run, byte
for byte (one writer), and both commands end on the summary: verdict, headline figures, where the files are."""

from __future__ import annotations

import re
from pathlib import Path

from rigbench.testing import Delay, EmulatorProcess, EmulatorScript
from tests.unit.cli_inproc import invoke

SCRIPT = EmulatorScript(ttft=Delay(mean_ms=5), itl=Delay(mean_ms=1), output_tokens=16)


def test_run_writes_the_report_files_and_ends_on_the_summary(tmp_path: Path) -> None:
    a = {k: tmp_path / f"run.{k}" for k in ("html", "json", "md")}
    b = {k: tmp_path / f"report.{k}" for k in ("html", "json", "md")}
    with EmulatorProcess(SCRIPT) as emu:
        run = invoke("run", "--endpoint", emu.url, "--no-sanity", "--allow-untrusted", "--scenarios", "chat_short",
                     "--repetitions", "2", "--warmup", "1", "--out", str(tmp_path / "runs"),
                     "--html", str(a["html"]), "--json", str(a["json"]), "--markdown", str(a["md"]))
    assert run.code == 0 and run.traceback is None, run.stderr
    (run_dir,) = (tmp_path / "runs").iterdir()
    report = invoke("report", str(run_dir), "--html", str(b["html"]), "--json", str(b["json"]),
                    "--markdown", str(b["md"]))
    assert report.code == 0 and report.traceback is None, report.stderr
    for k in a:
        assert a[k].read_text() == b[k].read_text(), f"run --{k} and report --{k} differ"
    assert "<svg" in a["html"].read_text() and '"run_id"' in a["json"].read_text()
    for out, files in ((run.stdout, a), (report.stdout, b)):
        lines = [line for line in out.splitlines() if line.strip()]
        tail = lines[lines.index(next(x for x in lines if x.startswith("Summary"))):]
        assert len(tail) <= 8, tail  # the summary is the end: nothing after it but the files
        said = "\n".join(tail)
        assert "UNTRUSTED" in said  # the verdict (--no-sanity)
        assert re.search(r"chat_short \d+→\d+: first token [\d.]+ m?s, then [\d.]+ tok/s", said), said
        assert f"HTML report: {files['html']}" in said and f"JSON: {files['json']}" in said
        assert f"Markdown report: {files['md']}" in said and f"run directory: {run_dir}" in said


def test_run_refuses_an_unwritable_html_path_before_measuring(tmp_path: Path) -> None:
    res = invoke("run", "--endpoint", "http://127.0.0.1:9/v1", "--html", str(tmp_path / "no" / "r.html"))
    assert res.code == 2 and "--html" in res.stderr and "does not exist" in res.stderr
    res = invoke("run", "--endpoint", "http://127.0.0.1:9/v1", "--json", str(tmp_path))
    assert res.code == 2 and "--json" in res.stderr and "directory" in res.stderr


def test_a_rate_mode_run_ends_on_its_knee_and_goodput(tmp_path: Path) -> None:
    with EmulatorProcess(SCRIPT) as emu:
        res = invoke("run", "--endpoint", emu.url, "--no-sanity", "--allow-untrusted", "--out", str(tmp_path),
                     "--sweep", "--sweep-points", "2", "--requests", "6", "--arrival", "constant",
                     "--slo", "ttft=2s,e2e=5s")
    assert res.code == 0 and res.traceback is None, res.stderr
    lines = [line for line in res.stdout.splitlines() if line.strip()]
    said = " ".join(" ".join(lines[lines.index(next(x for x in lines if x.startswith("Summary"))):]).split())
    assert "no speed results" not in said
    assert "Saturation:" in said and "requests/s" in said
    # the knee as the bound the windows allow: found, or not bounded when they were too short to judge
    assert "Knee:" in said and ("99% of requests met" in said or "Knee: not bounded" in said), said
    assert said.count("req/s offered):") == 2 and said.count("goodput") == 3 and "met the SLO)" in said  # the burst and each rate


def test_a_plan_run_writes_the_reports_of_its_rigs_and_ends_on_their_summary(tmp_path: Path) -> None:
    a = {k: tmp_path / f"run.{k}" for k in ("html", "json")}
    b = {k: tmp_path / f"report.{k}" for k in ("html", "json")}
    with EmulatorProcess(SCRIPT) as emu:
        plan = tmp_path / "plan.yaml"
        plan.write_text("name: emu\nsanity: false\n"
                        "speed: {scenarios: [chat_short], repetitions: 2, warmup: 0}\nrigs:\n"
                        f"  - {{name: one, endpoint: {{base_url: \"{emu.url}\"}}}}\n"
                        f"  - {{name: two, endpoint: {{base_url: \"{emu.url}\"}}}}\n")
        res = invoke("run", str(plan), "--out", str(tmp_path / "runs"), "--allow-untrusted",
                     "--html", str(a["html"]), "--json", str(a["json"]))
    assert res.code == 0 and res.traceback is None, res.stderr + res.stdout[-3000:]
    (plan_dir,) = (tmp_path / "runs").iterdir()
    report = invoke("report", str(plan_dir), "--html", str(b["html"]), "--json", str(b["json"]))
    assert report.code == 0, report.stderr
    for k in a:
        assert a[k].read_text() == b[k].read_text(), f"run PLAN --{k} and report PLAN_DIR --{k} differ"
    lines = [line for line in res.stdout.splitlines() if line.strip()]
    said = "\n".join(lines[lines.index(next(x for x in lines if x.startswith("Summary"))):])
    assert len(re.findall(r"chat_short \d+→\d+: first token", said)) == 2 and f"HTML report: {a['html']}" in said
