"""Short rig labels for report headers and legends, and the synthetic-acceptance flag.

A run directory's name is a 30-character run id (`20261129-191906-h200-depth4-1c8a`); printed in
every header and legend it buries the one word that tells the rigs apart. Plan rig names are kept
as they are; a run id becomes its label part (`h200-depth4`), or, for the default label `run`,
what distinguishes the rig: engine, draft depth, synthetic acceptance.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from rigbench.analysis import session_neutral
from rigbench.store import RunHeader

__all__ = ["SYNTH_NOTE", "rig_labels", "speculates", "speculation_unknown", "synth_mark", "synth_note",
           "synthetic_acceptance"]

_RUN_ID = re.compile(r"^\d{8}-\d{6}-(?P<label>.+)-[0-9a-f]{4}$")

SYNTH_NOTE = ("SYNTHETIC ACCEPTANCE (--spec-synth-len L): the engine accepted drafted tokens at a scripted mean "
              "length L instead of verifying the draft model's guesses, and its output is not valid text; the "
              "speed-up shows what acceptance L would give, not what this draft model gives.")


def synthetic_acceptance(header: RunHeader) -> float | None:
    """The scripted acceptance length, when the run used llama.cpp's --spec-synth-len."""
    rig: dict[str, Any] = (header.plan or {}).get("rig") or {}
    if rig.get("spec_synth_len") is not None:
        return float(rig["spec_synth_len"])
    argv = list((header.fingerprint.argv if header.fingerprint else None) or [])
    for i, arg in enumerate(argv):
        if arg == "--spec-synth-len" and i + 1 < len(argv):
            try:
                return float(argv[i + 1])
            except ValueError:
                return float("nan")
        if arg.startswith("--spec-synth-len="):
            try:
                return float(arg.split("=", 1)[1])
            except ValueError:
                return float("nan")
    return None


def synth_mark(header: RunHeader) -> str:
    """' [synthetic L=3.4]' for a synthetic-acceptance run, else ''."""
    L = synthetic_acceptance(header)
    return "" if L is None else f" [synthetic L={L:g}]"


def synth_note(header: RunHeader) -> str:
    L = synthetic_acceptance(header)
    return SYNTH_NOTE.replace(" L)", f" L = {L:g})") if L is not None else ""


def speculates(header: RunHeader) -> bool:
    """The rig drafted tokens, as its fingerprint's speculation state says (launched or attached); a run
    recorded before that state (format 10) by its launch command's speculative flags, as then."""
    fp = header.fingerprint
    if fp is None or fp.speculation is None:
        return bool(fp is not None and fp.speculative)
    return fp.speculation.state == "on"


def speculation_unknown(header: RunHeader) -> str | None:
    """Why nobody can tell whether the rig drafted tokens (its fingerprint says "unknown"), or None when the
    run says on or off (or predates the state): a report then says it left the speed-up prediction out."""
    fp = header.fingerprint
    if fp is None or fp.speculation is None or fp.speculation.state != "unknown":
        return None
    return fp.speculation.source


def _derived(h: RunHeader) -> str:
    m = _RUN_ID.match(h.run_id)
    if m and m.group("label") != "run":
        return m.group("label")
    fp = h.fingerprint
    rig: dict[str, Any] = (h.plan or {}).get("rig") or {}
    parts = [str((fp.engine if fp is not None else None) or rig.get("engine") or "rig")]
    spec = (fp.speculative if fp is not None else None) or {}
    depth = rig.get("draft_max") or spec.get("draft_max")
    state = fp.speculation if fp is not None else None  # None: a run before format 10, read from its command
    drafts = state.state == "on" if state is not None else bool(rig.get("draft_model") or spec)
    if drafts:
        parts.append(f"draft{depth}" if depth else "draft")
    L = synthetic_acceptance(h)
    if L is not None:
        parts.append(f"synth{L:g}")
    return "-".join(parts)


def _flags(h: RunHeader) -> dict[str, str]:
    """The launch command's flags and their values (a bare flag: 'on'), session details hidden: the port and
    temporary paths a run happened to get are no difference between rigs (`session_neutral`)."""
    argv = [str(x) for x in session_neutral(list((h.fingerprint.argv if h.fingerprint else None) or []))]
    out: dict[str, str] = {}
    for i, arg in enumerate(argv):
        if arg.startswith("-"):
            name, _, value = arg.partition("=")
            nxt = argv[i + 1] if i + 1 < len(argv) else ""
            out[name] = value or (nxt if nxt and not nxt.startswith("-") else "on")
    return {k: v for k, v in out.items() if v != "PORT"}


def _model(h: RunHeader) -> str:
    fp = h.fingerprint
    if fp is None:
        return "?"
    name = fp.model.served_name or fp.model.path or "?"
    return str(session_neutral(str(name))).rsplit("/", 1)[-1]


def _what_differs(headers: Sequence[RunHeader]) -> list[str]:
    """Per run, what sets it apart from the others that share its label: the engine version, the model, the
    flags whose values differ (a port never does), else its start time."""
    for values in ([str((h.fingerprint.engine_version if h.fingerprint else None) or "?") for h in headers],
                   [_model(h) for h in headers]):
        if len(set(values)) == len(values):
            return values
    flags = [_flags(h) for h in headers]
    names = sorted({k for f in flags for k in f if len({g.get(k, "off") for g in flags}) > 1})
    labels = [" ".join(f"{k.lstrip('-')}={f.get(k, 'off')}" for k in names) for f in flags]
    if names and len(set(labels)) == len(labels):
        return labels
    return [h.created_at[5:16].replace("T", " ") for h in headers]


def rig_labels(names: Sequence[str], headers: Sequence[RunHeader]) -> list[str]:
    """One short, distinct label per run: plan rig names as given, run ids shortened; runs that
    would share a label get what differs between them (a version, a flag's value, else the time)."""
    out = [_derived(h) if n in (h.run_id, "") or _RUN_ID.match(n) else n for n, h in zip(names, headers, strict=True)]
    for label in dict.fromkeys(out):
        idx = [i for i, x in enumerate(out) if x == label]
        if len(idx) > 1:
            for i, extra in zip(idx, _what_differs([headers[i] for i in idx]), strict=True):
                out[i] = f"{label} ({extra})"
    dup = {label for label in out if out.count(label) > 1}  # still equal (same flags, same minute): number them
    seen: dict[str, int] = {}
    for i, label in enumerate(out):
        if label in dup:
            seen[label] = seen.get(label, 0) + 1
            out[i] = f"{label} [{seen[label]}]"
    return out
