"""What a published report says about the runs it shows: a title naming model, engine and machine,
and text with the details that belong to one machine's session hidden (home-directory and temporary
paths, the ephemeral port the server happened to get) unless the reader asks for them (`--paths`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import PurePosixPath

from rigbench.analysis import hide_session_details, session_neutral
from rigbench.records import Fingerprint
from rigbench.store import RunHeader

__all__ = ["hide_session_details", "machine_name", "model_name", "report_title", "session_neutral"]


def model_name(fp: Fingerprint | None) -> str:
    name = (fp.model.served_name or fp.model.path or "") if fp is not None else ""
    if not name:
        return "unknown model"
    return PurePosixPath(str(name)).name if "/" in str(name) and str(name).endswith(".gguf") else str(name)


def _engine(fp: Fingerprint | None) -> str:
    if fp is None or fp.engine in ("", "unknown"):
        return "an unidentified engine"
    engine, version = fp.engine, fp.engine_version
    return f"{engine} {version}" if version and "unknown" not in str(version) else str(engine)


def machine_name(fp: Fingerprint | None) -> str:
    host = fp.host if fp is not None else None
    if host is None:
        return "unknown machine"
    if host.gpus:
        name = host.gpus[0].split(",")[0].strip()
        return f"{len(host.gpus)}× {name}" if len(host.gpus) > 1 else name
    return f"{host.cpu_model} ({host.cpu_cores_logical} threads)" if host.cpu_model else "unknown machine"


def _joined(values: Sequence[str]) -> str:
    unique = list(dict.fromkeys(values))
    return unique[0] if len(unique) == 1 else " vs ".join(unique)


def report_title(headers: Sequence[RunHeader]) -> str:
    """'SmolLM2 on llamacpp b4000, AMD EPYC (2 threads)'; several runs: the values that differ joined by 'vs'."""
    fps = [h.fingerprint for h in headers]
    title = (f"{_joined([model_name(f) for f in fps])} on {_joined([_engine(f) for f in fps])}, "
             f"{_joined([machine_name(f) for f in fps])}")
    return title + (f" ({len(headers)} runs)" if len(headers) > 1 else "")
