"""What a launched rig's command line says about speculative decoding (the fingerprint's facts)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rigbench.errors import UsageError
from rigbench.rig._rig import speculative_in_argv
from rigbench.rig.engines._registry import get_engine, known_engines

__all__ = ["speculative_from_argv"]


def speculative_from_argv(argv: Sequence[str], engine: str) -> dict[str, Any] | None:
    """Draft model, kind and depth as the argv sets them, by the engine's own flag spellings.

    An engine rigbench cannot name (a verbatim command whose server never said what it is) is read
    with every known engine's spellings, since any of them may be in its argv.
    """
    try:
        flags = dict(get_engine(engine).speculative_flags)
    except UsageError:
        flags = {flag: key for e in known_engines() for flag, key in e.speculative_flags.items()}
    return speculative_in_argv(argv, flags)
