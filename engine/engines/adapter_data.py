"""``data/engines/adapters.yaml``: the facts an engine adapter reads beside its pinned tables."""

from __future__ import annotations

from functools import cache

from pydantic import Field

from engine.rules import Strict, load_data


class _AttentionDp(Strict):
    flag_added: str = Field(min_length=1)
    legacy_spelling: str = Field(min_length=1)
    source: str = Field(min_length=1)


class EngineFacts(Strict):
    """What every engine has: the name a reader sees and its repository."""

    label: str = Field(min_length=1)
    repository: str = Field(pattern=r"^[\w.-]+/[\w.-]+$")


class _Sglang(EngineFacts):
    attention_dp: _AttentionDp


class _Engines(Strict):
    vllm: EngineFacts
    sglang: _Sglang


class AdapterFacts(Strict):
    source: str = Field(min_length=1)
    engines: _Engines

    def engine(self, name: str) -> EngineFacts:
        facts: EngineFacts = getattr(self.engines, name)
        return facts


@cache
def adapter_facts() -> AdapterFacts:
    return load_data(AdapterFacts, "engines/adapters.yaml")
