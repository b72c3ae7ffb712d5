"""Step 6, Measure: read a running engine's startup log and /metrics, back-calculate KV bytes.

A serving engine never prints "bytes per token"; it prints the memory it gave the KV pool and
how many tokens that pool holds. Their quotient is the engine's own per-rank accounting, which
is what the sizing step (2) has to agree with. Where they disagree, the size of the ratio points
at the cause (an MLA latent replicated on every TP rank, hybrid block rounding and recurrent
state pages, a KV dtype the engine chose, a different memory fraction).

Lines read, and where the engines print them:

vLLM
  ``Available KV cache memory: Z GiB``          vllm/v1/worker/gpu_worker.py (``format_gib``:
                                                GiB rounded to 2 decimals, per worker/rank)
  ``GPU KV cache size: N tokens``                vllm/v1/core/kv_cache_utils.py (``N`` is
  ``Maximum concurrency for L tokens per         ``int(max_concurrency * max_model_len)``,
  request: C x``                                 group-aware for hybrids; newer releases print
                                                 both on one line)
  ``Setting attention block size to B tokens``   vllm/platforms/interface.py (hybrid alignment)
  ``Multiplying the GPU KV cache size by the     kv_cache_utils.py (DCP/PCP shards tokens)
  cp_world_size K``
  ``non-default args: {...}``                    vllm/entrypoints/utils.py
  ``vllm:cache_config_info{...} 1.0``            vllm/v1/metrics/loggers.py; labels are
                                                 ``CacheConfig.metrics_info()``
  ``vllm:kv_cache_usage_perc`` (older: ``vllm:gpu_cache_usage_perc``)

SGLang
  ``KV Cache is allocated. #tokens: N, K size: a GB, V size: b GB``   (MHA pool)
  ``KV Cache is allocated. #tokens: N, KV size: c GB``                (MLA pool)
      python/sglang/srt/mem_cache/memory_pool.py; there ``GB = 1024 * 1024 * 1024``, so the
      "GB" printed is GiB, rounded to 2 decimals, per TP rank.
  ``Mamba Cache is allocated. max_mamba_cache_size: S, conv_state size: x GB, ssm_state size:
  y GB``                                         same file (hybrid models' separate state pool)
  ``max_total_num_tokens=N, ...``                python/sglang/srt/managers/scheduler.py
  ``Using KV cache dtype: torch.X``              model_executor/model_runner.py
  ``server_args=ServerArgs(...)``                the launch arguments dump
  ``sglang:token_usage``, ``sglang:num_used_tokens``, ``sglang:max_total_num_tokens``
      python/sglang/srt/metrics/collector.py (needs ``--enable-metrics``)
"""

from __future__ import annotations

import argparse
import json
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from engine.cli_util import InputErrorParser, run_cli
from engine.errors import InputError
from engine.software.tables import ENGINES, Engine, lookup_flag

GIB = 1024**3

# The conservative first launch: a short context and a memory fraction below both engines'
# defaults (vLLM 0.92, SGLang picks ~0.8-0.9 by GPU) so that the first start does not OOM.
FIRST_LAUNCH_MEMORY_FRACTION = 0.85

# A measured/predicted ratio within this band "agrees": vLLM floors the pool to whole blocks
# and both engines print GiB rounded to 0.01, so a few percent is noise, not a finding.
AGREE_TOLERANCE = 0.03

_NUM = r"(\d[\d,]*)"
_FLOAT = r"(\d+(?:\.\d+)?)"


# --------------------------------------------------------------------------------------------
# What was read
# --------------------------------------------------------------------------------------------


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
    evidence: tuple[str, ...] = ()


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


# --------------------------------------------------------------------------------------------
# Log parsing
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _LinePattern:
    """One line an engine prints: a marker to spot it and the full form to read it."""

    key: str
    engine: Engine
    marker: str
    regex: re.Pattern[str]
    expected: str
    source: str
    label: str  # how the evidence trail names the line


def _pattern(
    key: str, engine: Engine, marker: str, regex: str, expected: str, source: str, label: str
) -> _LinePattern:
    return _LinePattern(key, engine, marker, re.compile(regex), expected, source, label)


_LOG_PATTERNS: tuple[_LinePattern, ...] = (
    _pattern(
        "vllm_tokens",
        "vllm",
        "KV cache size:",
        rf"(?:GPU|CPU|XPU|TPU|HPU|NPU) KV cache size: {_NUM} tokens",
        "'GPU KV cache size: N tokens'",
        "vllm/v1/core/kv_cache_utils.py",
        "GPU KV cache size",
    ),
    _pattern(
        "vllm_concurrency",
        "vllm",
        "Maximum concurrency for",
        rf"Maximum concurrency for {_NUM} tokens per request: {_FLOAT}x",
        "'Maximum concurrency for L tokens per request: C x'",
        "vllm/v1/core/kv_cache_utils.py",
        "Maximum concurrency",
    ),
    _pattern(
        "vllm_available",
        "vllm",
        "Available KV cache memory:",
        rf"Available KV cache memory: {_FLOAT} GiB",
        "'Available KV cache memory: Z GiB'",
        "vllm/v1/worker/gpu_worker.py",
        "Available KV cache memory",
    ),
    _pattern(
        "vllm_hybrid_block",
        "vllm",
        "Setting attention block size to",
        rf"Setting attention block size to {_NUM} tokens",
        "'Setting attention block size to B tokens ...'",
        "vllm/platforms/interface.py",
        "Setting attention block size",
    ),
    _pattern(
        "vllm_cp",
        "vllm",
        "Multiplying the GPU KV cache size by the cp_world_size",
        r"Multiplying the GPU KV cache size by the cp_world_size (\d+)",
        "'Multiplying the GPU KV cache size by the cp_world_size K ...'",
        "vllm/v1/core/kv_cache_utils.py",
        "Multiplying the GPU KV cache size",
    ),
    _pattern(
        "vllm_args",
        "vllm",
        "non-default args:",
        r"non-default args: (\{.*\})",
        "'non-default args: {...}'",
        "vllm/entrypoints/utils.py",
        "non-default args",
    ),
    _pattern(
        "sglang_kv",
        "sglang",
        "KV Cache is allocated.",
        rf"KV Cache is allocated\.(?: dtype: (?:torch\.)?(\w+),)? #tokens: {_NUM}, "
        rf"(?:K size: {_FLOAT} ?GB, V size: {_FLOAT} ?GB|KV size: {_FLOAT} ?GB)",
        "'KV Cache is allocated. #tokens: N, K size: a GB, V size: b GB' "
        "(or '..., KV size: c GB' for MLA)",
        "python/sglang/srt/mem_cache/memory_pool.py",
        "KV Cache is allocated",
    ),
    _pattern(
        "sglang_mamba",
        "sglang",
        "Mamba Cache is allocated.",
        rf"Mamba Cache is allocated\. max_mamba_cache_size: {_NUM}, "
        rf"conv_state size: {_FLOAT} ?GB, ssm_state size: {_FLOAT} ?GB",
        "'Mamba Cache is allocated. max_mamba_cache_size: S, conv_state size: x GB, "
        "ssm_state size: y GB'",
        "python/sglang/srt/mem_cache/memory_pool.py",
        "Mamba Cache is allocated",
    ),
    _pattern(
        "sglang_max_total",
        "sglang",
        "max_total_num_tokens=",
        rf"max_total_num_tokens={_NUM}",
        "'max_total_num_tokens=N, ...'",
        "python/sglang/srt/managers/scheduler.py",
        "max_total_num_tokens",
    ),
    _pattern(
        "sglang_dtype",
        "sglang",
        "Using KV cache dtype:",
        r"Using KV cache dtype: (?:torch\.)?(\w+)",
        "'Using KV cache dtype: torch.X'",
        "python/sglang/srt/model_executor/model_runner.py",
        "Using KV cache dtype",
    ),
    _pattern(
        "sglang_args",
        "sglang",
        "server_args=ServerArgs(",
        r"server_args=ServerArgs\((.*)\)",
        "'server_args=ServerArgs(...)'",
        "python/sglang/srt/server_args.py",
        "server_args",
    ),
)

# Lines that by themselves say which engine wrote the log: the capacity and memory lines.
_STRONG_KEYS: dict[Engine, tuple[str, ...]] = {
    "vllm": ("vllm_tokens", "vllm_available", "vllm_concurrency"),
    "sglang": ("sglang_kv", "sglang_max_total", "sglang_mamba"),
}

_EXPECTED_LOG = (
    "a vLLM or SGLang startup log; expected a vLLM line 'GPU KV cache size: N tokens' "
    "(vllm/v1/core/kv_cache_utils.py) or an SGLang line 'KV Cache is allocated. #tokens: N, "
    "K size: a GB, V size: b GB' (python/sglang/srt/mem_cache/memory_pool.py)"
)


def _int(text: str) -> int:
    return int(text.replace(",", ""))


def _short(line: str, limit: int = 120) -> str:
    line = line.strip()
    return line if len(line) <= limit else line[: limit - 3] + "..."


@dataclass
class _Found:
    """Every match of each log pattern, and the marker lines that did not match."""

    matches: dict[str, list[tuple[int, re.Match[str]]]] = field(default_factory=dict)
    broken: dict[str, tuple[int, str]] = field(default_factory=dict)

    def first(self, key: str) -> re.Match[str] | None:
        hits = self.matches.get(key)
        return hits[0][1] if hits else None

    def all(self, key: str) -> list[re.Match[str]]:
        return [m for _, m in self.matches.get(key, [])]

    def why(self, key: str) -> str:
        """Where the first match of ``key`` is: ``log line N '<label>'``."""
        return f"log line {self.matches[key][0][0]} '{_PATTERN_BY_KEY[key].label}'"


# The lines the back-calculation cannot do without: a cut-off copy of one of them, with no
# whole copy elsewhere, means the log was truncated.
_ESSENTIAL = ("vllm_tokens", "vllm_available", "sglang_kv", "sglang_max_total")
_PATTERN_BY_KEY = {p.key: p for p in _LOG_PATTERNS}


def _scan_log(text: str) -> _Found:
    found = _Found()
    for number, line in enumerate(text.splitlines(), start=1):
        for pattern in _LOG_PATTERNS:
            if pattern.marker not in line:
                continue
            match = pattern.regex.search(line)
            if match is None:
                found.broken.setdefault(pattern.key, (number, line))
            else:
                found.matches.setdefault(pattern.key, []).append((number, match))
    for key in _ESSENTIAL:
        if key in found.broken and key not in found.matches:
            number, line = found.broken[key]
            pattern = _PATTERN_BY_KEY[key]
            raise InputError(
                "log",
                f"line {number} starts {pattern.engine}'s {pattern.expected} but is cut off or "
                f"garbled ({_short(line)!r}); the log looks truncated",
            )
    return found


def _detect(found: _Found, field_name: str) -> Engine | None:
    engines = [e for e in ENGINES if any(k in found.matches for k in _STRONG_KEYS[e])]
    if len(engines) > 1:
        raise InputError(
            field_name,
            "one engine's text; found both vLLM ('GPU KV cache size') and SGLang "
            "('KV Cache is allocated') lines",
        )
    return engines[0] if engines else None


_PY_KV = re.compile(r"'?(\w+)'?\s*[:=]\s*('[^']*'|\"[^\"]*\"|[^,{}()]+)")


def _py_args(text: str) -> dict[str, str]:
    """Key/value pairs from a repr like ``{'a': 1, 'b': 'x'}`` or ``ServerArgs(a=1, b='x')``."""
    return {key: value.strip().strip("'\"") for key, value in _PY_KV.findall(text)}


def _float_or_none(text: str | None) -> float | None:
    if text is None:
        return None
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _int_or_none(text: str | None) -> int | None:
    value = _float_or_none(text)
    return int(value) if value is not None and value == int(value) else None


@dataclass
class _Partial:
    """Values read so far, before the log and the metrics are merged."""

    engine: Engine
    values: dict[str, float | int | str] = field(default_factory=dict)
    evidence: list[str] = field(default_factory=list)

    def put(self, key: str, value: float | int | str | None, why: str) -> None:
        if value is None or key in self.values:
            return
        self.values[key] = value
        self.evidence.append(f"{key} = {value} <- {why}")


# Launch arguments the log dumps, as (reading field, argument name, parser), per engine.
_Convert = Callable[[str | None], float | int | str | None]


def _str_or_none(text: str | None) -> str | None:
    return text


def _dtype_unless_auto(text: str | None) -> str | None:
    return None if text == "auto" else text


_VLLM_ARGS: tuple[tuple[str, str, _Convert], ...] = (
    ("memory_fraction", "gpu_memory_utilization", _float_or_none),
    ("max_model_len", "max_model_len", _int_or_none),
    ("tp_size", "tensor_parallel_size", _int_or_none),
    ("cache_dtype", "kv_cache_dtype", _str_or_none),
    ("block_size", "block_size", _int_or_none),
)
_SGLANG_ARGS: tuple[tuple[str, str, _Convert], ...] = (
    ("memory_fraction", "mem_fraction_static", _float_or_none),
    ("tp_size", "tp_size", _int_or_none),
    ("max_model_len", "context_length", _int_or_none),
    ("cache_dtype", "kv_cache_dtype", _dtype_unless_auto),
)
# vllm:cache_config_info labels (CacheConfig.metrics_info()).
_VLLM_CACHE_INFO: tuple[tuple[str, str, _Convert], ...] = (
    ("tokens_capacity", "kv_cache_size_tokens", _int_or_none),
    ("kv_bytes_available", "kv_cache_memory_bytes", _int_or_none),
    ("max_concurrency", "kv_cache_max_concurrency", _float_or_none),
    ("num_gpu_blocks", "num_gpu_blocks", _int_or_none),
    ("block_size", "block_size", _int_or_none),
    ("cache_dtype", "cache_dtype", _str_or_none),
    ("memory_fraction", "gpu_memory_utilization", _float_or_none),
)


def _put_all(
    part: _Partial, values: dict[str, str], table: tuple[tuple[str, str, _Convert], ...], why: str
) -> None:
    for field_name, key, convert in table:
        part.put(field_name, convert(values.get(key)), why)


def _put_first(
    part: _Partial,
    found: _Found,
    key: str,
    field_name: str,
    convert: Callable[[str], float | int | str] = _int,
) -> None:
    """``field_name`` from group 1 of the first ``key`` line, if the log has one."""
    match = found.first(key)
    if match:
        part.put(field_name, convert(match.group(1)), found.why(key))


def _parse_vllm_log(found: _Found) -> _Partial:
    part = _Partial("vllm")
    _put_first(part, found, "vllm_tokens", "tokens_capacity")
    conc = found.first("vllm_concurrency")
    if conc:
        why = found.why("vllm_concurrency")
        part.put("max_model_len", _int(conc.group(1)), why)
        part.put("max_concurrency", float(conc.group(2)), why)
    available = found.all("vllm_available")
    if available:
        # Every worker logs its own; vLLM sizes all ranks' pools to the smallest.
        gib = min(float(m.group(1)) for m in available)
        part.put(
            "kv_bytes_available",
            round(gib * GIB),
            f"log 'Available KV cache memory: {gib} GiB' (GiB rounded to 0.01)",
        )
        part.values["bytes_rounding"] = GIB // 200
    _put_first(part, found, "vllm_hybrid_block", "hybrid_block_size")
    _put_first(part, found, "vllm_cp", "context_parallel_size")
    args = found.first("vllm_args")
    if args:
        _put_all(part, _py_args(args.group(1)), _VLLM_ARGS, found.why("vllm_args"))
    return part


def _parse_sglang_log(found: _Found) -> _Partial:
    part = _Partial("sglang")
    kv = found.first("sglang_kv")
    if kv:
        why = found.why("sglang_kv")
        dtype, tokens, k_gb, v_gb, kv_gb = kv.groups()
        part.put("tokens_capacity", _int(tokens), why)
        total_gib = float(kv_gb) if kv_gb is not None else float(k_gb) + float(v_gb)
        part.put("kv_bytes_available", round(total_gib * GIB), f"{why} (GB there = GiB)")
        part.values["bytes_rounding"] = (GIB // 200) * (1 if kv_gb is not None else 2)
        part.put("cache_dtype", dtype, why)
        if len(found.all("sglang_kv")) > 1:
            part.evidence.append(
                "later 'KV Cache is allocated' lines (other ranks, or a draft model's pool) "
                "ignored; the first is the target model's pool"
            )
    _put_first(part, found, "sglang_max_total", "tokens_capacity")
    mamba = found.first("sglang_mamba")
    if mamba:
        why = found.why("sglang_mamba")
        part.put("state_slots", _int(mamba.group(1)), why)
        state_gib = float(mamba.group(2)) + float(mamba.group(3))
        part.put("state_bytes", round(state_gib * GIB), why)
    _put_first(part, found, "sglang_dtype", "cache_dtype", str)
    args = found.first("sglang_args")
    if args:
        _put_all(part, _py_args(args.group(1)), _SGLANG_ARGS, found.why("sglang_args"))
    return part


def _parse_log(text: str) -> _Partial:
    found = _scan_log(text)
    engine = _detect(found, "log")
    if engine is None:
        raise InputError("log", f"{_EXPECTED_LOG}; found neither")
    return _parse_vllm_log(found) if engine == "vllm" else _parse_sglang_log(found)


# --------------------------------------------------------------------------------------------
# Metrics parsing (Prometheus text exposition format)
# --------------------------------------------------------------------------------------------

_SAMPLE = re.compile(
    r"^(?P<name>[A-Za-z_:][A-Za-z0-9_:]*)(?:\{(?P<labels>.*)\})?\s+(?P<value>\S+)(?:\s+-?\d+)?$"
)
_LABEL = re.compile(r'\s*(\w+)\s*=\s*"((?:[^"\\]|\\.)*)"\s*(?:,|$)')

_EXPECTED_METRICS = (
    "Prometheus text from the engine's /metrics with 'vllm:...' or 'sglang:...' samples, e.g. "
    "'vllm:cache_config_info{block_size=\"16\",...} 1.0' or 'sglang:token_usage{...} 0.12'"
)


@dataclass(frozen=True)
class _Sample:
    name: str
    labels: dict[str, str]
    value: float


def _parse_labels(text: str) -> dict[str, str] | None:
    labels: dict[str, str] = {}
    position = 0
    while position < len(text):
        match = _LABEL.match(text, position)
        if match is None:
            return None
        labels[match.group(1)] = match.group(2).replace('\\"', '"').replace("\\\\", "\\")
        position = match.end()
    return labels


def _metric_samples(text: str) -> list[_Sample]:
    samples: list[_Sample] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        match = _SAMPLE.match(line)
        labels = _parse_labels(match.group("labels") or "") if match else None
        try:
            value = float(match.group("value")) if match else None
        except ValueError:
            value = None
        if match is None or labels is None or value is None:
            if line.startswith(("vllm:", "sglang:")):
                raise InputError(
                    "metrics",
                    f"line {number} is an engine sample cut off or garbled ({_short(line)!r}); "
                    "expected 'name{label=\"v\",...} value'",
                )
            continue
        samples.append(_Sample(match.group("name"), labels, value))
    return samples


def _first(samples: list[_Sample], *names: str) -> _Sample | None:
    for name in names:
        for sample in samples:
            if sample.name == name:
                return sample
    return None


def _parse_metrics(text: str) -> _Partial:
    samples = [s for s in _metric_samples(text) if s.name.startswith(("vllm:", "sglang:"))]
    engines = sorted({s.name.split(":", 1)[0] for s in samples})
    if not engines:
        raise InputError("metrics", f"{_EXPECTED_METRICS}; found none")
    if len(engines) > 1:
        raise InputError("metrics", "one engine's /metrics; found both vllm: and sglang: samples")
    if engines[0] == "vllm":
        return _parse_vllm_metrics(samples)
    return _parse_sglang_metrics(samples)


def _parse_vllm_metrics(samples: list[_Sample]) -> _Partial:
    part = _Partial("vllm")
    info = _first(samples, "vllm:cache_config_info")
    if info is not None:
        labels = {k: v for k, v in info.labels.items() if v not in ("None", "")}
        _put_all(part, labels, _VLLM_CACHE_INFO, "metrics vllm:cache_config_info")
    usage = [s for s in samples if s.name == "vllm:kv_cache_usage_perc"] or [
        s for s in samples if s.name == "vllm:gpu_cache_usage_perc"
    ]
    if usage:
        # One sample per DP engine; the fullest one is the one that preempts first.
        part.put("usage_ratio", max(s.value for s in usage), f"metrics {usage[0].name}")
    return part


def _parse_sglang_metrics(samples: list[_Sample]) -> _Partial:
    part = _Partial("sglang")
    capacity = _first(samples, "sglang:max_total_num_tokens")
    if capacity is not None:
        part.put("tokens_capacity", int(capacity.value), "metrics sglang:max_total_num_tokens")
    usage = _first(samples, "sglang:token_usage")
    used = _first(samples, "sglang:num_used_tokens")
    if usage is not None:
        part.put("usage_ratio", usage.value, "metrics sglang:token_usage")
    if used is not None:
        part.put("used_tokens", int(used.value), "metrics sglang:num_used_tokens")
    if capacity is None and usage is not None and used is not None and usage.value > 0:
        part.put(
            "tokens_capacity",
            round(used.value / usage.value),
            "metrics sglang:num_used_tokens / sglang:token_usage (approximate)",
        )
    return part


# --------------------------------------------------------------------------------------------
# Merge
# --------------------------------------------------------------------------------------------


def _missing_capacity(engine: Engine, have_log: bool) -> InputError:
    if engine == "vllm":
        expected = (
            "the line 'GPU KV cache size: N tokens' (printed right after 'Available KV cache "
            "memory'), or vllm:cache_config_info with num_gpu_blocks in /metrics"
        )
    else:
        expected = (
            "the line 'KV Cache is allocated. #tokens: N, ...' or 'max_total_num_tokens=N', "
            "or sglang:max_total_num_tokens in /metrics"
        )
    where = "log" if have_log else "metrics"
    return InputError(where, f"expected {expected}; not found, the text looks truncated")


def parse_engine_text(log: str | None, metrics: str | None) -> EngineReading:
    """Read a vLLM or SGLang startup log and/or /metrics text into one per-rank reading.

    The log wins where both say the same thing (it carries the memory the pool got, /metrics
    does not). Raises ``InputError`` naming ``log`` or ``metrics`` on empty, foreign, garbled
    or truncated text, saying which line was expected.
    """
    log_text = (log or "").strip()
    metrics_text = (metrics or "").strip()
    if not log_text and not metrics_text:
        field_name = "log" if log is not None or metrics is None else "metrics"
        raise InputError(field_name, f"{_EXPECTED_LOG}, or /metrics text; got nothing")
    parts: list[_Partial] = []
    if log_text:
        parts.append(_parse_log(log_text))
    if metrics_text:
        parts.append(_parse_metrics(metrics_text))
    engine = parts[0].engine
    if any(p.engine != engine for p in parts):
        raise InputError(
            "metrics", f"/metrics from the same engine as the log ({engine}); got the other one"
        )
    merged = _Partial(engine)
    for part in parts:
        for key, value in part.values.items():
            merged.values.setdefault(key, value)
        merged.evidence.extend(part.evidence)
    values = merged.values

    if "tokens_capacity" not in values and engine == "vllm":
        blocks, block = values.get("num_gpu_blocks"), values.get("block_size")
        if isinstance(blocks, int) and isinstance(block, int):
            # Exact for single-group models; hybrids need the log's group-aware count.
            merged.put(
                "tokens_capacity",
                blocks * block,
                "num_gpu_blocks x block_size (not group-aware: overstates hybrids)",
            )
    if "tokens_capacity" not in values:
        raise _missing_capacity(engine, bool(log_text))

    def get_int(key: str) -> int | None:
        value = values.get(key)
        return int(value) if isinstance(value, int | float) else None

    def get_float(key: str) -> float | None:
        value = values.get(key)
        return float(value) if isinstance(value, int | float) else None

    dtype = values.get("cache_dtype")
    return EngineReading(
        engine=engine,
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


# --------------------------------------------------------------------------------------------
# Back-calculation and the explanation of a mismatch
# --------------------------------------------------------------------------------------------

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
# DeepSeek's packed FlashMLA-sparse row is 656 B against the plain 576-element latent
# (vllm/model_executor/layers/attention/mla_attention.py).
_FP8_DS_MLA_BYTES, _MLA_ELEMENTS = 656, 576


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
    if family_kind(family) == "hybrid" and reading.engine == "sglang":
        return "SGLang keeps the recurrent state in its own Mamba pool, outside this KV pool."
    return ""


def _explain_hybrid(
    reading: EngineReading, predicted: float, measured: float, state_bytes: int | None
) -> str:
    length = reading.max_model_len
    if reading.engine == "sglang" or length is None:
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
    if "dsa" in family and reading.engine == "sglang":
        text += (
            " SGLang picks the DSA KV dtype itself: bfloat16 on Hopper, fp8_e4m3 on "
            "Blackwell (SM>=10), when --kv-cache-dtype is auto."
        )
    elif reading.engine == "vllm":
        text += " vLLM's --kv-cache-dtype auto means the model dtype."
    return text


def _explain_memory_fraction(reading: EngineReading, planned: float | None) -> str:
    if reading.memory_fraction is None:
        return ""
    name = "gpu_memory_utilization" if reading.engine == "vllm" else "mem_fraction_static"
    text = f"The pool was sized with {name}={reading.memory_fraction:g}"
    if planned is not None and abs(planned - reading.memory_fraction) > 0.005:
        text += (
            f", not the planned {planned:g}: capacity (tokens) moves by about "
            f"{reading.memory_fraction - planned:+.2f} x GPU memory of KV, bytes per token do not"
        )
    return text + "."


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
        expected = (
            "'Available KV cache memory: Z GiB'"
            if reading.engine == "vllm"
            else "'KV Cache is allocated. #tokens: N, K size: a GB, V size: b GB'"
        )
        raise InputError("log", f"the line {expected}, which gives the KV pool's bytes")

    family = family.strip().lower()
    kind = family_kind(family)
    # DCP/PCP multiplies the logged token count by the context-parallel size: undo it to get
    # the tokens one rank's pool really stores.
    rank_tokens = reading.tokens_capacity / reading.context_parallel_size
    measured = reading.kv_bytes_available / rank_tokens
    ratio = measured / predicted_bytes_per_token
    tolerance = max(AGREE_TOLERANCE, 2 * reading.bytes_rounding / reading.kv_bytes_available)

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
    elif kind == "mla" and (
        _near(ratio, _FP8_DS_MLA_BYTES / _MLA_ELEMENTS, tolerance)
        or _near(ratio, _FP8_DS_MLA_BYTES / (2 * _MLA_ELEMENTS), tolerance)
    ):
        sentences.append(
            "The engine stored the packed fp8_ds_mla layout (656 B per token per layer: fp8 "
            "latent + fp32 scales + bf16 RoPE) that FlashMLA-sparse uses for any fp8 "
            "--kv-cache-dtype, not the plain 576-element latent the prediction assumed."
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


# --------------------------------------------------------------------------------------------
# The first launch and the lines to read afterwards
# --------------------------------------------------------------------------------------------


def _check_engine(engine: str) -> Engine:
    for known in ENGINES:
        if engine == known:
            return known
    raise InputError("engine", f"one of {', '.join(ENGINES)}; got {engine!r}")


def minimal_launch(engine: str, model_id: str, tp: int, max_model_len: int) -> list[str]:
    """The argv of a conservative first launch: short context, memory fraction 0.85.

    Nothing else is set: the engine picks KV dtype, attention backend and block size, and the
    startup log then says what it picked. SGLang needs ``--enable-metrics`` for /metrics.
    """
    known = _check_engine(engine)
    if not model_id.strip() or any(c.isspace() for c in model_id):
        raise InputError("model_id", "a Hugging Face id or local path without spaces")
    if tp < 1:
        raise InputError("tp", "a tensor-parallel size of at least 1")
    if max_model_len < 1:
        raise InputError("max_model_len", "a positive number of tokens, e.g. 8192")
    fraction = f"{FIRST_LAUNCH_MEMORY_FRACTION:g}"
    if known == "vllm":
        return [
            "vllm",
            "serve",
            model_id,
            "--tensor-parallel-size",
            str(tp),
            "--max-model-len",
            str(max_model_len),
            "--gpu-memory-utilization",
            fraction,
        ]
    return [
        "python3",
        "-m",
        "sglang.launch_server",
        "--model-path",
        model_id,
        "--tp-size",
        str(tp),
        "--context-length",
        str(max_model_len),
        "--mem-fraction-static",
        fraction,
        "--enable-metrics",
    ]


def default_port(engine: Engine) -> int:
    """The port the engine listens on when ``--port`` is not given, from its pinned flag table
    (vLLM 8000, SGLang 30000)."""
    info = lookup_flag(engine, "--port")
    if info is None or not isinstance(info.default, int):  # pragma: no cover - data error
        raise ValueError(f"{engine} flag table: --port without an integer default")
    return info.default


def metrics_commands(engine: str, port: int | None = None) -> list[str]:
    """Shell lines that read the KV pool numbers from a running engine's /metrics."""
    known = _check_engine(engine)
    if port is None:
        port = default_port(known)
    if not 1 <= port <= 65535:
        raise InputError("port", "a TCP port between 1 and 65535")
    curl = f"curl -s localhost:{port}/metrics"
    if known == "vllm":
        return [
            f"{curl} | grep -E '^vllm:cache_config_info'",
            f"{curl} | grep -E '^vllm:(kv_cache_usage_perc|gpu_cache_usage_perc)'",
            f"{curl} | grep -E '^vllm:num_requests_(running|waiting)'",
        ]
    return [
        f"{curl} | grep -E '^sglang:(max_total_num_tokens|num_used_tokens|token_usage)'",
        f"{curl} | grep -E '^sglang:num_(running|queue)_reqs'",
    ]


# --------------------------------------------------------------------------------------------
# CLI: backcalc SOURCE --log FILE [--metrics FILE] [--tp N] [--json]
# --------------------------------------------------------------------------------------------

Predict = Callable[[str, int], tuple[float, str, list[str]]]


def _read(path: str, field_name: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError as err:
        raise InputError(field_name, f"a readable file; {path}: {err.strerror}") from err


def _human(result: BackcalcResult) -> str:
    rows = [
        ("engine", result.engine),
        ("tokens_capacity", f"{result.tokens_capacity:,}"),
        (
            "kv_bytes_available",
            f"{result.kv_bytes_available:,} ({_fmt_bytes(result.kv_bytes_available)})",
        ),
        ("bytes/token measured", f"{result.bytes_per_token_measured:,.1f}"),
        ("bytes/token predicted", f"{result.bytes_per_token_predicted:,.1f}"),
        ("ratio", f"{result.ratio:.3f}"),
    ]
    width = max(len(name) for name, _ in rows)
    lines = [f"{name:<{width}}  {value}" for name, value in rows]
    return "\n".join([*lines, "", result.explanation])


def cli_main(argv: list[str], predict: Predict) -> int:
    """``backcalc SOURCE --log FILE [--metrics FILE] [--tp N] [--json]``; returns the exit code.

    ``predict(source, tp)`` gives (predicted bytes/token per rank, attention family, notes).
    A leading ``backcalc`` in ``argv`` is accepted. Bad input: one line on stderr, exit 2.
    """
    args_in = argv[1:] if argv[:1] == ["backcalc"] else argv
    parser = InputErrorParser(prog="backcalc", add_help=True)
    parser.add_argument("source", help="model id or config.json path, as the engine CLI takes")
    parser.add_argument("--log", required=True, help="engine startup log file")
    parser.add_argument("--metrics", help="saved output of curl -s localhost:PORT/metrics")
    parser.add_argument("--tp", type=int, default=1, help="tensor-parallel size (default 1)")
    parser.add_argument("--json", action="store_true", help="print JSON")

    def run(args: argparse.Namespace) -> int:
        log_text = _read(args.log, "log")
        metrics_text = _read(args.metrics, "metrics") if args.metrics else None
        reading = parse_engine_text(log_text, metrics_text)
        predicted, family, notes = predict(args.source, args.tp)
        result = backcalculate(reading, predicted, args.tp, family, notes)
        print(result.to_json() if args.json else _human(result))
        return 0

    return run_cli(parser, args_in, run)
