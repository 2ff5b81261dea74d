"""The MMLU-Pro suite: official 5-shot CoT protocol, sampled per subject, resumable."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from rigbench.analysis import split_reasoning, split_tokens
from rigbench.records import Extraction, MMLUProAnswer, MMLUProConfig, StreamResult
from rigbench.suites._context import SuiteContext
from rigbench.suites.quality._mmlu_data import MMLUProData, MMLUProQuestion, load_mmlu_pro, sample_questions
from rigbench.suites.quality._mmlu_protocol import PROTOCOL, build_prompt, extract_answer
from rigbench.suites.quality._settings import MMLUProSettings

__all__ = ["MMLUProSuite"]


class MMLUProSuite:
    name = "mmlu_pro"

    def __init__(self, settings: MMLUProSettings, *, data: MMLUProData | None = None) -> None:
        self.settings = settings
        self._data = data

    def load_data(self) -> MMLUProData:
        """Load (download) the questions now; call before the run to fail before any request."""
        if self._data is None:
            s = self.settings
            self._data = load_mmlu_pro(Path(s.data) if s.data and s.data != "hf" else None,
                                       revision=s.revision)
        return self._data

    async def run(self, ctx: SuiteContext) -> None:
        s = self.settings
        data = self.load_data()
        sample = sample_questions(data, subjects=s.subjects, per_subject=s.questions_per_subject,
                                  seed=s.sample_seed)
        shots_by_subject: dict[str, list[MMLUProQuestion]] = {}
        for q in data.validation:
            shots_by_subject.setdefault(q.category, []).append(q)
        config = MMLUProConfig(
            dataset=data.source, data_sha256=data.sha256, sample_seed=s.sample_seed,
            questions_per_subject=s.questions_per_subject, subjects=list(sample), shots=s.shots,
            max_tokens=s.max_tokens, protocol=PROTOCOL,
            question_ids={subj: [q.question_id for q in qs] for subj, qs in sample.items()},
        )
        if config.unit_id not in ctx.done_units:
            ctx.writer.append(config)
        todo = [q for qs in sample.values() for q in qs if _unit(q) not in ctx.done_units]
        total = sum(len(qs) for qs in sample.values())
        task = ctx.progress.task(f"MMLU-Pro ({len(sample)} subjects)", total)
        ctx.progress.advance(task, total - len(todo))
        if len(todo) < total:
            ctx.progress.note(f"MMLU-Pro: resuming, {total - len(todo)} of {total} questions already done")
        missing = sorted({q.category for q in todo if len(shots_by_subject.get(q.category, [])) < s.shots})
        if missing:
            ctx.progress.note(f"MMLU-Pro: fewer than {s.shots} validation examples for {missing}; "
                              "those prompts use what there is (recorded per answer as `shots`)")
        width = s.concurrency or ctx.rig.slots or 1
        sem = asyncio.Semaphore(width)

        async def one(q: MMLUProQuestion) -> None:
            async with sem:
                shots = shots_by_subject.get(q.category, [])[: s.shots]
                body: dict[str, Any] = {
                    "model": ctx.rig.model,
                    "messages": [{"role": "user", "content": build_prompt(q, shots)}],
                    "temperature": s.temperature,
                    "top_p": 1,
                    "max_tokens": s.max_tokens,
                    **s.extra_body,
                }
                result = await ctx.client.stream_chat(body)
                ctx.writer.append(grade_mmlu(q, result, len(shots)))
                ctx.progress.advance(task)

        try:
            await asyncio.gather(*(one(q) for q in todo))
        finally:
            ctx.progress.done(task)


def _unit(q: MMLUProQuestion) -> str:
    return f"mmlu_pro/q{q.question_id}"


def grade_mmlu(q: MMLUProQuestion, result: StreamResult, shots: int) -> MMLUProAnswer:
    """Grade one response: the letter comes from the answer content, never from the reasoning."""
    split = split_reasoning(result)
    tokens = split_tokens(result)
    extraction: Extraction
    if not result.ok:
        pred, extraction = None, "request_failed"
    else:
        found = extract_answer(split.answer)
        pred = found.letter
        extraction = f"pattern{found.pattern}" if found.pattern else "failed"  # type: ignore[assignment]
    return MMLUProAnswer(
        unit_id=_unit(q), question_id=q.question_id, subject=q.category, n_options=len(q.options),
        gold=q.answer, shots=shots, pred=pred, extraction=extraction,
        correct=pred is not None and pred == q.answer,
        reasoning_form=split.form, reasoning_tokens=tokens.reasoning_tokens,
        answer_tokens=tokens.answer_tokens, token_split=tokens.method, result=result,
    )
