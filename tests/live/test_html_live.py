"""The HTML report in a real headless browser (Debian's chromium): it loads with no console errors
and no network requests, and a screenshot is produced (kept under $RIGBENCH_SCREENSHOT_DIR if set).

Driven over the DevTools protocol with aiohttp's websocket client: chromium's own --screenshot
mode cannot report console errors or requests.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import re
import shutil
import subprocess
import textwrap
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from tests.needs import requires

pytestmark = pytest.mark.live

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--remote-debugging-port=0", "--window-size=1280,2000"]


async def load_in_browser(page: Path, user_data: Path) -> dict[str, Any]:
    """Open `page`; return console messages, exceptions, requests (non file:) and a PNG screenshot."""
    assert CHROMIUM
    proc = await asyncio.create_subprocess_exec(CHROMIUM, *FLAGS, f"--user-data-dir={user_data}", "about:blank",
                                                stderr=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.DEVNULL)
    try:
        assert proc.stderr is not None
        ws_url = None
        while ws_url is None:
            line = (await asyncio.wait_for(proc.stderr.readline(), 60)).decode()
            assert line, "chromium exited before opening DevTools"
            m = re.search(r"DevTools listening on (ws://\S+)", line)
            ws_url = m.group(1) if m else None
        http_root = ws_url.split("/devtools/")[0].replace("ws://", "http://")
        async with aiohttp.ClientSession() as s:
            async with s.get(f"{http_root}/json/list") as r:
                target = next(t for t in await r.json() if t["type"] == "page")
            async with s.ws_connect(target["webSocketDebuggerUrl"], max_msg_size=0) as ws:
                seq = 0
                events: list[dict[str, Any]] = []

                async def call(method: str, **params: Any) -> dict[str, Any]:
                    nonlocal seq
                    seq += 1
                    await ws.send_json({"id": seq, "method": method, "params": params})
                    while True:
                        msg = json.loads((await asyncio.wait_for(ws.receive(), 60)).data)
                        if msg.get("id") == seq:
                            assert "error" not in msg, msg
                            return dict(msg.get("result", {}))
                        events.append(msg)

                for domain in ("Network", "Runtime", "Log", "Page"):
                    await call(f"{domain}.enable")
                await call("Page.navigate", url=page.as_uri())
                while not any(e.get("method") == "Page.loadEventFired" for e in events):
                    events.append(json.loads((await asyncio.wait_for(ws.receive(), 60)).data))
                await asyncio.sleep(0.5)
                found = await call("Runtime.evaluate", returnByValue=True, expression=(
                    "(() => { const h = [...document.querySelectorAll('h2')].find(e => e.textContent === 'Headline figures');"
                    " return h ? h.getBoundingClientRect().top + window.scrollY : null; })()"))
                runs_y = found.get("result", {}).get("value")
                metrics = await call("Page.getLayoutMetrics")
                height = int(metrics["cssContentSize"]["height"])
                shot = await call("Page.captureScreenshot", format="png", captureBeyondViewport=True,
                                  clip={"x": 0, "y": 0, "width": 1280, "height": min(height, 6000), "scale": 1})
    finally:
        proc.terminate()
        await proc.wait()
    requests = [e["params"]["request"]["url"] for e in events if e.get("method") == "Network.requestWillBeSent"]
    console = [e["params"] for e in events if e.get("method") in ("Runtime.consoleAPICalled", "Log.entryAdded")]
    errors = [e["params"] for e in events if e.get("method") == "Runtime.exceptionThrown"]
    return {"requests": requests, "console": console, "exceptions": errors, "png": base64.b64decode(shot["data"]),
            "height": height, "runs_table_y": runs_y}


def _emulator_plan(tmp_path: Path) -> Path:
    """Two speed+probe runs at two concurrency levels against the reference emulator."""
    from rigbench.plan import execute_plan, load_plan
    from rigbench.testing import Emulator

    async def go() -> None:
        async with Emulator() as emu:
            p = tmp_path / "plan.yaml"
            p.write_text(textwrap.dedent(f"""\
                name: emu
                sanity: false
                suites: [speed, agent_probes]
                speed: {{scenarios: [chat_short, code_generation], repetitions: 2, warmup: 0, concurrency: [1, 2]}}
                rigs:
                  - {{name: base, endpoint: {{base_url: "{emu.url}"}}}}
                  - {{name: again, endpoint: {{base_url: "{emu.url}"}}}}
                """))
            await execute_plan(load_plan(p), tmp_path / "plan")

    asyncio.run(go())
    return tmp_path / "plan"


@requires(CHROMIUM is not None, "chromium is not installed (.ci/run installs it)")
def test_html_report_loads_offline_without_errors(tmp_path: Path) -> None:
    import sys

    plan_dir = _emulator_plan(tmp_path)
    out = tmp_path / "report.html"
    res = subprocess.run([sys.executable, "-m", "rigbench", "report", str(plan_dir), "--html", str(out)],
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    page = out.read_text()
    assert "<script" not in page and "http://" not in page.replace("http://www.w3.org/", "")
    assert page.count("<svg") >= 4  # throughput, speed-up, concurrency, latency (+ agent probes)
    # the answer first: what was measured, then the verdict with its reasons, then headline figures,
    # all before the first plot; the full warnings further down, one collapsed block per run
    assert page.index("<h2>What was measured</h2>") < page.index("<h2>Verdict</h2>") < page.index("<svg")
    assert page.index("UNTRUSTED") < page.index("<h2>Headline figures</h2>") < page.index("<svg")
    warnings = page[page.index("<h2>Warnings</h2>"): page.index("<h2>Fingerprints</h2>")]
    assert warnings.count("<details") == 2 and " open" not in warnings and "<b>base</b>: UNTRUSTED: " in warnings
    # plan rig names label the runs' sections, never a run number
    assert "<h2>base: details</h2>" in page and "<h2>again: details</h2>" in page
    assert not re.search(r"[a-z]#\d\b", page)  # never "llamacpp#1" (CSS colours start after a colon)
    got = asyncio.run(load_in_browser(out, tmp_path / "chromium-profile"))
    # the headline figures start within the first screen, not after a wall of banners
    assert got["runs_table_y"] is not None and got["runs_table_y"] < 800, got["runs_table_y"]
    assert [u for u in got["requests"] if not u.startswith(("file:", "data:"))] == []
    assert got["exceptions"] == []
    assert [c for c in got["console"] if (c.get("entry") or c).get("level") in ("error", "warning")] == []
    assert got["png"][:8] == b"\x89PNG\r\n\x1a\n" and len(got["png"]) > 20_000
    keep = os.environ.get("RIGBENCH_SCREENSHOT_DIR")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        (Path(keep) / "html-report.png").write_bytes(got["png"])
