"""Compare: seed 000's re-run verdict, ratio error, fingerprint refusal, and a run-to-run table."""

from __future__ import annotations

from pathlib import Path

import pytest

from rigbench.analysis._compare import compare_runs, compare_stats, fingerprint_differences
from rigbench.analysis._stats import Stat
from rigbench.errors import UsageError
from rigbench.records import SpeedBatch, SpeedRequest, StreamResult
from rigbench.store import RunHeader, RunReader, RunWriter


def stat(mean: float, std: float, n: int) -> Stat:
    return Stat(n=n, median=mean, mean=mean, std=std, min=mean - std, max=mean + std)


def test_seed_rerun_reproduces_with_t_1_26() -> None:
    r = compare_stats(stat(20.97, 1.22, 5), stat(22.39, 2.21, 5))
    assert r.t == pytest.approx(1.26, abs=0.005)
    assert r.verdict == "reproduces" and r.p is not None and r.p > 0.05
    assert r.ratio == pytest.approx(22.39 / 20.97)


def test_clear_difference_differs() -> None:
    r = compare_stats(stat(4.3, 0.05, 5), stat(23.3, 0.6, 5))
    assert r.verdict == "differs" and r.p is not None and r.p < 0.001 and r.t is not None and r.t > 0


def test_ratio_error_propagates_relative_standard_errors() -> None:
    a, b = stat(10.0, 1.0, 4), stat(20.0, 4.0, 4)
    r = compare_stats(a, b)
    # r * sqrt((0.5/10)^2 + (2/20)^2) = 2 * sqrt(0.0025 + 0.01)
    assert r.ratio_err == pytest.approx(2 * (0.0125 ** 0.5))


def test_single_sample_is_insufficient_not_a_verdict() -> None:
    r = compare_stats(stat(10, 0, 1), stat(12, 0, 5))
    assert r.verdict == "insufficient" and r.p is None


def test_fingerprint_differences_split_by_whether_they_matter() -> None:
    a = {"engine": "vllm", "model": {"sha256": "aa"}, "argv": ["vllm", "serve"], "host": {"gpus": ["GB10"]}}
    b = {"engine": "vllm", "model": {"sha256": "bb"}, "argv": ["vllm", "serve", "--x"], "host": {"gpus": None}}
    diffs = {d.field: d.matters for d in fingerprint_differences(a, b)}
    assert diffs == {"model.sha256": True, "argv": False}  # unknown GPU on one side is not a difference


def _run(tmp: Path, name: str, fingerprint: dict[str, object], rates_tok_s: list[float]) -> RunReader:
    d = tmp / name
    w = RunWriter(d, RunHeader(run_id=name, created_at="2026-01-01T00:00:00+00:00", rigbench_version="0",
                               fingerprint=fingerprint))
    for rep, rate in enumerate(rates_tok_s):
        n = 64
        step = int(1e9 / rate)
        chunks = [1_000_000 + i * step for i in range(n)]
        res = StreamResult(sent_ns=0, headers_ns=500_000, first_event_ns=1_000_000, done_ns=chunks[-1],
                           chunk_ns=chunks, chunk_chars=[4] * n, chunk_kind="c" * n, content="word " * n,
                           finish_reason="length", usage={"completion_tokens": n, "prompt_tokens": 16},
                           http_status=200)
        uid = f"speed/chat/c1/r{rep}"
        w.append(SpeedRequest(unit_id=uid + "/i0", scenario="chat", concurrency=1, repetition=rep, warmup=False,
                              index=0, input_tokens_target=16, output_tokens_target=n, input_tokens_measured=16,
                              result=res))
        w.append(SpeedBatch(unit_id=uid, scenario="chat", concurrency=1, repetition=rep, warmup=False,
                            started_ns=0, ended_ns=chunks[-1], requests=1, failed=0))
    w.finish("complete")
    return RunReader(d)


FP = {"engine": "llamacpp", "engine_version": "b1", "model": {"sha256": "aa"}, "argv": ["llama-server"]}


def test_compare_runs_table(tmp_path: Path) -> None:
    base = _run(tmp_path, "base", FP, [10.0, 10.5, 9.5, 10.2, 9.8])
    spec = _run(tmp_path, "spec", {**FP, "argv": ["llama-server", "-md", "d.gguf"]}, [30.0, 31.0, 29.0, 30.5, 29.5])
    [cmp] = compare_runs(base, [spec])
    [row] = cmp.rows
    assert row.scenario == "chat" and row.result.verdict == "differs"
    assert row.result.ratio == pytest.approx(3.0, rel=0.05)
    assert [d.field for d in cmp.differences] == ["argv"] and not cmp.mismatch_allowed


def test_mismatched_model_is_refused_unless_allowed(tmp_path: Path) -> None:
    base = _run(tmp_path, "base", FP, [10.0, 10.5, 9.5])
    other = _run(tmp_path, "other", {**FP, "model": {"sha256": "bb"}}, [10.1, 10.4, 9.6])
    with pytest.raises(UsageError, match=r"model\.sha256"):
        compare_runs(base, [other])
    [cmp] = compare_runs(base, [other], allow_mismatch=True)
    assert cmp.mismatch_allowed and cmp.rows[0].result.verdict == "reproduces"
