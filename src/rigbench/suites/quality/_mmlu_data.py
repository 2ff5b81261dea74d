"""MMLU-Pro questions: from the Hugging Face hub (TIGER-Lab/MMLU-Pro) or a local copy.

The hub path downloads the dataset's own parquet files with `huggingface_hub` and reads them with
pyarrow, the same files `datasets.load_dataset("TIGER-Lab/MMLU-Pro")` reads. A local source is a
directory holding `test*` and `validation*` files (parquet or JSONL), as the hub lays them out.
"""

from __future__ import annotations

import hashlib
import random
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from rigbench.errors import SetupError, UsageError
from rigbench.inputs import explain, json_lines, load_json, shown
from rigbench.records import Input

__all__ = ["HF_REPO", "MMLUProData", "MMLUProQuestion", "load_mmlu_pro", "sample_questions"]

HF_REPO = "TIGER-Lab/MMLU-Pro"
_SPLITS = ("test", "validation")


class MMLUProQuestion(Input):
    """One row in the dataset's schema; `options` already has the "N/A" padding removed. Strict (a data
    directory is outside input): `answer_index: true` is refused, not read as 1."""

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
        _bounded(path)
        with path.open("rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
        rows[split] = [_question(r, path, i) for i, r in _read_rows(path)]
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
    # the directory itself and the folders in it, as the hub lays them out (data/): never a walk of a whole
    # tree (`--mmlu-data /` must not read the file system)
    candidates = sorted(p for pattern in (f"{split}*", f"*/{split}*") for p in root.glob(pattern)
                        if p.suffix in (".parquet", ".jsonl", ".json") and p.is_file())
    if not candidates:
        raise UsageError(f"no {split} split under {root}: expected a file named {split}*.parquet or "
                         f"{split}*.jsonl in it or in a folder of it (as in the hub's data/ folder).")
    if len(candidates) > 1 and not all(p.suffix == ".parquet" for p in candidates):
        raise UsageError(f"more than one {split} file under {root}: {[str(p) for p in candidates[:10]]}; "
                         "keep one.")
    return candidates[0]


# The MMLU-Pro test split is about 10 MB as JSON lines; a file far past that is not it.
_DATA_MAX_BYTES = 1 << 30
_LINE_MAX_BYTES = 1 << 20


def _bounded(path: Path) -> None:
    size = path.stat().st_size
    if size > _DATA_MAX_BYTES:
        raise UsageError(f"MMLU-Pro data {path}: {size:,} bytes, more than the {_DATA_MAX_BYTES:,} such a file may "
                         "hold; is it the right file?")


def _read_rows(path: Path) -> list[tuple[int, Any]]:
    """(row number or line, row) of a parquet, JSON-array or JSON-lines file."""
    if path.suffix == ".parquet":
        # lazy: pyarrow costs ~0.1 s to import; only parquet files need it
        import pyarrow.parquet as pq

        try:
            return list(enumerate(pq.read_table(path).to_pylist(), start=1))
        except Exception as e:  # pyarrow raises its own types for a damaged or foreign file
            raise UsageError(f"MMLU-Pro data {path}: not a parquet file pyarrow can read ({type(e).__name__}: "
                             f"{shown(str(e), 160)}).") from None
    if path.suffix == ".json":
        data = load_json(path, "MMLU-Pro data", max_bytes=_DATA_MAX_BYTES)
        if isinstance(data, list):
            return list(enumerate(data, start=1))
    return list(json_lines(path, "MMLU-Pro data", max_line_bytes=_LINE_MAX_BYTES))


def _question(row: Any, path: Path, at: int) -> MMLUProQuestion:
    if not isinstance(row, dict):
        raise UsageError(f"{path}:{at}: a row is a JSON object with question_id, question, options, answer, "
                         f"answer_index and category; got {shown(row)}.")
    row = dict(row)
    options = row.get("options")
    if isinstance(options, list):
        row["options"] = [o for o in options if o != "N/A"]  # as the official preprocess
    row["cot_content"] = row.get("cot_content") or ""
    row["src"] = row.get("src") or ""
    try:
        q = MMLUProQuestion.model_validate(row)
    except ValidationError as e:
        err = e.errors()[0]
        where = ".".join(str(x) for x in err["loc"]) or "the row"
        raise UsageError(f"{path}:{at}: a row does not match the MMLU-Pro schema (question_id, question, options, "
                         f"answer, answer_index, category): {where}: {explain(err)}.") from None
    if not 0 <= q.answer_index < len(q.options):
        raise UsageError(f"{path}:{at}: answer_index {q.answer_index} names none of the {len(q.options)} options.")
    return q


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
