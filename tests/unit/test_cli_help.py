"""`--help` as a new user reads it at 80 columns: options grouped in panels, descriptions wide enough to
read (not a 16-character column cut mid-word), scenario names and shapes listed, every suite named,
docstrings wrapped as sentences. The whole text is pinned by tests/golden/cli/run_help.txt."""

from __future__ import annotations

import re

import click
import typer
from typer.core import TyperOption
from typer.testing import CliRunner

from rigbench.cli import app
from rigbench.suites import SUITE_NAMES
from rigbench.suites.speed import PROFILES
from tests.unit.cli_inproc import invoke


def _help(*args: str, width: int = 80) -> str:
    res = CliRunner().invoke(app, [*args, "--help"], env={"COLUMNS": str(width)}, prog_name="rigbench")
    assert res.exit_code == 0, res.output
    return res.output


def _flat(text: str) -> str:
    """The help's words in one line, panel borders dropped."""
    return " ".join(text.replace("│", " ").split())


def _run_command() -> click.Command:
    group = typer.main.get_command(app)
    return group.commands["run"]  # type: ignore[attr-defined]


PANELS = {"Rig", "Suites", "Workload (speed suite)", "Rate mode (load suite)", "Output and verdict", "Timeouts and retries",
          "Resume", "Scale-out"}


def test_every_run_option_sits_in_a_named_panel() -> None:
    options = [p for p in _run_command().params if isinstance(p, TyperOption) and p.name != "help"]
    assert len(options) > 60
    loose = [p.name for p in options if not getattr(p, "rich_help_panel", None)]
    assert loose == [], f"`run` options outside the help panels (give their Flag rich_help_panel=): {loose}"
    panels = {getattr(p, "rich_help_panel", None) for p in options}
    assert panels == PANELS, f"a misspelt panel makes a panel of its own: {panels - PANELS}"
    text = _help("run")
    for panel in PANELS:
        assert f"─ {panel} ─" in text, panel


def test_descriptions_are_readable_at_80_columns() -> None:
    text = _help("run")
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= 80
    assert "…" not in text  # no description or option cut
    # where each option's description starts: it leaves at least 32 columns to the text (it was 16)
    starts = []
    for line in lines:
        m = re.match(r"│ (--[a-z-]+)\s+(\S+\s+)?(?=\S)", line)
        if m:
            starts.append(m.end())
    assert len(starts) >= 60, len(starts)
    assert max(starts) <= 80 - 2 - 32, max(starts)
    # sentences are not broken where the docstring's source lines ended
    assert "(cached after the first time)" in _flat(text)
    assert not any(line.strip("│ ").startswith("first time)") for line in lines)


def test_scenarios_help_lists_every_scenario_with_both_shapes() -> None:
    flat = _flat(_help("run"))
    for name in PROFILES["full"]:
        q_in, q_out = PROFILES["quick"][name]
        f_in, f_out = PROFILES["full"][name]
        assert re.search(rf"{name} {q_in}/{q_out} \| {f_in}/{f_out}\b", flat), name


def test_suite_help_names_every_suite() -> None:
    flat = _flat(_help("run"))
    suite_help = flat[flat.index("--suite "):flat.index("[default: speed]")]
    missing = [s for s in SUITE_NAMES if s not in suite_help]
    assert missing == []


def test_flags_have_no_negative_twin_and_show_no_bool_type() -> None:
    text = _help("run") + _help("compare") + _help("report")
    assert "--no-allow" not in text and "--no-retry" not in text
    # click's own --help too, in every command and the group (it read `--help -h <bool>`)
    group = typer.main.get_command(app)
    every = text + _help() + "".join(_help(name) for name in group.commands)  # type: ignore[attr-defined]
    helps = [line for line in every.splitlines() if line.startswith("│ --help")]
    assert len(helps) >= 1 + len(group.commands)  # type: ignore[attr-defined]
    assert "<bool>" not in every, [line for line in every.splitlines() if "<bool>" in line]


def test_lists_are_comma_separated_in_every_command() -> None:
    # check --scenario takes a comma list like run's --scenarios: both shapes are checked, the long one flagged
    argv = ["--", "llama-server", "-m", "x.gguf", "-c", "4096", "-np", "1"]
    res = invoke("check", "--scenario", "short:128:256,long:8192:256", *argv)
    # one of two over the context: a run skips it and measures the other, so a warning (exit 0), not an error
    assert res.traceback is None and res.code == 0, res.stderr
    said = _flat(res.stdout)
    assert "long (8192+256)" in said and "short (" not in said
    control = invoke("check", "--scenario", "short:128:256", *argv)  # healthy: fits, no finding
    assert control.code == 0 and "scenario_over_context" not in control.stdout
    # repeated options stay only for values that may hold commas
    flat = _flat(_help("run"))
    assert "Extra engine argument, repeatable (an argument may hold commas)" in flat


def test_usage_names_the_command_as_a_user_types_it() -> None:
    res = invoke("run", "--help")
    assert "Usage: rigbench run [OPTIONS] [PLAN]" in res.stdout


def test_the_roofline_and_kv_model_file_is_model_file() -> None:
    for cmd in ("roofline", "kv"):
        text = _help(cmd)
        assert "--model-file" in text
        assert not re.search(r"│ --model\s", text), cmd  # the old name works, hidden and deprecated
    res = invoke("roofline", "--model", "/nonexistent.gguf", "--bandwidth-gbs", "100")
    assert res.code == 2 and "deprecated" in res.stderr
