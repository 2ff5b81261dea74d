"""Server faults (issue 22, item 7): a malformed stream of any kind is an error record, never a
shorter "successful" output.

Adversary: a server (or a proxy in front of it) whose 200 text/event-stream body holds lines that
are not SSE among valid events, bad JSON, a JSON value that is not an object, or stops mid-stream.
Before: a line without `data:` was skipped and the request counted as a success with fewer tokens.
Control: a well-formed stream, with `event:`/`id:` fields and keep-alive comments, is a success.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from rigbench.client import AiohttpTransport, ChatClient, StampedTransport, StreamTransport
from rigbench.testing import Delay, EmulatorProcess, EmulatorScript, Fault
from tests.unit.cli_inproc import invoke

TOKEN = b'data: {"choices":[{"index":0,"delta":{"content":"hi "}}]}\n\n'
END = b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n'
BODIES: dict[str, bytes] = {
    "healthy": b": keep-alive\n\nevent: message\nid: 1\n" + TOKEN * 3 + END,
    "bare_json_line": TOKEN + b'{"choices":[{"index":0,"delta":{"content":"lost "}}]}\n\n' + TOKEN + END,
    "text_line": TOKEN + b"upstream proxy: connection reset, retrying\n\n" + TOKEN + END,
    "html_page": b"<html><body>502 Bad Gateway</body></html>\n\n",
    "bad_json": TOKEN + b'data: {"choices":[{"index":0,"delta":{"content":\n\n' + END,
    "not_an_object": TOKEN + b"data: [1, 2, 3]\n\n" + END,
    "truncated": TOKEN + b'data: {"choices":[{"index":0,"delta":{"con',
    "no_end": TOKEN * 2,
}
EXPECTED = {"bare_json_line": "malformed_sse", "text_line": "malformed_sse", "html_page": "malformed_sse",
            "bad_json": "malformed_sse", "not_an_object": "malformed_sse", "truncated": "malformed_sse",
            "no_end": "disconnect"}


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    class Streams(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            body = BODIES[self.path.split("/")[2]]  # /v1/CASE/chat/completions
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    srv = ThreadingHTTPServer(("127.0.0.1", 0), Streams)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{srv.server_address[1]}/v1"
    srv.shutdown()


@pytest.mark.parametrize("transport", [StampedTransport, AiohttpTransport])
@pytest.mark.parametrize("case", list(BODIES))
async def test_every_kind_of_malformed_stream_is_an_error_record(server: str, case: str,
                                                              transport: type[StreamTransport]) -> None:
    async with ChatClient(server, transport=transport()) as c:
        r = await c.stream_chat({"model": "m", "messages": [{"role": "user", "content": "x"}]},
                                path=f"/{case}/chat/completions")
    if case == "healthy":
        assert r.ok and r.content == "hi hi hi ", (r.error, r.content)
        return
    assert r.error is not None, f"{case}: counted as a success with {r.content!r}"
    assert r.error.kind == EXPECTED[case], (case, r.error)


@pytest.mark.parametrize(("every", "finding"), [(1, True), (4, False)])
def test_a_run_whose_server_rejected_most_requests_says_so(tmp_path: Path, every: int, finding: bool) -> None:
    script = EmulatorScript(ttft=Delay(mean_ms=2), itl=Delay(mean_ms=1), output_tokens=8,
                            faults=[Fault(kind="http_status", status=429, message="slow down", every=every)])
    with EmulatorProcess(script) as emu:
        res = invoke("run", "--endpoint", emu.url, "--no-sanity", "--allow-untrusted", "--scenarios", "chat_short",
                     "--repetitions", "4", "--warmup", "0", "--out", str(tmp_path))
    assert res.code == 0 and res.traceback is None, res.stderr
    said = " ".join(res.stdout.split())
    rejected = "rejected 4 of 4 measured requests (HTTP 429 x4)"
    assert (rejected in said) is finding, said[:2500]
    assert ("the server rejected" in said) is finding
