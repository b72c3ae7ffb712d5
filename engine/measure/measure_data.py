"""The measure step's facts, loaded once from ``data/measure.yaml``: log lines, metric names,
the first launch, the agreement band, input limits and the micro-kernel presets."""

from __future__ import annotations

from functools import cache

from pydantic import BaseModel, ConfigDict, Field, model_validator

from engine.engines import ENGINES, Engine
from engine.engines.measure_vocab import (
    ArgRead,
    EngineMetrics,
    GroupKind,
    LaunchArgs,
    LogLine,
    MetricNames,
    ValueKind,
)
from engine.rules import DATA_DIR, load_data

__all__ = [
    "MEASURE_YAML",
    "ArgRead",
    "EngineMetrics",
    "GroupKind",
    "LaunchArgs",
    "LogLine",
    "MeasureFacts",
    "MetricNames",
    "ValueKind",
    "measure_facts",
]

MEASURE_YAML = DATA_DIR / "measure.yaml"


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Agreement(_Frozen):
    tolerance: float = Field(gt=0, lt=1)
    printed_gib_step: float = Field(gt=0)
    source: str


class FirstLaunch(_Frozen):
    """The playbook's first start: its short context and memory fraction (the flags that carry
    them are each engine adapter's)."""

    max_model_len: int = Field(gt=0)
    memory_fraction: float = Field(gt=0, le=1)
    source: str


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


class Explanations(_Frozen):
    ds_mla_latent_elements: int = Field(gt=0)
    source: str


class KernelScenario(_Frozen):
    ep_size: int = Field(gt=0)
    num_redundant_experts: int = Field(ge=0)
    index_share: int = Field(gt=0)
    engine: Engine  # whose allocation the kernels reproduce and whose sizing they check
    source: str


class MeasureFacts(_Frozen):
    agreement: Agreement
    first_launch: FirstLaunch
    limits: Limits
    # each engine's vocabulary, read through its adapter (engine.engines.measure_vocab)
    log_lines: tuple[LogLine, ...]
    launch_args: LaunchArgs
    metrics: dict[Engine, EngineMetrics]
    explanations: Explanations
    kernel_presets: dict[str, str]
    kernel_presets_source: str
    kernel_scenario: KernelScenario

    @model_validator(mode="after")
    def _unique_keys(self) -> MeasureFacts:
        keys = [line.key for line in self.log_lines]
        if len(keys) != len(set(keys)):
            raise ValueError(f"log_lines: duplicate keys in {keys}")
        if {line.engine for line in self.log_lines} != set(ENGINES) or set(self.metrics) != set(
            ENGINES
        ):
            raise ValueError(f"log_lines and metrics: one vocabulary for each of {ENGINES}")
        return self

    def log_line(self, key: str) -> LogLine:
        for line in self.log_lines:
            if line.key == key:
                return line
        raise KeyError(key)


@cache
def measure_facts() -> MeasureFacts:
    return load_data(MeasureFacts, MEASURE_YAML.name)
