"""The Learn page's material, computed by the same engine as the diagnosis.

* ``attention_variants``: the chosen model's dimensions rebuilt as MHA, GQA, MQA, MLA, DSA
  and a linear-attention hybrid (config dicts run through ``normalize`` and ``diagnose``),
  so the KV growth curves come from the real cache specs, not a textbook formula.
* ``intensity``: prefill vs decode arithmetic intensity (FLOPs per byte moved) against the
  GPU's ridge point.
* ``mla_absorption``: MLA weight absorption step by step with the config's numbers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from engine.decision import Code, Decision, Tokens
from engine.diagnose import Diagnosis, Options, diagnose
from engine.hardware.gpus import Gpu
from engine.i18n import DEFAULT_LANG, Lang, t
from engine.model.architecture import head_size, uses_mla
from engine.model.config import ModelConfig, normalize
from engine.model.loader import load_catalog
from engine.model.weights import WeightReport
from engine.present.evidence_words import formulas

# The bundled configs whose parts stand in when the chosen model has none of its own.
REFERENCE = {
    "mla": "deepseek-ai/DeepSeek-V3",
    "dsa": "deepseek-ai/DeepSeek-V3.2",
    "gdn": "Qwen/Qwen3-Next-80B-A3B-Thinking",
}
MLA_FIELDS = ("kv_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim")
DSA_FIELDS = ("index_topk", "index_head_dim", "index_n_heads")
GDN_FIELDS = (
    "linear_num_key_heads",
    "linear_num_value_heads",
    "linear_key_head_dim",
    "linear_value_head_dim",
    "linear_conv_kernel_dim",
)


@cache
def _reference(kind: str) -> ModelConfig:
    return load_catalog(REFERENCE[kind]).config


def _fields(cfg: ModelConfig, names: Sequence[str]) -> dict[str, Any]:
    return {n: getattr(cfg, n) for n in names}


def _hybrid_period() -> int:
    """Full-attention interval of the reference hybrid (Qwen3-Next: 3 linear : 1 full)."""
    period = _reference("gdn").field("full_attention_interval")
    return period if isinstance(period, int) and period > 0 else 4


@dataclass(frozen=True)
class Variant:
    name: str
    what: str
    diagnosis: Diagnosis

    @property
    def kv_bytes_per_token(self) -> int:
        return self.diagnosis.kv.kv_bytes_per_token

    @property
    def state_bytes_per_request(self) -> int:
        return self.diagnosis.kv.state_bytes_per_request

    def bytes_at(self, context: int) -> int:
        return self.diagnosis.kv.bytes_per_request(context)

    def formula(self, lang: Lang = DEFAULT_LANG) -> str:
        return " + ".join(formulas(self.diagnosis.kv, lang))


def _gqa_heads(cfg: ModelConfig) -> int:
    h = cfg.num_attention_heads
    kv = cfg.num_key_value_heads
    if 1 < kv < h and not uses_mla(cfg):
        return kv
    return max(d for d in range(1, min(8, h) + 1) if h % d == 0 and d < h) if h > 1 else 1


def _head_dim(cfg: ModelConfig) -> int:
    if uses_mla(cfg):
        return cfg.v_head_dim or cfg.qk_nope_head_dim or 128
    return head_size(cfg)


def _base(cfg: ModelConfig, kv_heads: int) -> dict[str, Any]:
    return {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": cfg.hidden_size,
        "num_hidden_layers": cfg.num_hidden_layers,
        "num_attention_heads": cfg.num_attention_heads,
        "num_key_value_heads": kv_heads,
        "head_dim": _head_dim(cfg),
        "intermediate_size": cfg.intermediate_size or 4 * cfg.hidden_size,
        "vocab_size": cfg.vocab_size,
        "max_position_embeddings": cfg.max_position_embeddings or 131_072,
        "torch_dtype": "bfloat16",
    }


def _mla_dims(cfg: ModelConfig) -> dict[str, Any]:
    ref = _fields(_reference("mla"), MLA_FIELDS)
    if uses_mla(cfg):
        own = {k: v for k, v in _fields(cfg, MLA_FIELDS).items() if v is not None}
        return ref | own
    return ref


def variant_configs(
    cfg: ModelConfig, lang: Lang = DEFAULT_LANG
) -> list[tuple[str, str, dict[str, Any]]]:
    """(name, what it is, config dict) for each attention design at these dimensions."""
    h = cfg.num_attention_heads
    g = _gqa_heads(cfg)
    mla = _base(cfg, h) | _mla_dims(cfg)
    mla.pop("head_dim")
    mla.update({"architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3"})
    dsa = (
        mla
        | _fields(_reference("dsa"), DSA_FIELDS)
        | {"architectures": ["DeepseekV32ForCausalLM"], "model_type": "deepseek_v32"}
    )
    if uses_mla(cfg) and cfg.index_topk is not None:
        dsa.update(
            {
                "index_topk": cfg.index_topk,
                "index_head_dim": cfg.index_head_dim,
                "index_n_heads": cfg.index_n_heads,
            }
        )
    hybrid = _base(cfg, g) | _fields(_reference("gdn"), GDN_FIELDS)
    period = _hybrid_period()
    hybrid.update(
        {
            "architectures": ["Qwen3NextForCausalLM"],
            "model_type": "qwen3_next",
            "layer_types": [
                "full_attention" if (i + 1) % period == 0 else "linear_attention"
                for i in range(cfg.num_hidden_layers)
            ],
        }
    )
    n_full = cfg.num_hidden_layers // period
    return [
        ("MHA", t("learn.variant.mha", lang, h=h), _base(cfg, h)),
        ("GQA", t("learn.variant.gqa", lang, per=h // g, g=g), _base(cfg, g)),
        ("MQA", t("learn.variant.mqa", lang, h=h), _base(cfg, 1)),
        ("MLA", t("learn.variant.mla", lang), mla),
        ("DSA", t("learn.variant.dsa", lang), dsa),
        (
            "Hybrid (GDN 3:1)",
            t("learn.variant.hybrid", lang, linear=cfg.num_hidden_layers - n_full, full=n_full),
            hybrid,
        ),
    ]


def attention_variants(
    cfg: ModelConfig, kv_dtype: str = "bf16", lang: Lang = DEFAULT_LANG
) -> list[Variant]:
    """Each design at the chosen model's dimensions, sized by ``diagnose`` at TP 1."""
    out = []
    for name, what, raw in variant_configs(cfg, lang):
        d = diagnose(normalize(raw), Options(kv_dtype=kv_dtype, tp=1))
        out.append(Variant(name, what, d))
    return out


@dataclass(frozen=True)
class GrowthSeries:
    name: str
    x: tuple[int, ...]
    y: tuple[int, ...]


def kv_growth(variants: Sequence[Variant], contexts: Sequence[int]) -> list[GrowthSeries]:
    xs = tuple(contexts)
    return [GrowthSeries(v.name, xs, tuple(v.bytes_at(c) for c in xs)) for v in variants]


# --- arithmetic intensity ----------------------------------------------------------------


# The intensity formulas' words (data/i18n/<lang>.yaml code.learn.formula).
DECODE_FORMULA = Code("learn.formula.decode", "active", "kv", "context", "experts")
PREFILL_FORMULA = Code("learn.formula.prefill", "active", "kv", "experts")
EXPERTS_TOUCHED = Code("learn.formula.experts.touched", "k", "e")
EXPERTS_NONE = Code("learn.formula.experts.none")


@dataclass(frozen=True)
class IntensityPoint:
    tokens: int
    flops: float
    bytes: float

    @property
    def intensity(self) -> float:
        return self.flops / self.bytes if self.bytes else 0.0


@dataclass(frozen=True)
class Intensity:
    ridge: float
    ridge_formula: str
    decode: tuple[IntensityPoint, ...]  # tokens = batch size, one new token per request
    prefill: tuple[IntensityPoint, ...]  # tokens = prompt length, one request
    context: int
    decode_formula: Decision
    prefill_formula: Decision


def _weight_bytes_touched(w: WeightReport, num_experts: int, top_k: int, tokens: int) -> float:
    """Weights one forward pass reads: every non-expert weight, and the routed experts
    at least one of ``tokens`` tokens picked (E × (1 − (1 − k/E)^tokens) on average)."""
    if num_experts <= 1 or top_k <= 0:
        return float(w.weight_bytes)
    frac = 1.0 - (1.0 - top_k / num_experts) ** tokens
    return w.non_expert_bytes + w.expert_bytes * frac


def intensity(
    cfg: ModelConfig,
    peak_flops: float,
    bandwidth_bytes_per_s: float,
    context: int,
    batches: Sequence[int] = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024),
    prompts: Sequence[int] = (16, 64, 256, 1024, 4096, 16384),
    kv_dtype: str = "auto",
) -> Intensity:
    """FLOPs per byte for decode (batch B at ``context``) and prefill (one prompt of T
    tokens), counting 2 FLOPs per active parameter per token and the bytes of weights and
    KV moved. Attention-score FLOPs are left out: they raise both, prefill most."""
    d = diagnose(cfg, Options(kv_dtype=kv_dtype, tp=1, context=context))
    w = d.weights
    n = w.params_active
    e, k = cfg.num_experts, cfg.experts_per_token
    kv_req = d.kv.bytes_per_request(context)
    kv_tok = d.kv.kv_bytes_per_token
    decode = tuple(
        IntensityPoint(b, 2.0 * n * b, _weight_bytes_touched(w, e, k, b) + b * kv_req)
        for b in batches
    )
    prefill = tuple(
        IntensityPoint(t, 2.0 * n * t, _weight_bytes_touched(w, e, k, t) + t * kv_tok)
        for t in prompts
    )
    ridge = peak_flops / bandwidth_bytes_per_s
    experts = EXPERTS_TOUCHED(k=k, e=e) if e > 1 else EXPERTS_NONE()
    return Intensity(
        ridge,
        f"{peak_flops / 1e12:,.0f} TFLOP/s ÷ {bandwidth_bytes_per_s / 1e12:,.2f} TB/s = "
        f"{ridge:,.0f} FLOP/B",
        decode,
        prefill,
        context,
        DECODE_FORMULA(active=n, kv=kv_req, context=Tokens(context), experts=experts),
        PREFILL_FORMULA(active=n, kv=kv_tok, experts=experts),
    )


def gpu_intensity(cfg: ModelConfig, gpu: Gpu, context: int, kv_dtype: str = "auto") -> Intensity:
    """``intensity`` against the GPU's BF16 dense peak (catalog TFLOPS) and memory bandwidth."""
    return intensity(
        cfg, gpu.bf16_tflops * 1e12, gpu.bandwidth_bytes_per_s, context, kv_dtype=kv_dtype
    )


# --- MLA weight absorption ---------------------------------------------------------------


@dataclass(frozen=True)
class Step:
    title: str
    text: str
    formula: str


def mla_absorption(cfg: ModelConfig, lang: Lang = DEFAULT_LANG) -> tuple[bool, list[Step]]:
    """(uses the model's own MLA dims, steps). Non-MLA models get DeepSeek-V3's dims."""
    own = uses_mla(cfg)
    dims = _mla_dims(cfg)
    r = int(dims["kv_lora_rank"])
    dr = int(dims["qk_rope_head_dim"])
    dn = int(dims["qk_nope_head_dim"])
    dv = int(dims["v_head_dim"])
    h = cfg.num_attention_heads if own else 128
    hidden = cfg.hidden_size if own else 7168
    latent = (r + dr) * 2
    mha = h * (dn + dr + dv) * 2
    naive_flops = 2 * r * h * (dn + dv)
    absorbed_pair = (r + dr) + r
    mha_pair = (dn + dr) + dv

    def step(n: int, formula: Mapping[str, object], **params: object) -> Step:
        key = f"learn.absorb.{n}"
        return Step(
            t(f"{key}.title", lang),
            t(f"{key}.text", lang, **params),
            t(f"{key}.formula", lang, **formula),
        )

    dims_: dict[str, object] = {"hidden": hidden, "r": r, "dr": dr, "dn": dn, "dv": dv, "h": h}
    steps = [
        step(1, dims_ | {"latent": f"{latent:,}"}),
        step(2, dims_ | {"mha": f"{mha:,}", "ratio": f"{mha / latent:,.1f}"}),
        step(3, dims_ | {"flops": f"{naive_flops:,}"}),
        step(4, dims_ | {"flops": f"{2 * h * dn * r:,}"}, h=h, width=r + dr),
        step(5, dims_),
        step(
            6,
            dims_
            | {
                "absorbed": f"{absorbed_pair:,}",
                "mha_pair": f"{mha_pair:,}",
                "ratio": f"{absorbed_pair / mha_pair:,.1f}",
                "latent": f"{latent:,}",
                "mha": f"{mha:,}",
            },
        ),
    ]
    return own, steps
