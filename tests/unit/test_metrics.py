"""Each metric by itself, on a hand-computed request (analysis/_metrics.py), and docs/metrics.md against the code:
its table of metrics is the registry, and every code path it names exists and defines what it is named for."""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

import pytest

from rigbench.analysis import _metrics as m
from rigbench.analysis import request_timing
from rigbench.records import StreamResult, send_lag_ns

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "rigbench"
DOC = ROOT / "docs" / "metrics.md"
MS = 1_000_000  # ns

# Sent at 1 s; three reads: at +100 ms carrying 2 tokens, +180 ms 1 token, +280 ms 2 tokens (N = 5); the first SSE
# event at +90 ms, the first answer content at +180 ms (reasoning before it), the stream ended at +300 ms; 8 asked.
STREAM = m.Stream(sent_ns=1_000 * MS, done_ns=1_300 * MS, arrivals_ns=[1_100 * MS, 1_180 * MS, 1_280 * MS],
                  arrival_tokens=[2, 1, 2], output_tokens=5, multi_token_chunks=False, content_ns=1_180 * MS,
                  first_event_ns=1_090 * MS, output_tokens_target=8)
MULTI = m.Stream(**{**STREAM.__dict__, "multi_token_chunks": True})
ONE_READ = m.Stream(**{**STREAM.__dict__, "arrivals_ns": [1_100 * MS], "arrival_tokens": [5]})
# Meant to go at 0, a slot freed at 10 ms, the first attempt opened a connection at 20 ms and sent at 30 ms; the
# answered attempt (a retry) was sent at 40 ms.
PLACE = m.Schedule(intended_ns=0, ready_ns=10 * MS, sent_ns=40 * MS, first_sent_ns=30 * MS, first_connect_ns=20 * MS)
REUSED = m.Schedule(intended_ns=0, ready_ns=10 * MS, sent_ns=40 * MS, first_sent_ns=30 * MS, first_connect_ns=None)
EARLY = m.Schedule(intended_ns=50 * MS, ready_ns=50 * MS, sent_ns=40 * MS, first_sent_ns=40 * MS,
                   first_connect_ns=None)

# metric -> (arguments, the value worked out by hand from docs/metrics.md's formula)
CASES: dict[str, list[tuple[tuple[Any, ...], Any]]] = {
    "first_chunk_s": [((STREAM,), 0.1), ((MULTI,), 0.1)],
    "ttft_s": [((STREAM,), 0.1), ((MULTI,), None)],  # withheld when chunks carry several tokens
    "ttft_content_s": [((STREAM,), 0.18)],
    "first_event_s": [((STREAM,), 0.09)],
    "wall_s": [((STREAM,), 0.28)],
    "e2e_latency_s": [((STREAM,), 0.3)],
    "e2e_tok_s": [((STREAM,), 5 / 0.28)],
    # decode: the 3 tokens after the first read's 2, over the 180 ms from the first read to the last
    "itl_mean_s": [((STREAM,), 0.06), ((ONE_READ,), None)],
    "decode_tok_s": [((STREAM,), 3 / 0.18), ((ONE_READ,), None)],
    "itl_s": [((STREAM,), [0.08, 0.05, 0.05]), ((ONE_READ,), [])],  # the 100 ms gap shared by its 2 tokens
    "attainment": [((STREAM,), 5 / 8)],
    # from the slot (10 ms) to the connection's opening (20 ms); without one, to the send (30 ms); never negative
    "send_lag_s": [((PLACE,), 0.01), ((REUSED,), 0.02), ((EARLY,), 0.0)],
    # the service figure plus intended start -> the answered attempt's send (40 ms)
    "ttft_response_s": [((PLACE, 0.1), 0.14), ((PLACE, None), None)],
    "e2e_response_s": [((PLACE, 0.3), 0.34)],
    "throughput_rps": [((10, 4.0), 2.5)],
    "output_tok_s": [((300, 4.0), 75.0)],
    "goodput_rps": [((5, 4.0), 1.25)],
    "aggregate_tok_s": [((300, 0, 2_000 * MS), 150.0)],
    "prefill_share": [((0.2, 0.8), 0.25), ((0.2, 0.0), None)],
}


@pytest.mark.parametrize("name", sorted(m.METRICS))
def test_each_metric_by_hand(name: str) -> None:
    assert name in CASES, f"metric {name} has no hand-computed case in this file"
    for args, want in CASES[name]:
        got = m.METRICS[name].compute(*args)
        assert (got is None) if want is None else got == pytest.approx(want, rel=1e-9, abs=1e-12), (name, got, want)


def test_every_case_is_a_registered_metric() -> None:
    assert set(CASES) == set(m.METRICS)


def test_a_metric_is_defined_once() -> None:
    with pytest.raises(ValueError, match="'ttft_s' is defined twice"):
        m.metric("ttft_s", "TTFT", "s", "again")(lambda s: None)


def test_send_lag_is_one_formula() -> None:
    # the records-level arithmetic the client's self-check calls is the metric's
    assert send_lag_ns(10, 30, 20) == 10 and send_lag_ns(10, 30, None) == 20 and send_lag_ns(50, 40, None) == 0
    assert m.send_lag_s(PLACE) == send_lag_ns(PLACE.ready_ns, PLACE.first_sent_ns, PLACE.first_connect_ns) / 1e9


def test_request_timing_keeps_each_metric() -> None:
    """The summary's fields are the registered metrics of the request's arrivals (reports read those fields)."""
    res = StreamResult(sent_ns=1_000 * MS, first_event_ns=1_090 * MS, first_content_ns=1_180 * MS, done_ns=1_300 * MS,
                       chunk_ns=[1_100 * MS, 1_100 * MS, 1_180 * MS, 1_280 * MS, 1_280 * MS], chunk_chars=[3] * 5,
                       chunk_kind="rrccc", usage={"prompt_tokens": 5, "completion_tokens": 5}, http_status=200)
    t = request_timing(res, output_tokens_target=8)
    for name, metric in m.METRICS.items():
        if metric.scope == "request":
            assert getattr(t, name) == pytest.approx(metric.compute(STREAM)), name
    # 10 tokens on 5 chunks: TTFT withheld, the first chunk's time kept
    multi = request_timing(res.model_copy(update={"usage": {"prompt_tokens": 5, "completion_tokens": 10}}))
    assert multi.ttft_s is None and multi.first_chunk_s == pytest.approx(0.1) and multi.ttft_not_comparable


# ---- docs/metrics.md against the code ----

def _section(title: str) -> str:
    text = DOC.read_text()
    start = text.index(f"## {title}")
    end = text.find("\n## ", start + 1)
    return text[start:end if end > 0 else len(text)]


def test_docs_table_is_the_registry() -> None:
    rows = [line for line in _section("Where each metric is defined").splitlines()
            if line.startswith("| `")]
    listed = {}
    for row in rows:
        name, words, unit, scope, code, formula = (c.strip() for c in row.strip("|").split(" | "))
        listed[name.strip("`")] = (words, unit, scope, code.strip("`"), formula)
    assert listed == {x.name: (x.title, x.unit, x.scope, x.code, x.formula) for x in m.METRICS.values()}


# What docs/metrics.md says about other tools' code (paths inside their packages) is not ours to check.
_THEIRS = ("Mapping to other tools", "Peers: how GuideLLM")
_PATH = re.compile(r"`((?:[\w./]+/)?_?\w+\.py)(?::\s*(\w+))?`")


def _names_defined(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {t.id for t in targets if isinstance(t, ast.Name)}
    return names


def _resolve(path: str, previous: Path | None) -> Path:
    if "/" not in path and previous is not None:  # `suites/load/_lengths.py`, `_trace.py`: the same folder
        return previous.parent / path
    for base in (ROOT, SRC):
        if (base / path).exists():
            return base / path
    return SRC / path


def doc_code_places(text: str) -> list[tuple[int, Path, str | None]]:
    """Every code path (and `path: name`) docs/metrics.md names for rigbench's own code, with its line."""
    places = []
    skipping = False
    for n, line in enumerate(text.splitlines(), 1):
        if line.startswith("## "):
            skipping = line.startswith(tuple(f"## {t}" for t in _THEIRS))
        if skipping:
            continue
        previous = None
        for path, name in _PATH.findall(line):
            previous = _resolve(path, previous)
            places.append((n, previous, name or None))
    return places


def test_docs_name_code_that_exists() -> None:
    places = doc_code_places(DOC.read_text())
    assert len(places) > 30  # the page names its code throughout
    for line, path, name in places:
        assert path.is_file(), f"docs/metrics.md:{line} names {path.relative_to(ROOT)}, which does not exist"
        if name is not None:
            assert name in _names_defined(path), f"docs/metrics.md:{line}: {name} is not defined in {path.name}"
            if path == SRC / "analysis" / "_metrics.py":
                assert name in m.METRICS and m.METRICS[name].compute.__name__ == name, (
                    f"docs/metrics.md:{line}: {name} is not a registered metric")


def test_a_heading_that_names_a_metric_names_its_code() -> None:
    """A section about a metric, headed with the code it is in, names the metric's own module among them (the
    goodput section once named analysis/_goodput.py alone, which does not compute it)."""
    headings = [line for line in DOC.read_text().splitlines()
                if line.startswith("#") and _PATH.search(line) and not line.startswith(tuple(f"## {t}" for t in _THEIRS))]
    checked = 0
    for h in headings:
        for x in m.METRICS.values():
            if re.search(rf"\b{re.escape(x.title)}\b", h, re.IGNORECASE):
                checked += 1
                assert x.code.split(":")[0] in h, f"docs/metrics.md heading {h!r} names {x.title} but not {x.code}"
    assert checked >= 1


def test_the_speed_and_load_exports_write_the_one_send_lag(tmp_path: Path) -> None:
    """A request meant to go at 0 that opened a connection from 2 ms and was written at 5 ms: its send lag is 2 ms
    (the opening is the network's) in a speed row as in a load row. The speed row once wrote 5 ms."""
    from rigbench.analysis import request_rows
    from rigbench.records import LoadRequest, SpeedRequest
    from rigbench.store import RunHeader, RunReader, RunWriter

    res = StreamResult(scheduled_ns=0, connect_ns=2 * MS, sent_ns=5 * MS, done_ns=50 * MS, chunk_ns=[20 * MS],
                       chunk_chars=[3], chunk_kind="c", http_status=200)
    w = RunWriter(tmp_path / "run", RunHeader(run_id="s", created_at="2026-01-01T00:00:00+00:00",
                                              rigbench_version="0"))
    w.append(SpeedRequest(unit_id="speed/s/c1/r0/i0", scenario="s", concurrency=1, repetition=0, warmup=False,
                          index=0, input_tokens_target=8, output_tokens_target=1, input_tokens_measured=8,
                          result=res))
    w.append(LoadRequest(unit_id="load/r0/i0", window="r0", index=0, input_tokens_target=8, output_tokens_target=1,
                         input_tokens_measured=8, result=res))
    w.finish("complete")
    rows = request_rows(RunReader(tmp_path / "run"))
    assert [(r["suite"], r["send_lag_s"]) for r in rows] == [("speed", pytest.approx(0.002)),
                                                             ("load", pytest.approx(0.002))]
