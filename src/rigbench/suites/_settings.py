"""Every suite's settings in one typed model: what a plan file's suite keys and `rigbench run`'s
flags resolve to, validated once, before any rig starts. One field per suite, which registers it (its spec's
`key` and `settings`: suites/_registry.py finds the specs and checks the two agree), so code reads
`settings.speed` typed."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from rigbench.records import Input
from rigbench.suites.agent._settings import AgentSettings
from rigbench.suites.load._settings import LoadSettings
from rigbench.suites.quality._settings import EffortSettings, MMLUProSettings, PackSettings
from rigbench.suites.speed._settings import SpeedSettings

__all__ = ["SuiteSettings"]


class SuiteSettings(Input):
    """Settings of every suite; a run uses those of the suites it names."""

    # The registration of the suites: one field per suite package (its `_spec.py`'s key and settings), in the
    # order `--suite`'s help lists them (suites/_registry.py finds the specs and checks they agree).
    speed: SpeedSettings = Field(default_factory=SpeedSettings)
    load: LoadSettings = Field(default_factory=LoadSettings)
    mmlu_pro: MMLUProSettings = Field(default_factory=MMLUProSettings)
    packs: PackSettings = Field(default_factory=PackSettings)
    effort: EffortSettings = Field(default_factory=EffortSettings)
    agent: AgentSettings = Field(default_factory=AgentSettings)

    def unconfined(self) -> SuiteSettings:
        """The same settings with model-written code allowed to run unconfined (`--allow-unconfined`,
        a plan's top-level `allow_unconfined: true`), for every suite that runs such code."""
        on: dict[str, Any] = {"allow_unconfined": True}  # the settings of a suite that runs such code have it
        return self.model_copy(update={key: value.model_copy(update=on) for key, value in self
                                       if "allow_unconfined" in type(value).model_fields})
