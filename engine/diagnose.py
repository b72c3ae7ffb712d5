"""Steps 1-2 for one config in one pure function: family, per-layer KV sizing for vLLM and
SGLang at a TP size, and weights. The Study (engine.study) builds on the same pieces and adds
the GPUs: layout, memory per GPU, users that fit."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from engine import errors as E
from engine.engines import ENGINES, adapter
from engine.errors import InputError
from engine.kv.dtype import KvDtype
from engine.kv.sizing import KvSizing, size_kv
from engine.model.architecture import Architecture, build_architecture
from engine.model.config import ModelConfig
from engine.model.family import FamilyVerdict, classify
from engine.model.weights import WeightReport, weight_report
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

    def to_json(self) -> dict[str, Any]:
        cfg = self.config
        fam = self.family
        out: dict[str, Any] = {
            "architecture": cfg.architecture,
            "model_type": cfg.model_type,
            "attention_family": fam.attention_family,
            "sliding_window": fam.sliding_window,
            "chunked_local": fam.chunked_local,
            "moe": fam.moe,
            "multimodal": fam.multimodal,
            "fusion": fam.fusion,
            "num_experts": fam.num_experts,
            "experts_per_token": fam.experts_per_token,
            "shared_experts": fam.shared_experts,
            "mtp_layers": fam.mtp_layers,
            "linear_kind": fam.linear_kind,
            "evidence": [],  # worded by engine/present/study_report.py (field, value, rule, code)
            "tp": self.kv.tp,
            "kv_dtype": self.kv.kv_dtype.requested,
            "kv_dtype_stored": self.kv.kv_dtype.stored,
            "kv_dtype_note": self.kv.kv_dtype.note,
            "block_size": self.kv.block_size,
            "layer_groups": [
                {
                    "kind": g.kind,
                    "layers": g.num_layers,
                    "layer_indices": list(g.layers),
                    "bytes_per_token": _num(g.bytes_per_token),
                    "bytes_per_token_per_layer": _num(g.spec.bytes_per_token),
                    "state_bytes_per_request": g.state_bytes_per_request,
                    "window": g.spec.window,
                }
                for g in self.kv.groups
            ],
            "kv_bytes_per_token": self.kv.kv_bytes_per_token,
            "state_bytes_per_request": self.kv.state_bytes_per_request,
            "state_bytes_per_request_padded": self.kv.state_bytes_per_request_padded,
            "hybrid_block_size": self.kv.hybrid.block_size if self.kv.hybrid else None,
            "context": self.context,
            "kv_bytes_per_request": self.kv_bytes_per_request,
            "sglang": {
                "kv_dtype_stored": self.sglang.kv_dtype.stored,
                "kv_bytes_per_token": self.sglang.kv_bytes_per_token,
                "state_bytes_per_request": self.sglang.state_bytes_per_request,
                "kv_bytes_per_request": self.sglang.bytes_per_request(self.context),
                "differs": self.sglang_differs(),
            },
            "params_total": self.weights.params_total,
            "params_active": self.weights.params_active,
            "weight_bytes": self.weights.weight_bytes,
            "checkpoint_format": self.weights.format,
            "units": "bytes; GiB = 2^30 bytes, GB = 10^9 bytes",
        }
        return out


def _num(x: float) -> float | int:
    return int(x) if float(x).is_integer() else round(x, 4)


def default_context(cfg: ModelConfig) -> int:
    """The scenario's default context, within the config's max_position_embeddings."""
    return min(cfg.max_position_embeddings or DEFAULT_CONTEXT, DEFAULT_CONTEXT)


def diagnose(cfg: ModelConfig, opts: Options | None = None) -> Diagnosis:
    """Family, per-layer KV sizing for vLLM and SGLang at ``opts.tp``, and weights. The memory
    of a GPU, the layout and the users that fit are the Study's (engine.study)."""
    opts = opts or Options()
    opts.validate()
    arch = build_architecture(cfg)
    family = classify(cfg, arch)
    # each engine's accounting: the first leads (vLLM's), the other's is shown beside it
    kv, sg = (
        size_kv(arch, cfg, adapter(e).kv_dtype(opts.kv_dtype, cfg, opts.gpu_arch), opts.tp, e)
        for e in ENGINES
    )
    w = weight_report(cfg, arch)
    context = opts.context or default_context(cfg)
    return Diagnosis(cfg, arch, family, kv, sg, w, opts, context)
