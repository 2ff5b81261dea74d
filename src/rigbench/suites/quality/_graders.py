"""Graders: decide one answer against one grader spec. Deterministic except `code`, which runs."""

from __future__ import annotations

import asyncio
import json
import re
import unicodedata

import jsonschema

from rigbench.records import GradeResult
from rigbench.sandbox import Limits, run_function_tests
from rigbench.suites.quality._packs import (
    CodeGrader,
    ExactGrader,
    GraderSpec,
    JsonSchemaGrader,
    MaxCharsGrader,
    NumericGrader,
    RegexGrader,
)

__all__ = ["extract_code", "extract_json", "extract_numbers", "grade"]

_NUM = re.compile(r"(?<![\d.])-?\d+(?:\.\d+)?")
_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[^\n]*\n(.*?)(?:```|\Z)", re.DOTALL)


def extract_numbers(text: str) -> list[float]:
    """Numbers in reading order; full-width digits and thousands separators are understood."""
    norm = unicodedata.normalize("NFKC", text)
    norm = re.sub(r"(?<=\d),(?=\d{3}\b)", "", norm)
    return [float(m) for m in _NUM.findall(norm)]


def extract_code(text: str) -> str:
    """The first python (or untagged) fenced block, else the whole answer."""
    blocks = _FENCE.findall(text)
    for lang, body in blocks:
        if lang.lower() in ("python", "py", "python3"):
            return str(body)
    for lang, body in blocks:
        if not lang:
            return str(body)
    return text


def extract_json(text: str) -> object:
    """A fenced JSON block, else the outermost {...} or [...] span; raises ValueError."""
    for _lang, body in _FENCE.findall(text):
        try:
            return json.loads(body)
        except ValueError:
            continue
    for open_, close in (("{", "}"), ("[", "]")):
        a, b = text.find(open_), text.rfind(close)
        if 0 <= a < b:
            try:
                return json.loads(text[a : b + 1])
            except ValueError:
                continue
    return json.loads(text)


async def grade(spec: GraderSpec, answer: str, *, allow_unconfined: bool = False) -> GradeResult:
    """Grade the answer content (reasoning removed) with one grader.

    `code` runs in rigbench's sandbox; where the machine cannot confine it, only with
    `allow_unconfined` (else SandboxUnavailable), and the grade then says "unconfined".
    """
    if isinstance(spec, ExactGrader):
        a, e = answer.strip(), spec.expected.strip()
        ok = a == e if spec.case_sensitive else a.casefold() == e.casefold()
        return GradeResult(grader="exact", passed=ok, detail="" if ok else f"got {a[:80]!r}")
    if isinstance(spec, RegexGrader):
        m = re.search(spec.pattern, answer, re.IGNORECASE if spec.ignore_case else 0)
        return GradeResult(grader="regex", passed=m is not None,
                           detail=f"matched {m.group(0)[:80]!r}" if m else f"no match for {spec.pattern!r}")
    if isinstance(spec, NumericGrader):
        nums = extract_numbers(answer)
        if not nums or (spec.pick == "only" and len(set(nums)) != 1):
            return GradeResult(grader="numeric", passed=False,
                               detail=f"numbers found: {nums[:10]}" if nums else "no number in the answer")
        got = nums[0] if spec.pick == "first" else nums[-1]
        ok = abs(got - spec.expected) <= spec.tolerance
        return GradeResult(grader="numeric", passed=ok, detail=f"got {got:g}, expected {spec.expected:g}")
    if isinstance(spec, MaxCharsGrader):
        n = len(answer.strip())
        ok = 0 < n <= spec.max
        return GradeResult(grader="max_chars", passed=ok, detail=f"{n} chars (limit {spec.max})")
    if isinstance(spec, JsonSchemaGrader):
        try:
            obj = extract_json(answer)
        except ValueError:
            return GradeResult(grader="json_schema", passed=False, detail="no JSON in the answer")
        try:
            jsonschema.validate(obj, spec.schema_)
        except jsonschema.ValidationError as e:
            return GradeResult(grader="json_schema", passed=False, detail=e.message[:200])
        return GradeResult(grader="json_schema", passed=True)
    assert isinstance(spec, CodeGrader)
    limits = Limits(cpu_s=spec.cpu_s, memory_bytes=spec.memory_mb * 1024 * 1024, wall_s=spec.timeout_s,
                    file_bytes=1 << 20, processes=16)
    res = await asyncio.to_thread(
        run_function_tests, extract_code(answer), spec.function, [(c.args, c.expected) for c in spec.cases],
        limits=limits, allow_unconfined=allow_unconfined,
    )
    n_pass = sum(c.passed for c in res.cases)
    detail = f"{n_pass}/{len(spec.cases)} cases passed (sandbox: {res.confinement.kind})"
    if res.error:
        detail += f"; {res.error}"
    else:
        first_bad = next((c for c in res.cases if not c.passed), None)
        if first_bad is not None:
            detail += f"; first failure: {first_bad.error or 'got ' + str(first_bad.got)}"
    return GradeResult(grader="code", passed=res.passed, detail=detail[:400], confinement=res.confinement.kind)
