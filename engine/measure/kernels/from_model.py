"""Kernel dims and the engine's KV numbers built from a model config; presets are bundled
catalog configs (``data/measure.yaml`` kernel_presets), never hand-written shapes."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping
from functools import cache, partial

from engine.engines import adapter
from engine.errors import InputError
from engine.kv.dtype import DTYPE_BYTES
from engine.kv.sizing import LayerGroup as EngineGroup
from engine.kv.sizing import size_kv
from engine.measure.kernels.dims import EngineKv, KernelDims, LayerGroup
from engine.measure.measure_data import measure_facts
from engine.model.architecture import build_architecture
from engine.model.cache_specs import MambaSpec
from engine.model.config import ModelConfig
from engine.model.loader import catalog_names, catalog_path, load_catalog

# The kernels' KV dtype: the engine is asked to size the model in the same one.
KERNEL_KV_DTYPE = "bf16"


def _group_names(groups: list[EngineGroup]) -> list[str]:
    """A group's kind, or kind_firstlayer where two groups share a kind."""
    kinds = [g.kind for g in groups]
    return [g.kind if kinds.count(g.kind) == 1 else f"{g.kind}_{g.layers[0]}" for g in groups]


def engine_kv(cfg: ModelConfig, source: str = "") -> EngineKv:
    """What ``engine.kv.sizing`` says the model's cache weighs on one rank (TP 1), in the
    kernels' dtype: paged groups with the engine's block size, hybrid alignment, state."""
    engine = measure_facts().kernel_scenario.engine
    kv_dtype = adapter(engine).kv_dtype(KERNEL_KV_DTYPE, cfg, None)
    sizing = size_kv(build_architecture(cfg), cfg, kv_dtype, tp=1, engine=engine)
    # one row per token only: a recurrent state is one page per sequence, and a compressed
    # group keeps one entry per several tokens
    paged = [g for g in sizing.groups if g.spec.row_per_token]
    groups = tuple(
        (name, g.num_layers, int(g.spec.bytes_per_token), sizing.block_size)
        for name, g in zip(_group_names(paged), paged, strict=True)
    )
    states = [g.spec for g in sizing.groups if isinstance(g.spec, MambaSpec)]
    state = max(states, key=lambda spec: spec.state_bytes) if states else None
    hybrid = sizing.hybrid
    return EngineKv(
        source=source or cfg.architecture,
        groups=groups,
        hybrid_block=hybrid.block_size if hybrid else None,
        hybrid_align=hybrid.align if hybrid else None,
        attention_bytes_per_token=hybrid.attn_bytes_per_token if hybrid else None,
        state_bytes=state.state_bytes if state else None,
        state_dtype_bytes=state.dtype_sizes if state else (),
    )


def kernel_dims(cfg: ModelConfig, name: str | None = None) -> KernelDims:
    """The micro-kernels' dimensions taken from a real config (0 where a family has no such
    part), with the engine's KV numbers for it and the run settings of data/measure.yaml."""
    arch = build_architecture(cfg)
    scenario = measure_facts().kernel_scenario
    mla = cfg.kv_lora_rank is not None
    gdn_layers = arch.count("gdn")
    experts = cfg.num_experts if cfg.num_experts > 1 else 0
    # The scenario's EP group, shrunk to a divisor of the expert count (equal slots per GPU).
    ep = math.gcd(experts, scenario.ep_size) if experts else 0
    redundant = scenario.num_redundant_experts - scenario.num_redundant_experts % ep if ep else 0
    indexer = mla and bool(cfg.index_head_dim) and bool(cfg.index_topk)

    def linear(value: int | None) -> int:
        return (value or 0) if gdn_layers else 0

    return KernelDims(
        name=name or cfg.architecture,
        num_layers=cfg.num_hidden_layers,
        num_heads=cfg.num_attention_heads,
        num_kv_heads=0 if mla else cfg.num_key_value_heads,
        head_dim=0 if mla else cfg.head_dim or cfg.hidden_size // cfg.num_attention_heads,
        kv_lora_rank=cfg.kv_lora_rank or 0,
        qk_rope_head_dim=(cfg.qk_rope_head_dim or 0) if mla else 0,
        qk_nope_head_dim=(cfg.qk_nope_head_dim or 0) if mla else 0,
        v_head_dim=(cfg.v_head_dim or 0) if mla else 0,
        index_num_heads=(cfg.index_n_heads or 0) if indexer else 0,
        index_head_dim=(cfg.index_head_dim or 0) if indexer else 0,
        index_topk=(cfg.index_topk or 0) if indexer else 0,
        hidden_size=cfg.hidden_size,
        moe_intermediate_size=(cfg.moe_intermediate_size or 0) if experts else 0,
        num_experts=experts,
        experts_per_token=cfg.experts_per_token if experts else 0,
        num_linear_layers=gdn_layers,
        linear_num_key_heads=linear(cfg.linear_num_key_heads),
        linear_num_value_heads=linear(cfg.linear_num_value_heads),
        linear_key_head_dim=linear(cfg.linear_key_head_dim),
        linear_value_head_dim=linear(cfg.linear_value_head_dim),
        # vLLM's default when the config omits it, as engine/model/mixers/gdn.py reads it
        linear_conv_kernel_dim=linear(cfg.linear_conv_kernel_dim or 4),
        ep_size=ep,
        num_redundant_experts=redundant,
        index_share=scenario.index_share if indexer else 1,
        kv_dtype_bytes=DTYPE_BYTES[
            adapter(scenario.engine).kv_dtype(KERNEL_KV_DTYPE, cfg, None).stored
        ],
        kv=engine_kv(cfg, name or cfg.architecture),
    )


def kernel_layer_groups(cfg: ModelConfig) -> tuple[list[LayerGroup], int | None]:
    """The engine's paged groups (bf16, TP 1) as the paged-layout check takes them, and the
    hybrid attention block. Constant-state (Mamba) and fractional compressed groups are
    left out: they are not token-paged."""
    kv = engine_kv(cfg)
    return list(kv.groups), kv.hybrid_block


# ---- presets: short names for catalog models, or any catalog name -------------------------


def preset_model(name: str) -> str:
    """The catalog model a preset names: a short name from data/measure.yaml, or any bundled
    catalog name (``org/model``, or the part after the slash)."""
    aliases = measure_facts().kernel_presets
    if name in aliases:
        return aliases[name]
    path = catalog_path(name)
    if path is None:
        raise InputError(
            "model-dims.preset",
            f"one of {', '.join(aliases)} or a bundled catalog model "
            f"(e.g. {catalog_names()[0]}); got {name!r}",
        )
    return path.stem.replace("__", "/", 1)


@cache
def preset_dims(name: str = "default") -> KernelDims:
    """Kernel dims of a preset, built from its bundled config through the engine."""
    model = preset_model(name)
    return kernel_dims(load_catalog(model).config, model)


class _Presets(Mapping[str, Callable[[], KernelDims]]):
    """The short preset names, each giving its dims on call (built on first use)."""

    def __getitem__(self, name: str) -> Callable[[], KernelDims]:
        if name not in measure_facts().kernel_presets:
            raise KeyError(name)
        return partial(preset_dims, name)

    def __iter__(self) -> Iterator[str]:
        return iter(measure_facts().kernel_presets)

    def __len__(self) -> int:
        return len(measure_facts().kernel_presets)


PRESETS: Mapping[str, Callable[[], KernelDims]] = _Presets()
