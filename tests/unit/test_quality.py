"""Quality analysis and reports: reasoning forms and token split, effort sweep (time to correct
answer, thinking not turning off), cross-run comparison (vs best/worst, McNemar vs Fisher),
chance level printed honestly."""

from __future__ import annotations

import pytest
from rich.console import Console

from rigbench.analysis._mmlu import summarize_mmlu_pro
from rigbench.analysis._packs import summarize_effort
from rigbench.analysis._quality import QualitySummary
from rigbench.analysis._quality_compare import compare_mmlu_pro, pair_test
from rigbench.analysis._reasoning import split_reasoning, split_tokens
from rigbench.records import GradeResult, MMLUProAnswer, PackAnswer, PackConfig, StreamResult
from rigbench.report._quality import (
    render_mmlu_comparison_markdown,
    render_mmlu_comparison_terminal,
    render_quality_markdown,
    render_quality_terminal,
)
from rigbench.suites.quality import effort_request_fields


def _stream(reasoning_chunks: list[str], content_chunks: list[str], *, field: str = "reasoning_content",
            wall_s: float = 1.0, usage_extra: dict | None = None) -> StreamResult:
    kinds = "r" * len(reasoning_chunks) + "c" * len(content_chunks)
    n = len(kinds)
    return StreamResult(
        sent_ns=0, done_ns=int(wall_s * 1e9), chunk_ns=list(range(n)),
        chunk_chars=[len(x) for x in reasoning_chunks + content_chunks], chunk_kind=kinds,
        content="".join(content_chunks), reasoning="".join(reasoning_chunks),
        reasoning_field=field if reasoning_chunks else None, finish_reason="stop",
        usage={"completion_tokens": n, **(usage_extra or {})}, http_status=200)


def test_reasoning_is_found_in_each_of_the_three_forms() -> None:
    a = _stream(["let me ", "think"], ["Tokyo"])
    assert split_reasoning(a) == ("Tokyo", "let me think", "reasoning_content")
    assert split_tokens(a) == (2, 1, "chunks")
    b = _stream(["hmm"], ["Tokyo"], field="reasoning")
    assert split_reasoning(b).form == "reasoning"
    c = _stream([], ["<think>", "plan ", "it", "</think>", "Tok", "yo"])
    assert split_reasoning(c) == ("Tokyo", "plan it", "think_tags")
    assert split_tokens(c) == (4, 2, "chunks")
    d = _stream([], ["plan", "</think>", "Tokyo"])  # template opened the block in the prompt
    assert split_reasoning(d) == ("Tokyo", "plan", "think_tags")
    e = _stream(["x"] * 5, ["y"], usage_extra={"completion_tokens_details": {"reasoning_tokens": 5}})
    assert split_tokens(e) == (5, 1, "usage_details")
    f = _stream([], ["plain"])
    assert split_tokens(f) == (0, 1, "no_reasoning") and split_reasoning(f).form == "none"


def _pack_answer(effort: str, task: str, correct: bool, wall_s: float, reasoning: int) -> PackAnswer:
    r = _stream(["t"] * reasoning, ["answer"], wall_s=wall_s)
    return PackAnswer(unit_id=f"effort/p/{effort}/{task}/r0", suite="effort", pack="p", task_id=task,
                      language="en", effort=effort, repetition=0,
                      grades=[GradeResult(grader="numeric", passed=correct)], correct=correct,
                      answer_chars=6, reasoning_form="reasoning_content" if reasoning else "none",
                      reasoning_tokens=reasoning, answer_tokens=1, token_split="chunks", result=r)


def _effort_config(levels: list[str]) -> PackConfig:
    return PackConfig(unit_id="effort/p/config", suite="effort", pack="p", pack_path="p.yaml",
                      pack_sha256="0" * 64, task_ids=["t1", "t2"], repetitions=1, efforts=levels,
                      knobs={lv: effort_request_fields("vllm", lv) for lv in levels}, engine="vllm")


def test_effort_sweep_reports_time_to_correct_and_thinking_that_does_not_turn_off() -> None:
    rows = [
        _pack_answer("none", "t1", True, 2.0, 40), _pack_answer("none", "t2", True, 3.0, 60),  # ignored "off"
        _pack_answer("low", "t1", True, 1.0, 10), _pack_answer("low", "t2", True, 1.5, 20),
        _pack_answer("high", "t1", True, 9.0, 300), _pack_answer("high", "t2", False, 20.0, 900),
    ]
    (s,) = summarize_effort("run", rows, [_effort_config(["none", "low", "high"])])
    lv = {x.effort: x for x in s.levels}
    assert [x.effort for x in s.levels] == ["none", "low", "high"]
    assert lv["none"].off_requested and lv["none"].off_honoured is False
    assert lv["none"].request_fields == {"chat_template_kwargs": {"enable_thinking": False, "thinking": False}}
    assert lv["low"].time_to_correct_s == 2.5 and lv["low"].reasoning_tokens_total == 30
    assert lv["high"].time_to_correct_s is None and lv["high"].tasks_never_correct == ["t2"]
    assert lv["high"].accuracy.k == 1 and lv["high"].wall_s_total == 29.0
    assert s.fastest_to_correct == "low"
    assert any("did not turn off" in w for w in s.warnings)
    md = render_quality_markdown(QualitySummary(run_id="run", mmlu_pro=None, packs=[], effort=[s]))
    assert "off asked: IGNORED" in md and "| low | 2/2 | 30 | 2 | 2.50 | 2.50 |" in md


def _mmlu(qid: int, subject: str, correct: bool, extraction: str = "pattern1") -> MMLUProAnswer:
    return MMLUProAnswer(unit_id=f"mmlu_pro/q{qid}", question_id=qid, subject=subject, n_options=10,
                         gold="A", shots=5, pred="A" if correct else ("B" if extraction != "failed" else None),
                         extraction=extraction, correct=correct, reasoning_form="none",  # type: ignore[arg-type]
                         reasoning_tokens=0, answer_tokens=5, token_split="no_reasoning",
                         result=_stream([], ["x"] * 5))


def test_near_chance_run_is_called_guessing_with_chance_printed() -> None:
    # 12 of 100 right on 10-option questions: chance is 10%, not significantly better.
    answers = [_mmlu(i, "law", i < 12, "failed" if i >= 90 else "pattern1") for i in range(100)]
    s = summarize_mmlu_pro("tiny", answers)
    assert s is not None and not s.better_than_chance and s.chance == pytest.approx(0.1)
    assert s.extraction_failure_rate == 0.10
    console = Console(width=200, record=True)
    render_quality_terminal(console, QualitySummary(run_id="tiny", mmlu_pro=s, packs=[], effort=[]))
    text = console.export_text()
    assert "Chance level is 10.0%" in text and "NOT above chance" in text
    assert "12.0% ± 3.2" in text  # accuracy with one standard error, in points
    good = summarize_mmlu_pro("big", [_mmlu(i, "law", i < 60) for i in range(100)])
    assert good is not None and good.better_than_chance


def test_comparison_vs_best_worst_and_paired_test_when_same_questions() -> None:
    # A and B answer the same 200 questions; A wins 30 discordant pairs, B 10 -> McNemar significant.
    a = [_mmlu(i, "law", i < 150) for i in range(200)]
    b = [_mmlu(i, "law", i < 120 or 150 <= i < 160) for i in range(200)]
    c = [_mmlu(1000 + i, "law", i < 100) for i in range(200)]  # other questions -> Fisher
    cmp = compare_mmlu_pro([("A", a), ("B", b), ("C", c)])
    law = next(s for s in cmp.subjects if s.subject == "law")
    assert round(law.vs_best["A"], 3) == 0.1 and round(law.vs_worst["A"], 3) == 0.25
    assert round(law.vs_best["C"], 3) == -0.25
    ab = next(t for t in cmp.tests if t.subject == "law" and (t.run_a, t.run_b) == ("A", "B"))
    assert ab.test == "mcnemar_exact" and (ab.a_only, ab.b_only) == (30, 10) and ab.significant
    assert 0.001 < ab.p_value < 0.005
    ac = next(t for t in cmp.tests if t.subject == "law" and (t.run_a, t.run_b) == ("A", "C"))
    assert ac.test == "fisher_exact" and ac.significant
    close = compare_mmlu_pro([("A", a), ("D", [_mmlu(i, "law", i < 147) for i in range(200)])])
    t = next(t for t in close.tests if t.subject == "overall")
    # 3 discordant pairs of 200 (150 vs 147 right): not significant, and shown within ±5 points
    assert not t.significant and t.verdict == "same"
    md = render_mmlu_comparison_markdown(close)
    assert "same ±5 pts" in md and "vs best" in md and "not significant" not in md
    console = Console(width=220, record=True)
    render_mmlu_comparison_terminal(console, cmp)
    assert "differs" in console.export_text()


def test_the_quality_suites_answer_to_their_cli_names() -> None:
    import rigbench.suites.quality as q

    suites = (q.MMLUProSuite(q.MMLUProSettings()), q.PackSuite(q.PackSettings()), q.EffortSweepSuite(q.EffortSettings()))
    assert tuple(s.name for s in suites) == ("mmlu_pro", "packs", "effort")


def _answers(right: list[bool], first_id: int = 0) -> dict[int, bool]:
    return {first_id + i: r for i, r in enumerate(right)}


def test_accuracies_are_same_only_when_the_equivalence_interval_says_so() -> None:
    # the same 400 questions, answered identically: not one discordant pair, same within ±5 points
    both = [i % 2 == 0 for i in range(400)]
    same = pair_test("overall", "A", _answers(both), "B", _answers(both))
    assert same.test == "mcnemar_exact" and same.verdict == "same" and same.needed_n is None
    assert same.diff_low is not None and same.diff_high is not None and -0.05 < same.diff_low <= same.diff_high < 0.05
    # control: identical answers on 10 questions prove nothing either way
    few = pair_test("overall", "A", _answers(both[:10]), "B", _answers(both[:10]))
    assert few.verdict == "inconclusive" and few.needed_n is not None and few.needed_n > 10
    # 30 against 10 discordant pairs of 200: a difference
    a = _answers([i < 150 for i in range(200)])
    b = _answers([i < 120 or 150 <= i < 160 for i in range(200)])
    assert pair_test("overall", "A", a, "B", b).verdict == "differs"


def test_unpaired_accuracies_need_many_items_to_be_called_the_same() -> None:
    half = [i % 2 == 0 for i in range(200)]
    t = pair_test("overall", "A", _answers(half), "B", _answers(half, first_id=10_000))
    assert t.test == "fisher_exact" and t.p_value == 1.0 and t.verdict == "inconclusive"
    # two independent samples of a coin at 50%: (1.645 + 1.28)^2 * 0.5 / 0.05^2, about 1,700 per run
    assert t.needed_n is not None and 1500 < t.needed_n < 2000
    big = [i % 2 == 0 for i in range(20_000)]
    wide = pair_test("overall", "A", _answers(big), "B", _answers(big, first_id=10**6))
    assert wide.verdict == "same"
    assert pair_test("overall", "A", _answers(half), "B", _answers(half, first_id=10_000), margin=0.5).verdict == "same"
