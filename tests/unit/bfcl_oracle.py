"""BFCL's own `ast_checker` (bfcl-eval, pinned to rigbench's BFCL_VERSION) as a test oracle.

bfcl-eval's install requirements are heavy (sentence-transformers, faiss, provider SDKs, numpy
pinned to 1.26.4), none of them used by its AST checker, so it is not a dev dependency: the pinned
wheel is fetched once with `pip download --no-deps` (the same wheel the BFCL suite takes its data
from), and only the checker's modules are unpacked into the user cache
(~/.cache/rigbench/bfcl/<version>/oracle). The one module the checker imports that drags the
rest in, `bfcl_eval.constants.model_config`, is replaced by a stand-in holding one model entry
that sends '.' as '_' (as BFCL's OpenAI function-calling handlers do).

`bfcl_valid` follows bfcl_eval/eval_checker/eval_runner.py for a function-calling model: each tool
call decodes as `{name: json.loads(arguments)}`; any decoding error fails an AST item and counts as
"no call" for irrelevance; an output that is not a list of one-key `{name: {...}}` objects is the
wrong format for AST items and "no call" for irrelevance.
"""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
import types
import zipfile
from pathlib import Path
from typing import Any

from rigbench.suites.agent._bfcl import BFCL_VERSION, BFCLItem, fetch_bfcl_data

MODEL = "rigbench_oracle"  # BFCL looks its config up as "rigbench/oracle"
_MEMBERS = (
    "bfcl_eval/__init__.py",
    "bfcl_eval/constants/__init__.py",
    "bfcl_eval/constants/enums.py",
    "bfcl_eval/constants/type_mappings.py",
    "bfcl_eval/eval_checker/__init__.py",
    "bfcl_eval/eval_checker/ast_eval/__init__.py",
    "bfcl_eval/eval_checker/ast_eval/ast_checker.py",
    "bfcl_eval/eval_checker/ast_eval/type_convertor/__init__.py",
    "bfcl_eval/eval_checker/ast_eval/type_convertor/java_type_converter.py",
    "bfcl_eval/eval_checker/ast_eval/type_convertor/js_type_converter.py",
)


def _wheel(root: Path) -> Path:
    cached = sorted(root.glob(f"bfcl_eval-{BFCL_VERSION}-*.whl"))
    if cached:
        return cached[0]
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:",
           f"bfcl-eval=={BFCL_VERSION}", "-d", str(root)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    got = sorted(root.glob(f"bfcl_eval-{BFCL_VERSION}-*.whl"))
    if proc.returncode != 0 or not got:
        raise RuntimeError(f"`{' '.join(cmd)}` exited {proc.returncode}: {(proc.stderr or proc.stdout)[-400:]}")
    return got[0]


def load_ast_checker() -> types.ModuleType:
    """BFCL's ast_checker module, imported from the pinned wheel's files (cached)."""
    data = fetch_bfcl_data()
    oracle = data / "oracle"
    if not all((oracle / m).exists() for m in _MEMBERS):
        with zipfile.ZipFile(_wheel(data)) as z:
            for m in _MEMBERS:
                dest = oracle / m
                dest.parent.mkdir(parents=True, exist_ok=True)
                dest.write_bytes(z.read(m))
    stub = types.ModuleType("bfcl_eval.constants.model_config")
    stub.MODEL_CONFIG_MAPPING = {MODEL.replace("_", "/"): types.SimpleNamespace(underscore_to_dot=True)}  # type: ignore[attr-defined]
    sys.modules["bfcl_eval.constants.model_config"] = stub
    if str(oracle) not in sys.path:
        sys.path.insert(0, str(oracle))
    return importlib.import_module("bfcl_eval.eval_checker.ast_eval.ast_checker")


def _function_calling_format(decoded: Any) -> bool:
    return isinstance(decoded, list) and all(
        isinstance(d, dict) and len(d) == 1 and isinstance(next(iter(d.values())), dict) for d in decoded)


def bfcl_valid(checker: types.ModuleType, item: BFCLItem, tool_calls: list[dict[str, Any]]) -> bool:
    """BFCL's verdict for one response of an FC model that made `tool_calls` (OpenAI format)."""
    enums = importlib.import_module("bfcl_eval.constants.enums")
    try:
        decoded: Any = [{c["function"]["name"]: json.loads(c["function"]["arguments"])} for c in tool_calls]
        if not tool_calls:
            raise ValueError("no tool call: the handler returns the text, which does not decode")
    except (ValueError, TypeError) as e:
        decoded, error = None, e
    else:
        error = None
    if item.category == "irrelevance":
        made_call = error is None and _function_calling_format(decoded) and bool(decoded) and not (
            len(decoded) == 1 and len(decoded[0]) == 0)
        return not made_call
    if error is not None or not _function_calling_format(decoded):
        return False
    res = checker.ast_checker(item.functions, decoded, item.ground_truth, enums.Language.PYTHON,
                              item.category, MODEL)
    return bool(res["valid"])
