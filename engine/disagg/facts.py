"""``data/disagg.yaml``, read and validated once: how a request's KV moves between the pools
and the router in front of them, each with its source (each engine's own flags for its pools
are its adapter's)."""

from __future__ import annotations

from functools import cache

from pydantic import Field

from engine.rules import Strict, load_data


class _Transfer(Strict):
    text: str = Field(min_length=1)
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
    routers: _Routers

    def router(self, engine: str) -> RouterFacts:
        found: RouterFacts = getattr(self.routers, engine)
        return found


@cache
def disagg_facts() -> DisaggFacts:
    """``data/disagg.yaml``, read and validated once."""
    return load_data(DisaggFacts, "disagg.yaml")
