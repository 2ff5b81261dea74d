"""The speed suite: the seed's four scenarios with exact input lengths and forced output lengths."""

from rigbench.suites.speed._prompts import ExactPrompt, PromptBuilder
from rigbench.suites.speed._scenarios import PROFILES, Scenario, scenarios_for
from rigbench.suites.speed._settings import ConcurrencyLevels, SpeedSettings
from rigbench.suites.speed._suite import MAX_RUN_S, SpeedSuite

__all__ = [
    "MAX_RUN_S",
    "PROFILES",
    "ConcurrencyLevels",
    "ExactPrompt",
    "PromptBuilder",
    "Scenario",
    "SpeedSettings",
    "SpeedSuite",
    "scenarios_for",
]
