"""Run `rigbench ...` in this process, as the console script would (rigbench.cli.main), capturing
exit code, stdout and stderr. Much cheaper than a subprocess per case on a busy 2-core machine.

An exception escaping `main()` is what a user would see as a traceback: it is returned as
`traceback`, never raised, so callers can assert there is none.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
import traceback as tb
from typing import NamedTuple

__all__ = ["Result", "invoke"]


class Result(NamedTuple):
    code: int
    stdout: str
    stderr: str
    traceback: str | None


def invoke(*args: str) -> Result:
    from rigbench.cli import main

    out, err = io.StringIO(), io.StringIO()
    argv, cols = sys.argv, os.environ.get("COLUMNS")
    sys.argv = ["rigbench", *args]
    os.environ["COLUMNS"] = "200"
    code, trace = 0, None
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                main()
            except SystemExit as e:
                code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
            except BaseException:  # a traceback is the finding: returned to the test, not raised
                trace = tb.format_exc()
                code = -1
    finally:
        sys.argv = argv
        if cols is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = cols
    return Result(code, out.getvalue(), err.getvalue(), trace)
