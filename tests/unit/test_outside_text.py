"""Outside text is text (issue 22, item 9): what a server, a model or a user wrote is shown, never
interpreted, by the terminal, the Markdown report and the HTML report.

Adversary: the emulator's `hostile_text` persona (replies wrapped in cursor-up + erase-line, a
colour, console markup, an emoji code, raw HTML, a Markdown link), a model name and an HTTP error
body carrying the same. Healthy control: ordinary text passes through unchanged.
"""

from __future__ import annotations

import re
from pathlib import Path

from rigbench.outside import for_console, for_html, for_markdown, visible
from rigbench.store import RunReader
from rigbench.testing import Delay, EmulatorProcess, EmulatorScript, Fault
from rigbench.testing._rogue import HOSTILE
from tests.unit.cli_inproc import invoke

HOSTILE_SERVER = EmulatorScript(model="m" + HOSTILE, ttft=Delay(mean_ms=2), itl=Delay(mean_ms=1), output_tokens=16,
                                persona="hostile_text",
                                faults=[Fault(kind="http_status", status=503, message="E" + HOSTILE, every=3)])
# Anything a terminal acts on: C0 controls but newline, DEL, C1 controls, bidi overrides.
LIVE_CONTROL = re.compile(r"[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def _no_live_control(where: str, text: str) -> None:
    m = LIVE_CONTROL.search(text)
    assert m is None, f"{where} carries a live control character {m.group(0)!r}: {text[max(0, m.start() - 80):m.end() + 80]!r}"


def test_a_hostile_server_cannot_drive_the_terminal_or_the_reports(tmp_path: Path) -> None:
    md = tmp_path / "r.md"
    with EmulatorProcess(HOSTILE_SERVER) as emu:
        res = invoke("run", "--endpoint", emu.url, "--scenarios", "chat_short", "--repetitions", "2", "--warmup", "0",
                     "--out", str(tmp_path / "runs"), "--markdown", str(md), "--label", "bad:x:y")
    assert res.traceback is None, res.traceback
    assert res.code == 1  # the gate fails (wrapped answers): UNTRUSTED, which nothing may hide
    (run_dir,) = (tmp_path / "runs").iterdir()
    assert "m" + HOSTILE in RunReader(run_dir).header.fingerprint.model.served_name  # type: ignore[union-attr]  # stored as served
    out = res.stdout + res.stderr
    _no_live_control("the terminal output", out)
    flat = " ".join(res.stdout.split())
    assert "verdict UNTRUSTED" in flat and "The run is UNTRUSTED" in res.stderr
    assert "[bold green]TRUSTED[/]" in out  # console markup shown as written...
    assert ":x:" in out and "❌" not in out  # ...and the emoji code too
    assert "\\x1b[1A\\x1b[2K" in out  # the escape sequence shown, visibly

    page = tmp_path / "r.html"
    res = invoke("report", str(run_dir), "--html", str(page))
    assert res.code == 0 and res.traceback is None, res.stderr
    for name, text in (("Markdown", md.read_text()), ("HTML", page.read_text())):
        _no_live_control(f"the {name} report", text)
        assert "<script>alert" not in text and "<img src=x" not in text, name
    assert not re.search(r"(?<!\\)\]\(javascript:|(?<!\\)\*\*pwned", md.read_text())  # no live link, no emphasis
    assert "&lt;script&gt;alert(1)" in page.read_text()
    assert "\\[click\\](javascript:alert(3))" in md.read_text() and "&lt;script>alert(1)" in md.read_text()


def test_a_name_a_user_typed_is_shown_as_written() -> None:
    res = invoke("run", "--endpoint", "http://127.0.0.1:9/v1", "--scenarios", "bad:x:y")
    assert res.code == 2 and res.traceback is None
    assert "bad:x:y" in res.stderr and "❌" not in res.stderr


def test_ordinary_text_passes_unchanged() -> None:
    plain = "chat_short c=4: TTFT 12.5±0.3 ms, Grüße 日本語 — ok\ttab"
    assert visible(plain) == plain and for_console(plain) == plain
    assert for_markdown("chat_short p<0.001 & 2 > 1") == "chat_short p<0.001 & 2 > 1"
    assert for_html(plain) == plain.replace("\u2014", "\u2014")
    assert visible("a\nb", multiline=True) == "a\nb" and visible("a\nb") == "a\\x0ab"


def test_each_medium_disarms_its_own_syntax() -> None:
    assert for_console("[red]x[/]") == "\\[red]x\\[/]"
    assert for_markdown("**b** [l](u) <b>x</b> | # h") == "\\*\\*b\\*\\* \\[l\\](u) &lt;b>x&lt;/b> \\| # h"
    assert for_markdown("# heading") == "\\# heading" and for_markdown("a\nb") == "a b"
    assert for_html("<b>&") == "&lt;b&gt;&amp;"
    assert visible("\x1b[2J\r\x08\x07\x9b\u202e") == "\\x1b[2J\\x0d\\x08\\x07\\x9b\\u202e"
