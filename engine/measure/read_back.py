"""A startup log and/or /metrics text -> one per-rank ``EngineReading``: size caps first, the
two texts from one engine, the log winning where both say the same thing."""

from __future__ import annotations

from engine.engines import Engine, adapter
from engine.errors import InputError
from engine.measure.input_guards import check_text_size
from engine.measure.logs import expected_log, parse_log
from engine.measure.metrics import parse_metrics
from engine.measure.reading import AT_BLOCKS, EngineReading, Partial, Source, Value


def _missing_capacity(engine: Engine, source: Source) -> InputError:
    """Where the engine's log and /metrics state the KV pool's token capacity."""
    vocab = adapter(engine).measure
    lines = " or ".join(line.expected for line in vocab.capacity_lines)
    metrics = " or ".join(vocab.capacity_metrics)
    expected = f"the line {lines}, or {metrics} in /metrics"
    return InputError(source, f"expected {expected}; not found, the text looks truncated")


def _merge(parts: list[Partial]) -> Partial:
    engine = parts[0].engine
    if any(p.engine != engine for p in parts):
        raise InputError(
            "metrics", f"/metrics from the same engine as the log ({engine}); got the other one"
        )
    merged = Partial(engine, parts[0].source)
    for part in parts:
        for key, value in part.values.items():
            merged.values.setdefault(key, value)
        merged.evidence.extend(part.evidence)
    return merged


def _reading(merged: Partial) -> EngineReading:
    values = merged.values

    def get_int(key: str) -> int | None:
        value: Value | None = values.get(key)
        return int(value) if isinstance(value, int | float) else None

    def get_float(key: str) -> float | None:
        value: Value | None = values.get(key)
        return float(value) if isinstance(value, int | float) else None

    dtype = values.get("cache_dtype")
    return EngineReading(
        engine=merged.engine,
        tokens_capacity=get_int("tokens_capacity"),
        kv_bytes_available=get_int("kv_bytes_available"),
        max_model_len=get_int("max_model_len"),
        max_concurrency=get_float("max_concurrency"),
        block_size=get_int("block_size"),
        hybrid_block_size=get_int("hybrid_block_size"),
        num_gpu_blocks=get_int("num_gpu_blocks"),
        cache_dtype=dtype if isinstance(dtype, str) else None,
        memory_fraction=get_float("memory_fraction"),
        tp_size=get_int("tp_size"),
        context_parallel_size=get_int("context_parallel_size") or 1,
        usage_ratio=get_float("usage_ratio"),
        used_tokens=get_int("used_tokens"),
        state_slots=get_int("state_slots"),
        state_bytes=get_int("state_bytes"),
        bytes_rounding=get_int("bytes_rounding") or 0,
        evidence=tuple(merged.evidence),
    )


def parse_engine_text(log: str | None, metrics: str | None) -> EngineReading:
    """Read a vLLM or SGLang startup log and/or /metrics text into one per-rank reading.

    The log wins where both say the same thing (it carries the memory the pool got, /metrics
    does not). Raises ``InputError`` naming ``log`` or ``metrics`` on empty, oversized,
    foreign, garbled or truncated text, or a number that is not finite and in range, saying
    which line was expected.
    """
    for text, source in ((log, "log"), (metrics, "metrics")):
        if text is not None:
            check_text_size(text, source)
    log_text = (log or "").strip()
    metrics_text = (metrics or "").strip()
    if not log_text and not metrics_text:
        field_name = "log" if log is not None or metrics is None else "metrics"
        raise InputError(field_name, f"{expected_log()}, or /metrics text; got nothing")
    parts: list[Partial] = []
    if log_text:
        parts.append(parse_log(log_text))
    if metrics_text:
        parts.append(parse_metrics(metrics_text))
    merged = _merge(parts)
    values = merged.values
    if "tokens_capacity" not in values:  # vLLM's /metrics: blocks x block size
        blocks, block = values.get("num_gpu_blocks"), values.get("block_size")
        if isinstance(blocks, int) and isinstance(block, int):
            # Exact for single-group models; hybrids need the log's group-aware count.
            merged.put(
                "tokens_capacity",
                blocks * block,
                AT_BLOCKS(),
            )
    if "tokens_capacity" not in values:
        raise _missing_capacity(merged.engine, "log" if log_text else "metrics")
    return _reading(merged)
