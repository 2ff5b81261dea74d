"""The CLI as a user meets it: clear errors (exit 2, no traceback) and re-rendering a saved run."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

GOLDEN = Path(__file__).parent.parent / "golden" / "run_v1"


def rigbench(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "rigbench", *args], capture_output=True, text=True, timeout=120,
                          env={"COLUMNS": "120", "PATH": "/usr/bin:/bin", "HOME": str(Path.home())})


def test_bad_inputs_are_one_clear_line_not_a_traceback(tmp_path: Path) -> None:
    cases = [
        (["run", "--suite", "bogus"], "unknown suite 'bogus'"),
        (["run", "--concurrency", "1,x"], "comma-separated integers"),
        (["run", "--profile", "huge"], "unknown speed profile 'huge'"),
        (["run", "--scenarios", "chat_short,nope"], "unknown scenario(s) nope"),
        (["run", "--model-file", str(tmp_path / "missing.gguf")], "does not exist"),
        (["run", "--endpoint", "http://127.0.0.1:9/v1", "--model-file", "x.gguf"], "one or the other"),
        (["run", "--api-key-env", "RIGBENCH_SURELY_UNSET"], "not set or empty"),
        (["report", str(tmp_path)], "not a rigbench run"),
    ]
    for args, message in cases:
        res = rigbench(*args)
        assert res.returncode == 2, (args, res.stdout, res.stderr)
        assert message in res.stderr, (args, res.stderr)
        assert "Traceback" not in res.stderr


def test_unreachable_endpoint_says_what_to_check(tmp_path: Path) -> None:
    res = rigbench("run", "--endpoint", "http://127.0.0.1:9/v1", "--out", str(tmp_path))
    assert res.returncode == 2 and "cannot reach http://127.0.0.1:9/v1/models" in res.stderr
    assert "Traceback" not in res.stderr


def test_report_rerenders_a_saved_run_in_every_format(tmp_path: Path) -> None:
    md, js, vj = tmp_path / "r.md", tmp_path / "r.json", tmp_path / "v.json"
    res = rigbench("report", str(GOLDEN), "--markdown", str(md), "--json", str(js), "--vllm-json", str(vj))
    assert res.returncode == 0, res.stderr
    assert "503370a55f7e2f25" in res.stdout  # the run's source-data id
    text = md.read_text()
    assert "| chat_short | 128→64 |" in text and "Source data: `503370a55f7e2f25`" in text
    assert "UNTRUSTED" in text  # that run skipped the sanity gate, and says so
    analysed = json.loads(js.read_text())
    assert {r["scenario"] for r in analysed["speed"]["rows"]} == {
        "chat_short", "chat_long_context", "code_generation", "summarization"}
    vllm = json.loads(vj.read_text())
    assert vllm["completed"] == 8 and len(vllm["ttfts"]) == 8 and vllm["median_ttft_ms"] > 0
