"""``data/engines/adapters.yaml``: the facts an engine adapter reads beside its pinned tables."""

from __future__ import annotations

from functools import cache

from pydantic import Field

from engine.rules import Strict, load_data


class _AttentionDp(Strict):
    flag_added: str = Field(min_length=1)
    legacy_spelling: str = Field(min_length=1)
    source: str = Field(min_length=1)


class _Roles(Strict):
    prefill: str = Field(min_length=1)
    decode: str = Field(min_length=1)


class VllmDisaggFacts(Strict):
    connector: str = Field(min_length=1)
    roles: _Roles
    side_channel_port_env: str = Field(pattern=r"^[A-Z_][A-Z0-9_]*$")
    side_channel_port: int = Field(ge=1, le=65535)
    side_channel_host_env: str = Field(pattern=r"^[A-Z_][A-Z0-9_]*$")
    rdma_devices_env: str = Field(pattern=r"^[A-Z_][A-Z0-9_]*$")
    rdma_port_suffix: str
    hybrid_same_tp: bool
    hybrid_same_tp_source: str = Field(min_length=1)
    source: str = Field(min_length=1)


class _SglangDisagg(Strict):
    transfer_backend: str = Field(min_length=1)
    bootstrap_port: int = Field(ge=1, le=65535)
    tp_multiple_source: str = Field(min_length=1)
    source: str = Field(min_length=1)


class EngineFacts(Strict):
    """What every engine has: the name a reader sees and its repository."""

    label: str = Field(min_length=1)
    repository: str = Field(pattern=r"^[\w.-]+/[\w.-]+$")


class _Vllm(EngineFacts):
    disaggregation: VllmDisaggFacts


class _Sglang(EngineFacts):
    attention_dp: _AttentionDp
    disaggregation: _SglangDisagg


class _Engines(Strict):
    vllm: _Vllm
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
