"""Task packs: the shipped multilingual pack, every grader kind, the code sandbox, pack errors,
and the pack suite end to end against a canned server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rigbench.client import Accumulator, ChatClient, StreamRequest, StreamTransport
from rigbench.errors import UsageError
from rigbench.records import PackAnswer, StreamResult
from rigbench.rig import RigInfo
from rigbench.sandbox import SandboxUnavailable, confinement
from rigbench.store import RunHeader, RunReader, RunWriter
from rigbench.suites import SuiteContext
from rigbench.suites.quality import PackSettings, PackSuite, load_pack, shipped_packs
from rigbench.suites.quality._graders import extract_code, extract_numbers, grade
from rigbench.suites.quality._packs import (
    CodeGrader,
    JsonSchemaGrader,
    MaxCharsGrader,
    NumericGrader,
    RegexGrader,
)
from tests.needs import missing


def _result(content: str, wall_s: float = 0.2) -> StreamResult:
    return StreamResult(sent_ns=0, done_ns=int(wall_s * 1e9), chunk_ns=[1], chunk_chars=[len(content)],
                        chunk_kind="c", content=content, finish_reason="stop",
                        usage={"completion_tokens": 1}, http_status=200)


def test_shipped_multilingual_pack_mirrors_the_seed_checks() -> None:
    assert "multilingual" in shipped_packs()
    pack = load_pack("multilingual")
    ids = {t.id for t in pack.tasks}
    for base in ("capital_50", "dedup_sort", "mikan_total", "mikan_unit_price"):
        assert {f"ja_{base}", f"en_{base}"} <= ids
    ja50 = next(t for t in pack.tasks if t.id == "ja_capital_50")
    assert any(isinstance(g, MaxCharsGrader) and g.max == 50 for g in ja50.graders)
    assert len(pack.sha256) == 64


async def test_max_chars_counts_characters_not_bytes() -> None:
    answer = "日本の首都は東京です。政治と経済の中心地です。"  # 23 characters, 69 UTF-8 bytes
    assert (await grade(MaxCharsGrader(type="max_chars", max=50), answer)).passed
    assert not (await grade(MaxCharsGrader(type="max_chars", max=20), answer)).passed
    assert not (await grade(MaxCharsGrader(type="max_chars", max=50), "   ")).passed  # empty is no answer


async def test_numeric_understands_full_width_digits_and_separators() -> None:
    g = NumericGrader(type="numeric", expected=360)
    assert (await grade(g, "合計は３６０円です。")).passed
    assert (await grade(NumericGrader(type="numeric", expected=1360), "1,360 yen")).passed
    r = await grade(g, "40円 x 9個 = 350円")
    assert not r.passed and "350" in r.detail
    assert not (await grade(g, "たくさん")).passed
    assert extract_numbers("-2.5 and 3") == [-2.5, 3.0]


async def test_regex_and_json_schema() -> None:
    assert (await grade(RegexGrader(type="regex", pattern="tokyo", ignore_case=True), "Tokyo!")).passed
    assert not (await grade(RegexGrader(type="regex", pattern="tokyo"), "Tokyo!")).passed
    schema = {"type": "object", "required": ["capital"], "properties": {"capital": {"const": "Tokyo"}}}
    g = JsonSchemaGrader.model_validate({"type": "json_schema", "schema": schema})
    assert (await grade(g, 'Sure:\n```json\n{"capital": "Tokyo"}\n```')).passed
    assert (await grade(g, 'Here: {"capital": "Tokyo"} done')).passed
    bad = await grade(g, '{"capital": "Kyoto"}')
    assert not bad.passed and "Tokyo" in bad.detail
    assert not (await grade(g, "no json here")).passed


async def test_code_grader_runs_the_models_function_in_a_sandbox() -> None:
    g = next(gr for t in load_pack("multilingual").tasks if t.id == "en_dedup_sort" for gr in t.graders)
    assert isinstance(g, CodeGrader)
    good = "Here you go:\n```python\ndef dedup_sort(nums):\n    return sorted(set(nums))\n```\n"
    r = await grade(g, good)
    assert r.passed and "4/4" in r.detail
    wrong = "```python\ndef dedup_sort(nums):\n    return sorted(nums)\n```"
    r = await grade(g, wrong)
    assert not r.passed and "2/4 cases passed" in r.detail and "first failure" in r.detail
    missing = await grade(g, "```python\ndef other(x):\n    return x\n```")
    assert not missing.passed and "KeyError" in missing.detail


async def test_code_grader_limits_and_marks_its_sandbox() -> None:
    if confinement().kind != "bwrap":
        missing(f"no working bubblewrap here: {confinement().note}")
    g = CodeGrader(type="code", function="f", cases=[{"args": [1], "expected": 1}], timeout_s=1.5)
    hang = await grade(g, "def f(x):\n    while True:\n        pass\n")
    assert not hang.passed and "timed out" in hang.detail and hang.confinement == "bwrap"
    big = await grade(g.model_copy(update={"memory_mb": 256}), "def f(x):\n    return len(bytearray(4 * 1024**3))\n")
    assert not big.passed and "MemoryError" in big.detail
    ok = await grade(g, "def f(x):\n    return x\n")
    assert ok.passed and "(sandbox: bwrap)" in ok.detail


async def test_code_packs_refuse_to_start_without_a_sandbox_unless_allowed(monkeypatch: pytest.MonkeyPatch) -> None:
    from rigbench.sandbox import _confine, _run

    monkeypatch.setattr(_run, "confinement", lambda: _confine.Confinement("unconfined", "no bwrap"))
    with pytest.raises(SandboxUnavailable, match="--allow-unconfined"):
        PackSuite(PackSettings(packs=["multilingual"]))  # has a code task: refused before any request
    PackSuite(PackSettings(packs=["multilingual"], tasks=["en_capital_50"]))  # no code task: no sandbox needed
    allowed = PackSuite(PackSettings(packs=["multilingual"], allow_unconfined=True))
    g = next(gr for t in allowed.packs[0].tasks for gr in t.graders if isinstance(gr, CodeGrader))
    r = await grade(g, "def dedup_sort(nums):\n    return sorted(set(nums))\n", allow_unconfined=True)
    assert r.passed and r.confinement == "unconfined" and "(sandbox: unconfined)" in r.detail


def test_extract_code_prefers_python_fence() -> None:
    text = "```\nplain\n```\n```python\ndef f(): pass\n```"
    assert extract_code(text).strip() == "def f(): pass"
    assert extract_code("def g(): pass") == "def g(): pass"


def test_bad_pack_files_say_where_and_what(tmp_path: Path) -> None:
    p = tmp_path / "mine.yaml"
    p.write_text("name: mine\ntasks:\n  - id: a\n    prompt: hi\n    graders: [{type: telepathy}]\n")
    with pytest.raises(UsageError, match=r"mine\.yaml does not match the pack format"):
        load_pack(p)
    p.write_text("name: mine\ntasks:\n  - {id: a, prompt: x, graders: [{type: regex, pattern: x}]}\n"
                 "  - {id: a, prompt: y, graders: [{type: regex, pattern: y}]}\n")
    with pytest.raises(UsageError, match="repeated"):
        load_pack(p)
    with pytest.raises(UsageError, match="not a shipped pack"):
        load_pack("no-such-pack")
    with pytest.raises(UsageError, match=r"no task\(s\) \['nope'\]"):
        PackSuite(PackSettings(tasks=["nope"]))
    assert [t.id for t in PackSuite(PackSettings(tasks=["en_capital_50"])).packs[0].tasks] == ["en_capital_50"]


class PackServer(StreamTransport):
    """A stand-in server behind a real ChatClient: knows the arithmetic and the code; answers the capital
    questions at length."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []

    async def handle_stream(self, request: StreamRequest) -> Accumulator:
        return Accumulator.replay(self._answer(request.json()))

    def _answer(self, body: dict[str, Any]) -> StreamResult:
        self.bodies.append(body)
        prompt = body["messages"][-1]["content"]
        if "dedup_sort" in prompt:
            return _result("```python\ndef dedup_sort(nums):\n    return sorted(set(nums))\n```")
        if "9" in prompt and ("いくら" in prompt or "How much" in prompt):
            return _result("40" if ("1個" in prompt and "360" in prompt) or "one mikan" in prompt else "360")
        if "JSON" in prompt:
            return _result('{"country": "Japan", "capital": "Tokyo"}')
        return _result("Tokyo " * 20)  # too long for 50 characters, and no 東京 for the Japanese task


async def test_pack_suite_end_to_end_and_user_pack(tmp_path: Path) -> None:
    user = tmp_path / "mine.yaml"
    user.write_text("name: mine\ndefaults: {max_tokens: 77}\ntasks:\n"
                    "  - {id: json1, prompt: 'Give JSON',\n"
                    "     graders: [{type: json_schema, schema: {type: object}}]}\n")
    client = PackServer()
    run = tmp_path / "run"
    writer = RunWriter(run, RunHeader(run_id="p", created_at="now", rigbench_version="0"))
    rig = RigInfo(engine="llamacpp", model="m", base_url="http://x/v1", server_root="http://x")
    await PackSuite(PackSettings(packs=["multilingual", str(user)])).run(
        SuiteContext(client=ChatClient("http://x/v1", transport=client), writer=writer, rig=rig))
    writer.finish("complete")
    answers = RunReader(run).records("pack_answer", PackAnswer)
    got = {a.task_id: a.correct for a in answers}
    assert got["en_mikan_total"] and got["ja_mikan_unit_price"] and got["en_dedup_sort"] and got["json1"]
    assert not got["en_capital_50"] and not got["ja_capital_50"]
    cap = next(a for a in answers if a.task_id == "ja_capital_50")
    assert [g.grader for g in cap.grades if not g.passed] == ["max_chars", "regex"]
    assert client.bodies[-1]["max_tokens"] == 77 and "reasoning_effort" not in client.bodies[-1]
    assert len({a.unit_id for a in answers}) == len(answers) == 10


async def test_unconfined_code_grades_are_flagged_in_the_pack_report() -> None:
    from rigbench.analysis._packs import summarize_packs
    from rigbench.report._quality import _pack
    from rigbench.suites.quality._pack_suite import grade_task

    task = next(t for t in load_pack("multilingual").tasks if t.id == "en_dedup_sort")
    answer = await grade_task(task, _result("def dedup_sort(nums):\n    return sorted(set(nums))\n"),
                              suite="packs", pack="multilingual", unit_id="u", effort=None, repetition=0,
                              allow_unconfined=True)
    grade = answer.grades[0]
    if confinement().kind == "bwrap":  # confined here: the mark says so and the report is silent
        assert grade.confinement == "bwrap"
        assert not any("unconfined" in n.text for n in _pack(summarize_packs("r", [answer])[0]).notes)
        answer = answer.model_copy(update={"grades": [grade.model_copy(update={"confinement": "unconfined"})]})
    notes = _pack(summarize_packs("r", [answer])[0]).notes
    assert any("1 code grade(s) ran unconfined" in n.text for n in notes), notes
