"""The family verdict (MHA, MQA, GQA, MLA, DSA, HYBRID) and its flags, each with the
config field, its value and the rule that produced it."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from engine.model.architecture import Architecture, Evidence, Mixer
from engine.model.config import ModelConfig
from engine.rules import engine_rules


class AttentionFamily(StrEnum):
    """The attention families of the diagnosis. A ``StrEnum``: it prints, compares and
    serialises as its name ("MLA"), so JSON and older readers see plain strings."""

    MHA = "MHA"
    MQA = "MQA"
    GQA = "GQA"
    MLA = "MLA"
    DSA = "DSA"
    HYBRID = "HYBRID"

    @property
    def latent(self) -> bool:
        """MLA's compressed latent KV (plain MLA and DSA): one copy per TP rank, not split."""
        return self in (AttentionFamily.MLA, AttentionFamily.DSA)


@dataclass(frozen=True)
class FamilyVerdict:
    attention_family: AttentionFamily
    sliding_window: bool
    chunked_local: bool
    moe: bool
    num_experts: int
    experts_per_token: int
    shared_experts: int
    mtp_layers: int
    multimodal: bool
    fusion: str | None  # "early" | "late" | None
    linear_kind: str | None
    evidence: tuple[Evidence, ...]

    def summary(self) -> str:
        parts: list[str] = [self.attention_family.value]
        if self.sliding_window:
            parts.append("sliding window")
        if self.chunked_local:
            parts.append("chunked local")
        if self.moe:
            parts.append(f"MoE {self.experts_per_token}/{self.num_experts}")
        if self.mtp_layers:
            parts.append(f"MTP ×{self.mtp_layers}")
        if self.multimodal:
            parts.append(f"multimodal ({self.fusion} fusion)")
        return " · ".join(parts)


def classify(cfg: ModelConfig, arch: Architecture) -> FamilyVerdict:
    ev = list(arch.evidence)
    mixers = {m for layer in arch.layers for m in layer.mixers}
    if any(m.is_linear for m in mixers):
        fam = AttentionFamily.HYBRID
        n_lin = sum(1 for layer in arch.layers if any(m.is_linear for m in layer.mixers))
        ev.append(
            Evidence(
                "layer kinds",
                f"{n_lin} linear + {arch.attention_layers} attention",
                "linear-attention / SSM layers present -> HYBRID",
            )
        )
    elif Mixer.COMPRESSED in mixers or (
        Mixer.MLA in mixers and any(layer.indexer for layer in arch.layers)
    ):
        fam = AttentionFamily.DSA
        ev.append(
            Evidence("index_topk", str(cfg.index_topk), "sparse attention with an indexer -> DSA")
        )
    elif Mixer.MLA in mixers:
        fam = AttentionFamily.MLA
        ev.append(Evidence("kv_lora_rank", str(cfg.kv_lora_rank), "compressed latent KV -> MLA"))
    else:
        # per-layer KV heads (block configs, per-layer lists): the attention layers' own
        attn = [lay for lay in arch.layers if lay.num_kv_heads and lay.mixer is not Mixer.NONE]
        kv = max((lay.num_kv_heads for lay in attn), default=cfg.num_key_value_heads)
        h = max((lay.num_heads or cfg.num_attention_heads for lay in attn), default=0)
        h = h or cfg.num_attention_heads
        if kv == h:
            fam = AttentionFamily.MHA
            rule = "KV heads == query heads -> MHA"
        elif kv == 1:
            fam = AttentionFamily.MQA
            rule = "one KV head shared by all query heads -> MQA"
        else:
            fam = AttentionFamily.GQA
            rule = f"{h // kv} query heads share each KV head -> GQA"
        ev.append(Evidence("num_attention_heads / num_key_value_heads", f"{h} / {kv}", rule))
    sliding = Mixer.SLIDING in mixers
    chunked = Mixer.CHUNKED in mixers
    if sliding:
        n_sw = arch.count("sliding")
        ev.append(
            Evidence(
                "sliding_window",
                str(cfg.sliding_window),
                f"{n_sw} of {len(arch.layers)} layers keep only the last window",
            )
        )
    if chunked:
        ev.append(
            Evidence(
                "attention_chunk_size",
                str(cfg.attention_chunk_size),
                f"{arch.count('chunked')} layers attend within their chunk",
            )
        )
    moe = cfg.num_experts > 1
    shared = cfg.n_shared_experts or (1 if cfg.shared_expert_intermediate_size else 0)
    if cfg.mtp_layers:
        key = cfg.mtp_kind
        if key in cfg.defaults_applied:
            key += f" ({cfg.defaults_applied[key]})"
        ev.append(
            Evidence(
                key, str(cfg.mtp_layers), "multi-token-prediction heads (speculative decoding)"
            )
        )
    multimodal = cfg.vision_config is not None or cfg.audio_config is not None
    fusion = None
    if multimodal:
        early_types = engine_rules().fusion.early_model_types
        early = cfg.model_type in early_types or cfg.wrapper_model_type in early_types
        fusion = "early" if early else "late"
        ev.append(
            Evidence(
                "vision_config" if cfg.vision_config is not None else "audio_config",
                "present",
                "image/text tokens trained together from pre-training -> early fusion"
                if early
                else "a vision encoder attached to a text model through an adapter -> late fusion",
            )
        )
    return FamilyVerdict(
        fam,
        sliding,
        chunked,
        moe,
        cfg.num_experts if moe else 0,
        cfg.experts_per_token if moe else 0,
        shared if moe else 0,
        cfg.mtp_layers,
        multimodal,
        fusion,
        arch.linear_kind if fam == AttentionFamily.HYBRID else None,
        tuple(ev),
    )
