"""The mixer families, one module each, registered in one place: ``base._FAMILIES``, filled as
each module below is imported (every module of this package is, so a new family is a new
module: no list to edit). See ``base`` for what a family owns."""

from __future__ import annotations

import importlib
import pkgutil

from engine.model.mixers.base import (
    CacheContext,
    LayerPlan,
    LayerShape,
    Mixer,
    MixerFamily,
    Schedule,
    families,
    family,
    for_layer_kind,
    head_size,
    linear_families,
    scheduling_families,
    uses_mla,
)

for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")

Mixer.FULL = Mixer("full")
Mixer.SLIDING = Mixer("sliding")
Mixer.CHUNKED = Mixer("chunked")
Mixer.MLA = Mixer("mla")
Mixer.COMPRESSED = Mixer("compressed")
Mixer.NONE = Mixer("none")

__all__ = [
    "CacheContext",
    "LayerPlan",
    "LayerShape",
    "Mixer",
    "MixerFamily",
    "Schedule",
    "families",
    "family",
    "for_layer_kind",
    "head_size",
    "linear_families",
    "scheduling_families",
    "uses_mla",
]
