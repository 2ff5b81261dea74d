"""`python -m rigbench.testing --port N [--script-json JSON]`: the emulator without the CLI."""

from __future__ import annotations

import argparse
import contextlib

from rigbench.testing._script import EmulatorScript
from rigbench.testing._serve import serve

p = argparse.ArgumentParser(prog="python -m rigbench.testing")
p.add_argument("--host", default="127.0.0.1")
p.add_argument("--port", type=int, default=8000)
p.add_argument("--script-json", default="{}")
p.add_argument("--uvloop", action="store_true")
a = p.parse_args()
with contextlib.suppress(KeyboardInterrupt):
    serve(EmulatorScript.model_validate_json(a.script_json), host=a.host, port=a.port, use_uvloop=a.uvloop)
