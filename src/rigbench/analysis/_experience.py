"""What a speed row means for a person waiting on the answer: the words on a report's first screen.

Two limits of attention and one reading speed, each with its source (docs/metrics.md, "What the
figures mean for a user"):

- 1 s is about the limit for a user's flow of thought to stay uninterrupted, 10 s the limit for keeping
  their attention on the dialogue (J. Nielsen, "Response Times: The 3 Important Limits", 1993, after
  R. B. Miller 1968 and Card, Robertson and Mackinlay 1991). Judged on the time to the first token.
- A person reads about 238 words a minute (silent reading of English non-fiction, the mean over 190
  studies in M. Brysbaert, "How many words do we read per minute?", Journal of Memory and Language 109,
  2019); at 4/3 tokens per word (OpenAI's rule of thumb for English, 0.75 words per token; it varies
  with the tokenizer and the language) that is READING_TOK_S, 5.3 tokens/s. Judged on decode tok/s:
  text that streams slower than that makes the reader wait for it.

A row is judged on its median request (the figure the tables show). An untrusted run, a row whose
latency could not be measured (buffered streams) or whose TTFT is not comparable is not judged.
"""

from __future__ import annotations

from typing import Literal

from rigbench.analysis._speed import ScenarioSpeed
from rigbench.records import Frozen

__all__ = ["ATTENTION_LIMIT_S", "FLOW_LIMIT_S", "READING_TOK_S", "Experience", "experience"]

FLOW_LIMIT_S = 1.0
ATTENTION_LIMIT_S = 10.0
READING_TOK_S = 238 / 60 * 4 / 3  # 5.29 tokens/s

ExperienceKind = Literal["interactive", "waits", "too slow", "slower than reading", "not judged"]


class Experience(Frozen):
    kind: ExperienceKind
    ttft_s: float | None  # the median request's time to the first token
    decode_tok_s: float | None  # its decode speed
    reading_multiple: float | None  # decode tok/s / READING_TOK_S
    why_not: str | None = None  # not judged: why


def experience(row: ScenarioSpeed, *, trusted: bool = True) -> Experience:
    """The row's median request against the limits above: interactive (first token within 1 s, text faster
    than reading), waits (first token within 10 s), too slow (later), slower than reading (decode under
    5.3 tok/s, whatever the wait), or not judged (with why)."""
    ttft = row.ttft_s.median if row.ttft_s is not None and row.ttft_s.n else None
    decode = row.decode_tok_s.median if row.decode_tok_s is not None and row.decode_tok_s.n else None
    multiple = decode / READING_TOK_S if decode is not None else None
    why = ("the run is not trusted" if not trusted else
           "its streams arrived buffered, so the wait is not measurable" if row.latency_not_measurable else
           "its first token is not comparable (several tokens per chunk)" if row.ttft_not_comparable else
           "no request completed" if ttft is None or decode is None else None)
    if why is not None:
        return Experience(kind="not judged", ttft_s=ttft, decode_tok_s=decode, reading_multiple=multiple, why_not=why)
    assert ttft is not None and decode is not None
    kind: ExperienceKind = ("slower than reading" if decode < READING_TOK_S else "interactive" if ttft <= FLOW_LIMIT_S
                            else "waits" if ttft <= ATTENTION_LIMIT_S else "too slow")
    return Experience(kind=kind, ttft_s=ttft, decode_tok_s=decode, reading_multiple=multiple)
