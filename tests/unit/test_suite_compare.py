"""Quality and agent comparisons next to speed, in `rigbench compare` and `rigbench report A B`,
from the checked-in emulator pair (B's emulator answers with tool calls, so probes differ)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from rigbench.analysis._suite_compare import compare_suites
from rigbench.store import RunReader

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
A, B = GOLDEN / "emulator_a", GOLDEN / "emulator_b"


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "rigbench", *args], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "COLUMNS": "80"})


def test_compare_shows_mmlu_per_subject_packs_and_probes_next_to_speed(tmp_path: Path) -> None:
    md = tmp_path / "c.md"
    res = _cli("compare", str(A), str(B), "--markdown", str(md))
    assert res.returncode == 0, res.stderr
    out = res.stdout
    assert out.index("e2e_tok_s: B = emulator_b vs A = emulator_a") < out.index("MMLU-Pro: B = emulator_b")
    for subject in ("history", "law", "math", "overall"):
        assert f"\n {subject} " in out
    assert "McNemar" in out and "Task packs: B = emulator_b" in out
    probes = compare_suites(RunReader(A), RunReader(B)).probes
    changed = [p for p in probes if p.changed]
    assert changed and f"Agent probes: {len(changed)} of {len(probes)} verdicts differ" in out
    assert all(p.probe in out for p in changed)
    text = md.read_text()
    assert "**MMLU-Pro: B = emulator_b vs A = emulator_a" in text and "| overall | 12 |" in text
    assert "CHANGED" in text


def test_a_real_difference_is_called_one(tmp_path: Path) -> None:
    """B answers every MMLU-Pro question right where A got none: 12 discordant pairs, exact
    McNemar p = 2 × 0.5^12 ≈ 0.0005, so 'differs', not 'n.s.'."""
    b = tmp_path / "b"
    shutil.copytree(B, b)
    lines = []
    for line in (b / "records.jsonl").read_text().splitlines():
        rec = json.loads(line)
        if rec.get("kind") == "mmlu_pro_answer":
            rec["correct"] = True
        lines.append(json.dumps(rec))
    (b / "records.jsonl").write_text("\n".join(lines) + "\n")
    c = compare_suites(RunReader(A), RunReader(b))
    assert c.mmlu_pro is not None
    overall = next(t for t in c.mmlu_pro.tests if t.subject == "overall")
    assert overall.test == "mcnemar_exact" and overall.n == 12 and overall.significant
    assert abs(overall.p_value - 2 * 0.5**12) < 1e-9
    res = _cli("compare", str(A), str(b))
    row = next(line for line in res.stdout.splitlines() if line.startswith(" overall "))
    assert "+100.0" in row and "differs" in row


def test_report_a_b_puts_the_comparison_in_terminal_markdown_and_html(tmp_path: Path) -> None:
    md, page = tmp_path / "r.md", tmp_path / "r.html"
    res = _cli("report", str(A), str(B), "--markdown", str(md), "--html", str(page))
    assert res.returncode == 0, res.stderr
    assert "2 runs against emulator_a" in res.stdout and "MMLU-Pro: B = emulator_b" in res.stdout
    assert "\n### Task packs: B = emulator_b vs A = emulator_a" in md.read_text()
    html = page.read_text()
    assert "<h2>Quality and agent across runs</h2>" in html and "<b>CHANGED</b>" in html
    # the answer and the plots first, then the tables across runs
    assert html.index("<h2>Plots</h2>") < html.index("Quality and agent across runs") < html.index("<h2>Fingerprints</h2>")
