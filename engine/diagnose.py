"""Steps 1-2 for one config in one pure function: family, per-layer KV sizing for vLLM and
SGLang at a TP size, and weights. The Study (engine.study) builds on the same pieces and adds
the GPUs: layout, memory per GPU, users that fit."""

from __future__ import annotations

from dataclasses import dataclass

from engine import errors as E
from engine.engines import ENGINES, adapter
from engine.errors import InputError
from engine.kv.dtype import KvDtype
from engine.kv.pipeline import model_pipeline
from engine.kv.sizing import KvSizing
from engine.model.architecture import Architecture
from engine.model.config import ModelConfig
from engine.model.family import FamilyVerdict
from engine.model.weights import WeightReport
from engine.scenario import DEFAULT_CONTEXT

GIB = 1 << 30
GB = 1_000_000_000


@dataclass(frozen=True)
class Options:
    """What the KV sizing depends on besides the config: the requested KV dtype, the attention
    TP size, the context one request is sized at and the GPU architecture (DSA layouts)."""

    kv_dtype: str = "auto"
    tp: int = 1
    context: int | None = None
    gpu_arch: str | None = None

    def validate(self) -> None:
        if isinstance(self.tp, bool) or not 1 <= self.tp <= 8192:
            raise InputError("tp", E.RANGE(low=1, high=8192, got=E.got(self.tp)))
        if self.context is not None and not 1 <= self.context <= 1 << 26:
            raise InputError("context", E.RANGE(low=1, high=1 << 26, got=E.got(self.context)))


@dataclass(frozen=True)
class Diagnosis:
    config: ModelConfig
    architecture: Architecture
    family: FamilyVerdict
    kv: KvSizing
    sglang: KvSizing
    weights: WeightReport
    options: Options
    context: int

    @property
    def kv_dtype(self) -> KvDtype:
        return self.kv.kv_dtype

    @property
    def kv_bytes_per_request(self) -> int:
        return self.kv.bytes_per_request(self.context)

    def sglang_differs(self) -> bool:
        return (
            self.sglang.kv_bytes_per_token != self.kv.kv_bytes_per_token
            or self.sglang.state_bytes_per_request != self.kv.state_bytes_per_request
        )


def default_context(cfg: ModelConfig) -> int:
    """The scenario's default context, within the config's max_position_embeddings."""
    return min(cfg.max_position_embeddings or DEFAULT_CONTEXT, DEFAULT_CONTEXT)


def diagnose(cfg: ModelConfig, opts: Options | None = None) -> Diagnosis:
    """Family, per-layer KV sizing for vLLM and SGLang at ``opts.tp``, and weights. The memory
    of a GPU, the layout and the users that fit are the Study's (engine.study)."""
    opts = opts or Options()
    opts.validate()
    pipe = model_pipeline(cfg)
    # each engine's accounting: the first leads (vLLM's), the other's is shown beside it
    kv, sg = (
        pipe.kv(e, adapter(e).kv_dtype(opts.kv_dtype, cfg, opts.gpu_arch), opts.tp) for e in ENGINES
    )
    context = opts.context or default_context(cfg)
    return Diagnosis(cfg, pipe.arch, pipe.family, kv, sg, pipe.weights, opts, context)
