"""The measure step's facts, loaded once from ``data/measure.yaml``: log lines, metric names,
the first launch, the agreement band, input limits and the micro-kernel presets."""

from __future__ import annotations

import re
from functools import cache
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from engine.rules import DATA_DIR, load_data
from engine.software.tables import Engine

MEASURE_YAML = DATA_DIR / "measure.yaml"

# How a value read from text is checked and converted (engine.measure.input_guards.read_value).
ValueKind = Literal[
    "count", "gib", "bytes", "factor", "fraction", "ratio", "parallel", "block", "dtype"
]
# A log line's named groups may also hold a launch-arguments dump.
GroupKind = Literal[
    "count", "gib", "bytes", "factor", "fraction", "ratio", "parallel", "block", "dtype", "args"
]
_METRIC_NAME = r"^[A-Za-z_:][A-Za-z0-9_:]*$"


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Agreement(_Frozen):
    tolerance: float = Field(gt=0, lt=1)
    printed_gib_step: float = Field(gt=0)
    source: str


class LaunchFlags(_Frozen):
    """One engine's spellings for the first launch (None: the engine has no such flag)."""

    command: tuple[str, ...]
    model: str | None
    tp: str
    dp: str
    attn_dp: str | None
    ep: str
    ep_takes_size: bool
    max_model_len: str
    memory_fraction: str
    metrics: tuple[str, ...]


class FirstLaunch(_Frozen):
    max_model_len: int = Field(gt=0)
    memory_fraction: float = Field(gt=0, le=1)
    source: str
    flags: dict[Engine, LaunchFlags]
    flags_source: str


class Limits(_Frozen):
    text_bytes: int = Field(gt=0)
    dims_bytes: int = Field(gt=0)
    number_chars: int = Field(gt=0)
    int_digits: int = Field(gt=0, le=4000)
    max_tokens: int = Field(gt=0)
    max_gib: int = Field(gt=0)
    max_parallel: int = Field(gt=0)
    max_block_tokens: int = Field(gt=0)
    max_dim: int = Field(gt=0)
    source: str


class LogLine(_Frozen):
    """One line an engine prints: a marker to spot it and the pattern read right after it."""

    key: str
    engine: Engine
    marker: str = Field(min_length=1)
    pattern: str
    fields: dict[str, GroupKind]
    label: str
    expected: str
    printed_by: str
    essential: bool = False
    identifies_engine: bool = False
    on_bad: Literal["error", "skip"] = "error"

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, value: str) -> str:
        re.compile(value)
        return value

    @model_validator(mode="after")
    def _groups_are_fields(self) -> LogLine:
        groups = set(re.compile(self.pattern).groupindex)
        if groups != set(self.fields):
            raise ValueError(
                f"{self.key}: pattern groups {sorted(groups)} != fields {sorted(self.fields)}"
            )
        return self

    @property
    def regex(self) -> re.Pattern[str]:
        return _compiled(self.pattern)


class ArgRead(_Frozen):
    """A reading field taken from a launch argument or a metric label."""

    arg: str
    kind: ValueKind
    ignore: tuple[str, ...] = ()  # values that mean "not chosen here"
    on_bad: Literal["error", "skip"] = "skip"


class LaunchArgs(_Frozen):
    vllm: dict[str, ArgRead]
    sglang: dict[str, ArgRead]
    source: str

    def for_engine(self, engine: Engine) -> dict[str, ArgRead]:
        rows: dict[str, ArgRead] = getattr(self, engine)
        return rows


class MetricNames(_Frozen):
    names: tuple[str, ...] = Field(min_length=1)
    source: str
    on_bad: Literal["error", "skip"] = "skip"

    @field_validator("names")
    @classmethod
    def _valid(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for name in value:
            if not re.match(_METRIC_NAME, name):
                raise ValueError(f"not a Prometheus metric name: {name!r}")
        return value


class CacheInfo(_Frozen):
    name: str = Field(pattern=_METRIC_NAME)
    source: str
    labels: dict[str, ArgRead]


class VllmMetrics(_Frozen):
    cache_info: CacheInfo
    usage_ratio: MetricNames
    grep: tuple[tuple[str, ...], ...]


class SglangMetrics(_Frozen):
    tokens_capacity: MetricNames
    usage_ratio: MetricNames
    used_tokens: MetricNames
    grep: tuple[tuple[str, ...], ...]


class Metrics(_Frozen):
    vllm: VllmMetrics
    sglang: SglangMetrics

    def grep(self, engine: Engine) -> tuple[tuple[str, ...], ...]:
        metrics: VllmMetrics | SglangMetrics = getattr(self, engine)
        return metrics.grep

    @model_validator(mode="after")
    def _grep_names(self) -> Metrics:
        for engine, groups in (("vllm", self.vllm.grep), ("sglang", self.sglang.grep)):
            for name in (n for group in groups for n in group):
                if not re.match(_METRIC_NAME, name) or not name.startswith(f"{engine}:"):
                    raise ValueError(f"{engine} grep: not one of its metric names: {name!r}")
        return self


class Explanations(_Frozen):
    ds_mla_latent_elements: int = Field(gt=0)
    source: str


class KernelScenario(_Frozen):
    ep_size: int = Field(gt=0)
    num_redundant_experts: int = Field(ge=0)
    index_share: int = Field(gt=0)
    source: str


class MeasureFacts(_Frozen):
    agreement: Agreement
    first_launch: FirstLaunch
    limits: Limits
    log_lines: tuple[LogLine, ...]
    launch_args: LaunchArgs
    metrics: Metrics
    explanations: Explanations
    kernel_presets: dict[str, str]
    kernel_presets_source: str
    kernel_scenario: KernelScenario

    @model_validator(mode="after")
    def _unique_keys(self) -> MeasureFacts:
        keys = [line.key for line in self.log_lines]
        if len(keys) != len(set(keys)):
            raise ValueError(f"log_lines: duplicate keys in {keys}")
        return self

    def log_line(self, key: str) -> LogLine:
        for line in self.log_lines:
            if line.key == key:
                return line
        raise KeyError(key)


@cache
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


@cache
def measure_facts() -> MeasureFacts:
    return load_data(MeasureFacts, MEASURE_YAML.name)
