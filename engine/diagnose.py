"""Steps 1-2 of the diagnosis in one pure function: config -> family, cache groups,
weights and how many users fit. The CLI, the app and the tests all call ``diagnose``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from engine.errors import InputError
from engine.kv.dtype import KvDtype, resolve_kv_dtype
from engine.kv.sglang import sglang_sizing
from engine.kv.sizing import KvSizing, size_kv
from engine.model.architecture import Architecture, build_architecture
from engine.model.config import ModelConfig
from engine.model.family import FamilyVerdict, classify
from engine.model.weights import WeightReport, weight_report

if TYPE_CHECKING:
    from engine.hardware.gpus import Gpu

GIB = 1 << 30
GB = 1_000_000_000


@dataclass(frozen=True)
class Options:
    """User choices. ``gpu_memory_bytes``/``gpu_arch`` come from the GPU catalog."""

    kv_dtype: str = "auto"
    tp: int = 1
    dp: int = 1
    expert_parallel: bool = False
    context: int | None = None
    users: int = 1
    gpus: int | None = None
    gpu_name: str | None = None
    gpu_arch: str | None = None
    gpu_memory_bytes: int | None = None
    memory_fraction: float = 0.9
    reserve_bytes: int = 0

    @classmethod
    def on_gpu(cls, gpu: Gpu, **choices: Any) -> Options:
        """Options for ``gpu`` from the catalog (name, arch and memory filled in)."""
        return cls(
            gpu_name=gpu.key, gpu_arch=gpu.arch, gpu_memory_bytes=gpu.memory_bytes, **choices
        )

    def validate(self) -> None:
        if self.tp < 1:
            raise InputError("tp", f"a positive integer, got {self.tp}")
        if self.dp < 1:
            raise InputError("dp", f"a positive integer, got {self.dp}")
        if self.context is not None and not 1 <= self.context <= 1 << 26:
            raise InputError("context", f"between 1 and {1 << 26:,} tokens, got {self.context}")
        if self.users < 1:
            raise InputError("users", f"a positive integer, got {self.users}")
        if self.gpus is not None and self.gpus < 1:
            raise InputError("gpus", f"a positive integer, got {self.gpus}")
        if not 0.05 <= self.memory_fraction <= 1.0:
            raise InputError("memory_fraction", f"between 0.05 and 1.0, got {self.memory_fraction}")
        if self.gpus is not None and self.tp * self.dp > self.gpus:
            raise InputError(
                "tp", f"TP × DP ({self.tp} × {self.dp}) at most the GPU count ({self.gpus})"
            )


@dataclass(frozen=True)
class Fit:
    """How many requests of ``context`` tokens fit, per instance and in total."""

    memory_per_gpu: int
    usable_per_gpu: int
    weights_per_gpu: int
    kv_space_per_gpu: int
    bytes_per_request_per_gpu: int
    users_per_instance: int
    instances: int
    max_concurrency: int
    max_context_for_users: int

    def formula(self) -> str:
        return (
            f"({self.memory_per_gpu / GB:,.1f} GB × fraction = {self.usable_per_gpu / GB:,.1f} GB) "
            f"− {self.weights_per_gpu / GB:,.1f} GB weights = {self.kv_space_per_gpu / GB:,.1f} GB "
            f"for KV; ÷ {self.bytes_per_request_per_gpu / GIB:,.3f} GiB per request = "
            f"{self.users_per_instance} per instance × {self.instances} = {self.max_concurrency}"
        )


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
    fit: Fit | None

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
            "evidence": [
                {"field": e.field, "value": e.value, "rule": e.rule} for e in fam.evidence
            ],
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
                    "formula": g.formula(),
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
        if self.fit is not None:
            f = self.fit
            out.update(
                {
                    "gpu": self.options.gpu_name,
                    "gpus": self.options.gpus,
                    "max_concurrency": f.max_concurrency,
                    "users_per_instance": f.users_per_instance,
                    "instances": f.instances,
                    "weights_per_gpu": f.weights_per_gpu,
                    "kv_space_per_gpu": f.kv_space_per_gpu,
                    "max_context_for_users": f.max_context_for_users,
                }
            )
        return out


def _num(x: float) -> float | int:
    return int(x) if float(x).is_integer() else round(x, 4)


def default_context(cfg: ModelConfig) -> int:
    return min(cfg.max_position_embeddings or 32_768, 32_768)


def weights_per_gpu(w: WeightReport, tp: int, dp: int, ep: bool) -> int:
    """Dense weights split by TP (replicated per DP rank); experts split by TP, or by
    TP × DP with expert parallelism."""
    experts = w.expert_bytes // (tp * dp if ep else tp)
    return w.non_expert_bytes // tp + experts


def max_context_for(kv: KvSizing, space: int, users: int, limit: int) -> int:
    """Largest context (tokens) at which ``users`` requests fit in ``space`` bytes."""
    if kv.bytes_per_request(1, padded=True) * users > space:
        return 0
    lo, hi = 1, limit
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if kv.bytes_per_request(mid, padded=True) * users <= space:
            lo = mid
        else:
            hi = mid - 1
    return lo


def users_that_fit(
    memory_per_gpu: int,
    weights_per_gpu: int,
    bytes_per_request_per_gpu: int,
    memory_fraction: float = 1.0,
    reserve_bytes: int = 0,
) -> int:
    """Requests one TP group holds: (memory × fraction − weights − reserve) // per-request."""
    space = int(memory_per_gpu * memory_fraction) - weights_per_gpu - reserve_bytes
    if space <= 0 or bytes_per_request_per_gpu <= 0:
        return 0
    return space // bytes_per_request_per_gpu


def compute_fit(kv: KvSizing, w: WeightReport, opts: Options, context: int, limit: int) -> Fit:
    assert opts.gpu_memory_bytes is not None
    gpus = opts.gpus or opts.tp * opts.dp
    per_gpu_w = weights_per_gpu(w, opts.tp, opts.dp, opts.expert_parallel)
    usable = int(opts.gpu_memory_bytes * opts.memory_fraction)
    space = max(0, usable - per_gpu_w - opts.reserve_bytes)
    per_req = kv.bytes_per_request(context, padded=True)
    users = users_that_fit(
        opts.gpu_memory_bytes, per_gpu_w, per_req, opts.memory_fraction, opts.reserve_bytes
    )
    instances = max(1, gpus // opts.tp)
    return Fit(
        opts.gpu_memory_bytes,
        usable,
        per_gpu_w,
        space,
        per_req,
        int(users),
        instances,
        int(users) * instances,
        max_context_for(kv, space, max(1, -(-opts.users // instances)), limit),
    )


def diagnose(cfg: ModelConfig, opts: Options | None = None) -> Diagnosis:
    opts = opts or Options()
    opts.validate()
    arch = build_architecture(cfg)
    family = classify(cfg, arch)
    kv_dtype = resolve_kv_dtype(opts.kv_dtype, cfg, opts.gpu_arch)
    kv = size_kv(arch, cfg, kv_dtype, opts.tp)
    sg = sglang_sizing(arch, cfg, opts.kv_dtype, opts.gpu_arch, opts.tp)
    w = weight_report(cfg, arch)
    context = opts.context or default_context(cfg)
    fit = None
    if opts.gpu_memory_bytes is not None:
        limit = max(context, cfg.max_position_embeddings or context)
        fit = compute_fit(kv, w, opts, context, limit)
    return Diagnosis(cfg, arch, family, kv, sg, w, opts, context, fit)
