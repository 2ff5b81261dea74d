"""Task packs: YAML files of known-answer tasks, each with the graders that decide it.

    name: multilingual
    description: ...
    defaults: {max_tokens: 1024, temperature: 0}
    tasks:
      - id: en_mikan_unit_price
        language: en
        prompt: "..."
        graders:
          - {type: numeric, expected: 40}

A task is correct when every grader passes. Shipped packs live in `rigbench/data/packs/`; a user
pack is any path to such a file.
"""

from __future__ import annotations

import hashlib
from importlib import resources
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, ValidationError, model_validator

from rigbench.errors import UsageError
from rigbench.inputs import explain, load_yaml, read_text
from rigbench.records import Input

__all__ = [
    "CodeGrader",
    "ExactGrader",
    "GraderSpec",
    "JsonSchemaGrader",
    "MaxCharsGrader",
    "NumericGrader",
    "Pack",
    "RegexGrader",
    "Task",
    "load_pack",
    "shipped_packs",
]


class ExactGrader(Input):
    type: Literal["exact"]
    expected: str
    case_sensitive: bool = False


class RegexGrader(Input):
    type: Literal["regex"]
    pattern: str  # searched anywhere in the answer
    ignore_case: bool = False


class NumericGrader(Input):
    type: Literal["numeric"]
    expected: float
    tolerance: float = 0.0  # absolute
    pick: Literal["last", "first", "only"] = "last"  # which number in the answer is the answer


class MaxCharsGrader(Input):
    type: Literal["max_chars"]
    max: int = Field(gt=0)  # characters (not bytes, not tokens) of the stripped, non-empty answer


class JsonSchemaGrader(Input):
    type: Literal["json_schema"]
    schema_: dict[str, Any] = Field(alias="schema")


class CodeCase(Input):
    args: list[Any]
    expected: Any


class CodeGrader(Input):
    type: Literal["code"]
    function: str  # the name the model's code must define
    cases: list[CodeCase] = Field(min_length=1)
    timeout_s: float = 10.0
    cpu_s: int = 5
    memory_mb: int = 512


GraderSpec = Annotated[
    ExactGrader | RegexGrader | NumericGrader | MaxCharsGrader | JsonSchemaGrader | CodeGrader,
    Field(discriminator="type"),
]


class Task(Input):
    id: str = Field(pattern=r"^[A-Za-z0-9_.-]+$")
    language: str = "en"
    prompt: str
    system: str | None = None
    max_tokens: int | None = None
    graders: list[GraderSpec] = Field(min_length=1)


class PackDefaults(Input):
    max_tokens: int = 2048
    temperature: float = 0.0


class Pack(Input):
    name: str = Field(pattern=r"^[A-Za-z0-9_.-]+$")
    description: str = ""
    defaults: PackDefaults = PackDefaults()
    tasks: list[Task] = Field(min_length=1)
    path: str = ""  # where it was loaded from (set by load_pack)
    sha256: str = ""  # of the file's bytes (set by load_pack)

    @model_validator(mode="after")
    def _unique_ids(self) -> Pack:
        ids = [t.id for t in self.tasks]
        dup = sorted({i for i in ids if ids.count(i) > 1})
        if dup:
            raise ValueError(f"task ids must be unique; repeated: {dup}")
        return self


# A pack is tasks written by hand: kilobytes to a few megabytes.
_PACK_MAX_BYTES = 16 << 20


def shipped_packs() -> dict[str, Path]:
    """Name -> path of every pack that ships with rigbench."""
    root = resources.files("rigbench") / "data" / "packs"
    return {Path(str(p)).stem: Path(str(p)) for p in root.iterdir() if str(p).endswith((".yaml", ".yml"))}


def load_pack(name_or_path: str | Path) -> Pack:
    """A shipped pack by name (e.g. "multilingual") or any pack file by path."""
    shipped = shipped_packs()
    path = shipped.get(str(name_or_path)) or Path(name_or_path).expanduser()
    if not path.is_file():
        raise UsageError(f"no task pack {str(name_or_path)!r}: not a shipped pack ({sorted(shipped)}) "
                         "and not a file. Pass a pack name or the path of a YAML pack.")
    text = read_text(path, "task pack", max_bytes=_PACK_MAX_BYTES)
    _, data = load_yaml(text, f"task pack {path}")
    if not isinstance(data, dict):
        raise UsageError(f"task pack {path} must be a mapping with `name` and `tasks`.")
    try:
        return Pack.model_validate({**data, "path": str(path), "sha256": hashlib.sha256(text.encode()).hexdigest()})
    except ValidationError as e:
        problems = "; ".join(f"{'.'.join(str(x) for x in err['loc']) or '(top level)'}: {explain(err)}"
                             for err in e.errors()[:5])
        more = f" (and {e.error_count() - 5} more)" if e.error_count() > 5 else ""
        raise UsageError(f"task pack {path} does not match the pack format (docs/quality.md): {problems}{more}.") \
            from None
