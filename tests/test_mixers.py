"""The mixer families: one class each, registered in one place, each owning its detection,
its layer, its cache spec, its weights and its label."""

from __future__ import annotations

import glob
from typing import Any

import pytest

from engine.decision import Code
from engine.diagnose import Options, diagnose
from engine.i18n import LANGS, catalog
from engine.model.architecture import LayerPlan, Mixer, build_architecture, linear_kind
from engine.model.config import normalize
from engine.model.loader import MODELS_DIR, load_model
from engine.model.mixers import families, family, linear_families
from engine.present import charts_data as C
from engine.present.evidence_words import evidence_rows
from engine.text.words import say

CONFIGS = sorted(glob.glob(str(MODELS_DIR / "*.json"))) + sorted(
    glob.glob(str(MODELS_DIR.parent.parent / "tests/fixtures/configs_wild/*.json"))
)


def test_every_family_is_registered_once_with_a_label_in_both_languages() -> None:
    keys = [f.key for f in families()]
    assert len(keys) == len(set(keys))
    assert {"full", "sliding", "chunked", "mla", "compressed", "gdn", "kda", "mamba2"} <= set(keys)
    assert {"mamba1", "lightning", "short_conv", "none"} <= set(keys)
    for fam in families():
        for lang in LANGS:
            assert "code." + fam.LABEL.code in catalog(lang), (lang, fam.key)


def test_a_mixer_is_its_key_and_knows_its_family() -> None:
    assert Mixer("gdn") == "gdn" and Mixer("gdn") is Mixer("gdn")
    assert Mixer("gdn").family is family("gdn") and Mixer("gdn").is_linear
    assert Mixer.MLA.is_attention and not Mixer.MLA.is_head_attention
    assert LayerPlan(0, "sliding", 8, 128, 128, 4096).mixer is Mixer.SLIDING


def test_linear_families_are_tried_in_one_order() -> None:
    order = [f.key for f in linear_families()]
    assert order == ["short_conv", "gdn", "kda", "mamba2", "mamba1", "lightning"]


def test_short_conv_has_a_label_in_the_layer_strip() -> None:
    # the label dict this replaced had no short_conv entry: the strip showed "short_conv"
    cfg = load_model(next(p for p in CONFIGS if "LFM2-2.6B" in p)).config
    arch = build_architecture(cfg)
    assert linear_kind(cfg) == "short_conv"
    strip = C.layer_strip(arch)
    assert "linear: short convolution" in strip.mixers
    assert "선형: 짧은 합성곱" in C.layer_strip(arch, "ko").mixers


def test_every_layer_of_every_bundled_config_has_a_family_that_sizes_it() -> None:
    for path in CONFIGS:
        d = diagnose(load_model(path).config, Options(kv_dtype="bf16"))
        for layer in d.architecture.layers:
            for m in layer.mixers:
                assert m.family.key == m
        for g in d.kv.groups:
            for lang in LANGS:
                assert say(g.label(), lang) and say(g.formula(), lang)


def test_a_new_family_is_one_class() -> None:
    """A family registers itself by subclassing MixerFamily: no list elsewhere to edit."""
    from engine.model.mixers import base

    class ToyState(base.MixerFamily):
        key = "toy_state"
        LABEL = Code("mixer.toy_state")
        linear = True

    try:
        assert family("toy_state").linear and Mixer("toy_state").is_linear
        assert any(f.key == "toy_state" for f in families())
    finally:
        del base._FAMILIES["toy_state"]
        base._INTERNED.pop("toy_state", None)
        from engine.decision import CODES

        del CODES["mixer.toy_state"]


def test_a_new_family_is_one_class_that_reads_its_schedule_builds_and_sizes_its_layers() -> None:
    """A toy windowed family declared here and nowhere else: its own config field names its
    layers, it builds them and keeps a 256-token window of full attention's bytes per token.
    Llama-3.1-8B (32 layers, 8 KV heads x 128, bf16: 4,096 B per layer per token) with 8 toy
    layers: 24 full layers grow per token, the 8 toy layers stop at 256 tokens."""
    from engine.model.evidence import Evidence
    from engine.model.mixers import base
    from engine.model.mixers.full import HeadAttention
    from engine.model.mixers.sliding import SlidingWindowSpec

    class ToyWindow(HeadAttention):
        key = "toy_window"
        LABEL = Code("mixer.toy_window")
        WHY = Code("family.evidence.toy_window")
        layer_kinds = ("toy_window",)
        schedule_priority = 5

        def schedule(self, cfg: Any, linear: Any) -> base.Schedule | None:
            toy = cfg.raw.get("toy_window_layers")
            if not isinstance(toy, list):
                return None
            kinds = [
                "toy_window" if i in toy else "full_attention" for i in range(cfg.num_hidden_layers)
            ]
            return base.Schedule(kinds, Evidence("toy_window_layers", str(toy), self.WHY()))

        def layer(self, cfg: Any, shape: base.LayerShape) -> LayerPlan:
            return LayerPlan(
                shape.index, Mixer(self.key), shape.kv_heads, shape.head_dim, shape.head_dim_v, 256
            )

        def cache_specs(self, layer: LayerPlan, ctx: base.CacheContext) -> tuple[Any, ...]:
            return (SlidingWindowSpec(*self.spec_args(layer, ctx), sliding_window=256),)

    from engine.decision import CODES

    try:
        raw = dict(load_model("meta-llama/Meta-Llama-3.1-8B").config.raw)
        raw["toy_window_layers"] = [0, 4, 8, 12, 16, 20, 24, 28]
        cfg = normalize(raw)
        arch = build_architecture(cfg)
        assert arch.count("toy_window") == 8 and arch.count("full") == 24
        assert any(e.field == "toy_window_layers" for e in arch.evidence)
        d = diagnose(cfg, Options(context=32_768))
        assert d.kv.kv_bytes_per_token == 32 * 4_096
        assert d.kv.growing_bytes_per_token == 24 * 4_096
        per_request = 24 * 4_096 * 32_768 + 8 * 4_096 * 256
        assert d.kv.kv_bytes_at(32_768) == pytest.approx(per_request, rel=0.01)
    finally:
        del base._FAMILIES["toy_window"]
        base._INTERNED.pop("toy_window", None)
        for code in ("mixer.toy_window", "family.evidence.toy_window"):
            del CODES[code]


def test_korean_evidence_has_no_english_rule() -> None:
    d = diagnose(load_model("Qwen/Qwen3-Next-80B-A3B-Thinking").config)
    rows = evidence_rows(d.family.evidence, "ko")
    assert any("Gated DeltaNet 상태" in r.rule for r in rows)
    assert all(not r.rule.startswith(("linear", "every", "per-layer")) for r in rows)
