"""The load suite: open-loop request rates (constant, Poisson, gamma arrivals) and saturation sweeps
with SLO goodput (docs/metrics.md, "Rate mode")."""

from rigbench.suites.load._lengths import LengthDist
from rigbench.suites.load._schedule import arrival_offsets_s, no_full_collection, sleep_until_ns
from rigbench.suites.load._settings import LoadSettings
from rigbench.suites.load._spec import load_suites
from rigbench.suites.load._suite import Dispatched, LoadSuite, sweep_rates
from rigbench.suites.load._trace import TRACE_LAYOUTS, TraceRequest, read_trace

__all__ = ["TRACE_LAYOUTS", "Dispatched", "LengthDist", "LoadSettings", "LoadSuite", "TraceRequest", "arrival_offsets_s",
           "load_suites", "no_full_collection", "read_trace", "sleep_until_ns", "sweep_rates"]
