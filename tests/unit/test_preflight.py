"""Preflight: each config trap from the seeds is caught with evidence and a fix; clean commands pass."""

from __future__ import annotations

from rigbench.honesty._preflight import PreflightInput, ScenarioLength, parse_command, preflight

GLIMMER_D15 = ("vllm serve meta-models/Muse-Glimmer-30B --served-model-name muse-glimmer "
               "--speculative-config '{\"method\":\"dflash\",\"model\":\"meta-models/Muse-Glimmer-30B-assistant\","
               "\"num_speculative_tokens\":15}' --generation-config auto")


def ids(report: object) -> set[str]:
    return {f.id for f in report.findings}  # type: ignore[attr-defined]


def test_parses_vllm_serve() -> None:
    cmd = parse_command(GLIMMER_D15)
    assert cmd.engine == "vllm" and cmd.model == "meta-models/Muse-Glimmer-30B"
    assert cmd.options["--served-model-name"] == "muse-glimmer"


def test_seed_dflash_depth_15_overruns_the_default_budget() -> None:
    r = preflight(GLIMMER_D15)
    [f] = [f for f in r.findings if f.id == "vllm_spec_token_budget"]
    assert f.severity == "error"
    assert "4096" in f.problem and "2048" in f.evidence and "(default)" in f.evidence
    assert "--max-num-batched-tokens 4096" in f.fix


def test_seed_fix_clears_it() -> None:
    assert "vllm_spec_token_budget" not in ids(preflight(GLIMMER_D15 + " --max-num-batched-tokens 8192"))
    # fewer sequences also fit: 64 x 16 = 1024 <= 2048
    assert "vllm_spec_token_budget" not in ids(preflight(GLIMMER_D15 + " --max-num-seqs 64"))


def test_generation_config() -> None:
    assert "vllm_generation_config" not in ids(preflight(GLIMMER_D15))
    assert "vllm_generation_config" in ids(preflight("vllm serve m"))
    assert "vllm_generation_config" in ids(preflight("vllm serve m --generation-config vllm"))


def test_tools_need_a_parser() -> None:
    tools = PreflightInput(uses_tools=True)
    assert "tools_without_parser" in ids(preflight("vllm serve m --generation-config auto", tools))
    ok = "vllm serve m --generation-config auto --enable-auto-tool-choice --tool-call-parser hermes"
    assert "tools_without_parser" not in ids(preflight(ok, tools))
    assert "tools_without_parser" in ids(preflight("python -m sglang.launch_server --model-path m", tools))
    assert "tools_without_parser" in ids(preflight("llama-server -m m.gguf --no-jinja", tools))
    assert "tools_without_parser" not in ids(preflight("llama-server -m m.gguf --jinja", tools))
    # no tools requested: no finding
    assert "tools_without_parser" not in ids(preflight("vllm serve m --generation-config auto"))


def test_eom_stop_splits_the_turn() -> None:
    cmd = "vllm serve m --generation-config auto --override-generation-config '{\"stop\": [\"<|eom|>\"]}'"
    r = preflight(cmd, PreflightInput(uses_tools=True))
    [f] = [f for f in r.findings if f.id == "stop_splits_turn"]
    assert f.severity == "error" and "<|eom|>" in f.evidence
    assert "stop_splits_turn" in ids(preflight("vllm serve m", PreflightInput(stop=["<|eom_id|>"])))
    assert "stop_splits_turn" not in ids(preflight("vllm serve m", PreflightInput(stop=["<|eot|>"])))


def test_llamacpp_context_is_per_slot() -> None:
    scen = [ScenarioLength(name="long", input_tokens=3000, output_tokens=256),
            ScenarioLength(name="short", input_tokens=128, output_tokens=256)]
    r = preflight("llama-server -m m.gguf -c 8192 -np 4", PreflightInput(scenarios=scen))
    [f] = [f for f in r.findings if f.id == "scenario_over_context"]
    assert "2048 per request" in f.evidence and "long" in f.evidence and "short" not in f.evidence
    assert "scenario_over_context" not in ids(preflight("llama-server -m m.gguf -c 8192 -np 2",
                                                        PreflightInput(scenarios=scen)))


def test_a_scenario_over_the_context_is_skipped_with_a_note_unless_none_fits() -> None:
    """Issue 30 item 6: `--profile full` on the embedded rig (8,192 tokens of context) skips the scenarios
    that do not fit and measures the rest; that is a warning, not a verdict. Nothing left to measure is."""
    full = [ScenarioLength(name="chat_short", input_tokens=128, output_tokens=256),
            ScenarioLength(name="summarization", input_tokens=16384, output_tokens=128)]
    [f] = [f for f in preflight(None, PreflightInput(scenarios=full, served_context_tokens=8192)).findings
           if f.id == "scenario_over_context"]
    assert f.severity == "warn" and "a run skips them" in f.problem and "summarization" in f.evidence
    [g] = [f for f in preflight(None, PreflightInput(scenarios=full[1:], served_context_tokens=8192)).findings
           if f.id == "scenario_over_context"]
    assert g.severity == "error" and "no speed figure can be measured" in g.problem


def test_context_from_the_live_server_wins() -> None:
    scen = [ScenarioLength(name="summarization", input_tokens=16384, output_tokens=128)]
    r = preflight("vllm serve m --generation-config auto --max-model-len 65536",
                  PreflightInput(scenarios=scen, served_context_tokens=8192))
    assert "scenario_over_context" in ids(r)


def test_concurrency_above_slots() -> None:
    r = preflight("llama-server -m m.gguf -np 2", PreflightInput(concurrency=[1, 2, 8]))
    [f] = [f for f in r.findings if f.id == "concurrency_over_slots"]
    assert "[8]" in f.evidence and "-np 8" in f.fix
    assert "concurrency_over_slots" not in ids(preflight("llama-server -m m.gguf -np 8",
                                                         PreflightInput(concurrency=[1, 8])))
    # -np -1 (auto): unknown until the server says
    assert "concurrency_over_slots" not in ids(preflight("llama-server -m m.gguf -np -1",
                                                         PreflightInput(concurrency=[64])))


def test_the_slots_fix_is_the_engines_own_flag() -> None:
    """The remedy for too few slots names the flag of the engine that serves them, not llama.cpp's for all."""
    def fix(command: str | None, **given: object) -> str:
        r = preflight(command, PreflightInput(concurrency=[1, 8], **given))  # type: ignore[arg-type]
        [f] = [f for f in r.findings if f.id == "concurrency_over_slots"]
        return f.fix

    vllm = fix("vllm serve m --max-num-seqs 4", server_slots=4)
    assert "--max-num-seqs 8" in vllm and "-np" not in vllm and vllm.endswith("or cap concurrency at 4")
    assert "-np 8" in fix("llama-server -m m.gguf -np 4") and "--max-num-seqs" not in fix("llama-server -m m.gguf -np 4")
    # attached (no command line): the engine the server was identified as
    attached = fix(None, server_slots=4, engine="vllm")
    assert "--max-num-seqs 8" in attached and "-np" not in attached
    assert "-np 8" in fix(None, server_slots=4, engine="llamacpp")
    # an unidentified server: every engine's way, none picked for it
    unknown = fix(None, server_slots=4, engine="unknown")
    assert "-np 8" in unknown and "--max-num-seqs 8" in unknown


def test_synthetic_acceptance_is_an_error() -> None:
    r = preflight("llama-server -m m.gguf -md m.gguf --spec-type draft-simple --spec-synth-len 4")
    assert [f.severity for f in r.findings if f.id == "synthetic_acceptance"] == ["error"]


def test_clean_llamacpp_command_has_no_findings() -> None:
    r = preflight("llama-server -m m.gguf -c 4096 -np 1 --metrics",
                  PreflightInput(concurrency=[1], scenarios=[ScenarioLength(name="s", input_tokens=128,
                                                                            output_tokens=256)]))
    assert r.findings == []

