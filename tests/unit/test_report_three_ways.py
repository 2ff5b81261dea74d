"""One run's report drawn three ways agrees by construction (issue 23, item 3): the terminal, the
Markdown and the HTML report show the same sections, with the same titles, rows, figures and notes,
and the same run-level findings.

The outputs are read back independently (a Markdown table parser, an HTML parser, the terminal's
plain text), so a section drawn by hand in one medium, or left out of one, fails here.
"""

from __future__ import annotations

import html
import io
import json
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from rigbench.analysis import RunAnalysis, analyze_run
from rigbench.records import PreflightFinding, PreflightReport, RetryAttempt, SloTargets, TrafficCheck
from rigbench.report import render_html, render_markdown, render_terminal, synth_note, synthetic_acceptance
from rigbench.report._load import PERCENTILES_TITLE
from rigbench.store import RunReader
from tests.unit.test_load import _synthetic_run

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "golden"
H200 = ROOT / "benchmarks" / "results" / "h200"
RUNS = [GOLDEN / "run_v1", GOLDEN / "emulator_a", GOLDEN / "emulator_b", H200 / "20261129-191906-h200-depth4-1c8a",
        H200 / "20261129-191407-h200-nodraft-5101", Path("with-preflight-and-traffic"), Path("rate-mode")]


def _with_preflight_and_traffic(tmp: Path) -> Path:
    """run_v1 with a preflight finding (text a Markdown table must escape), a failed traffic check and
    a retried request."""
    run = tmp / "with-preflight-and-traffic"
    shutil.copytree(GOLDEN / "run_v1", run)
    head = json.loads((run / "run.json").read_text())
    head["source_data_id"] = None  # records added below: no recorded id to contradict
    (run / "run.json").write_text(json.dumps(head))
    finding = PreflightFinding(id="ctx_split", severity="error", problem="context | split *per slot*",
                               evidence="-c 4096 -np 4 → 1024 tokens per slot", fix="pass -c 16384")
    records = [PreflightReport(command=None, findings=[finding, finding.model_copy(update={
                   "id": "no_metrics", "severity": "info", "problem": "no /metrics", "fix": "add --metrics"})]),
               TrafficCheck(outputs=12, duplicate_outputs=3, usage_checked=12, usage_method="bytes_bound",
                            usage_inflated=0, timings_checked=12, timings_inconsistent=0,
                            reasons=["3 of 12 outputs identical to another prompt's"])]
    lines = (run / "records.jsonl").read_text().splitlines()
    first = next(i for i, line in enumerate(lines) if '"speed_request"' in line)
    req = json.loads(lines[first])  # its first attempt was turned away with a 503, then sent again
    req["result"]["retries"] = [RetryAttempt(attempt=1, http_status=503, retry_after="1", wait_asked_s=1.0,
                                             wait_s=1.0, sent_ns=0, done_ns=1000).model_dump(mode="json")]
    lines[first] = json.dumps(req)
    (run / "records.jsonl").write_text("\n".join([*lines, *(r.model_dump_json() for r in records)]) + "\n")
    return run


def _rate_mode(tmp: Path) -> Path:
    """A rate-mode run (load windows with an SLO, one of them late): the load tables and goodput."""
    fast, slow, late = (0.0, 20.0), (0.0, 300.0), (200.0, 20.0)
    return _synthetic_run(tmp, [(1.0, [fast] * 10), (2.0, [fast] * 9 + [slow]), (3.0, [late] * 10)],
                          SloTargets(ttft_s=0.1), attainment=0.9).dir


def _built(run: Path, tmp: Path) -> Path:
    return run if run.is_absolute() else {"rate-mode": _rate_mode}.get(run.name, _with_preflight_and_traffic)(tmp)


@pytest.fixture
def analysis(request: pytest.FixtureRequest, tmp_path: Path) -> RunAnalysis:
    return analyze_run(RunReader(_built(request.param, tmp_path)))

Sections = dict[str, dict[str, Any]]  # title -> level, rows (header first), notes


# -- reading each medium back ----------------------------------------------------------------------


def _md_text(t: str) -> str:
    t = re.sub(r"(?<!\\)\*\*", "", t.strip())  # bold markers (a literal * is escaped: \*)
    # backticks: rigbench's own `code` spans, drawn as <code> in the HTML (no Markdown syntax on the page)
    return html.unescape(re.sub(r"\\(.)", r"\1", t)).replace("`", "")


def _md_sections(md: str) -> Sections:
    out: Sections = {}
    cur: dict[str, Any] | None = None
    for line in md.splitlines():
        m = re.match(r"(#+) (.*)", line)
        if m:
            cur = None if len(m.group(1)) == 1 else out.setdefault(_md_text(m.group(2)), {
                "level": len(m.group(1)) - 1, "rows": [], "notes": []})
            continue
        if cur is None:
            continue
        if line.strip() and not line.startswith(("|", " ", "-")) and not cur["rows"] and not cur["notes"]:
            cur["lead"] = _md_text(line)  # the line under a heading: the rest of a long title
        elif line.startswith("|"):
            if not re.fullmatch(r"\|(-+:?\|)+", line):
                cur["rows"].append([_md_text(c) for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]])
        elif re.match(r"\s*- ", line):
            cur["notes"].append(_md_text(line.strip()[2:]))
    return out


class _Html(HTMLParser):
    """Headings, table rows and notes, in page order."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.items: list[tuple[str, Any]] = []
        self._buf: tuple[str, list[str]] | None = None
        self._row: list[str] | None = None
        self._cell: list[str] | None = None
        self._li: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        cls = dict(attrs).get("class") or ""
        if tag in ("h1", "h2", "h3", "h4", "h5"):
            self._buf = (tag, [])
        elif tag == "p" and "note" in cls.split():
            self._buf = ("note", [])
        elif tag == "p" and "lead" in cls.split():
            self._buf = ("lead", [])
        elif tag == "tr":
            self._row = []
        elif tag in ("td", "th") and self._row is not None:
            self._cell = []
        elif tag == "li":
            self._li = []
            self.items.append(("li-start", cls))

    def handle_endtag(self, tag: str) -> None:
        if self._buf and tag == ("p" if self._buf[0] in ("note", "lead") else self._buf[0]):
            self.items.append((self._buf[0], "".join(self._buf[1])))
            self._buf = None
        elif tag in ("td", "th") and self._cell is not None and self._row is not None:
            self._row.append("".join(self._cell))
            self._cell = None
        elif tag == "tr" and self._row is not None:
            self.items.append(("row", self._row))
            self._row = None
        elif tag == "li" and self._li is not None:
            self.items.append(("li", "".join(self._li)))
            self._li = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)
        elif self._buf is not None:
            self._buf[1].append(data)
        if self._li is not None:
            self._li.append(data)


def _html_sections(page: str, name: str) -> tuple[Sections, list[tuple[str, str]]]:
    """The run's answer (the headline figures of a one-run page), its details and its fingerprint as
    sections; and its findings (class, text) from the collapsed warnings."""
    p = _Html()
    p.feed(page)
    out: Sections = {}
    cur: dict[str, Any] | None = None
    where = ""
    findings: list[tuple[str, str]] = []
    cls = ""
    for kind, value in p.items:
        if kind == "h2":
            where, cur = value, None
        elif kind in ("h3", "h4") and where in ("Headline figures", f"{name}: details"):
            cur = out.setdefault(value, {"level": int(kind[1]) - 2, "rows": [], "notes": []})
        elif kind == "h3" and where == "Fingerprints":
            cur = out.setdefault("Fingerprint", {"level": 1, "rows": [], "notes": []}) if value == name else None
        elif kind == "row" and cur is not None:
            cur["rows"].append(value)
        elif kind == "note" and cur is not None:
            cur["notes"].append(value)
        elif kind == "lead" and cur is not None:
            cur["lead"] = value
        elif kind == "li-start":
            cls = value
        elif kind == "li" and where == "Warnings":
            findings.append((cls, value))
    return out, findings


def _terminal(a: RunAnalysis) -> str:
    console = Console(file=io.StringIO(), width=1000, color_system=None, legacy_windows=False)
    render_terminal(a, console)
    return console.file.getvalue()  # type: ignore[attr-defined]


def _flat(text: str) -> str:
    return " ".join(text.replace("`", "").split())  # backticks: as _md_text


# -- the three agree -------------------------------------------------------------------------------


@pytest.mark.parametrize("analysis", RUNS, ids=lambda p: p.name, indirect=True)
def test_terminal_markdown_and_html_show_the_same_sections_rows_and_notes(analysis: RunAnalysis) -> None:
    a = analysis
    md = _md_sections(render_markdown(a, paths=True))
    name = "the run"
    page_secs, _ = _html_sections(render_html([name], [a], paths=True), name)
    assert list(md) == list(page_secs), (list(md), list(page_secs))  # same sections, same order
    for title, sec in md.items():
        assert sec == page_secs[title], title  # same level, header, rows, figures and notes
    term = _terminal(a)
    flat = _flat(term)
    lines = term.splitlines()
    for title, sec in md.items():
        assert _flat(title) in flat, title  # a long title wraps at its table's width
        if "lead" in sec:
            assert _flat(sec["lead"]) in flat, (title, sec["lead"])
        if title == PERCENTILES_TITLE:  # the full distribution is in the files: the terminal says where
            assert re.search(rf"{len(sec['rows']) - 1} rows of n, mean, median, std, p90, p95 and p99: in the "
                             r"Markdown \(--markdown\), HTML \(--html\) and JSON \(--json\) reports", flat), title
            sec = {**sec, "rows": []}
        for row in sec["rows"][1:]:  # the terminal's header may be its short form (with a key)
            cells = [c for c in row if c.strip()]
            if title.startswith("Preflight"):  # one card per finding: its cells on lines of their own
                assert all(_flat(c) in flat for c in cells), (title, row)
                continue
            pattern = ".*".join(re.escape(c) for c in cells)
            assert any(re.search(pattern, line) for line in lines), (title, row)
        for note in sec["notes"]:
            assert _flat(note) in flat, (title, note)


@pytest.mark.parametrize("analysis", RUNS, ids=lambda p: p.name, indirect=True)
def test_the_run_level_findings_are_the_same_in_each(analysis: RunAnalysis) -> None:
    a = analysis
    assert a.warnings  # every fixture has some: attached, gate skipped, host not recorded...
    found = ([synth_note(a.header)] if synthetic_acceptance(a.header) is not None else []) + a.warnings
    # the UNTRUSTED (or DAMAGED) reasons first (and a synthetic run's mark), then the other findings
    reasons = [w for w in found if w.startswith(("UNTRUSTED", "DAMAGED"))]
    lead = [w for w in found if w in reasons or w == synth_note(a.header)]
    others = [w for w in found if w not in lead]
    quoted = [_md_text(line[2:]) for line in render_markdown(a, paths=True).splitlines() if line.startswith("> ")]
    assert quoted == [w.replace("`", "") for w in lead + others]
    _, findings = _html_sections(render_html(["the run"], [a], paths=True), "the run")
    assert [t for _, t in findings] == [w.replace("`", "") for w in reasons + [w for w in found if w not in reasons]]
    assert all(("bad-item" in c) == (t in reasons) for c, t in findings)
    # the terminal: the panel holds the reasons (beyond four, the first three and a count); every other
    # finding follows the answer (beyond five, the first four and a count) and, then, all of them at the end
    term = _terminal(a)
    panel = term[:term.index("╰")]
    in_panel = [_flat(line.strip(" │")[2:]) for line in panel.splitlines() if line.strip(" │").startswith("! ")]
    shown = lead
    if len(reasons) > 4:
        # where the rest are printed: the sanity gate's below, with the gate; any other only in the Markdown
        gate = {f"UNTRUSTED: {r}" for r in a.sections["sanity"][0].reasons} if "sanity" in a.sections else set()
        where = ("the sanity gate's, listed with it below" if set(reasons[3:]) <= gate
                 else f"every one: rigbench report {a.run_dir} --markdown FILE")
        shown = [w for w in lead if w not in reasons[3:]] + [f"and {len(reasons) - 3} more UNTRUSTED reasons ({where})"]
    assert sorted(_flat(w) for w in shown) == sorted(in_panel)
    after = term[term.index("╰"):]
    listed = [_flat(line[2:]) for line in after.splitlines() if line.startswith("! ")]
    if len(others) <= 5:
        assert listed == [_flat(w) for w in others]
    else:
        more = f"and {len(others) - 4} more, listed under \"All warnings\" at the end"
        assert listed == [_flat(w) for w in others[:4]] + [more] + [_flat(w) for w in others]
        fingerprint = re.search(r"^Fingerprint *$", term, re.M)
        assert fingerprint is not None and term.rindex("All warnings (") > fingerprint.start()


def test_every_kind_of_section_is_checked_by_some_fixture(tmp_path: Path) -> None:
    runs = [_built(r, tmp_path / r.name) for r in RUNS]
    titles = {t for run in runs for t in _md_sections(render_markdown(analyze_run(RunReader(run)), paths=True))}
    for kind in ("Startup", "Speed", "Latency percentiles", "Host conditions", "Preflight", "Decode roofline",
                 "Server telemetry", "Client vs server timings", "Sanity gate", "Traffic check", "Load (rate mode)",
                 "Load: goodput", "Retries", "Quality",
                 "MMLU-Pro", "Task pack", "Agent readiness", "Conformance probes", "Fingerprint"):
        assert any(t.startswith(kind) for t in titles), (kind, sorted(titles))
