"""Engine rules read from vLLM / SGLang source, loaded once from ``data/engine_rules.yaml``."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict

DATA_DIR = Path(__file__).resolve().parent.parent / "data"


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class SourcedList(_Frozen):
    source: str
    values: list[str]


class SourcedBytes(_Frozen):
    source: str
    values: dict[str, int]


class IndexerRule(_Frozen):
    source: str
    quant_block: int
    scale_bytes: int


class SsmDtypeHook(_Frozen):
    model_types: list[str]
    field: str
    default: str | None


class SsmDtypeHooks(_Frozen):
    source: str
    rules: list[SsmDtypeHook]


class SparseLayout(_Frozen):
    backend: str
    packs: list[str]


class AutoFp8Rule(_Frozen):
    source: str
    values: list[str]
    archs: list[str]


class SparseMlaBackends(_Frozen):
    source: str
    fp8_layout: dict[str, SparseLayout]
    auto_fp8_model_types: AutoFp8Rule


class HybridAlignment(_Frozen):
    source: str
    kernel_block: int
    mla_min_align: int


class DefaultBlockSize(_Frozen):
    source: str
    attention: int
    mla: int


class SglangRules(_Frozen):
    source: str
    dsa_auto_dtype: dict[str, str]
    dsa_fp8_cell_on_hopper_bytes: int
    mamba_ssm_dtype_default: str


class FusionRule(_Frozen):
    source: str
    early_model_types: list[str]


class WeightStorage(_Frozen):
    source: str
    bits: dict[str, int]
    group_scale: dict[str, tuple[int, int]]
    fp8_block_scale_bits: int
    int_group_scale_bits: int
    zero_point_methods: list[str]
    experts_only: list[str]


class EngineRules(_Frozen):
    mla_model_types: SourcedList
    ds_mla_packed_bytes: SourcedBytes
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


@cache
def engine_rules() -> EngineRules:
    raw = yaml.safe_load((DATA_DIR / "engine_rules.yaml").read_text(encoding="utf-8"))
    return EngineRules.model_validate(raw)
