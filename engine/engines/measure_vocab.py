"""What one engine prints about its KV pool: its startup-log lines, the launch-argument names its
dump uses and its /metrics names (``data/measure.yaml``, keyed by engine there). The adapter
answers ``measure`` with its own; the measure step reads logs and /metrics with one reader over
any engine's vocabulary and never asks which engine printed them."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from types import MappingProxyType
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from engine.rules import Loose, load_data

# How a value read from text is checked and converted (engine.measure.input_guards.read_value).
ValueKind = Literal[
    "count", "gib", "bytes", "factor", "fraction", "ratio", "parallel", "block", "dtype"
]
# A log line's named groups may also hold a launch-arguments dump.
GroupKind = Literal[
    "count", "gib", "bytes", "factor", "fraction", "ratio", "parallel", "block", "dtype", "args"
]
METRIC_NAME = r"^[A-Za-z_:][A-Za-z0-9_:]*$"
# The reading field that holds the bytes the engine gave its KV pool on one rank.
POOL_BYTES = "kv_bytes_available"
# The fields that give the pool's token capacity (blocks: times the block size).
_CAPACITY_FIELDS = ("tokens_capacity", "num_gpu_blocks")


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class LogLine(_Frozen):
    """One line an engine prints: a marker to spot it and the pattern read right after it.

    Each named group is read into the field of its name, except where ``sums`` adds groups into
    one field (SGLang's K and V sizes into the pool's bytes); ``smallest`` names a field every
    rank prints its own of, of which the smallest is read; ``pool_bytes`` says the line gives the
    pool's bytes in GiB rounded to the printed step (SGLang labels GiB "GB")."""

    key: str
    engine: str
    marker: str = Field(min_length=1)
    pattern: str
    fields: dict[str, GroupKind]
    label: str
    expected: str
    printed_by: str
    essential: bool = False
    identifies_engine: bool = False
    on_bad: Literal["error", "skip"] = "error"
    sums: dict[str, tuple[str, ...]] = Field(default_factory=dict)
    smallest: str | None = None
    pool_bytes: Literal["GiB", "GB"] | None = None
    note_repeats: bool = False  # later copies of the line are another pool: noted, not read

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
        summed = {g for parts in self.sums.values() for g in parts}
        if not summed <= groups or (self.smallest is not None and self.smallest not in groups):
            raise ValueError(f"{self.key}: sums and smallest must name the pattern's groups")
        return self

    @property
    def regex(self) -> re.Pattern[str]:
        return _compiled(self.pattern)

    @property
    def reads(self) -> frozenset[str]:
        """The reading fields this line gives."""
        summed = {g for parts in self.sums.values() for g in parts}
        own = {f for f, kind in self.fields.items() if kind != "args" and f not in summed}
        return frozenset(own | set(self.sums))


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

    def for_engine(self, engine: str) -> dict[str, ArgRead]:
        rows: dict[str, ArgRead] = getattr(self, engine)
        return rows


class MetricNames(_Frozen):
    """One reading field from /metrics: the names tried in order, the kind of its value, and
    which sample counts where there are several (one per DP engine: the first, or the largest)."""

    names: tuple[str, ...] = Field(min_length=1)
    kind: ValueKind
    source: str
    on_bad: Literal["error", "skip"] = "skip"
    pick: Literal["first", "largest"] = "first"

    @field_validator("names")
    @classmethod
    def _valid(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for name in value:
            if not re.match(METRIC_NAME, name):
                raise ValueError(f"not a Prometheus metric name: {name!r}")
        return value


class CacheInfo(_Frozen):
    """An info gauge whose labels carry reading fields (vLLM's cache_config_info)."""

    name: str = Field(pattern=METRIC_NAME)
    source: str
    labels: dict[str, ArgRead]


class EngineMetrics(_Frozen):
    """One engine's /metrics: the namespace of its names, what each reading field is read from,
    and the lines a user greps on a running server."""

    prefix: str = Field(pattern=r"^[a-z_]+:$")
    cache_info: CacheInfo | None = None
    values: dict[str, MetricNames] = Field(default_factory=dict)
    grep: tuple[tuple[str, ...], ...]

    @model_validator(mode="after")
    def _own_names(self) -> EngineMetrics:
        names = [n for group in self.grep for n in group]
        names += [n for metric in self.values.values() for n in metric.names]
        names += [self.cache_info.name] if self.cache_info is not None else []
        for name in names:
            if not re.match(METRIC_NAME, name) or not name.startswith(self.prefix):
                raise ValueError(f"{self.prefix} metrics: not one of its metric names: {name!r}")
        return self


class MeasureTables(Loose):
    """The engine-keyed sections of data/measure.yaml (the rest is the measure step's own)."""

    log_lines: tuple[LogLine, ...]
    launch_args: LaunchArgs
    metrics: dict[str, EngineMetrics]


@dataclass(frozen=True)
class MeasureVocab:
    """One engine's log lines, in the order they are read, its launch-argument names and its
    /metrics names."""

    log_lines: tuple[LogLine, ...]
    launch_args: Mapping[str, ArgRead]
    metrics: EngineMetrics

    @property
    def pool_line(self) -> LogLine:
        """The line that gives the pool's bytes."""
        return next(line for line in self.log_lines if POOL_BYTES in line.reads)

    @property
    def capacity_lines(self) -> tuple[LogLine, ...]:
        """The lines that give the pool's token capacity."""
        return tuple(line for line in self.log_lines if "tokens_capacity" in line.reads)

    @property
    def capacity_metrics(self) -> tuple[str, ...]:
        """The /metrics names that give (or lead to) the token capacity."""
        info = self.metrics.cache_info
        labels = info.labels.items() if info is not None else ()
        out = [f"{info.name} {rule.arg}" for f, rule in labels if f in _CAPACITY_FIELDS and info]
        found = self.metrics.values.get("tokens_capacity")
        return (*out, *(found.names if found else ()))


@cache
def measure_tables() -> MeasureTables:
    return load_data(MeasureTables, "measure.yaml")


@cache
def measure_vocab(engine: str) -> MeasureVocab:
    tables = measure_tables()
    return MeasureVocab(
        log_lines=tuple(line for line in tables.log_lines if line.engine == engine),
        launch_args=MappingProxyType(tables.launch_args.for_engine(engine)),
        metrics=tables.metrics[engine],
    )


@cache
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)
