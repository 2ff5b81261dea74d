"""Re-create the checked-in emulator run pair (tests/golden/emulator_a, emulator_b): speed at two
concurrency levels, MMLU-Pro on the fixture, the multilingual pack and the agent probes, against
the reference emulator. B's emulator answers with tool calls, so its probe verdicts differ.

    python tests/golden/make_emulator_pair.py    # then update the golden text (test_golden_cli.py)
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from rigbench.testing import Delay, EmulatorProcess, EmulatorScript

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


def make(name: str, script: EmulatorScript) -> None:
    out = HERE / f"_{name}"
    shutil.rmtree(out, ignore_errors=True)
    with EmulatorProcess(script) as emu:
        subprocess.run([sys.executable, "-m", "rigbench", "run", "--endpoint", emu.url,
                        "--suite", "speed,mmlu_pro,packs,agent_probes", "--scenarios", "chat_short,code_generation",
                        "--concurrency", "1,2", "--repetitions", "2", "--warmup", "0",
                        "--mmlu-data", "tests/fixtures/mmlu_pro", "--no-sanity", "--allow-untrusted",
                        "--label", name, "--out", str(out)], check=True, capture_output=True, cwd=ROOT)
    run = next(out.iterdir())
    dest = HERE / name
    shutil.rmtree(dest, ignore_errors=True)
    shutil.move(str(run), dest)
    shutil.rmtree(out)


if __name__ == "__main__":
    base = dict(ttft=Delay(mean_ms=5), itl=Delay(mean_ms=1), output_tokens=32)
    make("emulator_a", EmulatorScript(**base))  # type: ignore[arg-type]
    make("emulator_b", EmulatorScript(**base, tool_call=True))  # type: ignore[arg-type]
