"""rigbench's BFCL checker follows BFCL's AST rules; the loader reads the wheel's layout."""

from __future__ import annotations

from pathlib import Path

import pytest

from rigbench.suites.agent._bfcl import BFCL_CATEGORIES, load_bfcl, to_tools
from rigbench.suites.agent._bfcl_checker import check_item, standardize_string

FIX = Path(__file__).parents[1] / "fixtures" / "bfcl"


def _item(cat: str, idx: int = 0):  # type: ignore[no-untyped-def]
    return load_bfcl(FIX, cat)[idx]


def test_loader_reads_every_category_with_answers() -> None:
    for cat in BFCL_CATEGORIES:
        items = load_bfcl(FIX, cat)
        assert len(items) == 2
        assert (items[0].ground_truth is None) == (cat == "irrelevance")
        assert items[0].messages[0]["role"] == "user"


def test_simple_accepts_the_answer_with_optional_param_left_out() -> None:
    it = _item("simple")
    assert check_item(
        "simple", it.functions, [{"calculate_triangle_area": {"base": 10, "height": 5}}], it.ground_truth
    ).valid


def test_simple_string_compare_ignores_case_and_punctuation() -> None:
    it = _item("simple")
    call = {"calculate_triangle_area": {"base": 10, "height": 5, "unit": "Units."}}
    assert check_item("simple", it.functions, [call], it.ground_truth).valid
    assert standardize_string("April 1, 2024") == standardize_string("april 1 2024")


@pytest.mark.parametrize(
    ("call", "error_type"),
    [
        ({"calculate_triangle_area": {"base": 11, "height": 5}}, "value_error:others"),
        ({"calculate_triangle_area": {"base": "10", "height": 5}}, "type_error:simple"),
        ({"calculate_triangle_area": {"base": 10}}, "simple_function_checker:missing_required"),
        (
            {"calculate_triangle_area": {"base": 10, "height": 5, "color": "red"}},
            "simple_function_checker:unexpected_param",
        ),
        ({"triangle_area": {"base": 10, "height": 5}}, "simple_function_checker:wrong_func_name"),
    ],
)
def test_simple_rejects(call: dict, error_type: str) -> None:  # type: ignore[type-arg]
    it = _item("simple")
    r = check_item("simple", it.functions, [call], it.ground_truth)
    assert not r.valid and r.error_type == error_type


def test_two_calls_for_a_simple_item_is_wrong_count() -> None:
    it = _item("simple", 1)
    call = {"math.factorial": {"number": 5}}
    assert check_item("simple", it.functions, [call], it.ground_truth).valid
    assert (
        check_item("simple", it.functions, [call, call], it.ground_truth).error_type == "simple:wrong_count"
    )


def test_int_accepted_for_float_parameter() -> None:
    it = _item("parallel_multiple", 1)  # length/breadth/radius are floats with answers 7.0/3.0/5.0
    calls = [
        {"area_circle.calculate": {"radius": 5}},
        {"area_rectangle.calculate": {"length": 7, "breadth": 3}},
    ]
    assert check_item("parallel_multiple", it.functions, calls, it.ground_truth).valid


def test_parallel_matches_in_any_order_and_needs_every_call() -> None:
    it = _item("parallel")
    a = {"spotify.play": {"artist": "Taylor Swift", "duration": 20}}
    b = {"spotify.play": {"artist": "Maroon 5", "duration": 15}}
    assert check_item("parallel", it.functions, [b, a], it.ground_truth).valid
    assert not check_item("parallel", it.functions, [a], it.ground_truth).valid
    swapped = {"spotify.play": {"artist": "Maroon 5", "duration": 20}}
    r = check_item("parallel", it.functions, [a, swapped], it.ground_truth)
    assert r.error_type == "parallel_function_checker_no_order:cannot_find_match"


def test_list_argument_compared_element_wise() -> None:
    it = _item("parallel_multiple")
    ok = [
        {"math_toolkit.sum_of_multiples": {"lower_limit": 1, "upper_limit": 1000, "multiples": [3, 5]}},
        {"math_toolkit.product_of_primes": {"count": 5}},
    ]
    assert check_item("parallel_multiple", it.functions, ok, it.ground_truth).valid
    bad = [dict(ok[0]), ok[1]]
    bad[0] = {"math_toolkit.sum_of_multiples": {"lower_limit": 1, "upper_limit": 1000, "multiples": [5, 3]}}
    assert not check_item("parallel_multiple", it.functions, bad, it.ground_truth).valid


def test_irrelevance_passes_only_without_calls() -> None:
    it = _item("irrelevance")
    assert check_item("irrelevance", it.functions, [], None).valid
    r = check_item(
        "irrelevance", it.functions, [{"determine_body_mass_index": {"weight": 1.0, "height": 2.0}}], None
    )
    assert not r.valid and r.error_type == "irrelevance_error:decoder_success"


def test_to_tools_converts_types_and_dotted_names_like_bfcl() -> None:
    it = _item("parallel_multiple", 1)
    tools, names = to_tools(it.functions)
    fn = tools[0]["function"]
    assert "." not in fn["name"] and names[fn["name"]] == it.functions[0]["name"]
    assert fn["parameters"]["type"] == "object"
    types = {p["type"] for t in tools for p in t["function"]["parameters"]["properties"].values()}
    assert types <= {"integer", "number", "string", "boolean", "array", "object"}
    assert it.functions[0]["parameters"]["type"] == "dict"  # the source item is left untouched
