"""Step 6, Measure: the engine's own per-rank KV bytes against the sizing step's prediction.

A serving engine never prints "bytes per token"; it prints the memory it gave the KV pool and
how many tokens that pool holds (``engine.measure.logs`` and ``engine.measure.metrics`` read
them, ``data/measure.yaml`` says where each line comes from). Their quotient is the engine's
own per-rank accounting, which the sizing step (2) has to agree with. Where they disagree, the
size of the ratio points at the cause (an MLA latent replicated on every TP rank, hybrid block
rounding and recurrent state pages, a KV dtype the engine chose, a different memory fraction).

The reading, the first launch and the CLI live in their own modules; their public names are
importable from here too.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from engine.engines import adapter, check_engine
from engine.errors import InputError
from engine.measure.data import measure_facts
from engine.measure.first_launch import default_port, first_launch, metrics_commands, minimal_launch
from engine.measure.inputs import GIB
from engine.measure.parse import parse_engine_text
from engine.measure.reading import EngineReading
from engine.rules import engine_rules
from engine.software.tables import Engine

# predict(source, tp) -> (predicted bytes/token per rank, attention family, notes)
Predict = Callable[[str, int], tuple[float, str, list[str]]]

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
    explanation: str
    family: str = ""
    tp: int = 1
    evidence: tuple[str, ...] = field(default=())

    def as_dict(self) -> dict[str, str | int | float]:
        """The seven public fields, in the order the CLI prints them."""
        return {
            "engine": self.engine,
            "tokens_capacity": self.tokens_capacity,
            "kv_bytes_available": self.kv_bytes_available,
            "bytes_per_token_measured": round(self.bytes_per_token_measured, 1),
            "bytes_per_token_predicted": round(self.bytes_per_token_predicted, 1),
            "ratio": round(self.ratio, 4),
            "explanation": self.explanation,
        }

    def to_json(self) -> str:
        return json.dumps(self.as_dict(), indent=2)


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


def _packed_mla_ratios() -> tuple[float, float]:
    """Packed fp8_ds_mla row over the plain latent, against a 2-byte and a 1-byte prediction
    (data/engine_rules.yaml ds_mla_packed_bytes; data/measure.yaml explanations)."""
    packed = engine_rules().ds_mla_packed_bytes.values["fp8_ds_mla"]
    elements = measure_facts().explanations.ds_mla_latent_elements
    return packed / elements, packed / (2 * elements)


def _near(value: float, target: float, tolerance: float) -> bool:
    return abs(value / target - 1.0) <= tolerance


def _fmt_bytes(value: float) -> str:
    if value >= GIB:
        return f"{value / GIB:,.2f} GiB"
    if value >= 1024**2:
        return f"{value / 1024**2:,.1f} MiB"
    return f"{value:,.0f} B"


def _dtype_bytes(dtype: str | None) -> int | None:
    if dtype is None or dtype == "auto":
        return None
    lowered = dtype.lower()
    if any(tag in lowered for tag in _ONE_BYTE_DTYPES):
        return 1
    if any(tag in lowered for tag in ("bf16", "bfloat16", "float16", "fp16", "half")):
        return 2
    return None


def _explain_agreement(reading: EngineReading, family: str, tp: int) -> str:
    if family_kind(family) == "mla" and tp > 1:
        return (
            f"As expected for {family.upper()}: the latent is replicated on every one of the "
            f"{tp} TP ranks, so per-rank bytes do not shrink with TP (DP attention, or vLLM "
            "--data-parallel-size with expert parallel, keeps each request on one rank)."
        )
    if family_kind(family) == "hybrid" and not adapter(reading.engine).state_in_kv_pool:
        return "SGLang keeps the recurrent state in its own Mamba pool, outside this KV pool."
    return ""


def _explain_hybrid(
    reading: EngineReading, predicted: float, measured: float, state_bytes: int | None
) -> str:
    length = reading.max_model_len
    if not adapter(reading.engine).state_in_kv_pool or length is None:
        return (
            "Hybrid model: the KV pool also pays for recurrent (GDN/Mamba) state per sequence "
            "and for attention blocks rounded up to the mamba page; the per-token quotient "
            "spreads that per-sequence cost over the context length."
        )
    extra_per_sequence = (measured - predicted) * length
    text = (
        f"Hybrid model: vLLM counts capacity as max concurrency x max_model_len ({length:,}), "
        f"and each sequence also holds recurrent-state pages, so the pool spends "
        f"{_fmt_bytes(extra_per_sequence)} per sequence beyond the attention KV."
    )
    block = reading.hybrid_block_size
    if block:
        rounded = math.ceil(length / block) * block
        rounding_bytes = (rounded - length) * predicted
        state_part = extra_per_sequence - rounding_bytes
        text += (
            f" Of that, {_fmt_bytes(rounding_bytes)} is block rounding ({length:,} tokens fill "
            f"{rounded // block} blocks of {block} = {rounded:,} tokens: vLLM raised the "
            f"attention block to {block} so an attention page is as large as a mamba page) "
            f"and {_fmt_bytes(state_part)} is recurrent state, padded to whole pages."
        )
        if state_bytes:
            held = state_part / state_bytes
            why = (
                "the padding of each state page up to the attention page"
                if held < 1.5
                else "more than one page per layer group: with prefix caching (align mode) "
                "vLLM keeps a running page and a cached one, plus speculative-decoding pages"
            )
            text += (
                f" The model's state is {_fmt_bytes(state_bytes)} per sequence; the pool holds "
                f"{held:.2f}x that: {why}."
            )
    return text


def _explain_dtype(reading: EngineReading, ratio: float, family: str) -> str:
    stored_bytes = 2 if ratio > 1 else 1
    printed = reading.cache_dtype
    if printed is None or printed == "auto":
        stored = "not printed" if printed is None else "auto, i.e. the model dtype"
    elif _dtype_bytes(printed) == stored_bytes:
        stored = f"{printed}, {stored_bytes} byte{'s' if stored_bytes > 1 else ''}, as the log says"
    else:
        stored = printed
    text = (
        f"A factor of {ratio:.2f} is a KV dtype mismatch: the engine stored "
        f"{stored_bytes}-byte KV (cache dtype: {stored}) while the prediction assumed "
        f"{3 - stored_bytes}-byte."
    )
    eng = adapter(reading.engine)
    auto = eng.dsa_auto_kv_dtypes
    if "dsa" in family and auto is not None:
        text += (
            f" {eng.label} picks the DSA KV dtype itself: {auto['hopper']} on Hopper, "
            f"{auto['blackwell']} on Blackwell (SM>=10), when --kv-cache-dtype is auto."
        )
    elif auto is None:
        text += f" {eng.label}'s --kv-cache-dtype auto means the model dtype."
    return text


def _explain_memory_fraction(reading: EngineReading, planned: float | None) -> str:
    if reading.memory_fraction is None:
        return ""
    name = measure_facts().launch_args.for_engine(reading.engine)["memory_fraction"].arg
    text = f"The pool was sized with {name}={reading.memory_fraction:g}"
    if planned is not None and abs(planned - reading.memory_fraction) > 0.005:
        text += (
            f", not the planned {planned:g}: capacity (tokens) moves by about "
            f"{reading.memory_fraction - planned:+.2f} x GPU memory of KV, bytes per token do not"
        )
    return text + "."


# Where each engine's log states the KV pool's bytes.
_POOL_BYTES_LINES = {
    "vllm": "'Available KV cache memory: Z GiB'",
    "sglang": "'KV Cache is allocated. #tokens: N, K size: a GB, V size: b GB'",
}


def backcalculate(
    reading: EngineReading,
    predicted_bytes_per_token: float,
    tp: int,
    family: str,
    notes: Sequence[str] = (),
    *,
    state_bytes_per_sequence: int | None = None,
    planned_memory_fraction: float | None = None,
) -> BackcalcResult:
    """Measured KV bytes per token per rank = pool bytes / pool tokens, against the prediction.

    ``predicted_bytes_per_token`` is the sizing step's bytes per token on one rank at this TP;
    ``family`` its attention family (gqa, mha, mqa, mla, dsa, hybrid, ...). The explanation
    names the likely cause when the ratio is off.
    """
    if not (math.isfinite(predicted_bytes_per_token) and predicted_bytes_per_token > 0):
        raise InputError("predicted_bytes_per_token", "a positive number of bytes")
    if tp < 1:
        raise InputError("tp", "a tensor-parallel size of at least 1")
    if reading.tokens_capacity is None or reading.tokens_capacity <= 0:
        raise InputError("log", "a positive KV token capacity ('GPU KV cache size: N tokens')")
    if reading.kv_bytes_available is None or reading.kv_bytes_available <= 0:
        expected = _POOL_BYTES_LINES[check_engine(reading.engine)]
        raise InputError("log", f"the line {expected}, which gives the KV pool's bytes")

    family = family.strip().lower()
    kind = family_kind(family)
    # DCP/PCP multiplies the logged token count by the context-parallel size: undo it to get
    # the tokens one rank's pool really stores.
    rank_tokens = reading.tokens_capacity / reading.context_parallel_size
    measured = reading.kv_bytes_available / rank_tokens
    ratio = measured / predicted_bytes_per_token
    agree = measure_facts().agreement.tolerance
    tolerance = max(agree, 2 * reading.bytes_rounding / reading.kv_bytes_available)

    sentences = [
        f"Measured {measured:,.0f} B/token per rank ({_fmt_bytes(reading.kv_bytes_available)} "
        f"/ {rank_tokens:,.0f} tokens) vs predicted {predicted_bytes_per_token:,.0f}: "
        f"ratio {ratio:.3f}."
    ]
    if reading.context_parallel_size > 1:
        sentences.append(
            f"The logged capacity was multiplied by the context-parallel size "
            f"{reading.context_parallel_size}: each rank stores 1/{reading.context_parallel_size} "
            "of every sequence."
        )
    if _near(ratio, 1.0, tolerance):
        sentences.append("Agrees with the sizing model.")
        sentences.append(_explain_agreement(reading, family, tp))
    elif kind == "mla" and tp > 1 and _near(ratio, float(tp), tolerance):
        sentences.append(
            f"Off by the TP size ({tp}): the prediction divided the cache by TP, but the MLA "
            f"latent has one head and is replicated on every TP rank (vLLM MLAAttentionSpec "
            f"max_tp_shards=1; SGLang duplicates it unless --enable-dp-attention). Per-rank "
            f"bytes are the full {measured:,.0f} B/token at any TP."
        )
    elif kind == "mla" and any(_near(ratio, r, tolerance) for r in _packed_mla_ratios()):
        packed = engine_rules().ds_mla_packed_bytes.values["fp8_ds_mla"]
        elements = measure_facts().explanations.ds_mla_latent_elements
        sentences.append(
            f"The engine stored the packed fp8_ds_mla layout ({packed} B per token per layer: "
            "fp8 latent + fp32 scales + bf16 RoPE) that FlashMLA-sparse uses for any fp8 "
            f"--kv-cache-dtype, not the plain {elements}-element latent the prediction assumed."
        )
    elif kind == "hybrid" and ratio > 1:
        sentences.append(
            _explain_hybrid(reading, predicted_bytes_per_token, measured, state_bytes_per_sequence)
        )
    elif _near(ratio, 2.0, tolerance) or _near(ratio, 0.5, tolerance):
        sentences.append(_explain_dtype(reading, ratio, family))
        if kind == "dense" and tp > 1 and ratio > 1:
            sentences.append(
                f"At TP {tp} a factor of 2 also appears when num_kv_heads < TP: each rank then "
                "keeps max(1, kv_heads // TP) KV heads, replicated, not a 1/TP share."
            )
    elif kind == "dense" and tp > 1 and ratio > 1 and _near(ratio, round(ratio), tolerance):
        sentences.append(
            f"An integer factor ({round(ratio)}) at TP {tp}: when num_kv_heads < TP the engine "
            "replicates KV heads (each rank keeps max(1, kv_heads // TP) heads), so per-rank "
            "bytes stop shrinking with TP."
        )
    else:
        stored = reading.cache_dtype or "not printed"
        sentences.append(
            f"Unexplained by the usual causes. Check the KV dtype the engine used ({stored}), "
            "layers the engine skips or adds (MTP/draft layers, indexer caches), speculative "
            "decoding blocks, and whether the prediction is per rank at TP "
            f"{tp}."
        )
    sentences.append(_explain_memory_fraction(reading, planned_memory_fraction))
    if reading.state_slots and reading.state_bytes:
        sentences.append(
            f"Separate recurrent-state pool: {reading.state_slots:,} sequences x "
            f"{_fmt_bytes(reading.state_bytes / reading.state_slots)} each "
            "(SGLang keeps the SSM state in float32 unless --mamba-ssm-dtype says otherwise)."
        )
    sentences.extend(note.strip() for note in notes if note.strip())
    explanation = " ".join(s for s in sentences if s)
    return BackcalcResult(
        engine=reading.engine,
        tokens_capacity=reading.tokens_capacity,
        kv_bytes_available=reading.kv_bytes_available,
        bytes_per_token_measured=measured,
        bytes_per_token_predicted=float(predicted_bytes_per_token),
        ratio=ratio,
        explanation=explanation,
        family=family,
        tp=tp,
        evidence=reading.evidence,
    )
