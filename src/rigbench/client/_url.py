"""Endpoint URLs as rigbench prints and stores them: never with credentials, loopback said plainly."""

from __future__ import annotations

import ipaddress
import re
from urllib.parse import urlsplit, urlunsplit

__all__ = ["is_loopback_url", "redact_text", "redact_url", "url_has_userinfo"]

_USERINFO = re.compile(r"(?<=://)[^/@\s\"'<>]+@")


def url_has_userinfo(url: str) -> bool:
    try:
        return "@" in (urlsplit(url).netloc or "")
    except ValueError:
        return False


def redact_url(url: str) -> str:
    """`http://user:secret@host:8000/v1` -> `http://host:8000/v1`: the form that may be printed or stored.

    Adversary: a user pasting a URL with credentials; they must not end up in run.json, records,
    logs or reports, which are shared.
    """
    try:
        u = urlsplit(url)
    except ValueError:
        return url.rsplit("@", 1)[-1] if "@" in url else url
    if "@" not in u.netloc:
        return url
    return urlunsplit((u.scheme, u.netloc.rsplit("@", 1)[1], u.path, u.query, u.fragment))


def is_loopback_url(url: str) -> bool:
    """True for 127.0.0.0/8, ::1 and localhost: the server runs on the machine that runs rigbench."""
    try:
        host = urlsplit(url).hostname or ""
    except ValueError:
        return False
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def redact_text(text: str) -> str:
    """Every `scheme://user:secret@` in a text (a plan file copied into its plan directory) without the userinfo."""
    return _USERINFO.sub("", text)
