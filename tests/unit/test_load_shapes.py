"""Request shapes of the load suite: length distributions and trace replay (issue 20, part 3)."""

from __future__ import annotations

import asyncio
import itertools
from pathlib import Path
from typing import cast

import numpy as np
import pytest

from rigbench.client import Accumulator, ChatClient, StreamRequest, StreamTransport
from rigbench.errors import UsageError
from rigbench.records import LoadRequest, LoadWindow
from rigbench.rig import RigInfo
from rigbench.store import RunReader, RunWriter
from rigbench.suites import SuiteContext
from rigbench.suites.load import LengthDist, LoadSettings, LoadSuite, read_trace
from rigbench.testing import Delay, EmulatorProcess, EmulatorScript
from tests.unit.cli_inproc import Result, invoke

TRACES = Path(__file__).parent.parent / "fixtures" / "traces"
AZURE, MOONCAKE = TRACES / "azure_sample.csv", TRACES / "mooncake_sample.jsonl"
ARGS = ["--no-sanity", "--allow-untrusted"]
FAST = EmulatorScript(ttft=Delay(mean_ms=5), itl=Delay(mean_ms=1), output_tokens=64)


def rigbench(*args: str) -> Result:
    res = invoke(*args)
    assert res.traceback is None, res.traceback
    return res


def _only_run(out: Path) -> Path:
    (d,) = [p for p in out.iterdir() if p.is_dir()]
    return d


def test_length_distributions_read_from_text_and_draw_what_they_say() -> None:
    assert LengthDist.model_validate("128").draw(3, 0) == [128, 128, 128]
    uni = LengthDist.model_validate("uniform:64,256").draw(5000, 1)
    assert min(uni) >= 64 and max(uni) <= 256 and abs(np.mean(uni) - 160) < 4
    logn = np.array(LengthDist.model_validate("lognormal:128,32").draw(20000, 2))
    assert abs(logn.mean() - 128) < 2 and abs(logn.std() - 32) < 2
    norm = LengthDist.model_validate("normal:10,20").draw(1000, 3)
    assert min(norm) == 1  # a negative draw is kept at one token
    for text, message in (("zipf:1,2", "unknown length distribution 'zipf'"), ("uniform:300,10", "1 <= low <= high"),
                          ("lognormal:128", "takes two numbers"), ("lots", "takes a token count")):
        with pytest.raises(ValueError, match=message):
            LengthDist.model_validate(text)


def test_the_azure_and_mooncake_layouts_read_to_the_same_requests() -> None:
    layout_a, azure = read_trace(AZURE)
    layout_m, moon = read_trace(MOONCAKE)
    assert (layout_a, layout_m) == ("azure", "mooncake") and len(azure) == len(moon) == 20
    assert azure[0].offset_s == 0.0 and moon[0].offset_s == 0.0
    for a, m in zip(azure, moon, strict=True):
        assert abs(a.offset_s - m.offset_s) < 1e-3  # the Mooncake layout keeps whole milliseconds
        assert (a.input_tokens, a.output_tokens) == (m.input_tokens, m.output_tokens)
    assert [r.line for r in azure[:2]] == [2, 3] and [r.line for r in moon[:2]] == [1, 2]
    assert len(read_trace(MOONCAKE, limit=5)[1]) == 5


@pytest.mark.parametrize(("text", "suffix", "message"), [
    ("TIMESTAMP,ContextTokens\n2023-11-16 18:15:46.0,10\n", ".csv",
     ":1: the azure layout needs the column(s) GeneratedTokens; the file has TIMESTAMP, ContextTokens"),
    ('{"timestamp": 5, "input_length": 10, "output_length": 4}\n{"timestamp": 3, "input_length": 10, '
     '"output_length": 4}\n', ".jsonl", ":2: timestamp 3 is earlier than the line before"),
    ("arrival_s,input_tokens,output_tokens\n0,10,4\n-1,10,4\n", ".csv",
     ":3: arrival_s '-1': arrival times must be finite, zero or positive"),
    ("arrival_s,input_tokens,output_tokens\n0,10,4\n1,12.5,4\n", ".csv",
     ":3: input_tokens '12.5': a token count is a whole number written in digits"),
    ("when,prompt,answer\n0,10,4\n", ".csv", ":1: no arrival-time column: the file has when, prompt, answer"),
])
def test_a_bad_trace_is_one_clear_line_naming_file_line_and_value_and_exit_2(text: str, suffix: str, message: str,
                                                                             tmp_path: Path) -> None:
    bad = tmp_path / f"bad{suffix}"
    bad.write_text(text)
    res = rigbench("run", "--endpoint", "http://127.0.0.1:9/v1", *ARGS, "--trace", str(bad), "--out",
                   str(tmp_path / "runs"))
    assert res.code == 2, res.stderr
    assert f"{bad}{message}" in res.stderr.replace("\n", ""), res.stderr
    assert "cannot reach" not in res.stderr and not (tmp_path / "runs").exists()


class _NoSend(StreamTransport):
    """A stand-in server that fails the test if a request reaches it."""

    async def handle_stream(self, request: StreamRequest) -> Accumulator:
        raise AssertionError("a request was sent")


def test_trace_lines_and_drawn_lengths_over_the_served_context_are_refused_before_any_send(tmp_path: Path) -> None:
    ctx = SuiteContext(client=ChatClient("http://x/v1", transport=_NoSend()), writer=cast(RunWriter, None),
                       rig=RigInfo(engine="unknown", model="m", base_url="http://x/v1", server_root="http://x",
                                   context_length=60))
    over = next(r for r in read_trace(MOONCAKE)[1] if r.input_tokens + r.output_tokens > 60)
    with pytest.raises(UsageError, match=rf"{MOONCAKE}:{over.line}: {over.input_tokens} input \+ {over.output_tokens} "
                                         r"output tokens do not fit the 60 tokens"):
        asyncio.run(LoadSuite(LoadSettings(trace=str(MOONCAKE))).run(ctx))
    drawn = LoadSettings.model_validate({"rate_rps": 5, "input_tokens": "uniform:10,100", "output_tokens": 8})
    with pytest.raises(UsageError, match=r"load r0: request \d+ drew \d+ input \+ 8 output tokens .* do not fit the 60"):
        asyncio.run(LoadSuite(drawn).run(ctx))


def test_a_trace_replays_its_arrival_times_and_lengths(tmp_path: Path) -> None:
    with EmulatorProcess(FAST) as emu:
        res = rigbench("run", "--endpoint", emu.url, *ARGS, "--trace", str(AZURE), "--out", str(tmp_path))
    assert res.code == 0, res.stderr
    reader = RunReader(_only_run(tmp_path))
    (window,) = reader.records("load_window", LoadWindow)
    reqs = sorted(reader.records("load_request", LoadRequest), key=lambda q: q.index)
    _, trace = read_trace(AZURE)
    assert window.mode == "trace" and len(reqs) == 20
    for q, t in zip(reqs, trace, strict=True):
        assert (q.input_tokens_target, q.output_tokens_target) == (t.input_tokens, t.output_tokens)
        assert q.result.completion_tokens == t.output_tokens  # the trace's output length, forced
        assert q.result.scheduled_ns is not None
        assert abs((q.result.scheduled_ns - window.started_ns) / 1e9 - t.offset_s) < 1e-6
    assert "trace (mean" in res.stdout


def test_drawn_lengths_go_out_per_request(tmp_path: Path) -> None:
    with EmulatorProcess(FAST) as emu:
        res = rigbench("run", "--endpoint", emu.url, *ARGS, "--rate", "40", "--requests", "16", "--output-tokens",
                       "uniform:2,40", "--out", str(tmp_path))
    assert res.code == 0, res.stderr
    reqs = RunReader(_only_run(tmp_path)).records("load_request", LoadRequest)
    targets = [q.output_tokens_target for q in reqs]
    assert len(set(targets)) > 4 and all(2 <= t <= 40 for t in targets)
    assert all(q.result.completion_tokens == q.output_tokens_target for q in reqs)


# -- multi-turn sessions --------------------------------------------------------------------------


def test_sessions_send_their_history_each_turn_and_the_prefix_cache_check_counts_it_as_shared(tmp_path: Path) -> None:
    from rigbench.honesty import judge_prefix_cache, load_prefix_cache_use

    caching = FAST.model_copy(update={"prefix_cache": True, "output_tokens": 16})
    with EmulatorProcess(caching) as emu:
        res = rigbench("run", "--endpoint", emu.url, *ARGS, "--rate", "20", "--sessions", "2", "--turns", "3",
                       "--output-tokens", "16", "--out", str(tmp_path))
    assert res.code == 0, res.stderr
    reader = RunReader(_only_run(tmp_path))
    reqs = sorted(reader.records("load_request", LoadRequest), key=lambda q: q.index)
    assert [(q.session, q.turn) for q in reqs] == [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2)]
    for s in (0, 1):
        turns = [q for q in reqs if q.session == s]
        prompts = [q.result.prompt_tokens or 0 for q in turns]
        assert prompts[0] < prompts[1] < prompts[2]  # the history grows
        for before, after in itertools.pairwise(turns):
            # the next turn is due when the previous reply ended, and counts that history as shared by design
            assert after.result.scheduled_ns == before.result.done_ns
            assert after.input_tokens_shared_max == (before.result.prompt_tokens or 0) + 16
            cached = (after.result.usage or {})["prompt_tokens_details"]["cached_tokens"]
            assert cached >= (before.result.prompt_tokens or 0) - 1  # the server did reuse the history
    (check,) = reader.raw_records("traffic_check")
    assert not [r for r in check["reasons"] if "prefix cache" in r], check["reasons"]
    # without the history bound the same cache hits would untrust the run: the check is live, not blind
    unbounded = [q.model_copy(update={"input_tokens_shared_max": None}) for q in reqs]
    assert judge_prefix_cache(load_prefix_cache_use(unbounded)).reasons
    assert not judge_prefix_cache(load_prefix_cache_use(reqs)).reasons


def test_a_canned_server_is_caught_across_sessions_though_each_turn_may_repeat_its_own_history(tmp_path: Path) -> None:
    canned = FAST.model_copy(update={"persona": "canned", "output_tokens": 16})
    with EmulatorProcess(canned) as emu:
        res = rigbench("run", "--endpoint", emu.url, "--no-sanity", "--rate", "20", "--sessions", "4", "--turns", "2",
                       "--output-tokens", "16", "--out", str(tmp_path))
    assert res.code == 1, res.stdout + res.stderr  # untrusted, and no --allow-untrusted
    (check,) = RunReader(_only_run(tmp_path)).raw_records("traffic_check")
    # the later turns repeat their own history (not counted); the first turns of four sessions repeat each other
    assert any("3 of 4 measured outputs are identical" in r for r in check["reasons"]), check["reasons"]


def test_sessions_whose_history_outgrows_the_served_context_are_refused_before_any_send() -> None:
    """Each turn's drawn lengths fit alone, but turn t resends the t turns before it: a server refuses the
    later turns (vLLM: HTTP 400 past --max-model-len) minutes into the run unless rigbench refuses first."""
    ctx = SuiteContext(client=ChatClient("http://x/v1", transport=_NoSend()), writer=cast(RunWriter, None),
                       rig=RigInfo(engine="unknown", model="m", base_url="http://x/v1", server_root="http://x",
                                   context_length=600))

    def sessions(turns: int) -> LoadSuite:
        return LoadSuite(LoadSettings.model_validate({"rate_rps": 1, "sessions": 2, "turns": turns,
                                                      "input_tokens": 100, "output_tokens": 40}))

    # turn 4 carries 4 x (100 + 40) of history: 560 + 140 = 700 > 600
    with pytest.raises(UsageError, match=r"load r0: session 0 turn 4 would resend about 560 tokens of history .* "
                                         r"about 700, over the 600 tokens the server serves per request"):
        asyncio.run(sessions(5).run(ctx))
    # control: four turns (at most 420 + 140 = 560) pass the check and go on to send
    with pytest.raises(AssertionError, match="a request was sent"):
        asyncio.run(sessions(4).run(ctx))


def test_sessions_refuse_the_bounds_they_replace(tmp_path: Path) -> None:
    res = rigbench("run", "--endpoint", "http://127.0.0.1:9/v1", *ARGS, "--rate", "2", "--sessions", "2",
                   "--requests", "5", "--out", str(tmp_path))
    assert res.code == 2 and "--sessions N starts N sessions at --rate R" in res.stderr, res.stderr
