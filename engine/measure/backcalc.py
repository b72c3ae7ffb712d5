"""Step 6, Measure: the engine's own per-rank KV bytes against the sizing step's prediction.

A serving engine never prints "bytes per token"; it prints the memory it gave the KV pool and
how many tokens that pool holds (``engine.measure.logs`` and ``engine.measure.metrics`` read
them, ``data/measure.yaml`` says where each line comes from). Their quotient is the engine's
own per-rank accounting, which the sizing step (2) has to agree with. Where they disagree, the
size of the ratio points at the cause (an MLA latent replicated on every TP rank, hybrid block
rounding and recurrent state pages, a KV dtype the engine chose, a different memory fraction).
Each finding is a decision with a code; the catalogs word it (data/i18n/<lang>/measure.yaml).

The reading, the first launch and the CLI live in their own modules; their public names are
importable from here too.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from engine import errors as E
from engine.decision import Code, Decimal, Decision, Name, Tokens
from engine.engines import Engine, adapter
from engine.errors import InputError
from engine.kv.sizing import KvSizing
from engine.measure.first_launch import default_port, first_launch, metrics_commands, minimal_launch
from engine.measure.input_guards import GIB
from engine.measure.measure_data import measure_facts
from engine.measure.read_back import parse_engine_text
from engine.measure.reading import EngineReading, as_printed
from engine.rules import engine_rules

# predict(source, tp) -> (predicted bytes/token per rank, attention family, notes)
Predict = Callable[[str, int], tuple[float, str, Sequence[Decision]]]

__all__ = [
    "BackcalcResult",
    "EngineReading",
    "FamilyKind",
    "Predict",
    "backcalculate",
    "default_port",
    "family_kind",
    "first_launch",
    "metrics_commands",
    "minimal_launch",
    "parse_engine_text",
]


@dataclass(frozen=True)
class BackcalcResult:
    """Measured KV bytes per token per rank against the sizing step's prediction."""

    engine: Engine
    tokens_capacity: int
    kv_bytes_available: int
    bytes_per_token_measured: float
    bytes_per_token_predicted: float
    ratio: float
    findings: tuple[Decision, ...]
    notes: tuple[Decision, ...] = ()
    family: str = ""
    tp: int = 1
    evidence: tuple[Decision, ...] = field(default=())

    @property
    def formula(self) -> Decision:
        """Bytes per token as the pool gives it, beside the prediction."""
        return PER_TOKEN(
            pool=self.kv_bytes_available,
            tokens=self.tokens_capacity,
            measured=Decimal(self.bytes_per_token_measured, 1),
            predicted=Decimal(self.bytes_per_token_predicted, 0),
            tp=self.tp,
        )


FamilyKind = Literal["mla", "hybrid", "dense", "other"]


def family_kind(family: str) -> FamilyKind:
    """Which explanation applies to an attention family name from the sizing step.

    Names are matched loosely ("mla", "dsa", "mla+dsa"; "hybrid", "hybrid_linear", "gdn",
    "mamba"; "gqa", "mha", "mqa", "swa") so the sizing step's wording can evolve.
    """
    name = family.strip().lower()
    if "mla" in name or "dsa" in name:
        return "mla"
    if any(tag in name for tag in ("hybrid", "linear", "mamba", "gdn", "deltanet", "ssm")):
        return "hybrid"
    if any(tag in name for tag in ("gqa", "mha", "mqa", "swa", "sliding", "dense", "full")):
        return "dense"
    return "other"


_ONE_BYTE_DTYPES = ("fp8", "float8", "uint8", "int8", "e4m3", "e5m2")

# What the comparison found, one code per finding (worded in data/i18n/<lang>/measure.yaml).
COMPARED = Code("measure.compared", "measured", "pool", "tokens", "predicted", "ratio")
CP_MULTIPLIED = Code("measure.cp_multiplied", "cp")
AGREES = Code("measure.agrees")
AGREES_MLA = Code("measure.agrees.mla_replicated", "family", "tp")
AGREES_OWN_STATE_POOL = Code("measure.agrees.own_state_pool", "engine")
OFF_BY_TP = Code("measure.off_by_tp", "tp", "measured")
PACKED_MLA = Code("measure.packed_mla", "packed", "elements")
HYBRID = Code("measure.hybrid")
HYBRID_VLLM = Code("measure.hybrid.vllm", "length", "extra")
HYBRID_ROUNDING = Code(
    "measure.hybrid.rounding", "rounding", "length", "blocks", "block", "rounded", "state"
)
HYBRID_STATE_PADDING = Code("measure.hybrid.state_padding", "state", "held")
HYBRID_STATE_PAGES = Code("measure.hybrid.state_pages", "state", "held")
DTYPE_MISMATCH = Code("measure.dtype.mismatch", "ratio", "stored", "assumed", "printed")
DTYPE_NOT_PRINTED = Code("measure.dtype.not_printed")
DTYPE_AUTO = Code("measure.dtype.auto")
DTYPE_AS_LOGGED = Code("measure.dtype.as_logged", "dtype", "size")
DTYPE_PRINTED = Code("measure.dtype.printed", "dtype")
DTYPE_ENGINE_DSA = Code("measure.dtype.engine_dsa", "engine", "hopper", "blackwell")
DTYPE_ENGINE_AUTO = Code("measure.dtype.engine_auto", "engine")
KV_HEADS_FACTOR_2 = Code("measure.kv_heads.factor_2", "tp")
KV_HEADS_FACTOR = Code("measure.kv_heads.factor", "factor", "tp")
UNEXPLAINED = Code("measure.unexplained", "dtype", "tp")
MEMORY_FRACTION = Code("measure.memory_fraction", "flag", "value")
MEMORY_FRACTION_MORE = Code("measure.memory_fraction.more", "flag", "value", "planned", "delta")
MEMORY_FRACTION_LESS = Code("measure.memory_fraction.less", "flag", "value", "planned", "delta")
STATE_POOL = Code("measure.state_pool", "slots", "each")
# the sizing step's notes that follow the findings: each layer group's formula, then these
# a log that lacks what the back-calculation divides
CAPACITY_LINE = Code("error.measure.capacity_line", "line")
POOL_LINE = Code("error.measure.pool_line", "line")
NOTE_HYBRID = Code("measure.note.hybrid", "formula")
NOTE_STATE = Code("measure.note.state", "bytes")
# The formula under the comparison: the pool's bytes over its tokens.
PER_TOKEN = Code("measure.formula.per_token", "pool", "tokens", "measured", "predicted", "tp")


def _packed_mla_ratios() -> tuple[float, float]:
    """Packed fp8_ds_mla row over the plain latent, against a 2-byte and a 1-byte prediction
    (data/engine_rules.yaml ds_mla_packed_bytes; data/measure.yaml explanations)."""
    packed = engine_rules().ds_mla_packed_bytes.values["fp8_ds_mla"]
    elements = measure_facts().explanations.ds_mla_latent_elements
    return packed / elements, packed / (2 * elements)


def _near(value: float, target: float, tolerance: float) -> bool:
    return abs(value / target - 1.0) <= tolerance


def _size(value: float) -> Decimal:
    """A byte figure in the unit that reads best: GiB, MiB or B."""
    if value >= GIB:
        return Decimal(value / GIB, 2, "GiB")
    if value >= 1024**2:
        return Decimal(value / 1024**2, 1, "MiB")
    return Decimal(value, 0, "B")


def _dtype_bytes(dtype: str | None) -> int | None:
    if dtype is None or dtype == "auto":
        return None
    lowered = dtype.lower()
    if any(tag in lowered for tag in _ONE_BYTE_DTYPES):
        return 1
    if any(tag in lowered for tag in ("bf16", "bfloat16", "float16", "fp16", "half")):
        return 2
    return None


def _explain_agreement(reading: EngineReading, family: str, tp: int) -> Decision | None:
    if family_kind(family) == "mla" and tp > 1:
        return AGREES_MLA(family=Name(family.upper()), tp=tp)
    eng = adapter(reading.engine)
    if family_kind(family) == "hybrid" and not eng.state_in_kv_pool:
        return AGREES_OWN_STATE_POOL(engine=Name(eng.label))
    return None


def _explain_hybrid(
    reading: EngineReading, predicted: float, measured: float, state_bytes: int | None
) -> list[Decision]:
    length = reading.max_model_len
    if not adapter(reading.engine).state_in_kv_pool or length is None:
        return [HYBRID()]
    extra_per_sequence = (measured - predicted) * length
    out = [HYBRID_VLLM(length=Tokens(length), extra=_size(extra_per_sequence))]
    block = reading.hybrid_block_size
    if block:
        rounded = math.ceil(length / block) * block
        rounding_bytes = (rounded - length) * predicted
        state_part = extra_per_sequence - rounding_bytes
        out.append(
            HYBRID_ROUNDING(
                rounding=_size(rounding_bytes),
                length=Tokens(length),
                blocks=rounded // block,
                block=block,
                rounded=Tokens(rounded),
                state=_size(state_part),
            )
        )
        if state_bytes:
            held = state_part / state_bytes
            code = HYBRID_STATE_PADDING if held < 1.5 else HYBRID_STATE_PAGES
            out.append(code(state=_size(state_bytes), held=Decimal(held, 2)))
    return out


def _explain_dtype(reading: EngineReading, ratio: float, family: str) -> list[Decision]:
    stored_bytes = 2 if ratio > 1 else 1
    printed = reading.cache_dtype
    if printed is None:
        stored = DTYPE_NOT_PRINTED()
    elif printed == "auto":
        stored = DTYPE_AUTO()
    elif _dtype_bytes(printed) == stored_bytes:
        stored = DTYPE_AS_LOGGED(dtype=Name(printed), size=stored_bytes)
    else:
        stored = DTYPE_PRINTED(dtype=Name(printed))
    out = [
        DTYPE_MISMATCH(
            ratio=Decimal(ratio, 2), stored=stored_bytes, assumed=3 - stored_bytes, printed=stored
        )
    ]
    eng = adapter(reading.engine)
    auto = eng.dsa_auto_kv_dtypes
    if "dsa" in family and auto is not None:
        out.append(
            DTYPE_ENGINE_DSA(
                engine=Name(eng.label),
                hopper=Name(str(auto["hopper"])),
                blackwell=Name(str(auto["blackwell"])),
            )
        )
    elif auto is None:
        out.append(DTYPE_ENGINE_AUTO(engine=Name(eng.label)))
    return out


def _explain_memory_fraction(reading: EngineReading, planned: float | None) -> Decision | None:
    if reading.memory_fraction is None:
        return None
    name = Name(adapter(reading.engine).measure.launch_args["memory_fraction"].arg)
    value = as_printed(reading.memory_fraction)
    if planned is not None and abs(planned - reading.memory_fraction) > 0.005:
        delta = reading.memory_fraction - planned
        code = MEMORY_FRACTION_MORE if delta > 0 else MEMORY_FRACTION_LESS
        return code(
            flag=name, value=value, planned=as_printed(planned), delta=Decimal(abs(delta), 2)
        )
    return MEMORY_FRACTION(flag=name, value=value)


def sizing_notes(kv: KvSizing) -> list[Decision]:
    """How the prediction was counted: each layer group's formula, the hybrid page alignment,
    the constant state per request."""
    notes = [g.formula() for g in kv.groups]
    if kv.hybrid is not None:
        notes.append(NOTE_HYBRID(formula=kv.hybrid.formula()))
    if kv.state_bytes_per_request:
        notes.append(NOTE_STATE(bytes=kv.state_bytes_per_request))
    return notes


def _refuse_unusable(reading: EngineReading, predicted: float, tp: int) -> None:
    """A prediction that is no positive byte count, a TP below one, or a log without the
    capacity line or the pool line (the lines this engine prints are named)."""
    if not (math.isfinite(predicted) and predicted > 0):
        raise InputError("predicted_bytes_per_token", E.POSITIVE_BYTES())
    if tp < 1:
        raise InputError("tp", E.POSITIVE(got=E.got(tp)))
    if reading.tokens_capacity is None or reading.tokens_capacity <= 0:
        line = adapter(reading.engine).measure.capacity_lines[0].expected
        raise InputError("log", CAPACITY_LINE(line=Name(line)))
    if reading.kv_bytes_available is None or reading.kv_bytes_available <= 0:
        expected = adapter(reading.engine).measure.pool_line.expected
        raise InputError("log", POOL_LINE(line=Name(expected)))


def backcalculate(
    reading: EngineReading,
    predicted_bytes_per_token: float,
    tp: int,
    family: str,
    notes: Sequence[Decision] = (),
    *,
    state_bytes_per_sequence: int | None = None,
    planned_memory_fraction: float | None = None,
) -> BackcalcResult:
    """Measured KV bytes per token per rank = pool bytes / pool tokens, against the prediction.

    ``predicted_bytes_per_token`` is the sizing step's bytes per token on one rank at this TP;
    ``family`` its attention family (gqa, mha, mqa, mla, dsa, hybrid, ...). The findings name
    the likely cause when the ratio is off; ``notes`` (the sizing step's formulas) follow them.
    """
    _refuse_unusable(reading, predicted_bytes_per_token, tp)
    assert reading.tokens_capacity is not None and reading.kv_bytes_available is not None
    family = family.strip().lower()
    kind = family_kind(family)
    # DCP/PCP multiplies the logged token count by the context-parallel size: undo it to get
    # the tokens one rank's pool really stores.
    rank_tokens = reading.tokens_capacity / reading.context_parallel_size
    measured = reading.kv_bytes_available / rank_tokens
    ratio = measured / predicted_bytes_per_token
    agree = measure_facts().agreement.tolerance
    tolerance = max(agree, 2 * reading.bytes_rounding / reading.kv_bytes_available)

    found: list[Decision | None] = [
        COMPARED(
            measured=Decimal(measured, 0),
            pool=_size(reading.kv_bytes_available),
            tokens=Decimal(rank_tokens, 0),
            predicted=Decimal(predicted_bytes_per_token, 0),
            ratio=Decimal(ratio, 3),
        )
    ]
    if reading.context_parallel_size > 1:
        found.append(CP_MULTIPLIED(cp=reading.context_parallel_size))
    if _near(ratio, 1.0, tolerance):
        found += [AGREES(), _explain_agreement(reading, family, tp)]
    elif kind == "mla" and tp > 1 and _near(ratio, float(tp), tolerance):
        found.append(OFF_BY_TP(tp=tp, measured=Decimal(measured, 0)))
    elif kind == "mla" and any(_near(ratio, r, tolerance) for r in _packed_mla_ratios()):
        packed = engine_rules().ds_mla_packed_bytes.values["fp8_ds_mla"]
        elements = measure_facts().explanations.ds_mla_latent_elements
        found.append(PACKED_MLA(packed=packed, elements=elements))
    elif kind == "hybrid" and ratio > 1:
        found += _explain_hybrid(
            reading, predicted_bytes_per_token, measured, state_bytes_per_sequence
        )
    elif _near(ratio, 2.0, tolerance) or _near(ratio, 0.5, tolerance):
        found += _explain_dtype(reading, ratio, family)
        if kind == "dense" and tp > 1 and ratio > 1:
            found.append(KV_HEADS_FACTOR_2(tp=tp))
    elif kind == "dense" and tp > 1 and ratio > 1 and _near(ratio, round(ratio), tolerance):
        found.append(KV_HEADS_FACTOR(factor=round(ratio), tp=tp))
    else:
        printed = reading.cache_dtype
        dtype = DTYPE_PRINTED(dtype=Name(printed)) if printed else DTYPE_NOT_PRINTED()
        found.append(UNEXPLAINED(dtype=dtype, tp=tp))
    found.append(_explain_memory_fraction(reading, planned_memory_fraction))
    if reading.state_slots and reading.state_bytes:
        found.append(
            STATE_POOL(
                slots=reading.state_slots, each=_size(reading.state_bytes / reading.state_slots)
            )
        )
    return BackcalcResult(
        engine=reading.engine,
        tokens_capacity=reading.tokens_capacity,
        kv_bytes_available=reading.kv_bytes_available,
        bytes_per_token_measured=measured,
        bytes_per_token_predicted=float(predicted_bytes_per_token),
        ratio=ratio,
        findings=tuple(d for d in found if d is not None),
        notes=tuple(notes),
        family=family,
        tp=tp,
        evidence=reading.evidence,
    )
