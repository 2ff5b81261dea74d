"""MMLU-Pro: official prompt and extraction, loader (fixture in the real schema), sampling,
the suite end to end against a canned server, resume, and the seed's standard-error arithmetic."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from rigbench.analysis._proportion import proportion
from rigbench.analysis._quality import summarize_quality
from rigbench.client import Accumulator, ChatClient, StreamRequest, StreamTransport
from rigbench.errors import SetupError, UsageError
from rigbench.records import MMLUProAnswer, StreamResult
from rigbench.rig import RigInfo
from rigbench.store import RunHeader, RunReader, RunWriter
from rigbench.suites import SuiteContext
from rigbench.suites.quality import MMLUProSettings, MMLUProSuite, load_mmlu_pro
from rigbench.suites.quality._mmlu import grade_mmlu
from rigbench.suites.quality._mmlu_data import sample_questions
from rigbench.suites.quality._mmlu_protocol import build_prompt, extract_answer

FIXTURE = Path(__file__).parents[1] / "fixtures" / "mmlu_pro" / "data"


def _result(content: str, reasoning: str = "", field: str = "reasoning_content", wall_s: float = 0.5,
            ok: bool = True) -> StreamResult:
    kinds = "r" * (1 if reasoning else 0) + "c" * (1 if content else 0)
    return StreamResult(sent_ns=0, done_ns=int(wall_s * 1e9), chunk_ns=[1] * len(kinds),
                        chunk_chars=[len(x) for x in (reasoning, content) if x], chunk_kind=kinds,
                        content=content, reasoning=reasoning, reasoning_field=field if reasoning else None,
                        finish_reason="stop", usage={"completion_tokens": len(kinds), "prompt_tokens": 9},
                        http_status=200 if ok else 500)


def test_extraction_uses_the_official_patterns_in_order() -> None:
    assert extract_answer("so... the answer is (C). But maybe Answer: D") == ("C", 1)
    assert extract_answer("**Answer:** B") == ("B", 2)  # `**` removed first, as the official script
    assert extract_answer("I think it is E, not F") == ("F", 3)  # last lone capital A-J
    assert extract_answer("no idea") == (None, None)
    assert extract_answer("the answer is (K)") == (None, None)  # K is not an option letter


def test_prompt_is_the_official_api_script_text() -> None:
    data = load_mmlu_pro(FIXTURE)
    q = next(x for x in data.test if x.question_id == 101)
    shots = [x for x in data.validation if x.category == "math"][:5]
    p = build_prompt(q, shots)
    assert p.startswith("The following are multiple choice questions (with answers) about math. Think step"
                        ' by step and then output the answer in the format of "The answer is (X)"'
                        " at the end.\n\n"
                        "Question: What is 1 + 1?\nOptions: A. -1\nB. 0\n")
    # the shot's "A: " prefix is dropped and its chain of thought kept
    assert "J. 8\nAnswer: Let's think step by step. 1 + 1 = 2. The answer is (D).\n\n" in p
    assert p.endswith("Question: What is 7 + 8?\nOptions: A. 12\nB. 13\nC. 14\nD. 15\nE. 16\nF. 17\nG. 18\n"
                      "H. 19\nI. 20\nJ. 21\nAnswer: Let's think step by step.\n\n")
    assert p.count("Question:") == 6


def test_loader_reads_parquet_and_jsonl_and_drops_na_padding(tmp_path: Path) -> None:
    data = load_mmlu_pro(FIXTURE)
    assert data.source.startswith("local:") and len(data.sha256) == 64
    assert data.subjects == ["history", "law", "math"]
    padded = next(q for q in data.test if q.question_id == 100)
    assert len(padded.options) == 8 and "N/A" not in padded.options
    import pyarrow.parquet as pq

    for split in ("test", "validation"):
        rows = pq.read_table(next(FIXTURE.glob(f"{split}-*.parquet"))).to_pylist()
        (tmp_path / f"{split}.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    again = load_mmlu_pro(tmp_path)
    assert [q.question_id for q in again.test] == [q.question_id for q in data.test]
    assert again.test == data.test


def test_loader_errors_say_what_to_do(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no validation split"):
        (tmp_path / "test.jsonl").write_text("{}\n")
        load_mmlu_pro(tmp_path)
    with pytest.raises(UsageError, match="does not exist"):
        load_mmlu_pro(tmp_path / "nope")


def test_hub_failure_is_a_setup_error_with_an_offline_remedy(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    with pytest.raises(SetupError, match=r"TIGER-Lab/MMLU-Pro@main.*data/test-\*\.parquet"):
        load_mmlu_pro(None, cache_dir=tmp_path)


def test_sample_is_fixed_by_seed_and_subject_filter() -> None:
    data = load_mmlu_pro(FIXTURE)
    a = sample_questions(data, subjects=None, per_subject=2, seed=7)
    b = sample_questions(data, subjects=None, per_subject=2, seed=7)
    assert {k: [q.question_id for q in v] for k, v in a.items()} == \
        {k: [q.question_id for q in v] for k, v in b.items()}
    assert [len(v) for v in a.values()] == [2, 2, 2]
    seeds = {tuple(q.question_id for q in sample_questions(data, subjects=["math"], per_subject=2,
                                                           seed=s)["math"]) for s in range(10)}
    assert len(seeds) > 1  # the seed really changes the sample
    with pytest.raises(UsageError, match="unknown MMLU-Pro subject"):
        sample_questions(data, subjects=["astrology"], per_subject=2, seed=7)


def test_letter_comes_from_content_not_reasoning() -> None:
    data = load_mmlu_pro(FIXTURE)
    q = next(x for x in data.test if x.question_id == 200)  # gold C
    a = grade_mmlu(q, _result("The answer is (B).", reasoning="the answer is (C)"), 5)
    assert (a.pred, a.correct, a.reasoning_form) == ("B", False, "reasoning_content")
    b = grade_mmlu(q, _result("<think>the answer is (A)</think>The answer is (C)."), 5)
    assert (b.pred, b.correct, b.reasoning_form) == ("C", True, "think_tags")
    c = grade_mmlu(q, _result("I cannot say."), 5)  # "I" is a lone letter: pattern 3, as official
    assert (c.pred, c.extraction, c.correct) == ("I", "pattern3", False)
    d = grade_mmlu(q, _result("no idea at all"), 5)
    assert (d.pred, d.extraction, d.correct) == (None, "failed", False)
    e = grade_mmlu(q, _result("", ok=False), 5)
    assert (e.extraction, e.correct) == ("request_failed", False)


class CannedServer(StreamTransport):
    """A stand-in server behind a real ChatClient: answers math correctly, history with the wrong letter,
    law with no letter at all."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []

    async def handle_stream(self, request: StreamRequest) -> Accumulator:
        return Accumulator.replay(self._answer(request.json()))

    def _answer(self, body: dict[str, Any]) -> StreamResult:
        self.bodies.append(body)
        prompt = body["messages"][0]["content"]
        subject = re.search(r"about (\w+)\.", prompt).group(1)  # type: ignore[union-attr]
        last = prompt.rsplit("Question: ", 1)[1]
        if subject == "math":
            a, b = map(int, re.findall(r"\d+", last.split("\n")[0]))
            opts = re.findall(r"^([A-J])\. (.*)$", last, re.M)
            letter = next(L for L, v in opts if v == str(a + b))
            return _result(f"Adding gives {a + b}. The answer is ({letter}).")
        if subject == "history":
            return _result("The answer is (J).")
        return _result("hmm, hard to say")


def _ctx(tmp_path: Path, server: CannedServer, done: set[str] | None = None) -> SuiteContext:
    writer = RunWriter(tmp_path, RunHeader(run_id="r1", created_at="now", rigbench_version="0"),
                       resume=done is not None)
    rig = RigInfo(engine="llamacpp", model="m", base_url="http://x/v1", server_root="http://x", slots=2)
    return SuiteContext(client=ChatClient("http://x/v1", transport=server), writer=writer, rig=rig,
                        done_units=done or set())


async def test_suite_end_to_end_records_grades_and_resumes(tmp_path: Path) -> None:
    client = CannedServer()
    suite = MMLUProSuite(MMLUProSettings(data=str(FIXTURE), questions_per_subject=3, sample_seed=1,
                                         max_tokens=64))
    ctx = _ctx(tmp_path, client)
    await suite.run(ctx)
    ctx.writer.finish("complete")
    assert len(client.bodies) == 8  # math 3, history 3, law 2 (all it has)
    body = client.bodies[0]
    assert body["temperature"] == 0.0 and body["max_tokens"] == 64 and body["top_p"] == 1
    law_prompt = next(b for b in client.bodies if "about law" in b["messages"][0]["content"])
    assert law_prompt["messages"][0]["content"].count("Question:") == 4  # only 3 law shots exist

    reader = RunReader(tmp_path)
    answers = reader.records("mmlu_pro_answer", MMLUProAnswer)
    summary = summarize_quality(reader).mmlu_pro
    assert summary is not None
    by = {s.subject: s for s in summary.subjects}
    assert (by["math"].accuracy.k, by["math"].accuracy.n) == (3, 3)
    assert (by["history"].accuracy.k, by["law"].accuracy.k) == (0, 0)
    assert by["law"].extraction_failures == 2
    assert summary.extraction_failure_rate == pytest.approx(2 / 8)
    assert summary.sample_seed == 1 and summary.dataset and summary.dataset.startswith("local:")
    assert by["law"].chance == pytest.approx(0.1)

    # Resume: drop two answers as if the run was killed; only those two are asked again.
    lines = (tmp_path / "records.jsonl").read_text().splitlines()
    kept = [ln for ln in lines if json.loads(ln)["unit_id"] not in {answers[0].unit_id, answers[-1].unit_id}]
    (tmp_path / "records.jsonl").write_text("\n".join(kept) + "\n")
    done = {json.loads(ln)["unit_id"] for ln in kept}
    client2 = CannedServer()
    ctx2 = _ctx(tmp_path, client2, done)
    await MMLUProSuite(MMLUProSettings(data=str(FIXTURE), questions_per_subject=3, sample_seed=1)).run(ctx2)
    ctx2.writer.finish("complete")
    assert len(client2.bodies) == 2
    again = RunReader(tmp_path).records("mmlu_pro_answer", MMLUProAnswer)
    assert sorted(a.question_id for a in again) == sorted(a.question_id for a in answers)
    assert len(list(RunReader(tmp_path).raw_records("mmlu_pro_config"))) == 1


def test_standard_error_matches_the_seed_arithmetic() -> None:
    # "at n=200 and 75% accuracy the standard error is about 3 points; at n=20 about 10"
    assert proportion(150, 200).se * 100 == pytest.approx(3.06, abs=0.01)
    assert proportion(15, 20).se * 100 == pytest.approx(9.68, abs=0.01)
    ci = proportion(150, 200)
    assert ci.ci_low < 0.75 < ci.ci_high and ci.ci_high - ci.ci_low == pytest.approx(0.12, abs=0.01)
