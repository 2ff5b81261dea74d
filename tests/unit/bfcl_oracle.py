"""bfcl-eval itself (pinned to rigbench's BFCL_VERSION) as the test oracle for rigbench's BFCL grader.

Every verdict the agreement test compares comes from bfcl-eval's own code, run as its evaluation
runner runs it for a function-calling model served over the OpenAI chat-completions API:

- the model is BFCL's real configuration for that family: the entry of
  `bfcl_eval.constants.model_config.MODEL_CONFIG_MAPPING` whose handler is
  `OpenAICompletionsHandler` with `is_fc_model=True` (in 2026.3.23 exactly one,
  "openbmb/MiniCPM-SALA-FC"; the test fails if that changes), built by bfcl's `get_handler`;
- a response becomes BFCL's model result through that handler's own `_parse_query_response_FC`
  (tool calls as `{name: arguments}`, no tool calls as the message text);
- AST categories are judged by `eval_runner._evaluate_single_ast_entry` (the handler's
  `decode_ast`, the output-format check, `ast_checker`), irrelevance by
  `eval_runner._evaluate_single_relevance_entry` (decode, `is_empty_output`). Undecodable
  arguments and no call are decided there too, not here.

bfcl-eval's install pulls provider SDKs, sentence-transformers, faiss and numpy 1.26.4, none of which
the evaluation of a single-turn AST or irrelevance entry uses, so it is not a dependency: the pinned
wheel is fetched once with `pip download --no-deps` (the wheel the BFCL suite takes its data from)
and its Python files are unpacked into the user cache (~/.cache/rigbench/bfcl/<version>/oracle);
after that the oracle works offline. Third-party modules it imports that are not installed here
(listed in `Oracle.stubbed`) are replaced by inert stand-ins at import time only: every use of a
stand-in is counted, and `verdict` refuses to answer if a verdict touched one.
"""

from __future__ import annotations

import ast
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import subprocess
import sys
import types
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rigbench.suites.agent._bfcl import _FILES, BFCL_VERSION, BFCLItem, fetch_bfcl_data

_touched: list[str] = []  # every use of a stand-in, in order


class _StubMeta(type):
    def __getattr__(cls, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        _touched.append(f"{cls.__qualname__}.{name}")
        return _stub_class(f"{cls.__qualname__}.{name}")


class _Stub(Exception, metaclass=_StubMeta):
    """An absent third-party object: subclassable, raisable, usable as a decorator."""

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        if len(args) == 1 and not kwargs and isinstance(args[0], types.FunctionType):
            return args[0]  # `@final`-style decorator: leave the function as bfcl wrote it
        _touched.append(f"{cls.__qualname__}()")
        return super().__new__(cls)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        _touched.append(f"{type(self).__qualname__}(...)()")
        if len(args) == 1 and not kwargs and callable(args[0]):
            return args[0]  # `@retry(...)`-style decorator
        return _stub_class(type(self).__qualname__ + "()")()

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        _touched.append(f"{type(self).__qualname__}().{name}")
        return _stub_class(f"{type(self).__qualname__}.{name}")()

    def _combine(self, other: Any) -> Any:  # tenacity-style `a | b` retry policies
        _touched.append(f"{type(self).__qualname__}() combined")
        return _stub_class(type(self).__qualname__ + "|")()

    __or__ = __ror__ = __and__ = __rand__ = __add__ = __radd__ = _combine


def _stub_class(name: str) -> type:
    return _StubMeta(name, (_Stub,), {"__qualname__": name})


class _StubModule(types.ModuleType):
    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return _stub_class(f"{self.__name__}.{name}")


class _StubFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def __init__(self, tops: set[str]) -> None:
        self.tops = tops

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if any(name == t or name.startswith(t + ".") for t in self.tops):
            return importlib.machinery.ModuleSpec(name, self, is_package=True)
        return None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        mod = _StubModule(spec.name)
        mod.__path__ = []
        return mod

    def exec_module(self, module: types.ModuleType) -> None:
        pass


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


def _unpack(oracle: Path, data: Path) -> None:
    marker = oracle / ".complete"
    if marker.exists():
        return
    with zipfile.ZipFile(_wheel(data)) as z:
        for m in z.namelist():
            if m.startswith("bfcl_eval/") and m.endswith(".py"):
                dest = oracle / m
                dest.parent.mkdir(parents=True, exist_ok=True)
                dest.write_bytes(z.read(m))
    marker.write_text(BFCL_VERSION)


def _findable(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def _absent_imports(root: Path) -> set[str]:
    """Dotted names bfcl-eval imports that cannot be found here (`openai`, `google.genai`, ...)."""
    names: set[str] = set()
    for f in root.rglob("*.py"):
        try:
            tree = ast.parse(f.read_text(encoding="utf-8"))
        except SyntaxError:
            continue
        for n in ast.walk(tree):
            if isinstance(n, ast.Import):
                names |= {a.name for a in n.names}
            elif isinstance(n, ast.ImportFrom) and n.level == 0 and n.module:
                names.add(n.module)
                names |= {f"{n.module}.{a.name}" for a in n.names}
    names |= {".".join(n.split(".")[:i]) for n in names for i in range(1, n.count(".") + 1)}
    absent: set[str] = set()
    for name in sorted(names, key=lambda x: x.count(".")):
        top = name.split(".")[0]
        if top == "bfcl_eval" or top in sys.stdlib_module_names or any(name.startswith(a + ".") for a in absent):
            continue
        parent, _, last = name.rpartition(".")
        if _findable(name) or (parent and not _findable(parent)):
            continue
        if parent and hasattr(importlib.import_module(parent), last):
            continue  # `from real_module import attribute`
        absent.add(name)
    return absent


@dataclass
class Oracle:
    runner: types.ModuleType  # bfcl_eval.eval_checker.eval_runner
    handler: Any  # the configured family's handler, from bfcl's get_handler
    model: str  # its MODEL_CONFIG_MAPPING key
    enums: types.ModuleType
    stubbed: list[str] = field(default_factory=list)  # absent module names given stand-ins

    def model_result(self, tool_calls: list[dict[str, Any]], content: str) -> Any:
        """BFCL's model result for one chat-completions response, by the handler's own parser."""
        calls = [types.SimpleNamespace(id=f"call_{i}", type="function",
                                       function=types.SimpleNamespace(name=c["function"]["name"],
                                                                      arguments=c["function"]["arguments"]))
                 for i, c in enumerate(tool_calls)]
        message = types.SimpleNamespace(role="assistant", content=content, tool_calls=calls or None)
        response = types.SimpleNamespace(choices=[types.SimpleNamespace(message=message)],
                                         usage=types.SimpleNamespace(prompt_tokens=0, completion_tokens=0))
        return self.handler._parse_query_response_FC(response)["model_responses"]

    def verdict(self, item: BFCLItem, tool_calls: list[dict[str, Any]], content: str = "") -> dict[str, Any]:
        """bfcl-eval's entry result ({"valid": bool, "error_type": ...}) for one response."""
        category = bfcl_category(item)
        prompt = {"id": item.item_id, "function": item.functions}
        before = len(_touched)
        result = self.model_result(tool_calls, content)
        if "irrelevance" in category or category.startswith("live_relevance"):
            out = self.runner._evaluate_single_relevance_entry(self.handler, item.item_id, result, prompt,
                                                              self.model, category)
        else:
            out = self.runner._evaluate_single_ast_entry(
                self.handler, item.item_id, result, item.ground_truth, prompt, self.model, category,
                language=self.enums.Language.PYTHON, return_format=self.enums.ReturnFormat.PYTHON,
                has_tool_call_tag=False)
        if len(_touched) != before:
            raise RuntimeError(f"a BFCL verdict used a stand-in for an absent module: {_touched[before:]}")
        return dict(out)


def bfcl_category(item: BFCLItem) -> str:
    """BFCL's own name of the item's category (e.g. simple -> simple_python)."""
    return _FILES[item.category].removeprefix("BFCL_v4_").removesuffix(".json")


def load_oracle() -> Oracle:
    """bfcl-eval's evaluation runner and the OpenAI-compatible FC handler, from the pinned wheel (cached)."""
    data = fetch_bfcl_data()
    oracle = data / "oracle"
    _unpack(oracle, data)
    absent = _absent_imports(oracle / "bfcl_eval")
    finder = _StubFinder(absent)
    sys.meta_path.append(finder)  # last: a real module always wins
    if str(oracle) not in sys.path:
        sys.path.insert(0, str(oracle))
    try:
        runner = importlib.import_module("bfcl_eval.eval_checker.eval_runner")
        mapping = importlib.import_module("bfcl_eval.constants.model_config").MODEL_CONFIG_MAPPING
        handler_cls = importlib.import_module(
            "bfcl_eval.model_handler.api_inference.openai_completion").OpenAICompletionsHandler
        enums = importlib.import_module("bfcl_eval.constants.enums")
    finally:
        # The stand-ins serve bfcl-eval's imports only: left in place they would answer every later
        # `import pandas` in this process (pyarrow's parquet reader then failed in test_mmlu).
        sys.meta_path.remove(finder)
        for name, mod in list(sys.modules.items()):
            if isinstance(mod, _StubModule):
                del sys.modules[name]
    family = [k for k, c in mapping.items() if c.model_handler is handler_cls and c.is_fc_model]
    if len(family) != 1:
        raise RuntimeError(f"expected one OpenAI-completions FC model in BFCL {BFCL_VERSION}'s config, found {family}")
    handler = runner.get_handler(family[0])
    return Oracle(runner, handler, family[0], enums, sorted(absent))
