"""Every outside value is checked at its door by the same rules (issue 34, items 1 and 2).

Adversary: a user or a file giving anything: `true` where a count goes (lax pydantic and `float()` read
it as 1), a length of 10^12 tokens (which hung a run at 9 GB), a 10 MB CSV field (a traceback), a UTF-8
byte-order mark (refused as a column name), bytes that are not UTF-8, JSON nested 100,000 deep, YAML
whose aliases expand to billions of values, a directory, a device, a FIFO. Each is one `error:` line
naming the file and line (or the option), the value and the fix, before anything is sized by it or
sent. Healthy controls: the same doors take the ordinary values, a BOM is read past, `5` and `0.5` and
`yes` are what they say.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from rigbench.errors import UsageError
from rigbench.inputs import MAX_TOKENS, load_yaml, read_text, text_lines, whole_number
from rigbench.suites.load import read_trace
from rigbench.suites.quality import load_mmlu_pro
from rigbench.suites.quality._packs import load_pack
from rigbench.testing import Delay, EmulatorProcess, EmulatorScript
from tests.unit.cli_inproc import Result, invoke

DEAD = "http://127.0.0.1:9/v1"
TRACES = Path(__file__).parent.parent / "fixtures" / "traces"
# 10 x 10 x ... : each level of aliases multiplies the values by ten; eight levels, 10^9 values
BOMB = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join([f'*{chr(97 + i)}'] * 10)}]\n" for i in range(8))


def _refused(res: Result, *fragments: str) -> str:
    assert res.traceback is None, res.traceback
    lines = res.stderr.rstrip().splitlines()
    assert res.code == 2 and lines and lines[0].startswith("error:"), res.stderr[-1500:]
    assert all(line.startswith("  ") for line in lines[1:]), res.stderr[-1500:]
    said = " ".join(res.stderr.split())
    for f in fragments:
        assert f in said, (f, said[-1500:])
    return said


def _plan(tmp: Path, body: str) -> Path:
    p = tmp / "plan.yaml"
    p.write_text("name: p\nsanity: false\n" + body + f"rigs:\n  - {{name: a, endpoint: {{base_url: '{DEAD}'}}}}\n")
    return p


# -- strict types, at every door that builds a model -----------------------------------------------

@pytest.mark.parametrize(("body", "fragment"), [
    ("speed: {repetitions: true}\n", ":3: speed.repetitions: takes a whole number, not a boolean; got True"),
    ("speed: {repetitions: 5.0}\n", "speed.repetitions: takes a whole number written without a decimal point"),
    ("speed: {concurrency: [1, true]}\n", "speed.concurrency.1: takes a whole number, not a boolean"),
    ("suites: [load]\nload: {rate_rps: true}\n", "load.rate_rps: takes a number; got True"),
    ("suites: [load]\nload: {rate_rps: 1, requests: true}\n", "load.requests: takes a whole number, not a boolean"),
    ("retries: {statuses: [429], max_retries: true}\n", "retries.max_retries: takes a whole number, not a boolean"),
    ("deadlines: {idle_s: true}\n", "deadlines.idle_s: takes a number, not a boolean"),
    ("sanity_max_tokens: 64.0\n", "sanity_max_tokens: takes a whole number written without a decimal point"),
    ("allow_long_run: 1\n", "allow_long_run: takes true or false, not int"),
    ("suites: [load]\nload: {rate_rps: 1, input_tokens: 1000000000000}\n",
     f"must be at most {MAX_TOKENS:,} tokens (no served context is longer)"),
])
def test_a_plan_value_of_the_wrong_type_is_refused_naming_its_line(body: str, fragment: str, tmp_path: Path) -> None:
    _refused(invoke("run", str(_plan(tmp_path, body)), "--out", str(tmp_path / "o")), fragment)


def test_the_same_plan_doors_take_ordinary_values(tmp_path: Path) -> None:
    from rigbench.plan import load_plan

    loaded = load_plan(_plan(tmp_path, "speed: {repetitions: 5, concurrency: [1, 2], temperature: 0}\n"
                                       "suites: [load]\nload: {rate_rps: 2, requests: 3, slo_attainment: 0.5}\n"
                                       "allow_long_run: yes\nbandwidth_gb_s: 273\n"))
    p = loaded.plan
    assert (p.speed.repetitions, p.speed.concurrency, p.load.rate_rps, p.load.requests) == (5, [1, 2], 2.0, 3)
    assert p.allow_long_run is True and p.bandwidth_gb_s == 273.0  # an int where a float goes is that float


@pytest.mark.parametrize(("args", "fragment"), [
    (["--set", "speed.repetitions=true"], "--set speed.repetitions: takes a whole number, not a boolean; got True"),
    (["--set", "agent.tool_trials=yes"], "--set agent.tool_trials: takes a whole number, not a boolean"),
    (["--set", "load.rate_rps=true"], "--set load.rate_rps: takes a number; got True"),
    (["--rate", "1", "--input-tokens", "1000000000000"], "--input-tokens: must be at most 16,777,216 tokens"),
    (["--rate", "1", "--output-tokens", "uniform:1,1e999"], "--output-tokens: uniform: takes two finite numbers"),
    (["--rate", "1e308", "--requests", "3"], "--rate: at most 1,000,000 requests per second"),  # was a traceback
])
def test_an_option_of_the_wrong_type_or_size_is_refused_naming_the_option(args: list[str], fragment: str,
                                                                           tmp_path: Path) -> None:
    said = _refused(invoke("run", "--endpoint", DEAD, "--out", str(tmp_path / "o"), *args), fragment)
    assert "cannot reach" not in said and not (tmp_path / "o").exists()


def test_a_task_pack_and_an_emulator_script_are_strict_too(tmp_path: Path) -> None:
    pack = tmp_path / "p.yaml"
    pack.write_text("name: p\ntasks:\n  - {id: t, prompt: q, graders: [{type: max_chars, max: true}]}\n")
    with pytest.raises(UsageError, match=r"tasks\.0\.graders\.0\.max_chars\.max: takes a whole number, not a boolean"):
        load_pack(pack)
    pack.write_text("\ufeffname: p\ntasks:\n  - {id: t, prompt: q, graders: [{type: max_chars, max: 9}]}\n")
    assert load_pack(pack).tasks[0].id == "t"  # control: a BOM is read past
    script = tmp_path / "s.json"
    script.write_text('{"output_tokens": true}')
    _refused(invoke("emulate", "--port", "0", "--script", str(script)),
             "invalid emulator settings: output_tokens: takes a whole number, not a boolean; got True")


# -- trace files ------------------------------------------------------------------------------------

_MOON = '{{"timestamp": 0, "input_length": {i}, "output_length": 4}}\n'
_AZ_HEAD = "TIMESTAMP,ContextTokens,GeneratedTokens\n"


@pytest.mark.parametrize(("name", "content", "fragment"), [
    ("true.jsonl", _MOON.format(i="true"), ":1: input_length True: a token count is a whole number, not a boolean"),
    ("frac.jsonl", _MOON.format(i="20.5"), ":1: input_length 20.5: a token count is a whole number, not a fraction"),
    ("huge.jsonl", _MOON.format(i="1000000000000"),
     ":1: input_length 1000000000000: a token count must be 1..16,777,216 (no served context is longer)"),
    ("digits.jsonl", _MOON.format(i="9" * 5000), ":1: not a JSON object rigbench can read: a number of more than 4,300 digits."),
    ("deep.jsonl", '{"a": ' + "[" * 100_000 + "]" * 100_000 + "}\n",
     ":1: not a JSON object rigbench can read: values nested deeper than rigbench reads (Python's limit, "),
    ("cell.csv", _AZ_HEAD + "2023-11-16 18:15:46.4,151," + "7" * (10 << 20) + "\n",
     ":2: a line longer than 1,048,576 bytes"),
    ("field.csv", _AZ_HEAD + '2023-11-16 18:15:46.4,151,"' + "7" * (200 << 10) + '"\n',
     ":2: not a CSV line rigbench can read (field larger than field limit"),
    ("latin1.csv", (_AZ_HEAD + "2023-11-16 18:15:46.4,151,16\n").encode() + b"\xe9\n", ":3: not UTF-8 text"),
    ("inf.csv", "arrival_s,input_tokens,output_tokens\n0,10,4\ninf,10,4\n", ":3: arrival_s 'inf': arrival times must "
     "be finite"),
    ("bool_time.jsonl", '{"timestamp": true, "input_length": 10, "output_length": 4}\n', ":1: timestamp True is not a number"),
    ("cols.csv", "\x1b[2J" + "x," * 5000 + "\n1\n", ":1: no arrival-time column: the file has \\x1b[2Jx, x, x"),
])
def test_a_hostile_trace_is_one_line_naming_file_line_and_value(name: str, content: str | bytes, fragment: str,
                                                                 tmp_path: Path) -> None:
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    said = _refused(invoke("run", "--endpoint", DEAD, "--trace", str(path), "--out", str(tmp_path / "o")),
                    f"{path}{fragment}")
    assert len(said) < 600 and "cannot reach" not in said  # refused before attaching, in a line a person reads


@pytest.mark.parametrize("what", ["directory", "device", "fifo", "missing"])
def test_a_trace_path_that_is_no_file_is_refused_without_reading_it(what: str, tmp_path: Path) -> None:
    path = {"directory": tmp_path, "device": Path("/dev/zero"), "missing": tmp_path / "none.csv",
            "fifo": tmp_path / "fifo"}[what]
    if what == "fifo":
        os.mkfifo(path)  # opening it to read would wait for a writer forever
    kind = {"directory": "that is a directory", "device": "that is a device", "fifo": "that is a FIFO",
            "missing": "cannot read it"}[what]
    _refused(invoke("run", "--endpoint", DEAD, "--trace", str(path), "--out", str(tmp_path / "o")),
             f"--trace {path}: {kind}")


def test_a_bom_is_read_past_and_a_limit_reads_no_further(tmp_path: Path) -> None:
    azure = (TRACES / "azure_sample.csv").read_text()
    bom = tmp_path / "bom.csv"
    bom.write_text("\ufeff" + azure)
    assert read_trace(bom) == read_trace(TRACES / "azure_sample.csv")  # the same requests, not a column error
    cut = tmp_path / "cut.csv"
    cut.write_text(azure + "garbage,\x00,not a line\n")  # a broken line past the first 5 requests...
    assert len(read_trace(cut, limit=5)[1]) == 5  # ...is never read when 5 are asked for
    with pytest.raises(UsageError, match=r"cut\.csv:22: TIMESTAMP 'garbage' is not a date-time"):
        read_trace(cut)


def test_a_trace_line_over_the_served_context_is_refused_before_anything_is_sent(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_text('{"timestamp": 0, "input_length": 100, "output_length": 4}\n'
                     '{"timestamp": 5, "input_length": 40000, "output_length": 4}\n')
    # a server that says what it serves (as vLLM: /version, max_model_len 32768 on /v1/models)
    script = EmulatorScript(version="0.11.0", ttft=Delay(mean_ms=2), itl=Delay(mean_ms=1), persona="healthy")
    with EmulatorProcess(script) as emu:
        res = invoke("run", "--endpoint", emu.url, "--trace", str(trace), "--out", str(tmp_path / "o"))
        sent = emu.fetch_truth()
    _refused(res, f"{trace}:2: 40000 input + 4 output tokens do not fit the 32768 tokens the server serves")
    assert sent == []  # not even the known-answer gate's questions
    trace.write_text('{"timestamp": 0, "input_length": 100, "output_length": 4}\n')  # control: one that fits
    with EmulatorProcess(script) as emu:
        res = invoke("run", "--endpoint", emu.url, "--trace", str(trace), "--allow-untrusted", "--out",
                     str(tmp_path / "o2"))
        sent = emu.fetch_truth()
    assert res.code == 0 and len(sent) > 1, res.stderr[-1500:]  # the gate's questions, then the trace's request


def test_prompts_that_would_not_fit_in_memory_are_refused_before_they_are_built(tmp_path: Path,
                                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    import rigbench.suites._memory as memory

    class _Scarce:
        total = 8 << 30
        available = 600 << 20  # 600 MiB free: 64 prompts of 1M tokens (about 1 GiB) do not fit in half of it

    monkeypatch.setattr(memory.psutil, "virtual_memory", lambda: _Scarce())
    with EmulatorProcess(EmulatorScript(ttft=Delay(mean_ms=2), itl=Delay(mean_ms=1))) as emu:
        res = invoke("run", "--endpoint", emu.url, "--no-sanity", "--allow-untrusted", "--rate", "5", "--requests",
                     "64", "--input-tokens", "1000000", "--out", str(tmp_path / "o"))
        sent = emu.fetch_truth()
    _refused(res, "load r0: its 64 prompts hold 64,000,000 input tokens, about 1.0 GiB once built",
             "more than half of the 0.6 GiB of memory available now")
    assert sent == []
    with EmulatorProcess(EmulatorScript(ttft=Delay(mean_ms=2), itl=Delay(mean_ms=1))) as emu:  # control: small ones
        res = invoke("run", "--endpoint", emu.url, "--no-sanity", "--allow-untrusted", "--rate", "50", "--requests",
                     "4", "--input-tokens", "1000", "--out", str(tmp_path / "o2"))
    assert res.code == 0, res.stderr[-1500:]


# -- the shared readers -----------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "fragment"), [
    (BOMB, "its aliases (*name) expand to more than 1,000,000 values"),
    ("a: &a [1, *a]\n", "an alias (*name) refers to the value that holds it"),
    ("a: " + "[" * 5000 + "]" * 5000 + "\n", "values nested deeper than rigbench reads"),
    ("a: " + "9" * 5000 + "\n", "YAML rigbench cannot read: a number of more than 4,300 digits; is it the right file?"),
    ("a: \x07\n", "is not valid YAML: unacceptable character #x0007"),
])
def test_hostile_yaml_is_one_line_in_a_plan_and_a_pack(text: str, fragment: str, tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=None) as e:
        load_yaml(text, "x.yaml")
    assert fragment in str(e.value) and "\n" not in str(e.value)
    plan = tmp_path / "plan.yaml"
    plan.write_text(text)
    _refused(invoke("run", str(plan)), f"plan {plan}", fragment)
    pack = tmp_path / "pack.yaml"
    pack.write_text(text)
    with pytest.raises(UsageError, match="task pack"):
        load_pack(pack)


def test_the_readers_are_bounded_whatever_the_file_says(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="that is a device"):
        read_text(Path("/dev/zero"), "x", max_bytes=10)  # never read: it has no end
    big = tmp_path / "big"
    big.write_bytes(b"x" * 11)
    with pytest.raises(UsageError, match="11 bytes, more than the 10"):
        read_text(big, "x", max_bytes=10)
    proc = Path("/proc/self/status")  # says it is empty (st_size 0); the read itself is bounded
    with pytest.raises(UsageError, match="more than the 16 bytes"):
        read_text(proc, "x", max_bytes=16)
    lines = tmp_path / "l"
    lines.write_bytes(b"\xef\xbb\xbfa\r\nbb\n" + b"c" * 50)
    assert list(text_lines(lines, "x", max_line_bytes=64)) == [(1, "a"), (2, "bb"), (3, "c" * 50)]
    with pytest.raises(UsageError, match=r":3: a line longer than 20 bytes"):
        list(text_lines(lines, "x", max_line_bytes=20))


@pytest.mark.parametrize(("value", "fragment"), [
    (True, "is a whole number, not a boolean"), (2.5, "not a fraction"), (3.0, "without a decimal point"),
    ("12.5", "written in digits"), ("1e3", "written in digits"), (None, "not null"), ([1], "not list"),
    (0, "must be 1..16,777,216"), (MAX_TOKENS + 1, "must be 1..16,777,216"), ("9" * 41, "written in digits"),
])
def test_a_whole_number_is_a_whole_number(value: Any, fragment: str) -> None:
    with pytest.raises(UsageError, match=None) as e:
        whole_number(value, "f:1: n")
    assert fragment in str(e.value)
    assert whole_number(7, "x") == 7 and whole_number(" 12 ", "x") == 12 and whole_number(MAX_TOKENS, "x") == MAX_TOKENS


# -- data directories -------------------------------------------------------------------------------

_ROW = {"question_id": 1, "question": "q", "options": ["a", "b"], "answer": "A", "answer_index": 0,
        "category": "math"}


@pytest.mark.parametrize(("rows", "fragment"), [
    (["[1, 2]"], "test.jsonl:1: a row is a JSON object"),
    ([json.dumps({**_ROW, "answer_index": True})], "test.jsonl:1: a row does not match the MMLU-Pro schema "
     "(question_id, question, options, answer, answer_index, category): answer_index: takes a whole number, not a"),
    ([json.dumps({**_ROW, "answer_index": 7})], "test.jsonl:1: answer_index 7 names none of the 2 options"),
    (["{not json"], "test.jsonl:1: not valid JSON"),
    ([json.dumps(_ROW), "[" * 100_000], "test.jsonl:2: JSON rigbench cannot read: values nested deeper than rigbench reads"),
])
def test_a_hostile_mmlu_pro_directory_is_one_line(rows: list[str], fragment: str, tmp_path: Path) -> None:
    (tmp_path / "test.jsonl").write_text("\n".join(rows) + "\n")
    (tmp_path / "validation.jsonl").write_text(json.dumps(_ROW) + "\n")
    with pytest.raises(UsageError) as e:
        load_mmlu_pro(tmp_path)
    assert fragment in str(e.value) and "\n" not in str(e.value), str(e.value)


def test_an_mmlu_pro_directory_is_searched_two_levels_down_not_walked(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    for split in ("test", "validation"):
        (tmp_path / "data" / f"{split}.jsonl").write_text("\ufeff" + json.dumps(_ROW) + "\n")  # BOM: read past
    assert len(load_mmlu_pro(tmp_path).test) == 1  # the hub's layout (data/test-*.parquet) is found
    deep = tmp_path / "deep"
    (deep / "a" / "b").mkdir(parents=True)
    (tmp_path / "data").rename(deep / "a" / "b" / "data")
    with pytest.raises(UsageError, match="no test split under"):
        load_mmlu_pro(deep)  # a whole tree is never walked (`--mmlu-data /` must not read the disk)
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "test.parquet").write_bytes(b"PAR1 not really")
    (tmp_path / "bad" / "validation.parquet").write_bytes(b"PAR1 not really")
    with pytest.raises(UsageError, match="not a parquet file pyarrow can read"):
        load_mmlu_pro(tmp_path / "bad")


def test_a_schedule_is_never_sized_past_its_bound_by_a_duration_times_a_rate() -> None:
    from rigbench.suites.load import arrival_offsets_s

    # a sweep's rates are found at run time: nothing checked this product before the schedule was made
    for arrival in ("constant", "poisson"):
        offsets = arrival_offsets_s(1e6, arrival, 1.0, seed=1, duration_s=1e300)
        assert len(offsets) == 2_000_000  # MAX_SCHEDULED, not an OverflowError or a list of 10^306


# -- run directories (someone else's run, given to `rigbench report`) -------------------------------

GOLDEN = Path(__file__).parent.parent / "golden" / "run_v1"


@pytest.mark.parametrize("damage", ["fifo_records", "device_header", "deep_line", "long_line"])
def test_a_hostile_run_directory_is_read_within_bounds(damage: str, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    import rigbench.store._run as store

    run = tmp_path / "run"
    shutil.copytree(GOLDEN, run)
    rec = run / "records.jsonl"
    lines = rec.read_text().splitlines(keepends=True)
    if damage == "fifo_records":  # opening it would wait for a writer forever
        rec.unlink()
        os.mkfifo(rec)
    elif damage == "device_header":  # reading it would never end
        (run / "run.json").unlink()
        (run / "run.json").symlink_to("/dev/zero")
    elif damage == "deep_line":  # json.loads raises RecursionError, not ValueError
        rec.write_text("".join(lines) + '{"kind": ' + "[" * 100_000 + "\n")
    elif damage == "long_line":  # a line past the bound is counted damaged, never held whole
        monkeypatch.setattr(store, "_LINE_MAX_BYTES", 4096)
        rec.write_text("".join(lines[:3]) + '{"kind": "x", "pad": "' + "y" * 100_000 + '"}\n' + "".join(lines[3:]))
    res = invoke("report", str(run))
    assert res.traceback is None, res.traceback
    said = " ".join((res.stdout + res.stderr).split())
    if damage == "device_header":
        assert res.code == 2 and "run.json is not a run header (not a file" in said, said[-800:]
    elif damage == "fifo_records":
        assert res.code == 0 and "records.jsonl cannot be read (not a regular file)" in said, said[-800:]
    else:
        assert res.code == 0 and "1 damaged records skipped" in said, said[-800:]
    if damage == "long_line":
        assert len(store.RunReader(run).records("speed_request", store.RECORD_TYPES["speed_request"])) > 0


def test_dropping_a_torn_tail_never_reads_the_records_whole(tmp_path: Path) -> None:
    from rigbench.store._run import _drop_torn_tail, _whole_lines

    rec = tmp_path / "records.jsonl"
    rec.write_bytes(b'{"a": 1}\n' * 50_000 + b'{"torn": ')
    assert _whole_lines(rec) == 9 * 50_000
    _drop_torn_tail(rec)
    assert rec.read_bytes().endswith(b'{"a": 1}\n') and rec.stat().st_size == 9 * 50_000
    rec.write_bytes(b"no newline at all")
    _drop_torn_tail(rec)
    assert rec.read_bytes() == b""
