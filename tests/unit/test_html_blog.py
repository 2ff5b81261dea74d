"""HTML and blog-Markdown reports over several runs, from the checked-in golden run."""

from __future__ import annotations

import functools
import json
import shutil
from pathlib import Path

from rigbench.analysis import analyze_run
from rigbench.analysis._compare import compare_runs
from rigbench.analysis._revision import find_revisions
from rigbench.report._blog import render_blog_markdown
from rigbench.report._html import render_html
from rigbench.store import RunReader

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "run_v1"


def _remeasured(tmp_path: Path, slower: float = 1.01) -> tuple[Path, Path]:
    """The golden run and a second measurement of it dated a week later: the same rig, every
    request `slower` times as long (a copy of the same data would be one run, not two)."""
    again = tmp_path / "again"
    shutil.copytree(GOLDEN, again)
    h = json.loads((again / "run.json").read_text())
    h["created_at"] = "2026-12-06T10:00:00+00:00"
    h["source_data_id"] = None
    (again / "run.json").write_text(json.dumps(h))
    lines = []
    for line in (again / "records.jsonl").read_text().splitlines():
        rec = json.loads(line)
        if rec.get("kind") == "speed_request":
            r = rec["result"]
            t0 = r["sent_ns"]
            for k, v in r.items():
                if k.endswith("_ns") and isinstance(v, int) and k != "sent_ns":
                    r[k] = t0 + round((v - t0) * slower)
            r["chunk_ns"] = [t0 + round((v - t0) * slower) for v in r["chunk_ns"]]
        lines.append(json.dumps(rec))
    (again / "records.jsonl").write_text("\n".join(lines) + "\n")
    return GOLDEN, again


def test_blog_markdown_has_the_seed_columns_revision_note_and_source_ids(tmp_path: Path) -> None:
    a, b = _remeasured(tmp_path)
    analyses = [analyze_run(RunReader(a)), analyze_run(RunReader(b))]
    comps = compare_runs(RunReader(a), [RunReader(b)])
    revs = find_revisions(["first", "rerun"], analyses)
    md = render_blog_markdown(["first", "rerun"], analyses, comps, revs)
    assert "| scenario | in / out | first mean tok/s | rerun mean tok/s | rerun speed-up |" in md
    # 1% slower over a handful of repetitions: not a measured difference, and not shown equal either
    rows = [line for line in md.splitlines() if line.startswith("| chat_short")]
    assert rows and "0.99×" in rows[0] and "(inconclusive, ~" in rows[0] and "/side)" in rows[0]
    # the figures beside the ratio are what it is a ratio of: the means (issue 30 item 5: medians of 54.2 and
    # 65.6 tok/s stood beside a ratio of means, "1.00×")
    cells = [c.strip() for c in rows[0].split("|")[1:-1]]
    base, other = (next(r for r in x.speed.rows if r.scenario == "chat_short").e2e_tok_s for x in analyses
                   if x.speed is not None)
    assert base is not None and other is not None
    assert cells[2] == f"{base.mean:.1f}±{base.std:.1f}" and cells[3] == f"{other.mean:.1f}±{other.std:.1f}"
    assert abs(float(cells[3].split("±")[0]) / float(cells[2].split("±")[0]) - float(cells[4].split("×")[0])) < 0.01
    assert "Updated 2026-12-06: `rerun` was re-measured" in md
    assert "the data cannot tell whether it reproduces the result (about " in md and "would tell ±5%" in md
    assert "(n.s.)" not in md and "reproduces the result:" not in md
    assert analyses[0].source_data_id in md


def test_the_speed_up_table_shows_the_means_its_ratio_is_made_of() -> None:
    """Issue 30 item 5, on runs whose means and medians differ (5 repetitions of speculative decoding)."""
    h200 = Path(__file__).resolve().parents[2] / "benchmarks" / "results" / "h200"
    dirs = [h200 / "20261129-191407-h200-nodraft-5101", h200 / "20261129-191906-h200-depth4-1c8a"]
    analyses = [analyze_run(RunReader(d)) for d in dirs]
    comps = compare_runs(RunReader(dirs[0]), [RunReader(dirs[1])], allow_mismatch=True)
    md = render_blog_markdown(["a", "b"], analyses, comps)
    row = next(line for line in md.splitlines() if line.startswith("| code_generation |") and "×" in line)
    cells = [c.strip() for c in row.split("|")[1:-1]]
    b = next(r for r in analyses[1].speed.rows if r.scenario == "code_generation").e2e_tok_s  # type: ignore[union-attr]
    assert b is not None and f"{b.median:.0f}" != f"{b.mean:.0f}"  # the two statistics read differently here
    assert cells[3] == f"{b.mean:.0f}±{b.std:.0f}"
    assert "mean ± standard deviation" in md and "ratio of these means" in md


def test_no_revision_note_for_different_rigs(tmp_path: Path) -> None:
    a, b = _remeasured(tmp_path)
    h = json.loads((b / "run.json").read_text())
    h["plan"]["rig"]["draft_max"] = 4  # another configuration, not a re-measurement
    (b / "run.json").write_text(json.dumps(h))
    analyses = [analyze_run(RunReader(a)), analyze_run(RunReader(b))]
    assert find_revisions(["a", "b"], analyses) == []


def _speculation(run: Path, state: str) -> None:
    h = json.loads((run / "run.json").read_text())
    h["format_version"] = 10
    h["fingerprint"].pop("engine_build", None)  # a field format 10 no longer has
    h["fingerprint"]["speculation"] = {"state": state, "source": "the server's /slots"}
    (run / "run.json").write_text(json.dumps(h))


def test_no_revision_note_when_one_run_drafted_and_the_other_did_not(tmp_path: Path) -> None:
    """An attached server, same plan and endpoint: whether it drafted is known from the server alone
    (the fingerprint's speculation state). Drafting and not drafting are two configurations; the control,
    both off, is still a re-measurement."""
    shutil.copytree(GOLDEN, tmp_path / "first")
    a, b = _remeasured(tmp_path)
    a = tmp_path / "first"
    _speculation(a, "off")
    _speculation(b, "on")
    analyses = [analyze_run(RunReader(a)), analyze_run(RunReader(b))]
    assert find_revisions(["a", "b"], analyses) == []
    _speculation(b, "off")
    analyses = [analyze_run(RunReader(a)), analyze_run(RunReader(b))]
    assert [r.later_name for r in find_revisions(["a", "b"], analyses)] == ["b"]


def test_html_is_self_contained_with_warnings_first_and_plots(tmp_path: Path) -> None:
    a, b = _remeasured(tmp_path)
    analyses = [analyze_run(RunReader(a)), analyze_run(RunReader(b))]
    page = render_html(["first", "rerun"], analyses, compare_runs(RunReader(a), [RunReader(b)]),
                       find_revisions(["first", "rerun"], analyses))
    assert page.startswith("<!DOCTYPE html>") and "<script" not in page
    assert "http://" not in page.replace("http://www.w3.org/", "") and "https://" not in page
    assert page.count("<svg") >= 3  # throughput, speed-up, latency
    # the re-measurement note sits right under the headline figures it qualifies, before the plots
    assert page.index("<h2>Headline figures</h2>") < page.index("re-measured") < page.index("<h2>Plots</h2>")
    assert "Fingerprints" in page and analyses[0].source_data_id in page
    # what is not there is left out, instead of an empty plot or a section saying "none"
    assert "Accuracy by subject" not in page and "Acceptance length" not in page and "Agent probes" not in page


def test_acceptance_histogram_is_drawn_for_speculative_runs() -> None:
    h200 = Path(__file__).parents[2] / "benchmarks" / "results" / "h200"
    spec = next(p for p in h200.iterdir() if "-depth4-" in p.name)
    a = analyze_run(RunReader(spec))
    page = render_html(["depth4"], [a], [], [])
    section = page[page.index("<h3>Acceptance length</h3>"):]
    section = section[: section.index("<h3>", 5)]
    assert "<svg" in section and "n=20" in section  # 4 scenarios x 5 measured requests


H200 = Path(__file__).parents[2] / "benchmarks" / "results" / "h200"


@functools.cache
def _h200_page() -> tuple[list[str], str]:
    from rigbench.report._labels import rig_labels

    dirs = sorted(H200.iterdir(), key=lambda p: ("nodraft" not in p.name, p.name))
    dirs = [d for d in dirs if d.is_dir()]
    analyses = [analyze_run(RunReader(d)) for d in dirs]
    names = rig_labels([d.name for d in dirs], [a.header for a in analyses])
    comps = compare_runs(RunReader(dirs[0]), [RunReader(d) for d in dirs[1:]], allow_mismatch=True)
    return names, render_html(names, analyses, comps, [])


def test_untrusted_runs_open_with_one_collapsed_block_each_not_a_wall_of_banners() -> None:
    names, page = _h200_page()
    top = page[: page.index("<h2>Headline figures</h2>")]
    # the first screen: each run's verdict with at most three reasons, the rest counted
    assert "<details" not in top and top.count('class="warn') <= 1  # only the synthetic-acceptance banner
    assert top.count("and 7 more (below)") == 3
    warnings = page[page.index("<h2>Warnings</h2>"):page.index("<h2>Fingerprints</h2>")]
    # three untrusted runs, ten failed gate questions each: one <details> per run, counts first
    assert warnings.count("<details") == 3 and " open" not in warnings
    for n in names:
        assert f"<summary><b>{n}</b>: UNTRUSTED: 10 reasons" in warnings
    # every finding is still there, on demand: 3 x 10 gate answers, 3 x 2 prompt-length notes and the
    # synthetic-acceptance note of the two synthetic runs (a finding of theirs in every format); the first run,
    # quiet, draws no stability warning (the MAD rule at 5 repetitions called two values 1% off outliers)
    assert warnings.count("<li") == 38
    assert "Outlier" not in warnings


def test_short_rig_labels_replace_run_ids_in_headers_and_legends() -> None:
    names, page = _h200_page()
    assert names == ["h200-nodraft", "h200-depth4", "h200-depth15"]
    # the full run id appears once per run (under its fingerprint), never as a heading or legend entry
    for rid in ("20261129-191407-h200-nodraft-5101", "20261129-191906-h200-depth4-1c8a"):
        assert page.count(rid) == 1
    assert ("<h2>h200-depth4: details</h2><h3>Startup (measured by rigbench)</h3>" in page
            and "<h3>Speed [synthetic L=3.4]</h3>" in page)
    legend = page[page.index("<h3>Throughput by scenario"):page.index("<h3>Speed-up</h3>")]
    assert "h200-depth4" in legend and "20261129" not in legend


def test_synthetic_acceptance_is_flagged_in_red_wherever_its_speed_up_appears() -> None:
    _, page = _h200_page()
    grid = page[page.index("<h2>Speed-up vs"):page.index("<h2>Speed, run by run</h2>")]
    assert '<th class="synth">h200-depth4 speed-up (synthetic L=3.4)</th>' in grid
    assert grid.count('<td class="num synth">') == 8  # 4 scenarios x 2 synthetic runs
    assert '<p class="synth">' in grid and "SYNTHETIC ACCEPTANCE" in grid
    plot = page[page.index("<h3>Speed-up</h3>"):page.index("<h3>TTFT and ITL")]
    assert "SYNTHETIC L=3.4" in plot


def test_blog_markdown_collapses_findings_and_flags_synthetic() -> None:
    from rigbench.report._labels import rig_labels

    dirs = [d for d in sorted(H200.iterdir()) if d.is_dir()]
    analyses = [analyze_run(RunReader(d)) for d in dirs]
    names = rig_labels([d.name for d in dirs], [a.header for a in analyses])
    md = render_blog_markdown(names, analyses, compare_runs(RunReader(dirs[0]), [RunReader(d) for d in dirs[1:]],
                                                            allow_mismatch=True))
    assert md.count("<details>") == 3 and "UNTRUSTED: 10 reasons" in md
    assert "**synthetic**" in md and "SYNTHETIC ACCEPTANCE" in md
