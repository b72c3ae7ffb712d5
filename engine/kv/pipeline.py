"""The model pipeline, in one place: a config's layers (architecture), its family verdict, its
weights, and its KV cache as each engine sizes it at a KV dtype and a TP size.

Every reader that starts from a config (the Study, the diagnosis, the speed model's inputs, the
catalog table, the kernels' dims) builds the model through ``model_pipeline``, so none of them
can read the layers one way and size the cache another.
"""

from __future__ import annotations

from dataclasses import dataclass, field

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
    engine, stored dtype and attention TP size (computed once each, on demand)."""

    cfg: ModelConfig
    arch: Architecture
    family: FamilyVerdict
    weights: WeightReport
    _sizings: dict[tuple[Engine, KvDtype, int, int | None], KvSizing] = field(
        default_factory=dict, repr=False, compare=False
    )

    def kv(self, engine: Engine, kv_dtype: KvDtype, tp: int, block: int | None = None) -> KvSizing:
        """The KV cache ``engine`` allocates for this model on one rank at TP ``tp`` (in
        ``block``-token blocks where a recipe requires them)."""
        key = (engine, kv_dtype, tp, block)
        if key not in self._sizings:
            self._sizings[key] = size_kv(self.arch, self.cfg, kv_dtype, tp, engine, block)
        return self._sizings[key]


def model_pipeline(cfg: ModelConfig) -> ModelPipeline:
    """``cfg``'s architecture, then its family and weights read from those layers."""
    arch = build_architecture(cfg)
    return ModelPipeline(cfg, arch, classify(cfg, arch), weight_report(cfg, arch))
