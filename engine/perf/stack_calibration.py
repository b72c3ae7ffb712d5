"""Calibrated on your benchmark: a deployment's software-stack factors as a small JSON file.

``python -m engine bench-compare … --save-calibration FILE`` (and the Measure page's download)
writes the factors ``engine.perf.user_fit`` refitted on the user's own benchmark results, with
what they were measured on; ``--bench-calibration FILE`` (the scenario's ``bench_calibration``,
held by digest like the GPU calibration) gives them back to ``estimate(..., factors=...)`` for
that engine, and the layouts are ranked with them. A file is validated as physics on load: every
factor one the speed model fits, finite, positive and within the refit's own bounds of its
global value (a share never above 1), so a hand-edited 1e-300 or 1e300 is refused by name.
"""

from __future__ import annotations

import math

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic_core import ErrorDetails, PydanticCustomError

from engine import errors as E
from engine.decision import Code, Decision, Name
from engine.engines import Engine
from engine.errors import InputError
from engine.perf.factors import Factors, perf_facts
from engine.perf.held import Held
from engine.perf.refit import fitted_names, with_values
from engine.perf.user_fit import bounds

FIELD = "bench_calibration"
MAX_BYTES = 65_536  # a few hundred bytes of JSON
MAX_HELD = 256
WRITTEN_BY = "a calibration JSON as bench-compare --save-calibration writes it"

# a factor of the file outside what the refit could have written
FACTOR_RANGE = Code("error.bench.factor_range", "name", "low", "high", "got")


class StackCalibration(BaseModel):
    """The refitted factors and what they were fitted on (the engine's, the GPU's and the
    model's names, the layout in words, the runs) with the median error before and after."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    engine: Engine
    engine_version: str = Field(min_length=1, max_length=40)
    gpu: str = Field(min_length=1, max_length=200)
    model: str = Field(min_length=1, max_length=200)
    layout: str = Field(min_length=1, max_length=200)
    runs: int = Field(ge=1, le=1_000_000)
    factors: dict[str, float] = Field(max_length=64)
    error_before: float = Field(ge=0, le=1e6)
    error_after: float = Field(ge=0, le=1e6)
    how: str = Field(max_length=2000)

    @field_validator("factors")
    @classmethod
    def _physical(cls, v: dict[str, float]) -> dict[str, float]:
        base = perf_facts().factors
        names = fitted_names(base)
        for name, value in v.items():
            if name not in names:
                raise PydanticCustomError(
                    "unknown_factor", "a factor the speed model fits ({expected}), got {name}",
                    {"expected": ", ".join(names), "name": name[:80]},
                )  # fmt: skip
            low, high = bounds(base, name)
            if not (math.isfinite(value) and low <= value <= high):
                raise PydanticCustomError(
                    "factor_range", "{name} from {low} to {high}",
                    {"name": name, "low": f"{low:.4g}", "high": f"{high:.4g}"},
                )  # fmt: skip
        return v

    def factors_over(self, base: Factors) -> Factors:
        """``base`` with these factors in place ("fitted on your benchmark")."""
        return with_values(base, self.factors, "fitted on your benchmark")


# where in a file a value was refused, and what it expects there
AT_KEY = Code("error.bench.at", "at", "expected")
ABOVE = Code("error.bench.above", "low", "got")
UNKNOWN_KEY = Code("error.bench.unknown_key")
OTHER = Code("error.bench.other", "problem")


def _expected(error: ErrorDetails) -> Decision:
    """What pydantic's refusal expects, as a decision (its English words only as a last
    resort, quoted)."""
    kind, ctx = error["type"], error.get("ctx") or {}
    got = E.got(error.get("input"))
    if kind == "missing":
        return E.NOT_EMPTY()
    if kind in ("finite_number",):
        return E.FINITE()
    if kind in ("greater_than", "greater_than_equal"):
        return ABOVE(low=Name(str(ctx.get("gt", ctx.get("ge")))), got=got)
    if kind in ("less_than", "less_than_equal"):
        return E.AT_MOST(high=Name(str(ctx.get("lt", ctx.get("le")))))
    if kind.startswith("int_"):
        return E.WHOLE_NUMBER()
    if kind.startswith("float_"):
        return E.DECIMAL()
    if kind == "factor_range":
        return FACTOR_RANGE(
            name=Name(str(ctx["name"])), low=Name(ctx["low"]), high=Name(ctx["high"]), got=got
        )
    if kind == "unknown_factor":
        names = str(ctx["expected"]).split(", ")
        return E.ONE_OF_GOT(choices=tuple(Name(n) for n in names), got=Name(str(ctx["name"])))
    if kind == "literal_error":
        return E.ONE_OF(choices=(Name(str(ctx.get("expected", ""))[:200]),))
    if kind == "extra_forbidden":
        return UNKNOWN_KEY()
    if kind in ("string_too_long", "too_long"):
        return E.AT_MOST(high=Name(str(ctx.get("max_length", "?"))))
    return OTHER(problem=Name(error["msg"][:200]))


def refusal(field: str, err: ValidationError, what: str) -> InputError:
    """One InputError for a file pydantic refused: ``field``, the key inside the file and what
    it expects there (its first error; ``what`` says in English what file was expected)."""
    first = err.errors()[0]
    where = ".".join(str(x) for x in first["loc"]) or field
    return InputError(
        field,
        f"{what} ({where}: {first['msg']})",
        expects=AT_KEY(at=Name(where[:120]), expected=_expected(first)),
    )


def parse_stack_calibration(data: bytes | str) -> StackCalibration:
    """A stack calibration from JSON text, validated; bad input is one InputError naming the
    field (a factor out of its bounds names the factor)."""
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    if len(raw) > MAX_BYTES:
        raise InputError(
            FIELD,
            f"a calibration JSON of at most {MAX_BYTES:,} B",
            expects=E.FILE_SIZE(most=MAX_BYTES, got=len(raw)),
        )
    try:
        return StackCalibration.model_validate_json(raw)
    except ValidationError as err:
        raise refusal(FIELD, err, WRITTEN_BY) from None


def to_json(cal: StackCalibration) -> str:
    return cal.model_dump_json(indent=2) + "\n"


_held: Held[StackCalibration] = Held(MAX_HELD)


def put(cal: StackCalibration) -> str:
    """Hold ``cal`` and return its digest (a Scenario names it by that)."""
    return _held.put(cal)


HELD_AGAIN = Code("error.bench.upload_again")


def get(digest: str) -> StackCalibration:
    cal = _held.get(digest)
    if cal is None:
        raise InputError(
            FIELD,
            "a benchmark calibration this server still holds: upload it again",
            expects=HELD_AGAIN(),
        )
    return cal
