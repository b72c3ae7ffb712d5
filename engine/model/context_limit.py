"""The model's own maximum context, read the way vLLM reads it from config.json.

vLLM takes the smallest of the length fields the config states (``max_position_embeddings``,
``n_positions``, ``seq_length`` ...), multiplies it by the RoPE scaling factor for scaling types
that extend the window (YaRN from ``original_max_position_embeddings``), and assumes 2,048 when
the config states no length at all. The key list, the scaling rules and the fallback are data
(``data/memory.yaml`` ``context_limit``) with their source.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from engine.decision import Code, Decision, Name, Tokens
from engine.model.config import ModelConfig
from engine.rules import load_data


class _Rope(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    no_scaling_types: list[str]
    skip_model_types_containing: list[str]
    source: str = Field(min_length=1)


class ContextRules(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    keys: list[str] = Field(min_length=1)
    default_when_missing: int = Field(ge=1)  # no key present: vLLM assumes this and warns
    rope_scaling: _Rope
    source: str = Field(min_length=1)


@cache
def context_rules() -> ContextRules:
    return load_data(ContextRules, "memory.yaml", "context_limit", "vllm")


# How the limit is read (data/i18n/<lang>/model.yaml code.model.context): the config's own field,
# a RoPE scaling factor over it (YaRN's from original_max_position_embeddings), or no field.
STATED = Code("model.context.stated", "field", "tokens")
SCALED = Code("model.context.scaled", "base", "kind", "factor", "tokens")
YARN_ORIGINAL = Code("model.context.yarn_original", "original")
NOT_STATED = Code("model.context.not_stated", "keys", "tokens")


@dataclass(frozen=True)
class ContextLimit:
    tokens: int
    field: str  # the field (or rule) the limit comes from
    why: Decision  # the formula, config fields named as written


def _rope(cfg: ModelConfig) -> Mapping[str, Any] | None:
    for name in ("rope_scaling", "rope_parameters"):
        value = cfg.field(name)
        if isinstance(value, Mapping):
            return value
    return None


def context_limit(cfg: ModelConfig) -> ContextLimit:
    """The longest context the engines accept for this model without an override."""
    rules = context_rules()
    found: list[tuple[int, str]] = []
    for key in rules.keys:
        value = cfg.field(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            found.append((value, key))
    if not found:
        n = context_rules().default_when_missing
        keys = tuple(Name(k) for k in rules.keys)
        return ContextLimit(n, "none", NOT_STATED(keys=keys, tokens=Tokens(n)))
    tokens, key = min(found)
    why = STATED(field=Name(key), tokens=Tokens(tokens))
    rope = _rope(cfg)
    types = f"{cfg.model_type} {cfg.wrapper_model_type}"
    skipped = any(t in types for t in rules.rope_scaling.skip_model_types_containing)
    if rope is not None and not skipped:
        kind = str(rope.get("rope_type") or rope.get("type") or "")
        factor = rope.get("factor")
        if (
            isinstance(factor, int | float)
            and not isinstance(factor, bool)
            and 1 < factor < 1e6
            and kind not in rules.rope_scaling.no_scaling_types
        ):
            base = tokens
            original = rope.get("original_max_position_embeddings")
            if kind == "yarn" and isinstance(original, int) and 0 < original < 1 << 34:
                base = original
                why = YARN_ORIGINAL(original=Tokens(original))
            tokens = int(base * factor)
            why = SCALED(base=why, kind=Name(kind), factor=float(factor), tokens=Tokens(tokens))
    return ContextLimit(tokens, key, why)
