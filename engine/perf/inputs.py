"""The speed model's inputs built from a config alone (tests, the accuracy bench, tools): the
same objects a Study computes, at the engine's own KV sizing."""

from __future__ import annotations

from dataclasses import dataclass, field

from engine.engines import Engine, adapter
from engine.hardware.gpus import Gpu
from engine.kv.dtype import KvDtype
from engine.kv.sizing import KvSizing, size_kv
from engine.model.architecture import Architecture, build_architecture
from engine.model.config import ModelConfig
from engine.model.family import FamilyVerdict, classify
from engine.model.weights import WeightReport, weight_report


@dataclass(frozen=True)
class ModelInputs:
    """What ``estimate`` reads (``engine.perf.shape.PerfInputs``), with KV sizings cached per
    attention TP size."""

    cfg: ModelConfig
    arch: Architecture
    family: FamilyVerdict
    weights: WeightReport
    gpu: Gpu
    engine: Engine
    kv_dtype: KvDtype
    chunk_tokens: int | None = None
    mtp: bool = False
    _sizings: dict[int, KvSizing] = field(default_factory=dict, repr=False, compare=False)

    def kv_at(self, tp: int, /) -> KvSizing:
        if tp not in self._sizings:
            self._sizings[tp] = size_kv(self.arch, self.cfg, self.kv_dtype, tp, self.engine)
        return self._sizings[tp]


def model_inputs(
    cfg: ModelConfig,
    gpu: Gpu,
    engine: Engine = "vllm",
    kv_dtype: str = "auto",
    chunk_tokens: int | None = None,
) -> ModelInputs:
    """Architecture, family, weights and the engine's KV dtype of ``cfg`` on ``gpu``."""
    arch = build_architecture(cfg)
    fam = classify(cfg, arch)
    weights = weight_report(cfg, arch)
    kvd = adapter(engine).kv_dtype(kv_dtype, cfg, gpu.arch)
    return ModelInputs(cfg, arch, fam, weights, gpu, engine, kvd, chunk_tokens)
