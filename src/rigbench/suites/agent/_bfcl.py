"""BFCL (Berkeley Function Calling Leaderboard) categories, from the data in the `bfcl-eval` wheel.

The wheel is fetched once with `pip download --no-deps` (Apache-2.0 data; rigbench never imports
the package), its data files are unpacked into the user cache, and items are graded by
rigbench's own checker (`_bfcl_checker`).
"""

from __future__ import annotations

import copy
import hashlib
import json
import random
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import platformdirs

from rigbench.errors import SetupError, UsageError
from rigbench.inputs import json_lines, shown
from rigbench.records import BFCLItemRecord
from rigbench.suites._context import SuiteContext
from rigbench.suites.agent._bfcl_checker import CheckResult, check_item
from rigbench.suites.agent._exchange import send
from rigbench.suites.agent._settings import AgentSettings

__all__ = [
    "BFCL_CATEGORIES",
    "BFCL_VERSION",
    "BFCLItem",
    "BFCLSuite",
    "decode_tool_calls",
    "fetch_bfcl_data",
    "grade_tool_calls",
    "load_bfcl",
    "to_tools",
]

BFCL_VERSION = "2026.3.23"
BFCL_CATEGORIES = ("simple", "multiple", "parallel", "parallel_multiple", "irrelevance")
_FILES = {
    "simple": "BFCL_v4_simple_python.json",
    "multiple": "BFCL_v4_multiple.json",
    "parallel": "BFCL_v4_parallel.json",
    "parallel_multiple": "BFCL_v4_parallel_multiple.json",
    "irrelevance": "BFCL_v4_irrelevance.json",
}
# BFCL's own type mapping to OpenAPI (bfcl_eval/constants/type_mappings.py, GORILLA_TO_OPENAPI).
_TO_OPENAPI = {
    "integer": "integer",
    "number": "number",
    "float": "number",
    "string": "string",
    "boolean": "boolean",
    "bool": "boolean",
    "array": "array",
    "list": "array",
    "dict": "object",
    "object": "object",
    "tuple": "array",
    "any": "string",
}


@dataclass(frozen=True)
class BFCLItem:
    category: str
    item_id: str
    messages: list[dict[str, Any]]
    functions: list[dict[str, Any]]
    ground_truth: list[dict[str, dict[str, list[Any]]]] | None  # None for irrelevance


def fetch_bfcl_data(version: str = BFCL_VERSION, cache_dir: Path | None = None) -> Path:
    """The directory holding the BFCL data files of `version`, downloading the wheel if needed."""
    root = (cache_dir or Path(platformdirs.user_cache_dir("rigbench"))) / "bfcl" / version
    if all((root / f).exists() for f in _FILES.values()):
        return root
    with tempfile.TemporaryDirectory(prefix="rigbench-bfcl-") as td:
        cmd = [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--only-binary",
            ":all:",
            f"bfcl-eval=={version}",
            "-d",
            td,
        ]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        wheels = list(Path(td).glob("bfcl_eval-*.whl"))
        if proc.returncode != 0 or not wheels:
            raise SetupError(
                f"could not download the BFCL data (`{' '.join(cmd)}` exited {proc.returncode}: "
                f"{(proc.stderr or proc.stdout)[-400:]}). Check network access to PyPI, or pass a local copy "
                "with the bfcl_data_dir setting, or set bfcl_per_category=0 to skip BFCL."
            )
        root.mkdir(parents=True, exist_ok=True)
        wheel_sha = hashlib.sha256(wheels[0].read_bytes()).hexdigest()
        with zipfile.ZipFile(wheels[0]) as z:
            for name in _FILES.values():
                for sub in ("", "possible_answer/"):
                    member = f"bfcl_eval/data/{sub}{name}"
                    if member in z.namelist():
                        dest = root / sub / name
                        dest.parent.mkdir(parents=True, exist_ok=True)
                        dest.write_bytes(z.read(member))
        (root / "SOURCE.json").write_text(
            json.dumps(
                {
                    "package": "bfcl-eval",
                    "version": version,
                    "wheel": wheels[0].name,
                    "wheel_sha256": wheel_sha,
                    "license": "Apache-2.0",
                },
                indent=2,
            )
        )
    return root


# A BFCL line is one question with its function documents: kilobytes.
_LINE_MAX_BYTES = 4 << 20


def _read_jsonl(path: Path, keys: tuple[str, ...]) -> list[dict[str, Any]]:
    """The objects of a BFCL data file, each with `keys`; a line that is not one is refused naming it."""
    out = []
    for n, obj in json_lines(path, "BFCL data", max_line_bytes=_LINE_MAX_BYTES):
        if not isinstance(obj, dict) or any(k not in obj for k in keys):
            raise UsageError(f"{path}:{n}: a BFCL line is a JSON object with {', '.join(keys)}; got {shown(obj)}.")
        out.append(obj)
    return out


def load_bfcl(data_dir: Path, category: str) -> list[BFCLItem]:
    """Items of one category from a directory in the wheel's layout (data + possible_answer/)."""
    qpath = data_dir / _FILES[category]
    if not qpath.exists():
        raise SetupError(f"BFCL data file {qpath} is missing; delete {data_dir} to fetch it again.")
    answers: dict[str, Any] = {}
    if category != "irrelevance":
        apath = data_dir / "possible_answer" / _FILES[category]
        if not apath.exists():
            raise SetupError(f"BFCL answer file {apath} is missing; delete {data_dir} to fetch it again.")
        answers = {str(a["id"]): a["ground_truth"] for a in _read_jsonl(apath, ("id", "ground_truth"))}
    items = []
    for q in _read_jsonl(qpath, ("id", "question", "function")):
        if category != "irrelevance" and str(q["id"]) not in answers:
            raise SetupError(
                f"BFCL item {shown(q['id'])} has no possible answer in {data_dir}; the data is inconsistent."
            )
        if not (isinstance(q["question"], list) and q["question"] and isinstance(q["function"], list)):
            raise UsageError(f"{qpath}: BFCL item {shown(q['id'])}: `question` is a non-empty list and `function` a "
                             "list, as in BFCL's own files.")
        items.append(BFCLItem(category, q["id"], q["question"][0], q["function"], answers.get(str(q["id"]))))
    return items


def _cast(props: dict[str, Any]) -> dict[str, Any]:
    for value in props.values():
        t = value.get("type")
        if t == "float":
            value["format"] = "float"
        value["type"] = _TO_OPENAPI.get(t, "string") if t else "string"
        if "properties" in value:
            value["properties"] = _cast(value["properties"])
        items = value.get("items")
        if isinstance(items, dict) and "type" in items:
            items["type"] = _TO_OPENAPI.get(items["type"], "string")
            if "properties" in items:
                items["properties"] = _cast(items["properties"])
    return props


def to_tools(functions: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """OpenAI tools for BFCL functions, as BFCL's own converter does ('.' in names becomes '_').

    Returns the tools and a map from the name sent back to BFCL's name.
    """
    tools, names = [], {}
    for f in copy.deepcopy(functions):
        sent = f["name"].replace(".", "_")
        names[sent] = f["name"]
        params = f.get("parameters") or {}
        params["type"] = "object"
        params["properties"] = _cast(params.get("properties") or {})
        tools.append(
            {
                "type": "function",
                "function": {"name": sent, "description": f.get("description", ""), "parameters": params},
            }
        )
    return tools, names


class BFCLSuite:
    """BFCL simple / multiple / parallel / parallel_multiple / irrelevance.

    Settings: `bfcl_per_category` (a seeded sample per category; 0 skips BFCL), `bfcl_trials`,
    `bfcl_max_tokens`, `bfcl_data_dir` (a local copy; otherwise the cached wheel data),
    `bfcl_version_label`.
    """

    name = "agent_bfcl"

    def __init__(self, settings: AgentSettings) -> None:
        self.settings = settings
        self.max_tokens = self.settings.bfcl_max_tokens

    async def run(self, ctx: SuiteContext) -> None:
        s = self.settings
        per_cat, trials = s.bfcl_per_category, s.bfcl_trials
        if per_cat <= 0:
            return
        local = s.bfcl_data_dir
        data_dir = Path(local) if local else fetch_bfcl_data()
        version = s.bfcl_version_label or (BFCL_VERSION if not local else f"local:{local}")
        units = []
        for cat in BFCL_CATEGORIES:
            items = sorted(load_bfcl(data_dir, cat), key=lambda i: i.item_id)
            picked = random.Random(f"{cat}:{ctx.seed}").sample(items, min(per_cat, len(items)))
            units += [(it, t) for it in picked for t in range(trials)]
        todo = [(it, t) for it, t in units if _uid(it, t) not in ctx.done_units]
        task = ctx.progress.task("agent: BFCL", len(todo))
        for item, trial in todo:
            ctx.writer.append(await self._one(ctx, item, trial, version))
            ctx.progress.advance(task)
        ctx.progress.done(task)

    async def _one(self, ctx: SuiteContext, item: BFCLItem, trial: int, version: str) -> BFCLItemRecord:
        tools, _names = to_tools(item.functions)
        body = {
            "model": ctx.rig.model,
            "messages": item.messages,
            "tools": tools,
            "tool_choice": "auto",
            "temperature": 0.0,
            "seed": ctx.seed + trial,
            "max_tokens": self.max_tokens,
        }
        ex = (await send(ctx.client, ctx.writer, body)).exchange
        decoded: list[dict[str, Any]] = []
        etype: str | None
        err: str | None
        if ex.error:
            res_valid, etype, err = False, "request_error", ex.error[:500]
        else:
            decoded, r = grade_tool_calls(item, ex.tool_calls)
            res_valid, etype, err = r.valid, r.error_type, r.error
        return BFCLItemRecord(
            unit_id=_uid(item, trial),
            category=item.category,
            item_id=item.item_id,
            trial=trial,
            bfcl_version=version,
            valid=res_valid,
            error_type=etype,
            error=err,
            decoded_calls=decoded,
            exchange=ex,
        )


def decode_tool_calls(tool_calls: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], str | None]:
    """BFCL's decoding of function-calling output: `[{name: json.loads(arguments)}]`, names as sent.

    Strict like BFCL's: empty or non-JSON arguments are a decoding failure (the second value says
    which call), never an empty object.
    """
    decoded: list[dict[str, Any]] = []
    for c in tool_calls:
        fn = c.get("function") or {}
        name = str(fn.get("name") or "")
        args = fn.get("arguments")
        try:
            params = args if isinstance(args, dict) else json.loads(args if isinstance(args, str) else "")
        except ValueError:
            return decoded, f"arguments of {name!r} do not decode as JSON: {str(args)[:80]!r}"
        decoded.append({name: params})
    return decoded, None


def grade_tool_calls(item: BFCLItem, tool_calls: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], CheckResult]:
    """Decode and grade one response's tool calls the way BFCL's evaluation does for an FC model.

    The tools were sent with '.' in names turned into '_' (`to_tools`), so names are compared in
    that form: a call to `math.factorial` when the tool was sent as `math_factorial` is a wrong
    name, as in BFCL. Irrelevance: a response whose calls do not decode, or decode to no call or
    not to `{name: {...}}` objects, counts as no call (valid), as in BFCL.
    """
    decoded, bad = decode_tool_calls(tool_calls)
    well_formed = bad is None and all(isinstance(next(iter(d.values())), dict) for d in decoded)
    if item.category == "irrelevance":
        if bad is not None or not well_formed or not decoded:
            return decoded, CheckResult(True, None, bad)  # BFCL: no (decodable) call
        return decoded, check_item(item.category, item.functions, decoded, None)
    if bad is not None:
        return decoded, CheckResult(False, "ast_decoder:decoder_failed", bad)
    if not well_formed:
        return decoded, CheckResult(False, "ast_decoder:decoder_wrong_output_format",
                                    "a call's arguments decode to JSON that is not an object")
    return decoded, check_item(item.category, item.functions, decoded, item.ground_truth)


def _uid(item: BFCLItem, trial: int) -> str:
    return f"agent/bfcl/{item.category}/{item.item_id}/t{trial}"
