"""Reading a Prometheus text scrape and mapping it to rigbench's canonical telemetry names."""

from __future__ import annotations

import math
import re
from typing import Any, NamedTuple

__all__ = ["MetricSample", "canonical_values", "parse_prometheus"]

# name{labels} value [timestamp]; label values may contain escaped quotes.
_LINE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(?:[^"}]|"(?:[^"\\]|\\.)*")*\})?\s+(\S+)')
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


class MetricSample(NamedTuple):
    labels: dict[str, str]
    value: float


def parse_prometheus(text: str) -> dict[str, list[MetricSample]]:
    """Every sample of a text-format scrape, by exact sample name (`_total`, `_bucket` kept)."""
    out: dict[str, list[MetricSample]] = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = _LINE.match(line)
        if m is None:
            continue
        try:
            value = float(m.group(3))
        except ValueError:
            continue
        labels = dict(_LABEL.findall(m.group(2) or ""))
        out.setdefault(m.group(1), []).append(MetricSample(labels, value))
    return out


def canonical_values(adapter: Any, text: str) -> dict[str, float]:
    """Canonical name -> value for each canonical metric this scrape carries.

    Series of one name are summed over their labels (engines label by model, engine index or DP
    rank; a sum is the whole server). Gauges that are ratios or means (`kv_cache_usage_ratio`,
    `spec_accept_length`) take the maximum instead, since summing them is meaningless. A name
    the adapter lists under `metric_fallbacks` (older engine versions) is used when the current
    name is absent.
    """
    samples = parse_prometheus(text)
    fallbacks: dict[str, str] = getattr(adapter, "metric_fallbacks", {})
    out: dict[str, float] = {}
    for canonical, name in adapter.metric_names.items():
        series = samples.get(name)
        if not series and canonical in fallbacks:
            series = samples.get(fallbacks[canonical])
        if not series:
            continue
        values = [s.value for s in series if not math.isnan(s.value)]
        if not values:
            continue
        out[canonical] = max(values) if canonical in _NOT_SUMMABLE else sum(values)
    return out


_NOT_SUMMABLE = frozenset({"kv_cache_usage_ratio", "spec_accept_length", "spec_accept_rate"})
