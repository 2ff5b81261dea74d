"""Details of one machine's session that say nothing about the rig: a path under a home or temporary
directory, the ephemeral port the server happened to get. Hidden in published reports (unless asked
for) and ignored when telling whether two rigs differ.
"""

from __future__ import annotations

import os
import re
from pathlib import PurePosixPath
from typing import Any

__all__ = ["hide_session_details", "session_neutral"]

# A path under a home directory or a temporary directory: its location says nothing about the rig.
_PRIVATE_PATH = re.compile(r"(?:~|/root|/home/[^/\s]+|/Users/[^/\s]+|/tmp|/var/tmp|/private/var/folders/[^\s]*?)"
                           r"(?:/[^\s/'\",;)<>]+)+")  # `<`, `>`: an HTML tag ends the path
# host:port in a URL, and the value after --port
_URL_PORT = re.compile(r"(?P<host>(?:https?://)?(?:127\.0\.0\.1|localhost|0\.0\.0\.0|\[::1\])):\d{2,5}")
_PORT_ARG = re.compile(r"(?P<flag>--port[ =])\d{2,5}")


def _basename(m: re.Match[str]) -> str:
    return PurePosixPath(m.group(0)).name


def hide_session_details(text: str) -> str:
    """`text` with private paths cut to their file name and local ports replaced by `PORT`."""
    home = os.path.expanduser("~")
    if home not in ("", "/") and not _PRIVATE_PATH.match(home):
        text = text.replace(home + "/", "~/")
    text = _PRIVATE_PATH.sub(_basename, text)
    text = _URL_PORT.sub(lambda m: f"{m.group('host')}:PORT", text)
    return _PORT_ARG.sub(lambda m: f"{m.group('flag')}PORT", text)


def session_neutral(value: Any) -> Any:
    """A fingerprint value with paths and ports hidden, to tell whether two rigs differ for real."""
    if isinstance(value, str):
        return hide_session_details(value)
    if isinstance(value, list | tuple):  # a command line: the value after --port is a port too
        return ["PORT" if i and value[i - 1] == "--port" and str(v).isdigit() else session_neutral(v)
                for i, v in enumerate(value)]
    if isinstance(value, dict):
        return {k: session_neutral(v) for k, v in value.items()}
    return value
