"""Sliding-window attention: full attention's bytes per token, kept for the last window of
tokens only (vLLM ``SlidingWindowSpec``). Layers may carry shapes of their own (the swa_*
fields of vLLM's mimo_v2_flash.py)."""

from __future__ import annotations

from engine.decision import Code, Name
from engine.errors import InputError
from engine.model.cache_specs import CacheSpec, SlidingWindowSpec
from engine.model.config import ModelConfig
from engine.model.evidence import Evidence, short
from engine.model.mixers.base import CacheContext, LayerPlan, LayerShape, Mixer, Schedule
from engine.model.mixers.full import HeadAttention
from engine.rules import engine_rules

LAYERS = Code("family.evidence.sliding_layers", "sliding", "layers")
SWA_SHAPES = Code("family.evidence.swa_shapes")
LAYER_WINDOWS = Code("family.evidence.layer_windows")
SLIDING_PATTERN = Code("family.evidence.sliding_window_pattern")
MAX_WINDOW_LAYERS = Code("family.evidence.max_window_layers")
EVERY_LAYER_SLIDES = Code("family.evidence.every_layer_slides")
WINDOW_OFF = Code("family.evidence.sliding_window_off", "window")


class SlidingWindow(HeadAttention):
    key = "sliding"
    LABEL = Code("mixer.sliding")
    layer_kinds = ("sliding_attention", "sliding_window_attention", "local_attention", "local")
    schedule_priority = 30

    def schedule(self, cfg: ModelConfig, linear: Mixer | None) -> Schedule | None:
        """Which layers slide, as the config spells it: a window per layer, a period
        (``sliding_window_pattern``, transformers' default for the model type where the config
        gives none), Qwen2's ``max_window_layers``, else every layer; a window the config
        switches off (``use_sliding_window: false``) leaves every layer full."""
        n, raw = cfg.num_hidden_layers, cfg.raw
        if cfg.layer_windows is not None:
            kinds = ["sliding_attention" if w else "full_attention" for w in cfg.layer_windows]
            why = Evidence("sliding_window", short(cfg.field("sliding_window")), LAYER_WINDOWS())
            return Schedule(kinds[:n], why)
        if cfg.sliding_window:
            pat = raw.get("sliding_window_pattern") or raw.get("_sliding_window_pattern")
            defaults = engine_rules().default_sliding_patterns.values
            if not isinstance(pat, int) and cfg.model_type in defaults:
                pat = defaults[cfg.model_type]
            if isinstance(pat, int) and pat > 1:
                kinds = [
                    "full_attention" if (i + 1) % pat == 0 else "sliding_attention"
                    for i in range(n)
                ]
                return Schedule(
                    kinds, Evidence("sliding_window_pattern", str(pat), SLIDING_PATTERN())
                )
            mwl = raw.get("max_window_layers")
            if raw.get("use_sliding_window") is True and isinstance(mwl, int) and mwl < n:
                kinds = ["sliding_attention" if i >= mwl else "full_attention" for i in range(n)]
                why = Evidence("max_window_layers", str(mwl), MAX_WINDOW_LAYERS())
                return Schedule(kinds, why)
            every = Evidence("sliding_window", str(cfg.sliding_window), EVERY_LAYER_SLIDES())
            return Schedule(["sliding_attention"] * n, every)
        if raw.get("sliding_window") is not None and raw.get("use_sliding_window") is False:
            window = Name(short(raw.get("sliding_window")))
            off = Evidence("use_sliding_window", "false", WINDOW_OFF(window=window))
            return Schedule(["full_attention"] * n, off)
        return None

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
