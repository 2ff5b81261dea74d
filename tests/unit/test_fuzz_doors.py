"""Door fuzz: every way outside input comes in, driven with generated hostile values (issue 34 item 5,
issue 33 item 7). At least 500 cases per door, 0 tracebacks, 0 hangs past `CASE_BOUND_S`.

Doors and what each case may end in:
- the CLI through answering servers: `rigbench run` against emulators that answer (healthy, faulty:
  HTTP 500/429, disconnects, malformed events, stalls, formula-and-escape error messages and finish
  reasons; rogue: canned, hostile text, inflated usage, lying timings, subword soup), with fuzzed options,
  traces, packs, MMLU-Pro directories, `--set` values and export paths, so the values reach the suites,
  the exports and the reports; a case is judged as `fuzz_support.judge` says (exit 0/1/2, one `error:`
  line, no live control character) and every export it wrote must be safe to open;
- trace files, plan files (and `--set`), data directories (MMLU-Pro, task packs, BFCL, agent tasks) and
  exports, each called at its reader or writer in this process: a result that keeps the door's promises
  (a trace's arrivals sorted and its lengths in 1..MAX_TOKENS) or one RigbenchError naming the file, never
  any other exception.

The closed-port CLI fuzz (tests/unit/test_cli_fuzz.py) keeps every option's out-of-range values; here
options that size work take bounded values, so each case that runs finishes in seconds.
"""

from __future__ import annotations

import json
import math
import shutil
import socket
import time
from collections.abc import Callable
from pathlib import Path
from random import Random
from typing import Any

import pytest
import yaml

from rigbench.errors import RigbenchError
from rigbench.inputs import MAX_TOKENS
from rigbench.testing import Delay, EmulatorProcess, EmulatorScript, Fault
from tests.unit.fuzz_support import (
    CASES,
    NUMBERS,
    SEED,
    TEXTS,
    export_faults,
    fast_commands,
    judge,
    rng,
    timed,
)

DEAD = "http://127.0.0.1:9/v1"
FORMULA = '=HYPERLINK("http://x","y")\x1b[2J'
FAST = dict(ttft=Delay(mean_ms=1), itl=Delay(mean_ms=0.2), output_tokens=6)
SERVERS = {
    "healthy": EmulatorScript(**FAST, persona="healthy"),  # type: ignore[arg-type]
    "faulty": EmulatorScript(**FAST, persona="healthy", finish_reason=FORMULA, faults=[  # type: ignore[arg-type]
        Fault(kind="http_status", status=500, message=FORMULA, every=5, offset=1),
        Fault(kind="http_status", status=429, every=7, offset=2, headers={"Retry-After": "0"}),
        Fault(kind="disconnect", every=6, offset=3, at_token=2),
        Fault(kind="malformed", every=8, offset=4, at_token=1),
        Fault(kind="error_event", message="@SUM(1)\x1b]0;x\x07", every=9, offset=5, at_token=1),
        Fault(kind="stall", stall_ms=30, every=11, offset=6, at_token=1)]),
    "hostile_text": EmulatorScript(**FAST, persona="hostile_text", model="m\x1b[2J=1+1"),  # type: ignore[arg-type]
    "canned": EmulatorScript(**FAST, persona="canned"),  # type: ignore[arg-type]
    "inflated_usage": EmulatorScript(**FAST, persona="inflated_usage"),  # type: ignore[arg-type]
    "lying_timings": EmulatorScript(**FAST, persona="lying_timings"),  # type: ignore[arg-type]
    "random_tokens": EmulatorScript(**FAST, persona="random_tokens", tokens_per_chunk=3),  # type: ignore[arg-type]
}


def _failed(door: str, faults: list[str], n: int) -> None:
    if faults:
        pytest.fail(f"door {door}: {len(faults)} fault(s) in {n} cases (seed {SEED}):\n" + "\n\n".join(faults[:12]))


# -- generated files --------------------------------------------------------------------------------

def _hostile_scalar(r: Random) -> Any:
    return r.choice([True, False, None, 0, -1, 1, 20.5, 20.0, 1e12, 10**30, math.inf, math.nan, "", "x", "12",
                     "1e3", "9" * 50, [1], {"a": 1}, "x" * r.choice([10, 300, 200_000]), "\x1b[2J", "=1+1", "☃"])


def _trace_text(r: Random) -> str | bytes:
    layout = r.choice(["azure", "mooncake", "rigbench_csv", "rigbench_jsonl"])
    n = r.randint(0, 25)
    t, rows = 0.0, []
    for _ in range(n):
        t += r.expovariate(5)
        inp, out = r.randint(1, 200), r.randint(1, 20)
        vals: list[Any] = [t, inp, out]
        if r.random() < 0.3:
            vals[r.randrange(3)] = _hostile_scalar(r)
        rows.append(vals)
    if r.random() < 0.2 and len(rows) > 2:
        r.shuffle(rows)  # unsorted arrivals
    if layout == "azure":
        lines = ["TIMESTAMP,ContextTokens,GeneratedTokens"] + [
            f"{_azure_time(v[0])},{_cell(v[1])},{_cell(v[2])}" for v in rows]
    elif layout == "rigbench_csv":
        lines = ["arrival_s,input_tokens,output_tokens"] + [",".join(_cell(x) for x in v) for v in rows]
    else:
        cols = ("timestamp", "input_length", "output_length") if layout == "mooncake" else \
            ("arrival_s", "input_tokens", "output_tokens")
        scale = 1000 if layout == "mooncake" else 1
        lines = [_json_line(dict(zip(cols, [v[0] * scale if type(v[0]) in (int, float) else v[0], *v[1:]],
                                     strict=True)), r) for v in rows]
    if lines and r.random() < 0.3:  # a column renamed, dropped or added
        i = r.randrange(len(lines))
        lines[i] = r.choice([lines[i].replace("input", "inp"), lines[i] + "," + r.choice(TEXTS), lines[i][:-3],
                             r.choice(TEXTS)])
    text = r.choice(["\n", "\r\n"]).join(lines) + r.choice(["\n", "", "\n\n\n"])
    roll = r.random()
    if roll < 0.08:
        return ("\ufeff" + text).encode()
    if roll < 0.12:
        return text.encode("utf-16")
    if roll < 0.16:
        raw = bytearray(text.encode())
        for _ in range(r.randint(1, 5)):
            if raw:
                raw[r.randrange(len(raw))] = r.randrange(256)
        return bytes(raw)
    if roll < 0.18:
        return text + "x" * (1 << 20) + "\n"  # a line past the bound
    if roll < 0.2:
        return '{"timestamp": ' + "[" * 50_000 + "\n"
    return text


def _azure_time(t: Any) -> str:
    if isinstance(t, float) and math.isfinite(t) and 0 <= t < 1e6:
        return f"2023-11-16 18:{15 + int(t) // 60 % 40:02d}:{int(t) % 60:02d}.{int(t * 1e7) % 10**7:07d}"
    return _cell(t)


def _cell(v: Any) -> str:
    text = json.dumps(v) if isinstance(v, list | dict) else str(v)
    return '"' + text.replace('"', '""') + '"' if any(c in text for c in ',"\n\r') else text


def _json_line(obj: dict[str, Any], r: Random) -> str:
    try:
        line = json.dumps(obj)
    except ValueError:
        line = str(obj)
    return line if r.random() > 0.05 else line[: r.randrange(max(1, len(line)))]


_PLAN_BASE: dict[str, Any] = {
    "name": "p", "sanity": False, "suites": ["speed"],
    "speed": {"scenarios": ["chat_short"], "repetitions": 2, "warmup": 0, "concurrency": [1, 2]},
    "load": {"rate_rps": 5, "requests": 3}, "deadlines": {"idle_s": 30}, "retries": {"statuses": [429]},
    "rigs": [{"name": "a", "endpoint": {"base_url": DEAD}},
             {"name": "b", "endpoint": {"base_url": DEAD, "model": "m"}, "sweep": {"model": ["x", "y"]}}],
}


def _mutate(r: Random, node: Any, depth: int = 0) -> Any:
    """`node` with a few values swapped for hostile ones, keys added or dropped, at any depth."""
    if isinstance(node, dict):
        out = {}
        for k, v in node.items():
            roll = r.random()
            if roll < 0.08:
                continue  # a key dropped
            out[k] = _hostile_scalar(r) if roll < 0.2 else _mutate(r, v, depth + 1)
        if r.random() < 0.1:
            out[r.choice([*TEXTS[:8], "bogus", "rigs", "seed"])] = _hostile_scalar(r)
        return out
    if isinstance(node, list):
        items = [_mutate(r, v, depth + 1) for v in node]
        if r.random() < 0.15:
            items.append(_hostile_scalar(r))
        return items
    return _hostile_scalar(r) if r.random() < 0.1 else node


def _yaml_text(r: Random, data: Any) -> str | bytes:
    try:
        text = yaml.safe_dump(data, allow_unicode=r.random() < 0.5)
    except yaml.YAMLError:
        text = str(data)
    roll = r.random()
    if roll < 0.05:
        return "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
            f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join([f'*{chr(97 + i)}'] * 10)}]\n" for i in range(7)) + text
    if roll < 0.08:
        return "x: &x [*x]\n" + text
    if roll < 0.11:
        return "name: !!python/object/apply:os.system ['true']\n" + text
    if roll < 0.14:
        return "\ufeff" + text
    if roll < 0.17:
        return text.replace("  ", "\t", 1)
    if roll < 0.2:
        return bytes(r.randrange(256) for _ in range(r.randint(1, 400)))
    if roll < 0.22:
        return "a: " + "[" * 3000 + "\n"
    return text


# -- door 1: the CLI through answering servers ------------------------------------------------------

def _cli_cases(r: Random, urls: dict[str, str], tmp: Path, n: int) -> list[list[str]]:
    files = tmp / "files"
    files.mkdir()
    traces, packs, mmlu = [], [], []
    for i in range(12):
        t = files / f"trace{i}.{r.choice(['csv', 'jsonl'])}"
        content = _trace_text(r)
        (t.write_bytes if isinstance(content, bytes) else t.write_text)(content)  # type: ignore[operator]
        traces.append(str(t))
        p = files / f"pack{i}.yaml"
        pack = {"name": "fz", "defaults": {"max_tokens": 16}, "tasks": [
            {"id": f"t{k}", "prompt": r.choice(TEXTS) or "q", "graders": [r.choice([
                {"type": "exact", "expected": "Paris"}, {"type": "numeric", "expected": 5},
                {"type": "regex", "pattern": r.choice(["a+", "(", "x" * 50])}, {"type": "max_chars", "max": 40}])]}
            for k in range(r.randint(1, 3))]}
        content = _yaml_text(r, _mutate(r, pack) if r.random() < 0.5 else pack)
        (p.write_bytes if isinstance(content, bytes) else p.write_text)(content)  # type: ignore[operator]
        packs.append(str(p))
        d = files / f"mmlu{i}"
        d.mkdir()
        for split in ("test", "validation"):
            rows = [_mutate(r, {"question_id": k, "question": "2 + 3?", "options": ["4", "5", "6"], "answer": "B",
                                "answer_index": 1, "category": r.choice(["math", "law"])}) if r.random() < 0.3 else
                    {"question_id": k, "question": "2 + 3?", "options": ["4", "5", "6"], "answer": "B",
                     "answer_index": 1, "category": "math"} for k in range(3)]
            (d / f"{split}.jsonl").write_text("\n".join(json.dumps(x, default=str) for x in rows) + "\n")
        mmlu.append(str(d))
    bad_paths = ["/dev/full", str(tmp), "/proc/self/status", str(tmp / "no" / "x"), "/dev/null"]

    def out_path(ext: str) -> str:
        return r.choice([str(files / f"x{r.randrange(10**6)}.{ext}")] * 8 + ["/dev/null"] + bad_paths)

    def pick(valid: list[str], invalid: list[str]) -> str:
        """Mostly a value the door takes (hostile text, edge numbers), so the case reaches the suites, the
        exports and the reports; sometimes one it must refuse."""
        return r.choice(valid if r.random() < 0.85 or not invalid else invalid)

    texts = [t for t in TEXTS if "\x00" not in t]  # argv cannot carry NUL
    opts: list[Callable[[], list[str]]] = [
        lambda: ["--no-sanity"], lambda: ["--allow-untrusted"],
        lambda: ["--suite", pick(["speed", "load", "speed,load", "speed,speed", "agent_probes"], ["bogus", "", ","])],
        lambda: ["--scenarios", pick(["chat_short", "chat_short,code_generation", "code_generation"], texts[:10])],
        lambda: ["--repetitions", pick(["1", "2", "3"], ["0", "-1", "abc", "", "1.5", "99999999999999999999"])],
        lambda: ["--warmup", pick(["0", "1"], ["-1", "x"])],
        lambda: ["--concurrency", pick(["1", "2", "1,2", "3"], ["0", "-1", "1,,2", "a", "99999999"])],
        lambda: ["--rate", pick(["50", "200", "1e308", "0.5"], ["1e-300", "0", "-5", "nan", "abc"]), "--requests",
                 pick(["1", "3"], ["0", "x"])],
        lambda: ["--rate", pick(["100", "1e308"], ["inf"]), "--duration", pick(["0.05", "1e-300", "0.2"],
                                                                             ["0", "nan", "-1"])],
        lambda: ["--sweep", "--requests", r.choice(["2", "3"]), "--sweep-points", pick(["1", "2"], ["0", "51"])],
        lambda: ["--rate", "50", "--sessions", pick(["1", "2"], ["0"]), "--turns", pick(["1", "2"], ["65", "0"])],
        lambda: ["--rate", "100", "--requests", "3", "--max-concurrency", pick(["1", "2"], ["0", "-1", "x"])],
        lambda: ["--rate", "100", "--requests", "3", "--arrival", pick(["constant", "gamma", "poisson"], ["x", ""]),
                 "--burstiness", pick(["0.5", "1", "1e-300"], ["0", "-1", "nan"])],
        lambda: ["--rate", "100", "--requests", "3", "--input-tokens", pick(
            ["16", "uniform:8,64", "normal:32,8", "lognormal:32,16", "normal:32,1e3", "2000", "1"],
            ["0", "1000000000000", "uniform:1,1e999", "x", "normal:32,1e300", "true"])],
        lambda: ["--rate", "100", "--requests", "3", "--output-tokens", pick(["4", "uniform:1,8", "1"],
                                                                           ["0", "-3", "1.5"])],
        lambda: ["--rate", "100", "--requests", "3", "--slo", pick(
            ["ttft=1ms", "itl=1s,e2e=2s", "ttft=1e-300s", "e2e=1e300s"], ["ttft=-1ms", "bogus", "ttft=inf", "", "x"]),
                 "--slo-attainment", pick(["0.5", "1", "1e-300"], ["0", "2", "nan"])],
        lambda: ["--trace", r.choice(traces)], lambda: ["--trace", r.choice(traces)],
        lambda: ["--suite", "packs", "--pack", pick(packs, ["nope", ""])],
        lambda: ["--suite", "mmlu_pro", "--mmlu-data", r.choice(mmlu), "--mmlu-questions", pick(["1", "2"], ["0"]),
                 "--set", "mmlu_pro.max_tokens=16"],  # the healthy persona writes on to max_tokens
        lambda: ["--label", r.choice(texts)], lambda: ["--label", r.choice(texts)],
        lambda: ["--model", pick(["emulated-model"], texts[:12])],
        lambda: ["--api-key-env", pick(["HOME", "PATH"], ["NOPE_NOT_SET", "", r.choice(texts)])],
        lambda: ["--idle-timeout", pick(["0.05", "5", "1e308"], ["0", "-1", "nan"])],
        lambda: ["--request-timeout", pick(["0.05", "5", "1e308"], ["0", "inf"])],
        lambda: ["--retry-on", pick(["429", "429,503", "500", "429,500,503"], ["600", "", r.choice(texts)]),
                 "--max-retry-wait", pick(["0.05", "1", "3600"], ["0", "3601"]), "--max-retries",
                 pick(["1", "3", "100"], ["0", "101"])],
        lambda: ["--set", pick(["speed.temperature=0.5", "speed.temperature=1e-300", "load.temperature=2",
                                "speed.temperature=0"],
                               ["speed.temperature=-1", "load.temperature=true", "speed.bogus=1", r.choice(texts),
                                "speed.repetitions=true", f"speed.temperature={r.choice(NUMBERS[:-1])}"])],
        lambda: ["--seed", pick(["0", "1", "-1", "99999999999999999999", "2147483648"], ["x", "1.5"])],
        lambda: ["--sanity-max-tokens", pick(["8", "16", "100000"], ["7", "x"])],
        lambda: ["--sanity-seed", pick(["1", "-1", "0"], ["x"])],
        lambda: ["--bandwidth-gbs", pick(["273", "0.001", "1e308"], ["0", "nan", "-1", "inf"])],
        lambda: ["--csv", out_path("csv")], lambda: ["--jsonl", out_path("jsonl")], lambda: ["--json", out_path("json")],
        lambda: ["--markdown", out_path("md")], lambda: ["--csv", out_path("csv"), "--jsonl", out_path("jsonl")],
    ]
    cases = []
    for i in range(n):
        server = r.choice(list(urls))
        args = ["run", "--endpoint", urls[server], "--out", str(tmp / "runs" / str(i)), "--scenarios", "chat_short",
                "--repetitions", "1", "--warmup", "0", "--max-requests", "24", "--idle-timeout", "10",
                "--request-timeout", "20"]
        for opt in r.sample(opts, r.randint(1, 3)):
            args += opt()
        if i % 40 == 0:
            args += ["--html", out_path("html")]  # drawing the page costs seconds: a few cases
        cases.append(args)
    return cases


def test_door_cli_through_answering_servers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # no case may reach the network (MMLU-Pro from the hub)
    r = rng("cli")
    faults: list[str] = []
    servers = {name: EmulatorProcess(script) for name, script in SERVERS.items()}
    try:
        for s in servers.values():
            s.__enter__()
        cases = _cli_cases(r, {name: s.url for name, s in servers.items()}, tmp_path, CASES)
        with fast_commands():
            for i, args in enumerate(cases):
                res, took = timed(*args)
                faults += judge(args, res, took)
                for p in (tmp_path / "files").glob("x*"):
                    faults += [f"{args!r}: {f}" for f in export_faults(p)]
                    p.unlink()
                runs = tmp_path / "runs" / str(i)
                if i % 25 == 0 and runs.is_dir():  # the report command re-reads what the run wrote
                    for d in runs.iterdir():
                        again = ["report", str(d), "--csv", str(tmp_path / "again.csv"), "--jsonl",
                                 str(tmp_path / "again.jsonl"), "--markdown", str(tmp_path / "again.md")]
                        res, took = timed(*again)
                        faults += judge(again, res, took)
                        for name in ("again.csv", "again.jsonl", "again.md"):
                            faults += [f"{again!r}: {f}" for f in export_faults(tmp_path / name)]
                shutil.rmtree(runs, ignore_errors=True)
    finally:
        for s in servers.values():
            s.stop()
    _failed("cli", faults, len(cases))


# -- door 2: trace files ----------------------------------------------------------------------------

def test_door_trace_files(tmp_path: Path) -> None:
    from rigbench.suites.load import read_trace

    r = rng("trace")
    faults: list[str] = []
    with fast_commands():
        for i in range(CASES):
            path = tmp_path / f"t{i}.{r.choice(['csv', 'jsonl', 'txt'])}"
            content = _trace_text(r)
            (path.write_bytes if isinstance(content, bytes) else path.write_text)(content)  # type: ignore[operator]
            t0 = time.monotonic()
            try:
                _, reqs = read_trace(path, r.choice([None, None, 1, 5]))
            except RigbenchError as e:
                if str(path) not in str(e) or "\n" in str(e):
                    faults.append(f"case {i}: not one line naming the file: {str(e)[:300]!r}")
            except Exception as e:  # the finding
                faults.append(f"case {i} ({path.read_bytes()[:200]!r}): {type(e).__name__}: {e}")
            else:
                offsets = [q.offset_s for q in reqs]
                if offsets != sorted(offsets) or offsets[0] != 0 or not all(math.isfinite(x) for x in offsets):
                    faults.append(f"case {i}: arrivals {offsets[:10]} are not sorted from zero")
                if not all(1 <= q.input_tokens <= MAX_TOKENS and 1 <= q.output_tokens <= MAX_TOKENS for q in reqs):
                    faults.append(f"case {i}: a length out of range in {reqs[:5]}")
            if time.monotonic() - t0 > 30:
                faults.append(f"case {i}: reading took {time.monotonic() - t0:.0f} s")
            if i % 20 == 0:  # the same file through the command line (closed port: refused or unreachable)
                args = ["run", "--endpoint", DEAD, "--trace", str(path), "--out", str(tmp_path / "runs")]
                res, took = timed(*args)
                faults += judge(args, res, took)
    _failed("trace", faults, CASES)


# -- door 3: plan files and --set -------------------------------------------------------------------

def test_door_plan_files_and_set_values(tmp_path: Path) -> None:
    from rigbench.plan import RunOptions, load_plan, plan_from_options

    r = rng("plan")
    faults: list[str] = []
    with fast_commands():
        for i in range(CASES):
            t0 = time.monotonic()
            if i % 3 == 2:  # --set SECTION.KEY=VALUE, VALUE read as YAML
                sets = [f"{r.choice(['speed', 'load', 'packs', 'agent', 'mmlu_pro', 'effort', 'rigs', ''])}."
                        f"{r.choice(['repetitions', 'temperature', 'rate_rps', 'tasks', 'bogus', 'input_tokens', ''])}="
                        f"{r.choice([*NUMBERS[:-1], *TEXTS[:-3], '[1, 2]', '{a: 1}', '&a [*a]', '!!binary x'])}"
                        for _ in range(r.randint(1, 3))]
                try:
                    plan_from_options(RunOptions(set_=sets, rig={"endpoint": DEAD}))  # type: ignore[arg-type]
                except RigbenchError as e:
                    if "\n" in str(e):
                        faults.append(f"--set {sets}: not one line: {str(e)[:300]!r}")
                except Exception as e:
                    faults.append(f"--set {sets}: {type(e).__name__}: {e}")
                continue
            path = tmp_path / f"plan{i}.yaml"
            content = _yaml_text(r, _mutate(r, _PLAN_BASE))
            (path.write_bytes if isinstance(content, bytes) else path.write_text)(content)  # type: ignore[operator]
            loaded = None
            try:
                loaded = load_plan(path)
            except RigbenchError as e:
                first, *rest = str(e).splitlines()
                if str(path) not in first or any(not line.startswith("  ") for line in rest):
                    faults.append(f"plan {i}: not one line (and indented problems): {str(e)[:400]!r}")
            except Exception as e:
                faults.append(f"plan {i} ({path.read_bytes()[:300]!r}): {type(e).__name__}: {e}")
            if time.monotonic() - t0 > 30:
                faults.append(f"plan {i}: loading took {time.monotonic() - t0:.0f} s")
            endpoints_only = loaded is not None and all(rig.spec.kind == "endpoint" for rig in loaded.rigs)
            if i % 10 == 0 and (loaded is None or endpoints_only):  # never a case that would launch an engine
                args = ["run", str(path), "--out", str(tmp_path / "runs" / str(i))]
                res, took = timed(*args)
                faults += judge(args, res, took)
    _failed("plan", faults, CASES)


# -- door 4: data directories -----------------------------------------------------------------------

_MMLU_ROW = {"question_id": 1, "question": "2 + 3?", "options": ["4", "5", "N/A"], "answer": "B", "answer_index": 1,
             "category": "math"}
_PACK = {"name": "fz", "tasks": [{"id": "t1", "prompt": "q", "graders": [{"type": "numeric", "expected": 5}]},
                                 {"id": "t2", "prompt": "q", "graders": [{"type": "code", "function": "f",
                                                                         "cases": [{"args": [1], "expected": 2}]}]}]}
_BFCL_Q = {"id": "simple_0", "question": [[{"role": "user", "content": "q"}]],
           "function": [{"name": "f", "parameters": {"type": "dict", "properties": {"x": {"type": "integer"}}}}]}
_TASK = {"name": "t", "kind": "root_cause", "prompt": "find it", "files": {"a.py": "x = 1"}, "answer": "a.py"}


def _data_case(r: Random, d: Path) -> Callable[[], Any]:
    from rigbench.suites.agent._bfcl import load_bfcl
    from rigbench.suites.agent._task import load_task
    from rigbench.suites.quality import load_mmlu_pro
    from rigbench.suites.quality._packs import load_pack

    kind = r.choice(["mmlu", "mmlu", "pack", "bfcl", "task"])
    d.mkdir()

    def write(p: Path, content: str | bytes) -> None:
        p.parent.mkdir(parents=True, exist_ok=True)
        (p.write_bytes if isinstance(content, bytes) else p.write_text)(content)  # type: ignore[operator]

    def lines(rows: list[Any]) -> str | bytes:
        text = "\n".join(json.dumps(x, default=str) if r.random() > 0.05 else str(x)[:40] for x in rows) + "\n"
        return _yaml_text(r, text) if r.random() < 0.1 else text

    if kind == "mmlu":
        sub = d / r.choice(["", "data", "a/b"])
        for split in ("test", "validation"):
            rows = [_mutate(r, dict(_MMLU_ROW, question_id=k)) for k in range(r.randint(0, 6))]
            ext = r.choice([".jsonl", ".jsonl", ".json", ".parquet"])
            if ext == ".json":
                write(sub / f"{split}{ext}", json.dumps(rows, default=str) if r.random() > 0.2 else "[" * 3000)
            elif ext == ".parquet":
                write(sub / f"{split}{ext}", b"PAR1" + bytes(r.randrange(256) for _ in range(64)) + b"PAR1")
            else:
                write(sub / f"{split}{ext}", lines(rows))
        return lambda: load_mmlu_pro(d)
    if kind == "pack":
        write(d / "p.yaml", _yaml_text(r, _mutate(r, _PACK)))
        return lambda: load_pack(d / "p.yaml")
    if kind == "bfcl":
        write(d / "BFCL_v4_simple_python.json", lines([_mutate(r, _BFCL_Q) for _ in range(r.randint(0, 3))]))
        write(d / "possible_answer" / "BFCL_v4_simple_python.json",
              lines([_mutate(r, {"id": "simple_0", "ground_truth": [{"f": {"x": [1]}}]})]))
        return lambda: load_bfcl(d, "simple")
    task = _mutate(r, _TASK)
    write(d / "task.json", json.dumps(task, default=str) if r.random() > 0.1 else _yaml_text(r, task))
    return lambda: load_task(str(d))


def test_door_data_directories(tmp_path: Path) -> None:
    r = rng("data")
    faults: list[str] = []
    for i in range(CASES):
        load = _data_case(r, tmp_path / f"d{i}")
        t0 = time.monotonic()
        try:
            load()
        except RigbenchError as e:
            if "\n" in str(e):
                faults.append(f"case {i}: not one line: {str(e)[:300]!r}")
        except Exception as e:
            faults.append(f"case {i} ({sorted(p.name for p in (tmp_path / f'd{i}').rglob('*'))}): "
                          f"{type(e).__name__}: {str(e)[:300]}")
        if time.monotonic() - t0 > 30:
            faults.append(f"case {i}: loading took {time.monotonic() - t0:.0f} s")
    _failed("data", faults, CASES)


# -- door 5: exports --------------------------------------------------------------------------------

def test_door_exports(tmp_path: Path) -> None:
    from rigbench.analysis import REQUEST_COLUMNS
    from rigbench.cli._export import csv_lines, jsonl_lines
    from rigbench.cli._paths import OutputError, write_output

    r = rng("export")
    faults: list[str] = []
    values: list[Any] = [*TEXTS, None, True, 0, -1, -1.5, 2.5e-300, 1e308, math.inf, -math.inf, math.nan, 10**30,
                         "-1.5", "+3", "2e-05", "-", "@", "=", "\t", "\r", "\x00", "\u2028x"]
    busy = socket.socket(socket.AF_UNIX)  # a path that is a socket: opening it for writing fails
    sock_path = tmp_path / "sock"
    busy.bind(str(sock_path))
    targets = [str(tmp_path / "out"), "/dev/full", str(tmp_path), "/proc/self/status", str(tmp_path / "no" / "x"),
               str(sock_path), "/dev/null"]
    try:
        for i in range(CASES):
            rows = [{c: r.choice(values) for c in REQUEST_COLUMNS} for _ in range(r.randint(0, 12))]
            kind = r.choice(["csv", "jsonl"])
            chosen = r.choice(targets)
            # a suffix only on this test's own paths (never a new file beside /dev/full)
            target = Path(chosen + (f".{kind}" if chosen.startswith(str(tmp_path)) and r.random() < 0.5 else ""))
            try:
                write_output(target, (csv_lines if kind == "csv" else jsonl_lines)(rows), f"--{kind}")
            except OutputError as e:
                if "\n" in str(e) or (target.is_file() and target.stat().st_size and target.suffix):
                    faults.append(f"case {i}: {str(e)[:200]!r}, the file left: {target.is_file()}")
            except Exception as e:
                faults.append(f"case {i} -> {target}: {type(e).__name__}: {e}")
            else:
                if target.is_file() and target.suffix in (".csv", ".jsonl"):
                    faults += [f"case {i}: {f}" for f in export_faults(target)]
                    if target.suffix == ".jsonl" and len(target.read_text().splitlines()) != len(rows):
                        faults.append(f"case {i}: {len(rows)} rows written as another number of lines")
                    target.unlink()
    finally:
        busy.close()
    _failed("export", faults, CASES)
