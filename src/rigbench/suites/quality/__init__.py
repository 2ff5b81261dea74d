"""Quality suites: MMLU-Pro (official protocol), known-answer task packs, reasoning-effort sweep.

    MMLUProSuite(settings)      name "mmlu_pro"  defaults: 200 questions x 14 subjects, seed 12345,
                                                 5-shot CoT, greedy, max_tokens 4000, hub data
    PackSuite(settings)         name "packs"     defaults: the shipped "multilingual" pack, once
    EffortSweepSuite(settings)  name "effort"    defaults: "multilingual" at none/low/medium/high

Settings are the *Settings models (a plan's keys and `rigbench run`'s flags validated into them).
"""

from rigbench.suites.quality._knobs import effort_request_fields
from rigbench.suites.quality._mmlu import MMLUProSuite
from rigbench.suites.quality._mmlu_data import MMLUProData, load_mmlu_pro
from rigbench.suites.quality._pack_suite import EffortSweepSuite, PackSuite
from rigbench.suites.quality._packs import Pack, load_pack, shipped_packs
from rigbench.suites.quality._settings import EffortSettings, MMLUProSettings, PackSettings

__all__ = [
    "EffortSettings",
    "EffortSweepSuite",
    "MMLUProData",
    "MMLUProSettings",
    "MMLUProSuite",
    "Pack",
    "PackSettings",
    "PackSuite",
    "effort_request_fields",
    "load_mmlu_pro",
    "load_pack",
    "shipped_packs",
]
