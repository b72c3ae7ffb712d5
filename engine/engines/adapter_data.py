"""``data/engines/adapters.yaml``: the facts an engine adapter reads beside its pinned tables."""

from __future__ import annotations

from functools import cache

from pydantic import Field

from engine.rules import Strict, load_data


class _AttentionDp(Strict):
    flag_added: str = Field(min_length=1)
    legacy_spelling: str = Field(min_length=1)
    source: str = Field(min_length=1)


class _Sglang(Strict):
    attention_dp: _AttentionDp


class AdapterFacts(Strict):
    sglang: _Sglang


@cache
def adapter_facts() -> AdapterFacts:
    return load_data(AdapterFacts, "engines/adapters.yaml")
