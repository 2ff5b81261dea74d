"""`rigbench roofline`: the decode ceiling calculator."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from rigbench.analysis import WeightsInfo, lookup_device, predict_speedup, roofline, weights_from_path
from rigbench.cli._app import app
from rigbench.cli._checks import check_finite, read_model_file
from rigbench.cli._console import make_console
from rigbench.errors import UsageError
from rigbench.outside import for_console
from rigbench.report import roofline_terminal

__all__ = ["roofline_cmd"]


def _read_weights(model: Path) -> WeightsInfo:
    return read_model_file(weights_from_path, model, "weight sizes",
                           "Pass a complete .gguf or .safetensors file or a model directory, or give --weights-gb.")


@app.command("roofline")
def roofline_cmd(
    weights_gb: Annotated[float | None, typer.Option("--weights-gb", help="Bytes read per decoded token, in GB "
                                                      "(dense: all weights; MoE: the active ones).")] = None,
    model_file: Annotated[Path | None, typer.Option("--model-file", help="Read the weight bytes from a .gguf, a "
                                                    ".safetensors file or a model directory instead.")] = None,
    model: Annotated[Path | None, typer.Option("--model", hidden=True, help="Deprecated: --model-file (in `run`, "
                                               "--model is the served model name).")] = None,
    bandwidth_gbs: Annotated[float | None, typer.Option("--bandwidth-gbs", help="Memory bandwidth, GB/s.")] = None,
    device: Annotated[str | None, typer.Option(help="A known device instead of --bandwidth-gbs "
                                               "(e.g. 'GB10', 'H100 SXM', 'RTX 4090', 'M2 Max').")] = None,
    tok_s: Annotated[float | None, typer.Option("--tok-s", help="Measured single-stream decode tok/s.")] = None,
    acceptance_length: Annotated[float | None, typer.Option(help="Mean acceptance length of speculative "
                                                            "decoding: predict its speed-up.")] = None,
    prefill_share: Annotated[float, typer.Option(help="Share of request time spent before the first token "
                                                 "(for the speed-up prediction).")] = 0.0,
) -> None:
    """Decode ceiling (tok/s) = bandwidth / weight bytes, and how close a measured rate is to it."""
    console = make_console()
    check_finite(weights_gb, "--weights-gb", high=1e6)  # a petabyte of weights per token: beyond any model
    check_finite(bandwidth_gbs, "--bandwidth-gbs", high=1e6)  # 1 PB/s: beyond any memory
    check_finite(tok_s, "--tok-s", high=1e7)
    check_finite(acceptance_length, "--acceptance-length", low=1.0, low_inclusive=True, high=1e3)
    check_finite(prefill_share, "--prefill-share", low=0.0, low_inclusive=True, high=0.999)
    if model is not None:
        if model_file is not None:
            raise UsageError("give the model once: --model-file (--model is its deprecated old name).")
        typer.echo("rigbench roofline: --model is deprecated here, use --model-file (in `run`, --model is the "
                   "served model name).", err=True)
        model_file, model = model, None
    model = model_file
    if (weights_gb is None) == (model is None):
        raise UsageError("give exactly one of --weights-gb or --model-file.")
    if model is not None:
        info = _read_weights(model)
        weights = info.weights_bytes
        console.print(f"{for_console(info.source)}: {info.tensors} tensors, {weights / 1e9:.3f} GB"
                      + (f" ({for_console(info.file_type)})" if info.file_type else ""), highlight=False)
    else:
        assert weights_gb is not None
        weights = int(weights_gb * 1e9)
    source = "given"
    if device is not None:
        dev = lookup_device(device)
        if dev is None:
            raise UsageError(f"unknown device {device!r}; pass --bandwidth-gbs, or measure it with `rigbench probe`.")
        if bandwidth_gbs is None:
            bandwidth_gbs, source = dev.bandwidth_gb_s, f"{dev.name}: {dev.source}"
    if bandwidth_gbs is None:
        raise UsageError("give --bandwidth-gbs or --device (or measure with `rigbench probe`).")
    roof = roofline(weights, bandwidth_gbs, measured_tok_s=tok_s, bandwidth_source=source)
    roofline_terminal(roof, console)
    if roof.efficiency is not None and roof.efficiency > 1.0:
        # Adversary: inputs that disagree (weights or bandwidth mistyped, or a rate measured with
        # speculative decoding or batching); printing "8732% of the ceiling" as if it were a result misleads.
        console.print(f"[bold yellow]warning:[/] {tok_s:g} tok/s is {roof.efficiency:.1f}× the ceiling of "
                      f"{roof.ceiling_tok_s:.3g} tok/s: the inputs cannot all be right. One token cannot be decoded "
                      "faster than its weights are read; check --weights-gb (the bytes read per token), "
                      "--bandwidth-gbs, and whether --tok-s came from speculative decoding or batching "
                      "(several tokens per weight read).", highlight=False)
    if acceptance_length is not None:
        p = predict_speedup("given", prefill_share=prefill_share, mean_acceptance_length=acceptance_length)
        console.print(f"speculative decoding at acceptance length {acceptance_length:g} and prefill share "
                      f"{prefill_share:.0%}: predicted speed-up {p.predicted_speedup:.2f}×")
