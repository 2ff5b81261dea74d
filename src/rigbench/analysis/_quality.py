"""Quality figures from one run's quality records, for the report: the MMLU-Pro summary (analysis/_mmlu.py), the
task packs and the effort sweep (analysis/_packs.py). Proportions and their intervals: analysis/_proportion.py;
comparisons across runs: analysis/_quality_compare.py.
"""

from __future__ import annotations

from rigbench.analysis._mmlu import MMLUProSummary, summarize_mmlu_pro
from rigbench.analysis._packs import EffortSummary, PackSummary, summarize_effort, summarize_packs
from rigbench.records import Frozen, MMLUProAnswer, MMLUProConfig, PackAnswer, PackConfig
from rigbench.store import RunReader

__all__ = ["QualitySummary", "summarize_quality"]


class QualitySummary(Frozen):
    """Everything quality in one run, for the report."""

    run_id: str
    mmlu_pro: MMLUProSummary | None
    packs: list[PackSummary]
    effort: list[EffortSummary]

    @property
    def empty(self) -> bool:
        return self.mmlu_pro is None and not self.packs and not self.effort


def summarize_quality(reader: RunReader) -> QualitySummary:
    run_id = reader.header.run_id
    answers = reader.records("mmlu_pro_answer", MMLUProAnswer)
    configs = reader.records("mmlu_pro_config", MMLUProConfig)
    pack_answers = reader.records("pack_answer", PackAnswer)
    pack_configs = reader.records("pack_config", PackConfig)
    return QualitySummary(
        run_id=run_id,
        mmlu_pro=summarize_mmlu_pro(run_id, answers, configs[-1] if configs else None),
        packs=summarize_packs(run_id, pack_answers, pack_configs),
        effort=summarize_effort(run_id, pack_answers, pack_configs),
    )
