"""Compare: the three verdicts (same within ±M by TOST, differs by Welch, inconclusive with the
repetitions that would tell), seed 000's re-run by the numbers, ratio error, fingerprint refusal,
a run compared with itself, and a run-to-run table."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from rigbench.analysis._compare import compare_runs, compare_stats, fingerprint_differences
from rigbench.analysis._stats import Stat
from rigbench.errors import UsageError
from rigbench.records import Fingerprint, SpeedBatch, SpeedRequest, StreamResult
from rigbench.store import RunHeader, RunReader, RunWriter
from tests.unit.cli_inproc import invoke


def stat(mean: float, std: float, n: int) -> Stat:
    return Stat(n=n, median=mean, mean=mean, std=std, min=mean - std, max=mean + std)


def test_seed_rerun_is_inconclusive_by_the_numbers_not_a_reproduction() -> None:
    """Seed 000 called 20.97 ± 1.22 vs 22.39 ± 2.21 tok/s (n = 5 each, t = 1.26, p = 0.25) a
    reproduction. Not different, yes; but a 6.8% higher mean with that spread cannot be shown to
    be within ±5% either: inconclusive, with about 46 repetitions per side to tell."""
    r = compare_stats(stat(20.97, 1.22, 5), stat(22.39, 2.21, 5))
    assert r.t == pytest.approx(1.26, abs=0.005) and r.p == pytest.approx(0.25, abs=0.005)
    assert r.ratio == pytest.approx(22.39 / 20.97)
    assert r.verdict == "inconclusive" and r.p_equiv is not None and r.p_equiv > 0.5
    assert r.needed_n is not None and 35 <= r.needed_n <= 60
    # a wider margin the same data can meet: ±25% is shown (the ratio's 90% interval is about 0.97-1.17)
    wide = compare_stats(stat(20.97, 1.22, 5), stat(22.39, 2.21, 5), margin=0.25)
    assert wide.verdict == "same" and wide.p_equiv is not None and wide.p_equiv < 0.05


def test_two_repetitions_8_7x_apart_are_inconclusive_never_the_same() -> None:
    """Issue 25: TTFT 8.7x apart at n = 2 each, p = 0.079, was printed "reproduces"."""
    a, b = [100.0, 120.0], [850.0, 1064.0]
    sa = stat(sum(a) / 2, float(np.std(a, ddof=1)), 2)
    sb = stat(sum(b) / 2, float(np.std(b, ddof=1)), 2)
    r = compare_stats(sa, sb)
    assert r.ratio == pytest.approx(8.7, abs=0.05) and r.p == pytest.approx(0.079, abs=0.01)
    assert r.verdict == "inconclusive" and r.needed_n is not None and r.needed_n > 2


def test_same_only_when_the_equivalence_test_says_so() -> None:
    tight_a, tight_b = stat(100.0, 1.0, 20), stat(100.5, 1.0, 20)
    same = compare_stats(tight_a, tight_b)
    assert same.verdict == "same" and same.needed_n is None
    # control: the same means with few repetitions and a wide spread: not different, not shown equal
    loose = compare_stats(stat(100.0, 8.0, 3), stat(100.5, 8.0, 3))
    assert loose.p is not None and loose.p > 0.5 and loose.verdict == "inconclusive"
    # a margin narrower than the difference the data can rule out
    assert compare_stats(tight_a, tight_b, margin=0.002).verdict == "inconclusive"


def test_a_significant_difference_inside_the_margin_is_same() -> None:
    r = compare_stats(stat(100.0, 0.5, 30), stat(102.0, 0.5, 30))
    assert r.p is not None and r.p < 1e-6 and r.verdict == "same"
    assert compare_stats(stat(100.0, 0.5, 30), stat(102.0, 0.5, 30), margin=0.01).verdict == "differs"


def test_the_suggested_repetitions_decide_about_as_often_as_promised() -> None:
    """Power is honest: drawing `needed_n` repetitions per side with the observed spread, equal
    means come out "same" and means 1 + margin apart "differs" in at least ~80% of trials."""
    first = compare_stats(stat(100.0, 6.0, 4), stat(101.0, 6.0, 4))
    assert first.verdict == "inconclusive" and first.needed_n is not None
    n, rng = first.needed_n, np.random.default_rng(7)
    for truth, want in ((100.0, "same"), (105.0, "differs")):
        hits = 0
        for _ in range(300):
            xa, xb = rng.normal(100.0, 6.0, n), rng.normal(truth, 6.0, n)
            r = compare_stats(stat(xa.mean(), xa.std(ddof=1), n), stat(xb.mean(), xb.std(ddof=1), n))
            hits += r.verdict == want
        assert hits / 300 >= 0.74, (truth, hits)


def test_clear_difference_differs() -> None:
    r = compare_stats(stat(4.3, 0.05, 5), stat(23.3, 0.6, 5))
    assert r.verdict == "differs" and r.p is not None and r.p < 0.001 and r.t is not None and r.t > 0


def test_ratio_error_propagates_relative_standard_errors() -> None:
    a, b = stat(10.0, 1.0, 4), stat(20.0, 4.0, 4)
    r = compare_stats(a, b)
    # r * sqrt((0.5/10)^2 + (2/20)^2) = 2 * sqrt(0.0025 + 0.01)
    assert r.ratio_err == pytest.approx(2 * (0.0125 ** 0.5))


def test_single_sample_is_inconclusive_with_a_reason() -> None:
    r = compare_stats(stat(10, 0, 1), stat(12, 0, 5))
    assert r.verdict == "inconclusive" and r.p is None and r.needed_n is None and r.reason
    borrowed = compare_stats(stat(10, 0, 1), stat(12, 1.2, 5))  # the other side's spread plans both
    assert borrowed.verdict == "inconclusive" and borrowed.needed_n is not None and borrowed.needed_n >= 2


def test_fingerprint_differences_split_by_whether_they_matter() -> None:
    a = {"engine": "vllm", "model": {"sha256": "aa"}, "argv": ["vllm", "serve"], "host": {"gpus": ["GB10"]}}
    b = {"engine": "vllm", "model": {"sha256": "bb"}, "argv": ["vllm", "serve", "--x"], "host": {"gpus": None}}
    diffs = {d.field: d.matters for d in fingerprint_differences(a, b)}
    assert diffs == {"model.sha256": True, "argv": False}  # unknown GPU on one side is not a difference


def _run(tmp: Path, name: str, fingerprint: dict[str, object], rates_tok_s: list[float], *,
         input_tokens: int = 16) -> RunReader:
    d = tmp / name
    w = RunWriter(d, RunHeader(run_id=name, created_at="2026-01-01T00:00:00+00:00", rigbench_version="0",
                               fingerprint=Fingerprint.model_validate(fingerprint)))
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
                              index=0, input_tokens_target=input_tokens, output_tokens_target=n,
                              input_tokens_measured=input_tokens,
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
    assert cmp.mismatch_allowed and cmp.rows[0].result.verdict == "inconclusive"


def test_a_run_compared_with_itself_or_its_copy_is_one_run(tmp_path: Path) -> None:
    base = _run(tmp_path, "base", FP, [10.0, 10.5, 9.5])
    with pytest.raises(UsageError, match="is given twice: that is one run"):
        compare_runs(base, [RunReader(tmp_path / "base")])
    shutil.copytree(tmp_path / "base", tmp_path / "copy")
    with pytest.raises(UsageError, match="hold the same data"):
        compare_runs(base, [RunReader(tmp_path / "copy")])
    res = invoke("compare", str(tmp_path / "base"), str(tmp_path / "copy"))
    assert res.code == 2 and "one run, not two" in res.stderr and res.traceback is None
    # control: a second measurement of the same rig is compared
    again = _run(tmp_path, "again", FP, [10.1, 10.4, 9.7])
    assert compare_runs(base, [again])[0].rows


def test_a_scenario_run_on_another_shape_is_not_compared(tmp_path: Path) -> None:
    """The quick profile's long prompts were halved (2026-12-03): an older default run holds the same
    scenario names on other shapes, and its shorter prefill would read as the rig being faster."""
    base = _run(tmp_path, "base", FP, [10.0, 10.5, 9.5, 10.2, 9.8], input_tokens=1024)
    shorter = _run(tmp_path, "shorter", FP, [20.0, 20.5, 19.5, 20.2, 19.8], input_tokens=512)
    [cmp] = compare_runs(base, [shorter])
    assert cmp.rows == [] and cmp.other_shape == ["chat@c1 (1024→64 tokens in A, 512→64 in B)"]
    res = invoke("compare", str(tmp_path / "base"), str(tmp_path / "shorter"))
    assert "not compared, another workload in each run: chat@c1 (1024→64 tokens in A, 512→64 in B)" in \
        " ".join(res.stdout.split())
    same = _run(tmp_path, "same", FP, [20.0, 20.5, 19.5, 20.2, 19.8], input_tokens=1024)  # control: same shape
    [cmp] = compare_runs(base, [same])
    assert [r.result.verdict for r in cmp.rows] == ["differs"] and cmp.other_shape == []


def test_compare_prints_the_three_verdicts_and_the_margin(tmp_path: Path) -> None:
    for name, rates in (("base", [10.0, 10.5, 9.5, 10.2, 9.8]), ("fast", [30.0, 31.0, 29.0, 30.5, 29.5]),
                        ("noisy", [8.0, 12.5, 9.0, 11.5, 10.5]), ("again", [10.1, 10.4, 9.6, 10.3, 9.7])):
        _run(tmp_path, name, FP, rates)
    res = invoke("compare", str(tmp_path / "base"), str(tmp_path / "fast"), str(tmp_path / "noisy"),
                 str(tmp_path / "again"))
    assert res.code == 0, res.stderr
    fast_t, noisy_t, again_t = res.stdout.split("e2e_tok_s: B = ")[1:]
    assert " differs " in fast_t and "same ±" not in fast_t.split("same ±5%:")[0]
    assert " inconclusive " in noisy_t and "chat: inconclusive: about " in noisy_t
    assert "repetitions per side would tell ±5%" in noisy_t
    assert " same ±5% " in again_t
    narrow = invoke("compare", str(tmp_path / "base"), str(tmp_path / "again"), "--margin", "1")
    assert narrow.code == 0 and "chat: inconclusive: about" in narrow.stdout and "would tell ±1%" in narrow.stdout
    bad = invoke("compare", str(tmp_path / "base"), str(tmp_path / "again"), "--margin", "-3")
    assert bad.code == 2 and "--margin is a percentage" in bad.stderr


def test_compare_says_when_one_side_measured_windows_on_a_busy_host(tmp_path: Path) -> None:
    """Issue 30 item 8: `compare` said nothing when one run's windows were busy (kept by --allow-busy-host)."""
    from rigbench.records import HostConditions

    golden = Path(__file__).resolve().parents[2] / "tests" / "golden"
    busy = tmp_path / "emulator_b"
    shutil.copytree(golden / "emulator_b", busy)
    win = HostConditions(unit_id="host/chat_short/c1", window="chat_short c=1", scenario="chat_short",
                         concurrency=1, started_ns=0, ended_ns=2 * 10**9, engine="local", engine_pids=[42],
                         cpus=[0, 1], busy_cpu_s=2.9, engine_cpu_s=0.9, rigbench_cpu_s=0.1, steal_s=0.0)
    with (busy / "records.jsonl").open("a") as f:
        f.write(win.model_dump_json() + "\n")
    md = tmp_path / "c.md"
    res = invoke("compare", str(golden / "emulator_a"), str(busy), "--markdown", str(md))
    assert res.traceback is None and res.code == 0, res.stderr
    said = " ".join(res.stdout.split())
    assert ("emulator_b measured 1 window on a busy host (during chat_short c=1, other processes used 0.95 of 2 "
            "cores while the engine used 0.45") in said and "not its rig alone" in said
    assert "emulator_b measured 1 window on a busy host" in md.read_text()
    # control: the two quiet (unrecorded) runs draw no such note
    quiet = invoke("compare", str(golden / "emulator_a"), str(golden / "emulator_b"))
    assert "busy host" not in quiet.stdout


@pytest.mark.parametrize(("k_a", "n_a", "k_b", "n_b", "low", "high"), [
    (56, 70, 48, 80, 0.0524, 0.3339),
    (9, 10, 3, 10, 0.1705, 0.8090),
    (5, 56, 0, 29, -0.0381, 0.1926),
    (0, 10, 0, 20, -0.1611, 0.2775),
    (0, 10, 0, 10, -0.2775, 0.2775),
    (10, 10, 0, 20, 0.6791, 1.0),
    (10, 10, 0, 10, 0.6075, 1.0),
])
def test_the_accuracy_interval_is_newcombes_to_four_decimals(k_a: int, n_a: int, k_b: int, n_b: int, low: float,
                                                            high: float) -> None:
    """The 95% interval of a difference of two accuracies against Newcombe (1998, Statistics in Medicine 17:873,
    Table II, method 10: the hybrid score interval), including the zero and full counts where simpler intervals
    collapse to a point."""
    from rigbench.analysis._verdict import proportion_diff_interval

    ci = proportion_diff_interval(k_a, n_a, k_b, n_b, confidence=0.95)
    assert ci.diff == pytest.approx(k_a / n_a - k_b / n_b)
    assert (round(ci.low, 4), round(ci.high, 4)) == (low, high)


def test_a_paired_interval_narrows_only_with_many_identical_answers() -> None:
    """Paired (the same items): 200 items, 180 answered alike, is narrower than the unpaired interval of the
    same counts; answers no more alike than chance give the unpaired interval."""
    from rigbench.analysis._verdict import proportion_diff_interval

    unpaired = proportion_diff_interval(150, 200, 140, 200, confidence=0.9)
    paired = proportion_diff_interval(150, 200, 140, 200, confidence=0.9, both_right=135, both_wrong=45)
    assert paired.diff == unpaired.diff and paired.low > unpaired.low and paired.high < unpaired.high
    # ten identical answers: narrower than unpaired (+-0.33) but nowhere near the +-5 point margin; a hundred:
    # within it. Without the continuity correction ten would already give a zero-width interval.
    few = proportion_diff_interval(5, 10, 5, 10, confidence=0.9, both_right=5, both_wrong=5)
    assert few.high - few.low > 0.25 and few.low < -0.05  # cannot be called "same within 5 points"
    many = proportion_diff_interval(50, 100, 50, 100, confidence=0.9, both_right=50, both_wrong=50)
    assert 0 < many.high - many.low < 0.05 and many.low > -0.05  # can
    none = proportion_diff_interval(150, 200, 140, 200, confidence=0.9, both_right=105, both_wrong=15)
    assert (none.low, none.high) == (unpaired.low, unpaired.high)  # answers as alike as chance: no narrowing


def test_the_ratio_equivalence_test_is_two_welch_tests_on_the_scaled_baseline() -> None:
    """TOST of B/A within [1 - M, 1 + M]: each bound is Welch's one-sided test of B against A scaled by the
    bound, computed here by scipy on the raw samples (independent of rigbench's formula)."""
    from scipy import stats

    from rigbench.analysis._verdict import ratio_tost

    rng = np.random.default_rng(3)
    for n_a, n_b, shift in ((5, 7, 1.02), (12, 4, 0.97), (3, 3, 1.0)):
        a, b = rng.normal(100, 4, n_a), rng.normal(100 * shift, 6, n_b)
        got = ratio_tost(a.mean(), a.std(ddof=1), n_a, b.mean(), b.std(ddof=1), n_b, 0.05)
        assert got is not None
        low = stats.ttest_ind(b, 0.95 * a, equal_var=False, alternative="greater").pvalue
        high = stats.ttest_ind(b, 1.05 * a, equal_var=False, alternative="less").pvalue
        assert (got.p_low, got.p_high) == pytest.approx((low, high), rel=1e-9)
        assert got.p == max(got.p_low, got.p_high)
    # no test where it cannot be one: a side of one, a baseline of zero, no spread on either side
    assert ratio_tost(100, 4, 1, 100, 4, 5, 0.05) is None and ratio_tost(100, 4, 5, 100, 4, 1, 0.05) is None
    assert ratio_tost(0, 4, 5, 100, 4, 5, 0.05) is None and ratio_tost(100, 0, 5, 101, 0, 5, 0.05) is None
    assert ratio_tost(100, 0, 5, 101, 2, 5, 0.05) is not None  # one side's spread is enough
