"""``data/disagg.yaml``, read and validated once: how each engine runs a prefill and a decode
pool (its connector, roles, ports, transfer backend) and the router in front, each with its
source."""

from __future__ import annotations

from functools import cache

from pydantic import Field

from engine.rules import Strict, load_data


class _Transfer(Strict):
    text: str = Field(min_length=1)
    source: str = Field(min_length=1)


class _Roles(Strict):
    prefill: str = Field(min_length=1)
    decode: str = Field(min_length=1)


class VllmFacts(Strict):
    connector: str = Field(min_length=1)
    roles: _Roles
    side_channel_port_env: str = Field(pattern=r"^[A-Z_][A-Z0-9_]*$")
    side_channel_port: int = Field(ge=1, le=65535)
    side_channel_host_env: str = Field(pattern=r"^[A-Z_][A-Z0-9_]*$")
    rdma_devices_env: str = Field(pattern=r"^[A-Z_][A-Z0-9_]*$")
    rdma_port_suffix: str
    source: str = Field(min_length=1)


class SglangFacts(Strict):
    transfer_backend: str = Field(min_length=1)
    bootstrap_port: int = Field(ge=1, le=65535)
    source: str = Field(min_length=1)


class RouterFacts(Strict):
    """The router in PD mode: its argv with ``{prefill}`` / ``{decode}`` where the servers go."""

    argv: tuple[str, ...] = Field(min_length=1)
    port: int = Field(ge=1, le=65535)
    bootstrap: bool  # each prefill URL is followed by its bootstrap port
    image: str | None  # None: the engine's own image carries it
    install: str | None  # a pip requirement to install first (None: already there)
    source: str = Field(min_length=1)


class _Routers(Strict):
    vllm: RouterFacts
    sglang: RouterFacts


class DisaggFacts(Strict):
    transfer: _Transfer
    vllm: VllmFacts
    sglang: SglangFacts
    routers: _Routers

    def router(self, engine: str) -> RouterFacts:
        found: RouterFacts = getattr(self.routers, engine)
        return found


@cache
def disagg_facts() -> DisaggFacts:
    """``data/disagg.yaml``, read and validated once."""
    return load_data(DisaggFacts, "disagg.yaml")
