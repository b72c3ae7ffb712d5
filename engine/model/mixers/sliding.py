"""Sliding-window attention: full attention's bytes per token, kept for the last window of
tokens only (vLLM ``SlidingWindowSpec``). Layers may carry shapes of their own (the swa_*
fields of vLLM's mimo_v2_flash.py)."""

from __future__ import annotations

from engine.decision import Code
from engine.errors import InputError
from engine.kv.specs import CacheSpec, SlidingWindowSpec
from engine.model.config import ModelConfig
from engine.model.evidence import Evidence
from engine.model.mixers.base import CacheContext, LayerPlan, LayerShape, Mixer
from engine.model.mixers.full import HeadAttention

LAYERS = Code("family.evidence.sliding_layers", "sliding", "layers")
SWA_SHAPES = Code("family.evidence.swa_shapes")


class SlidingWindow(HeadAttention):
    key = "sliding"
    LABEL = Code("mixer.sliding")
    layer_kinds = ("sliding_attention", "sliding_window_attention", "local_attention", "local")

    def layer(self, cfg: ModelConfig, shape: LayerShape) -> LayerPlan:
        i = shape.index
        window = cfg.layer_windows[i] if cfg.layer_windows else cfg.sliding_window
        if not window:
            raise InputError("sliding_window", f"a window size for sliding layer {i}")
        kv = cfg.swa_num_key_value_heads or shape.kv_heads
        q = cfg.swa_num_attention_heads or shape.q_heads
        hd, hdv = shape.head_dim, shape.head_dim_v
        if cfg.swa_head_dim:
            hd = cfg.swa_head_dim
            hdv = cfg.swa_v_head_dim or hd
        return LayerPlan(i, Mixer(self.key), kv, hd, hdv, window, ffn=shape.ffn, num_heads=q)

    def layer_evidence(self, cfg: ModelConfig, layers: tuple[LayerPlan, ...]) -> list[Evidence]:
        mine = [lay for lay in layers if lay.mixer == self.key]
        if not mine:
            return []
        out = []
        if cfg.swa_num_key_value_heads or cfg.swa_head_dim:
            sw = mine[0]
            out.append(
                Evidence(
                    "swa_num_key_value_heads / swa_head_dim / swa_v_head_dim",
                    f"{sw.num_kv_heads} / {sw.head_dim} / {sw.head_dim_v}",
                    SWA_SHAPES(),
                )
            )
        out.append(
            Evidence(
                "sliding_window",
                str(cfg.sliding_window),
                LAYERS(sliding=len(mine), layers=len(layers)),
            )
        )
        return out

    def cache_specs(self, layer: LayerPlan, ctx: CacheContext) -> tuple[CacheSpec, ...]:
        assert layer.window is not None
        return (SlidingWindowSpec(*self.spec_args(layer, ctx), sliding_window=layer.window),)
