"""Engine rules read from vLLM / SGLang source, loaded once from ``data/engine_rules.yaml``."""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ConfigDict

DATA_DIR = Path(__file__).resolve().parent.parent / "data"


class Strict(BaseModel):
    """A section of a data file whose every key the code reads (a stray key is an error)."""

    model_config = ConfigDict(frozen=True, extra="forbid")


class Loose(BaseModel):
    """A section of a research data file: the fields the rules read; prose and notes kept aside."""

    model_config = ConfigDict(frozen=True, extra="ignore")


M = TypeVar("M", bound=BaseModel)


@cache
def data_yaml(name: str) -> Any:
    """``data/<name>``, parsed once per process and shared by every reader of it (readers
    validate it into their models and must not change it)."""
    return yaml.safe_load((DATA_DIR / name).read_text(encoding="utf-8"))


def load_data(model: type[M], name: str, *keys: str) -> M:
    """The section ``keys`` of ``data/<name>`` (the whole file without keys), validated."""
    raw = data_yaml(name)
    for key in keys:
        raw = raw[key]
    return model.model_validate(raw)


def load_checked(model: type[M], name: str, problems: Callable[[M], list[str]]) -> M:
    """``data/<name>``, validated, and refused where ``problems`` finds it disagrees with the
    engines' flag tables (a fault of the data, not of anyone's input)."""
    data = load_data(model, name)
    found = problems(data)
    if found:
        raise ValueError(f"{name} disagrees with data/engines/: {found}")
    return data


class SourcedList(Strict):
    source: str
    values: list[str]


class SourcedBytes(Strict):
    source: str
    values: dict[str, int]


class CompressedMlaPacked(Strict):
    """DeepSeek-V4's packed fp8 row: NoPE fp8 + RoPE bf16 + one scale byte per group + pad."""

    source: str
    model_types: list[str]
    scale_group: int
    pad_bytes: int

    def row_bytes(self, head_dim: int, rope_dim: int) -> int:
        nope = head_dim - rope_dim
        return nope + rope_dim * 2 + nope // self.scale_group + self.pad_bytes


class IndexerRule(Strict):
    source: str
    quant_block: int
    scale_bytes: int


class SsmDtypeHook(Strict):
    model_types: list[str]
    field: str
    default: str | None


class SsmDtypeHooks(Strict):
    source: str
    rules: list[SsmDtypeHook]


class SparseLayout(Strict):
    backend: str
    packs: list[str]


class AutoFp8Rule(Strict):
    source: str
    values: list[str]
    archs: list[str]


class SparseMlaBackends(Strict):
    source: str
    fp8_layout: dict[str, SparseLayout]
    auto_fp8_model_types: AutoFp8Rule


class HybridAlignment(Strict):
    source: str
    kernel_block: int
    mla_min_align: int


class DefaultBlockSize(Strict):
    source: str
    attention: int
    mla: int


class SglangModelOptKv(Strict):
    source: str
    static_only: bool


class SglangRules(Strict):
    source: str
    dsa_auto_dtype: dict[str, str]
    dsa_fp8_cell_on_hopper_bytes: int
    mamba_ssm_dtype_default: str
    modelopt_kv: SglangModelOptKv


class KvDifferenceRule(Strict):
    when: str
    source: str


class SameStorage(Strict):
    source: str
    values: dict[str, str]


class KvDtypeDifferences(Strict):
    same_storage: SameStorage
    rules: list[KvDifferenceRule]


class FusionRule(Strict):
    source: str
    early_model_types: list[str]


class WeightStorage(Strict):
    source: str
    bits: dict[str, int]
    group_scale: dict[str, tuple[int, int]]
    fp8_block_scale_bits: int
    int_group_scale_bits: int
    zero_point_methods: list[str]
    experts_only: list[str]


class EngineRules(Strict):
    mla_model_types: SourcedList
    ds_mla_packed_bytes: SourcedBytes
    compressed_mla_packed: CompressedMlaPacked
    indexer: IndexerRule
    mamba_ssm_dtype_hooks: SsmDtypeHooks
    sparse_mla_backends: SparseMlaBackends
    hybrid_alignment: HybridAlignment
    default_block_size: DefaultBlockSize
    sglang: SglangRules
    fusion: FusionRule
    ungated_ffn_model_types: SourcedList
    default_sliding_patterns: SourcedBytes
    weight_storage: WeightStorage
    kv_dtype_differences: KvDtypeDifferences


@cache
def engine_rules() -> EngineRules:
    raw = data_yaml("engine_rules.yaml")
    return EngineRules.model_validate(raw)
