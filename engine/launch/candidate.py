"""The layout search's objects: a layout (replicas of a split), a candidate with its memory
and users, a rejected layout, the search's result, and what the search reads. The search
(``layout.py``) builds them; the ranking (``ranking.py``) compares them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from engine.decision import Code, Decision, Tokens
from engine.engines import Engine
from engine.engines.memory import Reserve, Split
from engine.engines.placement import WeightShare
from engine.hardware.gpus import Gpu
from engine.kv.sizing import KvSizing
from engine.launch.known_issues import KnownIssue
from engine.model.architecture import Architecture
from engine.model.config import ModelConfig
from engine.model.family import FamilyVerdict
from engine.model.weights import WeightReport
from engine.perf import Calibration, Speculative, Speed
from engine.perf.factors import Factors
from engine.reuse import Reuse

LAYOUT_NAME = {
    "split": Code("layout.name.split", "tp"),
    "split_ep": Code("layout.name.split_ep", "tp"),
    "split_dp": Code("layout.name.split_dp", "tp", "dp"),
    "split_dp_ep": Code("layout.name.split_dp_ep", "tp", "dp"),
    "split_pp": Code("layout.name.split_pp", "tp", "pp"),
    "split_pp_ep": Code("layout.name.split_pp_ep", "tp", "pp"),
    "split_dp_pp": Code("layout.name.split_dp_pp", "tp", "dp", "pp"),
    "split_dp_pp_ep": Code("layout.name.split_dp_pp_ep", "tp", "dp", "pp"),
}
LAYOUT_REPLICAS = Code("layout.name.replicas", "n", "copy")


def shortfall(weights: int, reserve: Reserve | None, usable: int) -> int:
    """Bytes by which the weights and the engine's reserve exceed one GPU's usable memory (0
    when they fit): what the ranking compares among layouts that do not fit."""
    return max(0, weights + (reserve.total if reserve else 0) - usable)


@dataclass(frozen=True)
class Layout:
    """``replicas`` independent copies of the model, each cut as ``split``."""

    replicas: int
    split: Split

    @property
    def gpus(self) -> int:
        return self.replicas * self.split.gpus

    @property
    def tp(self) -> int:
        return self.split.tp

    @property
    def dp(self) -> int:
        return self.split.dp

    @property
    def pp(self) -> int:
        return self.split.pp

    @property
    def ep(self) -> bool:
        return self.split.ep

    def name(self) -> Decision:
        """The layout's short name as a decision (``TP 8 + EP``, ``2 replicas of TP 4``)."""
        s = self.split
        variant = "split" + ("_dp" if s.dp > 1 else "") + ("_pp" if s.pp > 1 else "")
        variant += "_ep" if s.ep else ""
        params = {"tp": s.tp, "dp": s.dp, "pp": s.pp}
        code = LAYOUT_NAME[variant]
        copy = code(**{k: v for k, v in params.items() if k in code.params})
        return copy if self.replicas == 1 else LAYOUT_REPLICAS(n=self.replicas, copy=copy)

    def describe(self) -> str:
        """The same name in English, for the engine's own logs and comments (the reader's
        language comes from ``name()``; a test keeps the two equal)."""
        s = self.split
        parts = [f"TP {s.tp}"]
        if s.dp > 1:
            parts.append(f"DP-attention {s.dp}")
        if s.pp > 1:
            parts.append(f"PP {s.pp}")
        if s.ep:
            parts.append("EP")
        copy = " × ".join(parts[:1] + [p for p in parts[1:] if p != "EP"])
        if s.ep:
            copy += " + EP"
        return copy if self.replicas == 1 else f"{self.replicas} replicas of {copy}"


@dataclass(frozen=True)
class Candidate:
    """One layout with its memory and users on the busiest GPU of each copy."""

    layout: Layout
    weights_per_gpu: int
    weight_shares: tuple[WeightShare, ...]
    memory_per_gpu: int
    fraction: float
    fraction_why: Decision  # the fraction's formula or source
    usable_per_gpu: int
    reserve: Reserve | None
    max_num_seqs: int | None  # a --max-num-seqs the plan sets to free a reserve (None: default)
    kv_space_per_gpu: int
    kv_bytes_per_token_per_gpu: int
    state_bytes_per_request_per_gpu: int
    context: int  # the context this layout can give (the workload's, or the largest that fits)
    bytes_per_request_per_gpu: int
    users_per_copy: int
    users: int
    weights_fit: bool
    context_fits: bool
    users_fit: bool
    why: tuple[Decision, ...]
    rank: tuple[tuple[str, float], ...]  # the ranking's parts by name, smaller is better

    @property
    def rank_key(self) -> tuple[float, ...]:
        return tuple(v for _, v in self.rank)

    chunk_tokens: int | None = None  # the prefill chunk this layout was sized with
    decode_graph_bs: int | None = None  # a decode CUDA-graph batch the plan sets (SGLang)
    fraction_pinned: bool = False  # the sizing assumed a fraction the plan must set
    fixes: tuple[KnownIssue, ...] = ()  # the recipes' known-issue fixes applied here
    speed: Speed | None = None  # TTFT, TPOT, tokens/s at the workload (None: nothing fits)
    # throughput first: the speed at full load, every user that fits (None: other objectives)
    peak: Speed | None = None
    running: int = 0  # requests of the workload's own length the KV holds at once
    reuse: Reuse | None = None  # what each request finds in the prefix cache at the load

    @property
    def throughput(self) -> Speed | None:
        """The speed the throughput objective ranks: at full load when known."""
        return self.peak or self.speed

    @property
    def shortfall(self) -> int:
        """Bytes by which the weights and the reserve exceed the usable memory (0: they fit);
        the ranking's "deficit" part and the reason that quotes it read this one figure."""
        return shortfall(self.weights_per_gpu, self.reserve, self.usable_per_gpu)

    @property
    def taken_before_kv(self) -> float:
        """Share of the GPU's memory the weights and the engine's reserve take before any KV."""
        reserve = self.reserve.total if self.reserve else 0
        return (self.weights_per_gpu + reserve) / self.memory_per_gpu if self.memory_per_gpu else 0

    def memory_formula(self) -> Decision:
        """The GPU's memory × the fraction, less the reserve and the weights: the KV space."""
        if self.reserve is None:
            return FIT_MEMORY(
                memory=self.memory_per_gpu,
                fraction=self.fraction,
                usable=self.usable_per_gpu,
                weights=self.weights_per_gpu,
                kv=self.kv_space_per_gpu,
            )
        return FIT_MEMORY_RESERVE(
            memory=self.memory_per_gpu,
            fraction=self.fraction,
            usable=self.usable_per_gpu,
            reserve=self.reserve.total,
            weights=self.weights_per_gpu,
            kv=self.kv_space_per_gpu,
        )

    def users_formula(self) -> Decision:
        """The KV space ÷ one request's bytes, per attention rank, × the ranks and copies."""
        return FIT_USERS(
            space=self.kv_space_per_gpu,
            per_request=self.bytes_per_request_per_gpu,
            context=Tokens(self.context),
            per_rank=self.users_per_copy // max(self.layout.dp, 1),
            dp=self.layout.dp,
            replicas=self.layout.replicas,
            users=self.users,
        )


# A candidate's memory and users with its numbers plugged in (exact bytes).
FIT_MEMORY = Code("fit.memory", "memory", "fraction", "usable", "weights", "kv")
FIT_MEMORY_RESERVE = Code(
    "fit.memory_reserve", "memory", "fraction", "usable", "reserve", "weights", "kv"
)
FIT_USERS = Code(
    "fit.users", "space", "per_request", "context", "per_rank", "dp", "replicas", "users"
)


@dataclass(frozen=True)
class Rejected:
    """A layout the engines refuse for this model, and why."""

    layout: Layout
    why: Decision


@dataclass(frozen=True)
class LayoutSearch:
    pick: Candidate
    candidates: tuple[Candidate, ...]  # ranked, the pick first
    rejected: tuple[Rejected, ...]
    pinned: bool
    reasons: tuple[Decision, ...]  # why the pick won: the comparisons that decided it


@dataclass(frozen=True)
class SearchInputs:
    """What the search reads besides the scenario (all computed once by the Study)."""

    cfg: ModelConfig
    arch: Architecture
    family: FamilyVerdict
    weights: WeightReport
    gpu: Gpu
    engine: Engine
    kv_at: Callable[[int], KvSizing]  # the engine's KV sizing at an attention TP size
    context: int  # the workload's context, already capped at the model's limit
    limit: int  # the model's own maximum context
    mtp: bool  # MTP layers loaded (speculative decoding planned)
    vision: bool  # the vision encoder is loaded
    chunk_tokens: int | None  # the prefill chunk the plan sets
    speculative: Speculative | None = None  # the draft the plan sets (MTP), for the speed
    calibration: Calibration | None = None  # rates measured on the user's GPU
    engine_version: str | None = None  # the plan's engine release (None: the pinned one)
    eager: bool = False  # the plan's flags turn CUDA graphs off (--enforce-eager, ...)
    factors: Factors | None = None  # the stack's factors fitted on the user's benchmark
