"""What a published report says about the runs it shows: a title naming model, engine and machine,
and text with the details that belong to one machine's session hidden (home-directory and temporary
paths, the ephemeral port the server happened to get) unless the reader asks for them (`--paths`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import PurePosixPath
from typing import Any

from rigbench.analysis import hide_session_details, session_neutral
from rigbench.store import RunHeader

__all__ = ["hide_session_details", "machine_name", "model_name", "report_title", "session_neutral"]


def model_name(fp: dict[str, Any]) -> str:
    model = fp.get("model") or {}
    name = model.get("served_name") or model.get("path") or ""
    if not name:
        return "unknown model"
    return PurePosixPath(str(name)).name if "/" in str(name) and str(name).endswith(".gguf") else str(name)


def _engine(fp: dict[str, Any]) -> str:
    engine = fp.get("engine")
    if not engine or engine == "unknown":
        return "an unidentified engine"
    version = fp.get("engine_version")
    return f"{engine} {version}" if version and "unknown" not in str(version) else str(engine)


def machine_name(fp: dict[str, Any]) -> str:
    host = fp.get("host") or {}
    gpus = host.get("gpus") or []
    if gpus:
        name = str(gpus[0]).split(",")[0].strip()
        return f"{len(gpus)}× {name}" if len(gpus) > 1 else name
    cpu = host.get("cpu_model")
    return f"{cpu} ({host.get('cpu_cores_logical')} threads)" if cpu else "unknown machine"


def _joined(values: Sequence[str]) -> str:
    unique = list(dict.fromkeys(values))
    return unique[0] if len(unique) == 1 else " vs ".join(unique)


def report_title(headers: Sequence[RunHeader]) -> str:
    """'SmolLM2 on llamacpp b4000, AMD EPYC (2 threads)'; several runs: the values that differ joined by 'vs'."""
    fps = [h.fingerprint or {} for h in headers]
    title = (f"{_joined([model_name(f) for f in fps])} on {_joined([_engine(f) for f in fps])}, "
             f"{_joined([machine_name(f) for f in fps])}")
    return title + (f" ({len(headers)} runs)" if len(headers) > 1 else "")
