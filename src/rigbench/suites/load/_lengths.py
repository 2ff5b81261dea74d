"""Token-length distributions of the load suite's requests: `128` (fixed), `uniform:LOW,HIGH`,
`normal:MEAN,SD`, `lognormal:MEAN,SD` (the mean and standard deviation of the length itself).

Draws are rounded to whole tokens and kept at 1 or more; the seed fixes them, so a resumed window
sends the same lengths.
"""

from __future__ import annotations

import math
from typing import Any, Literal

import numpy as np
from pydantic import Field, model_validator

from rigbench.inputs import MAX_TOKENS
from rigbench.records import Input

__all__ = ["LengthDist"]


class LengthDist(Input):
    """A distribution of token lengths. `mean` is the fixed value of `fixed`."""

    dist: Literal["fixed", "uniform", "normal", "lognormal"] = "fixed"
    # at most MAX_TOKENS (no served context is longer): a typo such as 10^12 never sizes a prompt
    mean: float = Field(gt=0, le=MAX_TOKENS, allow_inf_nan=False)
    sd: float = Field(default=0.0, ge=0, le=MAX_TOKENS, allow_inf_nan=False)  # normal, lognormal
    low: int | None = Field(default=None, ge=1, le=MAX_TOKENS)  # uniform
    high: int | None = Field(default=None, ge=1, le=MAX_TOKENS)

    @model_validator(mode="before")
    @classmethod
    def _from_text(cls, v: Any) -> Any:
        if isinstance(v, bool):
            raise ValueError(f"takes a token count or a distribution such as lognormal:128,32; got {v!r}")
        if isinstance(v, int | float):
            return {"dist": "fixed", "mean": v}
        if not isinstance(v, str):
            return v
        text = v.strip()
        name, colon, args = text.partition(":")
        if not colon:
            try:
                return {"dist": "fixed", "mean": int(text)}
            except ValueError:
                raise ValueError(f"takes a token count (e.g. 128) or DIST:A,B with DIST uniform, normal or "
                                 f"lognormal (e.g. lognormal:128,32); got {v!r}") from None
        try:
            a, b = (float(x) for x in args.split(","))
        except ValueError:
            raise ValueError(f"{name}: takes two numbers after the colon, e.g. {name}:128,32; got {v!r}") from None
        if not (math.isfinite(a) and math.isfinite(b)):
            raise ValueError(f"{name}: takes two finite numbers; got {v!r}")
        if name == "uniform":
            if a != int(a) or b != int(b):
                raise ValueError(f"uniform:LOW,HIGH takes whole token counts; got {v!r}")
            return {"dist": "uniform", "mean": (a + b) / 2, "low": int(a), "high": int(b)}
        if name in ("normal", "lognormal"):
            return {"dist": name, "mean": a, "sd": b}
        raise ValueError(f"unknown length distribution {name!r} in {v!r}; choose fixed (a number), uniform, normal "
                         "or lognormal")

    @model_validator(mode="after")
    def _consistent(self) -> LengthDist:
        if self.dist == "uniform" and (self.low is None or self.high is None or self.low > self.high):
            raise ValueError(f"uniform lengths need 1 <= low <= high; got {self.low}, {self.high}")
        if self.dist == "fixed" and self.mean != int(self.mean):
            raise ValueError(f"a fixed length is a whole number of tokens; got {self.mean:g}")
        return self

    @property
    def largest(self) -> int | None:
        """The longest length it can draw (None: unbounded)."""
        if self.dist == "fixed":
            return int(self.mean)
        return self.high if self.dist == "uniform" else None

    def draw(self, n: int, seed: int) -> list[int]:
        rng = np.random.default_rng(seed)
        if self.dist == "fixed":
            x = np.full(n, self.mean)
        elif self.dist == "uniform":
            assert self.low is not None and self.high is not None
            x = rng.integers(self.low, self.high + 1, size=n).astype(float)
        elif self.dist == "normal":
            x = rng.normal(self.mean, self.sd, size=n)
        else:
            sigma2 = math.log(1.0 + (self.sd * self.sd) / (self.mean * self.mean))
            x = rng.lognormal(math.log(self.mean) - sigma2 / 2, math.sqrt(sigma2), size=n)
        return [max(1, round(float(v))) for v in x]

    def describe(self) -> str:
        if self.dist == "fixed":
            return f"{int(self.mean)}"
        if self.dist == "uniform":
            return f"uniform {self.low}..{self.high}"
        return f"{self.dist} {self.mean:g}±{self.sd:g}"
