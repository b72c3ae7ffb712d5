"""What one GPU of a layout holds and runs: weight bytes and parameters by role, the routed
experts, and the model's layer counts, read from the engine's own objects.

Bytes per GPU are the memory model's (``engine.engines.placement.weights_per_gpu``: each role split
the way the engines' model code splits it); parameters per GPU follow the same divisor, so a
role's FLOPs are 2 × its parameters on the GPU × the tokens that GPU runs through it. The
shape is of the whole model at the layout's TP / DP / EP: a pipeline's stages run one after
the other for a token, so a step sums every layer (see ``engine.perf.estimate``).
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from dataclasses import dataclass
from typing import Protocol

from engine.engines import Engine
from engine.engines.memory import Split
from engine.engines.placement import weights_per_gpu
from engine.hardware.gpus import Gpu
from engine.kv.sizing import KvSizing
from engine.model.architecture import Architecture
from engine.model.config import ModelConfig
from engine.model.family import FamilyVerdict
from engine.model.weights import Role, WeightReport
from engine.perf.rates import GemmDtype, gemm_dtype


class PerfInputs(Protocol):
    """What the speed model reads; ``engine.launch.layout.SearchInputs`` is one (the Study
    builds it once per engine), ``engine.perf.inputs.ModelInputs`` another."""

    @property
    def cfg(self) -> ModelConfig: ...
    @property
    def arch(self) -> Architecture: ...
    @property
    def family(self) -> FamilyVerdict: ...
    @property
    def weights(self) -> WeightReport: ...
    @property
    def gpu(self) -> Gpu: ...
    @property
    def engine(self) -> Engine: ...
    @property
    def chunk_tokens(self) -> int | None: ...
    def kv_at(self, tp: int, /) -> KvSizing: ...


# Roles whose weights a decode step streams in full (the embedding reads only B rows, the
# vision tower does not run in decode, routed experts are counted by the experts they touch).
STREAMED: tuple[Role, ...] = (
    "attention",
    "replicated",
    "linear_mixer",
    "dense_ffn",
    "shared_experts",
    "router",
    "norm",
    "lm_head",
)


@dataclass(frozen=True)
class RoleLoad:
    """One role on one GPU: bytes read per pass, parameters, the GEMM dtype, and ``divisor``:
    the GPUs sharing one copy of it (the tokens each GPU runs through it scale with it)."""

    role: Role
    bytes_per_gpu: float
    params_per_gpu: float
    dtype: GemmDtype
    divisor: int


@dataclass(frozen=True)
class Experts:
    """The routed experts: ``count`` per MoE layer, ``top_k`` per token, one expert's bytes and
    parameters (one layer, whole), over a MoE group of ``group`` GPUs."""

    layers: int
    count: int
    top_k: int
    bytes_per_expert: float
    params_per_expert: float
    dtype: GemmDtype
    group: int

    def touched(self, tokens: float) -> float:
        """Expected distinct experts that ``tokens`` tokens route to in one layer, each picking
        top_k of count uniformly: E · (1 − (1 − k/E)^tokens)."""
        if tokens <= 0:
            return 0.0
        e, k = self.count, self.top_k
        return float(e * (1.0 - (1.0 - k / e) ** tokens))


@dataclass(frozen=True)
class Shape:
    roles: tuple[RoleLoad, ...]
    experts: Experts | None
    mtp_bytes_per_gpu: float  # MTP layers (draft passes), lm_head excluded
    mtp_params_per_gpu: float
    hidden: int
    layers: int
    mixer_layers: int  # layers with attention or a linear mixer (one TP all-reduce each)
    ffn_layers: int  # layers with an FFN: dense or MoE (one more)

    @property
    def streamed_bytes(self) -> float:
        return sum(r.bytes_per_gpu for r in self.roles)


def _params_by_role(w: WeightReport, mtp: bool) -> dict[Role, int]:
    out: dict[Role, int] = {}
    for b in w.blocks:
        if b.loaded and b.mtp == mtp:
            out[b.role] = out.get(b.role, 0) + b.count
    return out


# Shapes already built, keyed by the identity of the objects they were built from: a sweep over
# concurrency, or the search's candidates of one split, builds each shape once. An entry holds
# those objects weakly (a config a user pasted is not kept alive by the speed model) and its
# Shape, a few hundred bytes, whose id-key dies with them.
_MAX_SHAPES = 256
_Key = tuple[int, int, int, str, str, int, int, bool]
_shapes: OrderedDict[_Key, tuple[tuple[weakref.ref[object], ...], Shape]] = OrderedDict()
_lock = threading.Lock()


def model_shape(inp: PerfInputs, split: Split) -> Shape:
    """The per-GPU shape of ``inp``'s model at ``split`` (its pipeline stages summed)."""
    cfg, arch, w = inp.cfg, inp.arch, inp.weights
    key = (id(cfg), id(arch), id(w), inp.gpu.key, inp.engine, split.tp, split.dp, split.ep)
    with _lock:
        hit = _shapes.get(key)
        if hit is not None and all(r() is o for r, o in zip(hit[0], (cfg, arch, w), strict=True)):
            _shapes.move_to_end(key)
            return hit[1]
    shape = _build_shape(inp, split)
    with _lock:
        _shapes[key] = (tuple(weakref.ref(o) for o in (cfg, arch, w)), shape)
        while len(_shapes) > _MAX_SHAPES:
            _shapes.popitem(last=False)
    return shape


def _build_shape(inp: PerfInputs, split: Split) -> Shape:
    cfg, w, gpu = inp.cfg, inp.weights, inp.gpu
    flat = Split(split.tp, split.dp, 1, split.ep)
    n_layers = cfg.num_hidden_layers
    _, shares = weights_per_gpu(w, inp.engine, flat, num_layers=n_layers, mtp=False, vision=False)
    by_role = {s.role: s for s in shares}
    params = _params_by_role(w, mtp=False)
    roles: list[RoleLoad] = []
    head: Role | None = "lm_head" if "lm_head" in by_role else None
    if head is None and cfg.tie_word_embeddings and "embedding" in by_role:
        head = "embedding"  # tied: the logits read the embedding matrix
    for role in STREAMED:
        src = head if role == "lm_head" else role
        if src is None or src not in by_role or not params.get(src):
            continue
        s = by_role[src]
        bits = s.bytes_total * 8 / params[src]
        roles.append(
            RoleLoad(
                "lm_head" if role == "lm_head" else role,
                float(s.bytes_per_gpu),
                params[src] / s.divisor,
                gemm_dtype(bits, w.weight_dtype, gpu),
                s.divisor,
            )
        )
    experts = None
    moe_layers = sum(1 for lay in inp.arch.layers if lay.ffn in ("moe", "moe+dense"))
    fam = inp.family
    if fam.moe and moe_layers and "routed_experts" in by_role and params.get("routed_experts"):
        s = by_role["routed_experts"]
        n = moe_layers * fam.num_experts
        experts = Experts(
            moe_layers,
            fam.num_experts,
            fam.experts_per_token,
            s.bytes_total / n,
            params["routed_experts"] / n,
            gemm_dtype(s.bytes_total * 8 / params["routed_experts"], w.weight_dtype, gpu),
            split.moe_group,
        )
    mtp_bytes = mtp_params = 0.0
    if cfg.mtp_layers:
        with_mtp, mtp_shares = weights_per_gpu(
            w, inp.engine, flat, num_layers=n_layers, mtp=True, vision=False
        )
        without = sum(s.bytes_per_gpu for s in shares)
        mtp_bytes = float(max(0, with_mtp - without))
        mtp_total = sum(_params_by_role(w, mtp=True).values())
        mtp_total_bytes = w.bytes_of([s.role for s in mtp_shares], mtp=True)
        mtp_params = mtp_total * mtp_bytes / mtp_total_bytes if mtp_total_bytes else 0.0
    mixers = sum(1 for lay in inp.arch.layers if lay.mixer.is_attention or lay.mixer.is_linear)
    ffns = sum(1 for lay in inp.arch.layers if lay.ffn != "none")
    return Shape(
        tuple(roles), experts, mtp_bytes, mtp_params, cfg.hidden_size, n_layers, mixers, ffns
    )
