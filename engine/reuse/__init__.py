"""Prefix reuse: how much of each prompt an engine finds already cached — in the GPU's prefix
cache and in a CPU tier behind it — given what repeats (a system prompt, a session's history),
the engine's cache unit, the KV pool's room and the host memory given to the tier."""

from engine.reuse.hits import Reuse, layout_reuse, prefix_reuse

__all__ = ["Reuse", "layout_reuse", "prefix_reuse"]
