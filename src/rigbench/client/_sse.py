"""Incremental Server-Sent Events framing: bytes in, complete `data:` payloads out.

Only what OpenAI-compatible servers send is handled: `data:` lines, `:` comments, blank-line
event boundaries, CRLF or LF. Multi-line `data:` fields are joined with a newline, as the SSE
spec says.
"""

from __future__ import annotations

__all__ = ["COMMENT", "SSEParser"]

COMMENT = object()  # marker yielded for a comment line (keep-alive)


class SSEParser:
    __slots__ = ("_buf", "_data")

    def __init__(self) -> None:
        self._buf = b""
        self._data: list[bytes] = []

    def feed(self, chunk: bytes) -> list[bytes | object]:
        """Return the payloads of every event completed by `chunk` (bytes, or COMMENT)."""
        buf = self._buf + chunk if self._buf else chunk
        out: list[bytes | object] = []
        start = 0
        while True:
            nl = buf.find(b"\n", start)
            if nl < 0:
                break
            line = buf[start:nl]
            start = nl + 1
            if line.endswith(b"\r"):
                line = line[:-1]
            if not line:
                if self._data:
                    out.append(self._data[0] if len(self._data) == 1 else b"\n".join(self._data))
                    self._data = []
                continue
            if line.startswith(b"data:"):
                value = line[5:]
                self._data.append(value[1:] if value.startswith(b" ") else value)
            elif line.startswith(b":"):
                out.append(COMMENT)
            # other fields (event:, id:, retry:) carry nothing we need
        self._buf = buf[start:]
        return out

    def flush(self) -> list[bytes | object]:
        """End of stream: a final event without its blank line still counts."""
        out: list[bytes | object] = []
        if self._buf:
            out.extend(self.feed(b"\n"))
        if self._data:
            out.append(b"\n".join(self._data))
            self._data = []
        return out
