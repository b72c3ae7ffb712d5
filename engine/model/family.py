"""The family verdict (MHA, MQA, GQA, MLA, DSA, HYBRID) and its flags, each with the
config field, its value and the rule that produced it (a decision, worded per language)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from engine.decision import Code, Decision, Name
from engine.model.architecture import Architecture, Mixer
from engine.model.config import ModelConfig
from engine.model.evidence import KIND_COUNTS, LAYER_KINDS, PRESENT, Evidence
from engine.rules import engine_rules

HYBRID = Code("family.evidence.hybrid")
DSA = Code("family.evidence.dsa")
MLA = Code("family.evidence.mla_verdict")
MHA = Code("family.evidence.mha")
MQA = Code("family.evidence.mqa")
GQA = Code("family.evidence.gqa", "group")
MTP = Code("family.evidence.mtp")
MTP_DEFAULT = Code("family.evidence.mtp_default", "source")
EARLY = Code("family.evidence.early_fusion")
LATE = Code("family.evidence.late_fusion")
# the verdict card's summary, one part each (joined with " · " by engine/present)
PART_SLIDING = Code("family.part.sliding")
PART_CHUNKED = Code("family.part.chunked")
PART_MOE = Code("family.part.moe", "top_k", "experts")
PART_MTP = Code("family.part.mtp", "layers")
PART_MULTIMODAL = Code("family.part.multimodal", "fusion")
FUSION = {"early": Code("family.fusion.early"), "late": Code("family.fusion.late")}


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

    def summary(self) -> tuple[Name | Decision, ...]:
        """The verdict in a few parts: the family's name, then each flag that holds."""
        parts: list[Name | Decision] = [Name(self.attention_family.value)]
        if self.sliding_window:
            parts.append(PART_SLIDING())
        if self.chunked_local:
            parts.append(PART_CHUNKED())
        if self.moe:
            parts.append(PART_MOE(top_k=self.experts_per_token, experts=self.num_experts))
        if self.mtp_layers:
            parts.append(PART_MTP(layers=self.mtp_layers))
        if self.multimodal and self.fusion in FUSION:
            parts.append(PART_MULTIMODAL(fusion=FUSION[self.fusion]()))
        return tuple(parts)


def classify(cfg: ModelConfig, arch: Architecture) -> FamilyVerdict:
    ev = list(arch.evidence)
    mixers = {m for layer in arch.layers for m in layer.mixers}
    if any(m.is_linear for m in mixers):
        fam = AttentionFamily.HYBRID
        n_lin = sum(1 for layer in arch.layers if any(m.is_linear for m in layer.mixers))
        counts = KIND_COUNTS(linear=n_lin, attention=arch.attention_layers)
        ev.append(Evidence(LAYER_KINDS(), counts, HYBRID()))
    elif Mixer.COMPRESSED in mixers or (
        Mixer.MLA in mixers and any(layer.indexer for layer in arch.layers)
    ):
        fam = AttentionFamily.DSA
        ev.append(Evidence("index_topk", str(cfg.index_topk), DSA()))
    elif Mixer.MLA in mixers:
        fam = AttentionFamily.MLA
        ev.append(Evidence("kv_lora_rank", str(cfg.kv_lora_rank), MLA()))
    else:
        # per-layer KV heads (block configs, per-layer lists): the attention layers' own
        attn = [lay for lay in arch.layers if lay.num_kv_heads and lay.mixer != Mixer.NONE]
        kv = max((lay.num_kv_heads for lay in attn), default=cfg.num_key_value_heads)
        h = max((lay.num_heads or cfg.num_attention_heads for lay in attn), default=0)
        h = h or cfg.num_attention_heads
        if kv == h:
            fam, rule = AttentionFamily.MHA, MHA()
        elif kv == 1:
            fam, rule = AttentionFamily.MQA, MQA()
        else:
            fam, rule = AttentionFamily.GQA, GQA(group=h // kv)
        ev.append(Evidence("num_attention_heads / num_key_value_heads", f"{h} / {kv}", rule))
    sliding = Mixer.SLIDING in mixers
    chunked = Mixer.CHUNKED in mixers
    moe = cfg.num_experts > 1
    shared = cfg.n_shared_experts or (1 if cfg.shared_expert_intermediate_size else 0)
    if cfg.mtp_layers:
        key = cfg.mtp_kind
        why = cfg.defaults_applied.get(key)
        ev.append(
            Evidence(
                key,
                str(cfg.mtp_layers),
                MTP() if why is None else MTP_DEFAULT(source=why.said()),
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
                PRESENT(),
                EARLY() if early else LATE(),
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
