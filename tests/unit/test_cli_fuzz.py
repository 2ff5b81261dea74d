"""CLI fuzz: over 500 generated argument sets and plan files, none may end in a traceback.

Adversary: a user (or a script) passing any value to any option: numbers at and beyond every limit,
NaN and infinities, empty and huge values, arguments that are not UTF-8, binary and empty files,
`/proc` and `/dev/full` paths, ports out of range and in use. For every case: no traceback, exit
code 0, 1 or 2, a non-zero exit says why on stderr, and a refusal (exit 2) is one `error:` line
(a plan file's problems follow it, indented, one per line). Cases run in-process
(`cli_inproc.invoke`); a `run` always attaches (to a closed port, or a malformed URL), so no case
starts or builds an engine. The table is generated from a fixed seed: a failure names its case
and reproduces exactly.
"""

from __future__ import annotations

import random
import shutil
import socket
from pathlib import Path

import pytest

from tests.unit.cli_inproc import invoke

GOLDEN = Path(__file__).parent.parent / "golden" / "run_v1"
SEED = 14
DEAD = "http://127.0.0.1:9/v1"

NUMBERS = ["0", "-1", "1", "2", "0.5", "1e308", "-1e308", "inf", "-inf", "nan", "abc", "", "1,2", "99999999999999999999",
           "3.5", "100000", "1e-300", " 7 ", "NaN", "Infinity", "-0", "1e999", "0x10", "9" * 400,
           "-99999999999999999999", "1,,2", "\udcff", "65535", "65536", "2147483648"]
URLS = [DEAD, "http://user:pw@127.0.0.1:9/v1", "ftp://127.0.0.1/v1", "not a url", "http://[::1", "http://",
        "http://127.0.0.1:99999/v1", "https://127.0.0.1:9", "http://localhost:9/v1/", "http://[::1]:9/v1"]
WORDS = ["speed", "", ",", "bogus", "speed,agent", "quality", "chat_short", "chat_short,nope", "none,low",
         "x" * 300, "speed,,speed", "../etc", "☃", "bad:x:y", "[bold red]x[/]", "\x1b[2Jcls", "\udcfe\udcff", "a\nb"]
# `--retry-on` values: the valid form, every kind of bad list, and statuses at and beyond 400..599
STATUSES = ["429,503", "429", "503,429,503", "200", "399", "400", "599", "600", "abc", "", ",", "429,,503", "429,",
            " 429 ", "-429", "4e2", "429.0", "9" * 400, "\udcff", "[bold]429[/]", "\x1b[2J"]
PORTS = ["-1", "70000", "65536", "abc", "", "1e3", "99999999999"]  # `emulate` cases: never one it could serve on


def _paths(tmp: Path) -> list[str]:
    junk = tmp / "junk.gguf"
    junk.write_bytes(b"\x00GGUF" * 9)
    empty = tmp / "empty.json"
    empty.write_text("")
    trunc = tmp / "trunc.gguf"
    trunc.write_bytes(b"GGUF\x03\x00\x00\x00\x02")
    cfg = tmp / "config.json"
    cfg.write_text('{"num_hidden_layers": "many"}')
    damaged = tmp / "damaged_run"
    shutil.copytree(GOLDEN, damaged)
    with (damaged / "records.jsonl").open("a") as f:
        f.write('{"kind": "speed_request", "unit_id": 5, "result": []}\n{"kind": "speed_batch", "unit_')
    golden = tmp / "golden_copy"  # never the checked-in run itself: `--out` cases write run directories
    shutil.copytree(GOLDEN, golden)
    badhead = tmp / "badhead"
    badhead.mkdir()
    (badhead / "run.json").write_text('{"format_version": 1, "run_id": 3}')
    binary = tmp / "binary.yaml"
    binary.write_bytes(bytes(range(256)) * 8)
    listhead = tmp / "list_header"
    listhead.mkdir()
    (listhead / "run.json").write_text("[]")
    return [str(p) for p in (junk, empty, trunc, cfg, tmp, tmp / "missing", tmp / "no" / "dir" / "x", damaged,
                             badhead, golden, Path("/dev/null"), Path("/proc/self"), binary, listhead,
                             Path("/proc/x.json"), Path("/proc/self/status"),
                             tmp / "\udcff-not-utf8")]


PLAN_RIGS = [
    '{{name: a, endpoint: {{base_url: "{url}"}}}}',
    '{{name: b, endpoint: {{base_url: "{url}", model: m}}, suites: [{word}]}}',
    '{{name: c, embedded: {{model: embedded, bogus_key: 1}}}}',  # embedded only with an error: never launched
    '{{name: d, launch: {{kind: vllm, model: x, port: {num}}}}}',
    '{{name: "", endpoint: {{base_url: "{url}"}}}}',
    '{{name: e, endpoint: {{base_url: "{url}"}}, sweep: {{model: []}}}}',
    '{{name: f}}',
    '[1, 2]',
]
PLAN_TOP = [
    "name: p{i}\nsanity: false\nspeed: {{scenarios: [chat_short], repetitions: {num}, warmup: 0, concurrency: [{num}]}}\n",
    "name: p{i}\nsanity: false\nsuites: [{word}]\ndeadlines: {{idle_s: {num}}}\n",
    "name: p{i}\nspeed: {{profile: {word}}}\n",
    "name: p{i}\nsanity: false\nsuites: [load]\nretries: {{statuses: [{num}], max_retries: {num}, max_wait_s: {num}}}\n"
    "load: {{rate_rps: {num}, duration_s: {num}}}\nallow_long_run: {word}\n",
    "name: [oops\n",
    "- just\n- a list\n",
    "",
]


def _cases(tmp: Path, busy_port: str) -> list[list[str]]:
    rng = random.Random(SEED)
    paths = _paths(tmp)
    num, url, word, path = (lambda: rng.choice(NUMBERS)), (lambda: rng.choice(URLS)), \
        (lambda: rng.choice(WORDS)), (lambda: rng.choice(paths))
    out_dir = str(tmp / "runs")
    run_opts = [
        lambda: ["--suite", word()], lambda: ["--scenarios", word()], lambda: ["--repetitions", num()],
        lambda: ["--warmup", num()], lambda: ["--concurrency", num()], lambda: ["--ctx-per-slot", num()],
        lambda: ["--effort-levels", word()], lambda: ["--bandwidth-gbs", num()], lambda: ["--idle-timeout", num()],
        lambda: ["--request-timeout", num()], lambda: ["--seed", num()], lambda: ["--model", word()],
        lambda: ["--markdown", path()], lambda: ["--out", path()], lambda: ["--resume", path()],
        lambda: ["--profile", word()], lambda: ["--sanity-max-tokens", num()], lambda: ["--port", num()],
        lambda: ["--api-key-env", word() or "X"], lambda: ["--model-file", path()], lambda: ["--mmlu-questions", num()],
        lambda: ["--no-sanity"], lambda: ["--threads", num()], lambda: ["--draft-max", num()],
        lambda: ["--max-requests", num()], lambda: ["--retry-failed"], lambda: ["--label", word()],
        lambda: ["--set", f"speed.temperature={num()}"], lambda: ["--set", word()],
        lambda: ["--retry-on", rng.choice(STATUSES)], lambda: ["--retry-on", "429", "--max-retries", num()],
        lambda: ["--retry-on", rng.choice(STATUSES), "--max-retry-wait", num()], lambda: ["--max-retries", num()],
        lambda: ["--allow-long-run"], lambda: ["--rate", num(), "--duration", num()],
        lambda: ["--rate", num(), "--requests", num()], lambda: ["--sweep", "--duration", num()],
    ]
    cases: list[list[str]] = []
    for _ in range(200):
        args = ["run", "--endpoint", url(), "--out", out_dir]
        for opt in rng.sample(run_opts, rng.randint(1, 4)):
            args += opt()
        cases.append(args)
    for _ in range(70):
        cases.append(["kv", "--budget-gib", num(), "--context", num(),
                      *rng.choice([["--model", path()], ["--layers", num(), "--kv-heads", num(), "--head-dim", num()]]),
                      *rng.choice([[], ["--window", num()], ["--local-per-global", num()], ["--kv-dtype", word()]])])
    for _ in range(60):
        cases.append(["roofline", *rng.choice([["--weights-gb", num()], ["--model", path()]]),
                      *rng.choice([["--bandwidth-gbs", num()], ["--device", word()]]),
                      *rng.choice([[], ["--tok-s", num()], ["--acceptance-length", num(), "--prefill-share", num()]])])
    for _ in range(40):
        cases.append(["compare", *(path() for _ in range(rng.randint(0, 3))), "--alpha", num(),
                      *rng.choice([[], ["--metric", word()], ["--markdown", path()], ["--allow-mismatch"]])])
    # Rendering a report costs seconds (plots, statistics): few cases, and HTML only with paths that
    # are refused before rendering (a directory, a missing directory).
    bad_out = [str(tmp), str(tmp / "no" / "dir" / "x.html")]
    for _ in range(14):
        cases.append(["report", *(path() for _ in range(rng.randint(0, 2))),
                      *rng.choice([[], ["--html", rng.choice(bad_out)], ["--markdown", path()], ["--json", path()],
                                   ["--vllm-json", path()]])])
    for _ in range(40):
        cases.append(["check", *rng.choice([[], ["--concurrency", num()], ["--scenario", word() + ":" + num()]]),
                      "--", *rng.choice([["vllm", "serve", word()], ["llama-server", "-c", num()], [word()]])])
    for i in range(40):
        text = rng.choice(PLAN_TOP).format(i=i, num=num(), word=word())
        if text.startswith("name") and not text.startswith("name: ["):
            text += "rigs:\n" + "".join("  - " + rng.choice(PLAN_RIGS).format(url=url(), word=word(), num=num())
                                        + "\n" for _ in range(rng.randint(0, 3)))
        plan = tmp / f"plan{i}.yaml"
        plan.write_bytes(text.encode("utf-8", "surrogateescape"))  # a lone \udcff becomes a non-UTF-8 byte
        cases.append(["run", str(plan), "--out", str(tmp / "plans" / str(i))])
    for _ in range(40):  # each has a port it cannot serve on, so no case starts a server
        cases.append(["emulate", "--port", rng.choice([*PORTS, busy_port]),
                      *rng.choice([[], ["--dist", word()], ["--ttft-ms", num()], ["--output-tokens", num()],
                                   ["--fault", word()], ["--rogue", word()], ["--script", path()]])])
    for _ in range(20):
        cases.append(["ls", path()])
    cases += [["run", path()] for _ in range(10)]  # a plan file that is not one
    golden = str(tmp / "golden_copy")  # /dev/full only as an output (reading it never ends): ENOSPC on write
    cases += [["report", golden, "--markdown", "/dev/full"], ["report", golden, "--json", "/dev/full"],
              ["compare", golden, golden, "--markdown", "/dev/full"]]
    cases += [["--help"], ["run", "--help"], ["bogus-command"], []]
    return cases


def test_no_argument_set_or_plan_file_ends_in_a_traceback(tmp_path: Path) -> None:
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen()
    try:
        cases = _cases(tmp_path, str(busy.getsockname()[1]))
        assert len(cases) >= 500
        failures = [f for args in cases for f in _judge(args)]
    finally:
        busy.close()
    if failures:
        pytest.fail(f"{len(failures)} of {len(cases)} cases failed:\n" + "\n\n".join(failures[:15]))


def _judge(args: list[str]) -> list[str]:
    res = invoke(*args)
    if res.traceback is not None:
        return [f"{args}: traceback\n{res.traceback[-1500:]}"]
    if res.code not in (0, 1, 2):
        return [f"{args}: exit {res.code}"]
    if res.code != 0 and not res.stderr.strip():
        return [f"{args}: exit {res.code} with nothing on stderr (stdout: {res.stdout[-300:]!r})"]
    if res.code == 2:  # one `error:` line; a plan's list of problems follows it indented, one per line
        lines = res.stderr.rstrip().splitlines()
        at = [i for i, line in enumerate(lines) if line.startswith("error:")]
        if len(at) != 1 or any(not line.startswith("  ") for line in lines[at[0] + 1:]):
            return [f"{args}: a refusal that is not one `error:` line: {res.stderr[-600:]!r}"]
    return []
