"""The model pipeline, in one place: a config's layers (architecture), its family verdict, its
weights, and its KV cache as each engine sizes it at a KV dtype and a TP size.

Every reader that starts from a config (the Study, the diagnosis, the speed model's inputs, the
catalog table, the kernels' dims) builds the model through ``model_pipeline``, so none of them
can read the layers one way and size the cache another.

What grows with the config's layers is built once per config object and kept in the process's
memory budget (``engine.budget``): the layers, family and weights, and each KV sizing. Every
Study of one model (each sidebar change, each alternative tried) reads the same. The caches hold
the config only weakly: a config the store lets go takes its entries with it at the next LRU.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

from engine.budget import Cache, size_once
from engine.engines import Engine
from engine.kv.dtype import KvDtype
from engine.kv.sizing import KvSizing, size_kv
from engine.model.architecture import Architecture, build_architecture
from engine.model.config import ModelConfig
from engine.model.family import FamilyVerdict, classify
from engine.model.weights import WeightReport, weight_report


@dataclass(frozen=True)
class ModelPipeline:
    """A config through the pipeline: its layers, family and weights, and its KV sizing per
    engine, stored dtype and attention TP size (computed once each per config, on demand)."""

    cfg: ModelConfig
    arch: Architecture
    family: FamilyVerdict
    weights: WeightReport

    def kv(self, engine: Engine, kv_dtype: KvDtype, tp: int, block: int | None = None) -> KvSizing:
        """The KV cache ``engine`` allocates for this model on one rank at TP ``tp`` (in
        ``block``-token blocks where a recipe requires them)."""
        key = (id(self.cfg), engine, repr(kv_dtype), tp, block)
        hit = _sizings.get(key)
        if hit is not None and hit[0]() is self.cfg:
            return hit[1]
        sizing = size_kv(self.arch, self.cfg, kv_dtype, tp, engine, block)
        _sizings.put(key, (weakref.ref(self.cfg), sizing))
        return sizing


_Shape = tuple[Architecture, FamilyVerdict, WeightReport]
_shapes: Cache[int, tuple[weakref.ref[ModelConfig], _Shape]] = Cache(
    "model shapes", lambda v: sum(size_once(part) for part in v[1])
)
_sizings: Cache[
    tuple[int, Engine, str, int, int | None], tuple[weakref.ref[ModelConfig], KvSizing]
] = Cache("kv sizings", lambda v: size_once(v[1]))


def model_pipeline(cfg: ModelConfig) -> ModelPipeline:
    """``cfg``'s architecture, then its family and weights read from those layers (built once
    per config object)."""
    hit = _shapes.get(id(cfg))
    if hit is not None and hit[0]() is cfg:
        return ModelPipeline(cfg, *hit[1])
    arch = build_architecture(cfg)
    shape = (arch, classify(cfg, arch), weight_report(cfg, arch))
    _shapes.put(id(cfg), (weakref.ref(cfg), shape))  # a config gone: its entry waits for the LRU
    return ModelPipeline(cfg, *shape)
