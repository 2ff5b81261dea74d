"""MMLU-Pro questions: from the Hugging Face hub (TIGER-Lab/MMLU-Pro) or a local copy.

The hub path downloads the dataset's own parquet files with `huggingface_hub` and reads them with
pyarrow, the same files `datasets.load_dataset("TIGER-Lab/MMLU-Pro")` reads. A local source is a
directory holding `test*` and `validation*` files (parquet or JSONL), as the hub lays them out.
"""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from rigbench.errors import SetupError, UsageError

__all__ = ["HF_REPO", "MMLUProData", "MMLUProQuestion", "load_mmlu_pro", "sample_questions"]

HF_REPO = "TIGER-Lab/MMLU-Pro"
_SPLITS = ("test", "validation")


class MMLUProQuestion(BaseModel):
    """One row in the dataset's schema; `options` already has the "N/A" padding removed."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    question_id: int
    question: str
    options: list[str]
    answer: str
    answer_index: int
    cot_content: str = ""
    category: str
    src: str = ""


class MMLUProData(BaseModel):
    model_config = ConfigDict(frozen=True)

    source: str  # "hf:TIGER-Lab/MMLU-Pro@<revision>" or "local:<path>"
    sha256: str  # over the files read, in split order
    test: list[MMLUProQuestion]
    validation: list[MMLUProQuestion]

    @property
    def subjects(self) -> list[str]:
        return sorted({q.category for q in self.test})


def load_mmlu_pro(source: str | Path | None = None, *, revision: str = "main",
                  cache_dir: Path | None = None) -> MMLUProData:
    """Load both splits. `source` None or "hf" means the hub; anything else is a local path."""
    if source is None or str(source) == "hf" or str(source).startswith("hf:"):
        repo = str(source)[3:] if source is not None and str(source).startswith("hf:") else HF_REPO
        root = _download(repo, revision, cache_dir)
        label = f"hf:{repo}@{revision}"
    else:
        root = Path(source).expanduser()
        if not root.exists():
            raise UsageError(f"MMLU-Pro data path {root} does not exist. Pass a directory with test and "
                             "validation parquet/JSONL files, or omit it to download from the hub.")
        label = f"local:{root}"
    files = {split: _split_file(root, split) for split in _SPLITS}
    h = hashlib.sha256()
    rows: dict[str, list[MMLUProQuestion]] = {}
    for split, path in files.items():
        h.update(path.read_bytes())
        rows[split] = [_question(r, path) for r in _read_rows(path)]
    if not rows["test"]:
        raise UsageError(f"{files['test']} holds no questions.")
    return MMLUProData(source=label, sha256=h.hexdigest(), test=rows["test"], validation=rows["validation"])


def _download(repo: str, revision: str, cache_dir: Path | None) -> Path:
    try:
        # lazy: ~0.4 s to import; only a download from the hub needs it
        from huggingface_hub import snapshot_download
        from huggingface_hub.errors import HfHubHTTPError, LocalEntryNotFoundError
    except ImportError as e:  # pragma: no cover - a declared dependency
        raise SetupError(f"huggingface_hub is not installed ({e}); `pip install huggingface_hub`.") from e
    try:
        path = snapshot_download(repo_id=repo, repo_type="dataset", revision=revision,
                                 allow_patterns=["data/*.parquet", "*.parquet"], cache_dir=cache_dir)
    except (LocalEntryNotFoundError, HfHubHTTPError, OSError) as e:
        raise SetupError(
            f"could not download the MMLU-Pro dataset {repo}@{revision} from the Hugging Face hub "
            f"({type(e).__name__}: {str(e).splitlines()[0] if str(e) else 'no detail'}). "
            "Offline? Copy the dataset's data/test-*.parquet and data/validation-*.parquet to a "
            "directory and pass it with the quality setting `data: /that/dir`, or set HF_HUB_OFFLINE=1 "
            "with the dataset already in the hub cache."
        ) from e
    return Path(path)


def _split_file(root: Path, split: str) -> Path:
    if root.is_file():
        raise UsageError(f"{root} is a file; MMLU-Pro needs both splits. Pass the directory holding "
                         "test and validation files.")
    candidates = sorted(p for p in root.rglob(f"{split}*")
                        if p.suffix in (".parquet", ".jsonl", ".json") and p.is_file())
    if not candidates:
        raise UsageError(f"no {split} split under {root}: expected a file named {split}*.parquet or "
                         f"{split}*.jsonl (as in the hub's data/ folder).")
    if len(candidates) > 1 and not all(p.suffix == ".parquet" for p in candidates):
        raise UsageError(f"more than one {split} file under {root}: {[str(p) for p in candidates]}; "
                         "keep one.")
    return candidates[0]


def _read_rows(path: Path) -> list[dict[str, Any]]:
    if path.suffix == ".parquet":
        # lazy: pyarrow costs ~0.1 s to import; only parquet files need it
        import pyarrow.parquet as pq

        return list(pq.read_table(path).to_pylist())
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".json" and text.lstrip().startswith("["):
        data = json.loads(text)
        return list(data)
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def _question(row: dict[str, Any], path: Path) -> MMLUProQuestion:
    row = dict(row)
    row["options"] = [o for o in row.get("options") or [] if o != "N/A"]  # as the official preprocess
    row["cot_content"] = row.get("cot_content") or ""
    row["src"] = row.get("src") or ""
    try:
        return MMLUProQuestion.model_validate(row)
    except ValidationError as e:
        raise UsageError(f"{path}: a row does not match the MMLU-Pro schema "
                         f"(question_id, question, options, answer, answer_index, category): {e}") from e


def sample_questions(data: MMLUProData, *, subjects: list[str] | None, per_subject: int | None,
                     seed: int) -> dict[str, list[MMLUProQuestion]]:
    """Per subject, a fixed random sample: the same seed and data give the same questions."""
    by_subject: dict[str, list[MMLUProQuestion]] = {}
    for q in data.test:
        by_subject.setdefault(q.category, []).append(q)
    chosen = subjects or sorted(by_subject)
    unknown = [s for s in chosen if s not in by_subject]
    if unknown:
        raise UsageError(f"unknown MMLU-Pro subject(s) {unknown}; known: {sorted(by_subject)}")
    out: dict[str, list[MMLUProQuestion]] = {}
    for subject in chosen:
        pool = sorted(by_subject[subject], key=lambda q: q.question_id)
        if per_subject is not None and per_subject < len(pool):
            rng = random.Random(f"{seed}:{subject}")
            pool = sorted(rng.sample(pool, per_subject), key=lambda q: q.question_id)
        out[subject] = pool
    return out
