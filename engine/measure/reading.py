"""What an engine said about its KV pool: the per-rank ``EngineReading``, and the ``Partial``
values one text (a log or /metrics) yields before the two are merged."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from engine.decision import Code, Decimal, Decision, Name
from engine.engines import Engine
from engine.errors import InputError
from engine.measure.input_guards import BadValue, read_value
from engine.measure.measure_data import ValueKind
from engine.text.words import say

Value = float | int | str
Source = Literal["log", "metrics"]

# Where a value was read (the evidence names its line; errors quote it in English).
AT_LOG = Code("measure.at.log", "line", "label")
AT_LOG_GIB = Code("measure.at.log_gib", "line", "label", "step")
AT_LOG_GB = Code("measure.at.log_gb", "line", "label")
AT_LOG_ARG = Code("measure.at.log_arg", "line", "label", "arg")
AT_METRICS = Code("measure.at.metrics", "metric")
AT_METRICS_LINE = Code("measure.at.metrics_line", "line", "metric")
AT_METRICS_LABEL = Code("measure.at.metrics_label", "line", "metric", "label")
AT_BLOCKS = Code("measure.at.blocks")
AT_USED_OVER_USAGE = Code("measure.at.used_over_usage")
# The evidence: each value with the place it was read, or why it was left out.
READ = Code("measure.evidence.read", "field", "value", "at")
LEFT_OUT = Code("measure.evidence.left_out", "field", "at", "value")
LATER_KV_LINES = Code("measure.evidence.later_kv_lines")


def as_printed(value: float) -> Decimal:
    """A number as Python's ``:g`` prints it (0.9, 0.85, 7.06404): no trailing zeros."""
    text = f"{value:g}"
    if "e" in text:  # too large or small for plain digits: keep six significant ones
        return Decimal(value, 6)
    return Decimal(value, len(text.partition(".")[2]))


def _param(value: Value) -> int | Decimal | Name:
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return as_printed(value)
    return Name(value)


@dataclass(frozen=True)
class EngineReading:
    """What one engine's startup log and /metrics say about its KV pool, per TP rank.

    ``tokens_capacity`` is the engine's own token count for the pool and ``kv_bytes_available``
    the bytes it gave the pool on one rank; everything else is context for the explanation.
    ``evidence`` lists, for each value, the text it came from (the "show the work" trail).
    """

    engine: Engine
    tokens_capacity: int | None  # vLLM 'GPU KV cache size'; SGLang '#tokens' / max_total_num_tokens
    kv_bytes_available: int | None  # vLLM 'Available KV cache memory'; SGLang K + V (or KV) size
    max_model_len: int | None = None
    max_concurrency: float | None = None  # requests of max_model_len the pool holds
    block_size: int | None = None  # cache_config_info block_size (or --block-size)
    hybrid_block_size: int | None = None  # vLLM raised the attention block to this (hybrids)
    num_gpu_blocks: int | None = None
    cache_dtype: str | None = None  # as the engine printed it ("auto", "fp8", "bfloat16", ...)
    memory_fraction: float | None = None  # gpu_memory_utilization / mem_fraction_static
    tp_size: int | None = None
    context_parallel_size: int = 1  # DCP x PCP: vLLM multiplies its token count by it
    usage_ratio: float | None = None  # vllm:kv_cache_usage_perc / sglang:token_usage, 0..1
    used_tokens: int | None = None  # sglang:num_used_tokens
    state_slots: int | None = None  # SGLang Mamba pool: sequences it holds state for
    state_bytes: int | None = None  # SGLang Mamba pool: conv + SSM state bytes
    bytes_rounding: int = 0  # worst-case error of the printed GiB (0.005 GiB per number)
    evidence: tuple[Decision, ...] = ()


@dataclass
class Partial:
    """Values one text gave, first one wins, each with the place it was read."""

    engine: Engine
    source: Source
    values: dict[str, Value] = field(default_factory=dict)
    evidence: list[Decision] = field(default_factory=list)

    def put(self, key: str, value: Value | None, why: Decision) -> None:
        if value is None or key in self.values:
            return
        self.values[key] = value
        self.evidence.append(READ(field=Name(key), value=_param(value), at=why))

    def read(
        self, raw: str, kind: ValueKind, where: Decision, *, skip_bad: bool, name: str
    ) -> Value | None:
        """``raw`` checked as ``kind``. A bad value raises ``InputError`` naming ``where``, or,
        with ``skip_bad``, is left out with a note in the evidence."""
        try:
            return read_value(raw, kind)
        except BadValue as bad:
            if not skip_bad:
                raise InputError(self.source, f"{say(where)}: {bad.expected}") from None
            self.evidence.append(LEFT_OUT(field=Name(name), at=where, value=Name(bad.raw)))
            return None
