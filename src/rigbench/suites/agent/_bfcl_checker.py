"""rigbench's own grader for BFCL's AST categories, following the rules of BFCL's `ast_checker`.

Written from `bfcl_eval/eval_checker/ast_eval/ast_checker.py` in the bfcl-eval 2026.3.23 wheel
(gorilla repo, berkeley-function-call-leaderboard), Python language only:

- simple: exactly one call; multiple: exactly one call, checked against the one expected function;
  parallel and parallel_multiple: as many calls as expected, matched in any order;
  irrelevance: valid when the model makes no call.
- One call: the name must match; every required parameter present; no parameter that is not in
  both the schema and the possible answer; every possible-answer parameter present unless its
  answers include "" (optional).
- Types: the schema type ("integer", "float", "string", "boolean", "array", "tuple", "dict",
  "any") must match; an int is accepted for a "float" parameter (not inside an array); arrays
  check their items' types one level deep.
- Values: the value must be one of the possible answers. Strings are compared after removing
  spaces and `,./-_*^`, lowercasing and turning ' into "; lists element-wise the same way;
  dicts key by key with the same string rule.
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple, cast

__all__ = ["CheckResult", "check_item", "standardize_string"]

_PY_TYPES: dict[str, type] = {
    "string": str,
    "integer": int,
    "float": float,
    "boolean": bool,
    "array": list,
    "tuple": list,
    "dict": dict,
    "any": str,
}
_NESTED = ("array", "tuple")


class CheckResult(NamedTuple):
    valid: bool
    error_type: str | None = None
    error: str | None = None


_OK = CheckResult(True)


def standardize_string(s: str) -> str:
    return re.sub(r"[ \,\.\/\-\_\*\^]", "", s).lower().replace("'", '"')


def _std(v: Any) -> Any:
    return standardize_string(v) if isinstance(v, str) else v


def _answer_type(answers: list[Any]) -> type | None:
    return next((type(a) for a in answers if a != ""), None)


def _type_ok(value: Any, answers: list[Any], expected: type, nested: type | None) -> tuple[bool, bool]:
    """(valid, is_variable): BFCL accepts a value of the possible answer's type as a variable name."""
    ans_type = _answer_type(answers)
    is_variable = ans_type is not None and ans_type is not expected
    if type(value) is expected:
        if nested is None:
            return True, is_variable
        items = cast(list[Any], value)
        for ans in answers:
            if not isinstance(ans, list):
                return True, is_variable
            # BFCL's nested rule: each item has the schema's item type or, as a variable would,
            # the type of that possible answer's items (parallel_multiple_94, _187, _195).
            item_type = _answer_type(ans)
            if all(type(v) is nested or (item_type is not None and type(v) is item_type) for v in items):
                return True, is_variable
        return False, False
    if ans_type is not None and type(value) is ans_type:
        return True, True
    return False, False


def _dict_ok(value: dict[str, Any], answers: list[Any]) -> bool:
    for ans in answers:
        if ans == "" or not isinstance(ans, dict):
            continue
        if all(k in ans and _std(v) in [_std(a) for a in ans[k]] for k, v in value.items()) and all(
            k in value or "" in vals for k, vals in ans.items()
        ):
            return True
    return False


def sent_name(name: str) -> str:
    """The name a function was sent under: OpenAI names allow no '.', so BFCL (and rigbench) send '_'."""
    return name.replace(".", "_")


def _check_one(
    schema: dict[str, Any], call: dict[str, dict[str, Any]], answer: dict[str, dict[str, list[Any]]]
) -> CheckResult:
    name = sent_name(schema["name"])
    expected = answer[next(iter(answer))]
    if name not in call:
        return CheckResult(
            False,
            "simple_function_checker:wrong_func_name",
            f"function {name!r} not found in model output {list(call)}",
        )
    params = call[name]
    props = schema["parameters"].get("properties", {})
    for req in schema["parameters"].get("required", []):
        if req not in params:
            return CheckResult(False, "simple_function_checker:missing_required", f"missing required {req!r}")
    for p, value in params.items():
        if p not in props or p not in expected:
            return CheckResult(
                False, "simple_function_checker:unexpected_param", f"unexpected parameter {p!r}"
            )
        type_name = props[p].get("type", "string")
        exp_type = _PY_TYPES.get(type_name, str)
        nested = (
            _PY_TYPES.get((props[p].get("items") or {}).get("type", "string"), str)
            if type_name in _NESTED
            else None
        )
        if type_name == "float" and type(value) is int:
            value = float(value)
        ok, is_variable = _type_ok(value, expected[p], exp_type, nested)
        if not ok:
            return CheckResult(
                False,
                "type_error:simple",
                f"wrong type for {p!r}: expected {type_name}, got {type(value).__name__}",
            )
        if is_variable:
            if value not in expected[p]:
                return CheckResult(False, "value_error:others", f"invalid value for {p!r}: {value!r}")
            continue
        if exp_type is dict:
            if not _dict_ok(value, expected[p]):
                return CheckResult(False, "value_error:dict_value", f"invalid dict for {p!r}: {value!r}")
        elif exp_type is list and nested is dict:
            if not any(
                isinstance(a, list)
                and len(a) == len(value)
                and all(_dict_ok(v, [d]) for v, d in zip(value, a, strict=True))
                for a in expected[p]
            ):
                return CheckResult(False, "value_error:list_dict_count", f"invalid list of dicts for {p!r}")
        elif exp_type is str:
            if _std(value) not in [_std(a) for a in expected[p] if isinstance(a, str)]:
                return CheckResult(
                    False,
                    "value_error:string",
                    f"invalid value for {p!r}: {value!r}, expected one of {expected[p]}",
                )
        elif exp_type is list:
            if [_std(v) for v in value] not in [
                [_std(x) for x in a] for a in expected[p] if isinstance(a, list)
            ]:
                return CheckResult(
                    False,
                    "value_error:list/tuple",
                    f"invalid value for {p!r}: {value!r}, expected one of {expected[p]}",
                )
        elif value not in expected[p]:
            return CheckResult(
                False,
                "value_error:others",
                f"invalid value for {p!r}: {value!r}, expected one of {expected[p]}",
            )
    for p, vals in expected.items():
        if p not in params and "" not in vals:
            return CheckResult(False, "simple_function_checker:missing_optional", f"missing parameter {p!r}")
    return _OK


def _schema(functions: list[dict[str, Any]], name: str) -> dict[str, Any] | None:
    return next((f for f in functions if f["name"] == name), None)


def check_item(
    category: str,
    functions: list[dict[str, Any]],
    calls: list[dict[str, dict[str, Any]]],
    ground_truth: list[dict[str, dict[str, list[Any]]]] | None,
) -> CheckResult:
    """Grade decoded calls `[{name: {param: value}}]` for one BFCL item of `category`.

    Names are as sent to the model (`sent_name`: '.' became '_'); a dotted name is a wrong name.
    """
    if category == "irrelevance":
        if calls:
            return CheckResult(False, "irrelevance_error:decoder_success", f"made {len(calls)} call(s)")
        return _OK
    assert ground_truth is not None
    if len(calls) != len(ground_truth) or (category in ("simple", "multiple") and len(calls) != 1):
        return CheckResult(
            False, f"{category}:wrong_count", f"expected {len(ground_truth)} call(s), got {len(calls)}"
        )
    if "parallel" not in category:
        schema = _schema(functions, next(iter(ground_truth[0])))
        if schema is None:
            return CheckResult(False, "data_error", "expected function missing from the item's functions")
        return _check_one(schema, calls[0], ground_truth[0])
    matched: set[int] = set()
    for answer in ground_truth:
        schema = _schema(functions, next(iter(answer)))
        if schema is None:
            return CheckResult(False, "data_error", "expected function missing from the item's functions")
        last = _OK
        for i, call in enumerate(calls):
            if i in matched:
                continue
            last = _check_one(schema, call, answer)
            if last.valid:
                matched.add(i)
                break
        else:
            return CheckResult(
                False,
                "parallel_function_checker_no_order:cannot_find_match",
                f"no call matches expected {next(iter(answer))}: {last.error}",
            )
    return _OK
