"""The checkpoint's own draft layers: whether a model ships multi-token-prediction (MTP)
layers that speculative decoding can draft with (a model fact, not a launch choice)."""

from __future__ import annotations

from engine.model.family import FamilyVerdict


def has_draft_layers(family: FamilyVerdict) -> bool:
    """The checkpoint carries MTP layers: the config counts them (``num_nextn_predict_layers``,
    ``mtp_num_hidden_layers``), or vLLM's model code defaults the count where the config states
    none (data/model_defaults.yaml: Qwen3-Next's one ``mtp.*`` layer)."""
    return family.mtp_layers > 0
