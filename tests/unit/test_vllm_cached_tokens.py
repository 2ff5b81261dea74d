"""`rigbench run --engine vllm` launches vLLM with --enable-prompt-tokens-details where that vLLM has it
(issue 24): without it vLLM reports no per-request cached_tokens, and the load windows' prefix-cache check
(no /metrics fallback) said "not reported by the server" on every launched vLLM. Added once: a plan that
already passes it (or its --no- form) in extra_args keeps its own, never a repeated flag.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from rigbench.rig.engines._vllm import VLLM, VLLMLaunch
from rigbench.rig.engines._vllm import _rig as vllm_rig
from rigbench.rig.engines._vllm._env import VLLMInstall
from rigbench.rig.engines._vllm._rig import VLLMRig

FLAG = "--enable-prompt-tokens-details"


def _prepared(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, version: str, **spec: object) -> tuple[list[str], str]:
    """The argv the launched rig would run, with the installed vLLM at `version`, and what it said."""
    monkeypatch.setattr(vllm_rig, "find_vllm", lambda *a: VLLMInstall(Path(sys.executable), "current", version))
    model = tmp_path / "hf-model"
    model.mkdir(exist_ok=True)
    notes: list[str] = []
    rig = VLLMRig(VLLMLaunch(model=str(model), port=8123, **spec), tmp_path / "engine.log", engine=VLLM,
                  note=notes.append)
    rig.prepare()
    assert rig.process.argv == rig.argv  # what runs is what the fingerprint records (its argv)
    return rig.argv, "\n".join(notes)


def test_launched_vllm_gets_the_flag_once_where_it_reports_cached_tokens(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    argv, said = _prepared(tmp_path, monkeypatch, "0.32.0", max_model_len=2048)
    assert argv.count(FLAG) == 1 and argv[-1] == FLAG
    assert f"{FLAG} added (vLLM 0.32.0" in said


@pytest.mark.parametrize("given", [[FLAG], ["--no-enable-prompt-tokens-details"], [f"{FLAG}=true"]])
def test_a_plan_that_sets_it_in_extra_args_keeps_its_own(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         given: list[str]) -> None:
    argv, said = _prepared(tmp_path, monkeypatch, "0.32.0", extra_args=["--seed", "1", *given])
    assert argv[-3:] == ["--seed", "1", *given]  # as written, not refused as a repeat
    assert sum(a.split("=")[0] in (FLAG, "--no-enable-prompt-tokens-details") for a in argv) == 1
    assert "as extra_args set it" in said


def test_an_older_vllm_or_one_of_unknown_version_is_not_given_it_and_the_run_says_so(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    argv, said = _prepared(tmp_path, monkeypatch, "0.8.5")
    assert FLAG not in argv
    assert f"{FLAG} not added: vLLM 0.8.5 is not known to report cached prompt tokens" in said
    # a spec naming its own executable: rigbench does not know which vLLM that is
    argv, said = _prepared(tmp_path, monkeypatch, "0.32.0", executable=["/opt/vllm/bin/vllm", "serve"])
    assert FLAG not in argv and "vLLM (version unknown)" in said
