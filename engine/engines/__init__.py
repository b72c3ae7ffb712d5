"""Engine adapters: one per serving engine, behind one interface (``EngineAdapter``).

``adapter("vllm")`` / ``adapter("sglang")`` answer everything that differs between the engines;
the rest of the engine asks them and never branches on the engine's name."""

from __future__ import annotations

from engine.engines.base import (
    ENGINES,
    SETTINGS,
    Engine,
    EngineAdapter,
    FlagChoice,
    Setting,
    check_engine,
)
from engine.engines.sglang import SglangAdapter
from engine.engines.vllm import VllmAdapter

_ADAPTERS: dict[str, EngineAdapter] = {"vllm": VllmAdapter(), "sglang": SglangAdapter()}


def adapter(engine: str) -> EngineAdapter:
    """The adapter of ``engine`` (InputError for a name that is not one of ENGINES)."""
    found = _ADAPTERS.get(engine)
    if found is None:
        check_engine(engine)
        raise AssertionError(engine)
    return found


def other(engine: str) -> Engine:
    """The other engine (for a flag copied across from it)."""
    name = adapter(engine).name
    return next(e for e in ENGINES if e != name)


__all__ = [
    "ENGINES",
    "SETTINGS",
    "Engine",
    "EngineAdapter",
    "FlagChoice",
    "Setting",
    "adapter",
    "check_engine",
    "other",
]
