"""Advisors: parallelism layout, engine choice, MoE all-to-all backend, EPLB cost.

Pure functions. Each returns the recommendation together with the reasoning, the trade-off it
accepts, the figures it leans on and where each figure comes from. Every flag an advisor emits is
checked against the engine's own flag table (``engine.software.tables``), so a recommendation can
never name a flag or a choice the pinned engine version does not have.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, cast, get_args

from engine.errors import InputError
from engine.software.tables import Engine, flag_table

Family = Literal["MHA", "MQA", "GQA", "MLA", "DSA", "HYBRID"]
LatencyPriority = Literal["latency", "balanced", "throughput"]
Phase = Literal["prefill", "decode", "mixed"]

FAMILIES: tuple[str, ...] = get_args(Family)
LATENCY_PRIORITIES: tuple[str, ...] = get_args(LatencyPriority)
PHASES: tuple[str, ...] = get_args(Phase)

PLAYBOOK = "Playbook text (../shared/seeds/004)"
ENGINE_BENCH = (
    "Playbook background text (../shared/seeds/000, §3.1), independent benchmark on "
    "DeepSeek-R1-Distill-Llama-70B and DeepSeek-V3 (ingu627.github.io, 2026)"
)
FACTS = "Fact base (../shared/reference/facts.md)"

# Above this many concurrent requests the ROCm measurement no longer covers the TP+EP win, and
# DP-attention's point (no replicated latent) starts to matter: the measured band ends at 128.
DP_ATTENTION_MIN_CONCURRENCY = 128


@dataclass(frozen=True)
class Figure:
    """One measured or derived number an advice leans on, with where it was read."""

    value: str
    meaning: str
    source: str


@dataclass(frozen=True)
class ParallelismAdvice:
    layout: str  # "TP", "TP+EP", "DP-attention", "DP-attention+EP"
    attention_tp: int  # GPUs that split one request's attention
    attention_dp: int  # independent attention groups (replicas for a dense model)
    ep: int  # expert-parallel size (1 = no EP)
    num_gpus: int
    vllm_flags: tuple[str, ...]
    sglang_flags: tuple[str, ...]
    reasoning: tuple[str, ...]
    tradeoff: str
    figures: tuple[Figure, ...]
    source: str


@dataclass(frozen=True)
class EngineAdvice:
    engine: Literal["vllm", "sglang", "either"]
    prefix_overlap_pct: float
    measured_row: str  # the benchmark row the choice rests on
    reasoning: tuple[str, ...]
    routing: str  # what the choice means for the router in front of the replicas
    sglang_flags: tuple[str, ...]
    tradeoff: str
    figures: tuple[Figure, ...]
    source: str


@dataclass(frozen=True)
class CommAdvice:
    nodes: int
    phase: Phase
    vllm_flags: tuple[str, ...]
    sglang_flags: tuple[str, ...]
    reasoning: tuple[str, ...]
    tradeoff: str
    source: str


@dataclass(frozen=True)
class EplbAdvice:
    num_experts: int
    redundant: int
    physical_experts: int
    extra_weight_fraction: float  # redundant / num_experts: extra expert-weight memory
    experts_per_gpu: float | None
    divides_evenly: bool | None  # physical experts split evenly over the EP ranks
    extra_weight_bytes: int | None  # when the total expert weight bytes are known
    vllm_flags: tuple[str, ...]
    sglang_flags: tuple[str, ...]
    reasoning: tuple[str, ...]
    tradeoff: str
    figures: tuple[Figure, ...]
    source: str


# --- figures from the playbook, each with the sentence it was read from ---------------------

TP_SPLIT_FIGURES = (
    Figure(
        "+34 %",
        "throughput of four TP2 instances over one TP8 instance (8 GPUs)",
        f"{PLAYBOOK}, 'GQA': TP2 × 4 vs TP8 × 1 measurement",
    ),
    Figure(
        "−29 %",
        "time to first token of four TP2 instances vs one TP8 instance",
        f"{PLAYBOOK}, 'GQA': TP2 × 4 vs TP8 × 1 measurement",
    ),
    Figure(
        "+42 %",
        "inter-token latency of four TP2 instances vs one TP8 instance (worse)",
        f"{PLAYBOOK}, 'GQA': TP2 × 4 vs TP8 × 1 measurement",
    ),
)
ROCM_TP_EP_FIGURE = Figure(
    "+52 %",
    "throughput of TP+EP over DP-attention+EP at 64–128 concurrent requests, despite the "
    "replicated latent KV",
    f"{PLAYBOOK}, 'MLA 서빙의 난제': AMD ROCm team measurement",
)
MLA_REPLICATION_FIGURE = Figure(
    "× TP",
    "MLA keeps one latent vector per token that does not split by head, so every TP rank holds "
    "a full copy (TP=8: the cache is stored 8 times)",
    f"{PLAYBOOK}, 'MLA 서빙의 난제'; vLLM 0.33.0 MLAAttentionSpec(max_tp_shards=1) "
    "(../shared/engine-gt/vllm-kv-notes.md §2)",
)
DSA_SMALL_TP_FIGURE = Figure(
    "TP 1–2",
    "vLLM recipe for DeepSeek-V3.2 with FlashMLA-Sparse: TP=8 leaves 16 heads per rank, padded "
    "to 64; prefer TP=2 on Hopper, TP=1 on Blackwell, plus DP/EP",
    f"{FACTS} §2b, vllm-project/recipes DeepSeek/DeepSeek-V3_2.md",
)
ENGINE_ROWS: tuple[tuple[str, float, float, str], ...] = (
    # (overlap band, vLLM tok/s, SGLang tok/s, workload)
    ("0 %", 60.0, 52.7, "single-turn unique prompts"),
    ("30–40 %", 45.2, 46.8, "ordinary chat"),
    ("≥ 60 %", 22.4, 31.2, "agent loops / compound RAG"),
    ("80 %", 16.0, 30.5, "large multi-turn agents, c=50"),
)
EPLB_FIGURES = (
    Figure(
        "7.2× → 1.9×",
        "load of the hottest expert relative to the mean, before and after EPLB",
        f"{PLAYBOOK}, '전문가 부하 편중': EPLB measurement",
    ),
    Figure(
        "+18 %",
        "throughput after EPLB with 32 redundant experts",
        f"{PLAYBOOK}, '전문가 부하 편중': EPLB measurement",
    ),
    Figure(
        "+12.5 %",
        "expert weight memory for 32 redundant experts over 256 (32 / 256)",
        f"{PLAYBOOK}, '전문가 부하 편중'",
    ),
)


# --- flag spelling guard --------------------------------------------------------------------


def checked_flag(engine: Engine, flag: str, value: str | None = None) -> str:
    """``flag`` (and ``value``) as a command fragment, after checking both exist in the
    pinned flag table; a miss is a bug in this module, not user input."""
    table = flag_table(engine)
    info = table.get(flag)
    if info is None:
        raise RuntimeError(f"{engine} has no flag {flag}")
    if value is None:
        return flag
    if info.choices is not None and value not in {str(c) for c in info.choices}:
        raise RuntimeError(f"{engine} {flag} has no choice {value!r}")
    return f"{flag} {value}"


# --- input checks ---------------------------------------------------------------------------


def _int_in(name: str, value: object, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise InputError(name, f"a whole number from {low} to {high}, got {value!r}")
    return value


def _choice(name: str, value: object, options: tuple[str, ...]) -> str:
    if not isinstance(value, str) or value not in options:
        raise InputError(name, f"one of {', '.join(options)}, got {value!r}")
    return value


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


# --- parallelism ----------------------------------------------------------------------------


def parallelism_advice(
    family: str,
    moe: bool,
    num_gpus: int,
    concurrency: int,
    latency_priority: str,
    *,
    num_attention_heads: int | None = None,
    min_tp: int = 1,
) -> ParallelismAdvice:
    """TP vs DP-attention vs EP for one node's worth of GPUs.

    ``min_tp`` is the smallest TP that fits the weights and the KV the workload needs (from the
    sizing step); ``latency_priority`` is "latency" (tight inter-token latency), "throughput"
    or "balanced".
    """
    fam = _choice("family", family, FAMILIES)
    if not isinstance(moe, bool):
        raise InputError("moe", f"true or false, got {moe!r}")
    gpus = _int_in("num_gpus", num_gpus, 1, 4096)
    conc = _int_in("concurrency", concurrency, 1, 10_000_000)
    prio = _choice("latency_priority", latency_priority, LATENCY_PRIORITIES)
    floor = _int_in("min_tp", min_tp, 1, gpus)
    heads = None
    if num_attention_heads is not None:
        heads = _int_in("num_attention_heads", num_attention_heads, 1, 65_536)

    candidates = [d for d in _divisors(gpus) if d >= floor and (heads is None or heads % d == 0)]
    if not candidates:
        raise InputError(
            "num_attention_heads",
            f"a head count that some TP size from {floor} to {gpus} dividing {gpus} GPUs divides "
            f"(got {heads})",
        )

    reasoning: list[str] = []
    figures: list[Figure] = []
    compressed = fam in ("MLA", "DSA")
    if compressed:
        figures.append(MLA_REPLICATION_FIGURE)
        if prio == "latency" or conc <= DP_ATTENTION_MIN_CONCURRENCY:
            tp = max(candidates)
            reasoning.append(
                f"{fam}: attention stays tensor-parallel over {tp} GPU(s). The latent KV is "
                f"replicated on each of the {tp} ranks, but at {conc} concurrent requests "
                "DP-attention groups would sit idle while TP keeps every GPU on every request."
            )
            figures.append(ROCM_TP_EP_FIGURE)
            tradeoff = (
                f"Pays {tp}× latent KV memory (fewer users fit) for latency and full GPU use at "
                "small batches. Revisit when traffic grows: the choice flips with concurrency."
            )
        else:
            tp = min(candidates)
            reasoning.append(
                f"{fam}: {conc} concurrent requests is above the 64–128 band where TP+EP won, "
                f"and throughput is the goal: split attention into {gpus // tp} data-parallel "
                f"groups of TP {tp}, so each GPU keeps only its own requests' latent KV "
                "instead of a copy of everyone's."
            )
            figures.append(ROCM_TP_EP_FIGURE)
            tradeoff = (
                "Stops the latent replication (more users fit, bigger batches) at the cost of "
                "per-request latency, and of idle groups whenever traffic drops."
            )
        if fam == "DSA" and tp > 2:
            figures.append(DSA_SMALL_TP_FIGURE)
            reasoning.append(
                "DSA sparse kernels pad heads at large TP (16 heads per rank at TP8 run as 64): "
                f"check the engine recipe before settling on TP{tp}."
            )
    else:
        if fam == "HYBRID":
            reasoning.append(
                "Hybrid linear attention: only the full-attention quarter of the layers keeps a "
                "KV cache, and it is standard attention that splits by head, so TP is enough."
            )
        else:
            reasoning.append(
                f"{fam}: KV heads split across TP ranks and nothing is compressed, so "
                "DP-attention has no replication to remove; PP leaves GPUs taking turns and "
                "does not speed up one request."
            )
        if prio == "latency":
            tp = max(candidates)
            reasoning.append(
                f"Latency first: one team of {tp} GPU(s) per request gives the shortest "
                "inter-token latency."
            )
            tradeoff = "Best inter-token latency; gives up the throughput of smaller replicas."
        elif prio == "throughput":
            tp = min(candidates)
            reasoning.append(
                f"Throughput first: the smallest TP that fits ({tp}) and {gpus // tp} "
                "replicas, each serving different requests."
            )
            tradeoff = "More throughput and shorter TTFT; each token takes longer to arrive."
        else:
            tp = candidates[len(candidates) // 2]
            reasoning.append(
                f"Balanced: TP {tp} × {gpus // tp}, between the two measured ends (this point "
                "itself is not measured)."
            )
            tradeoff = "Between the two measured layouts; measure before committing."
        figures.extend(TP_SPLIT_FIGURES)
        if moe:
            reasoning.append(
                "MoE: experts stay whole on one GPU each (EP) instead of being sliced across "
                "every GPU; tokens travel (all-to-all) instead of weights."
            )

    dp = gpus // tp
    ep = gpus if moe else 1
    if dp == 1:
        layout = "TP+EP" if moe else "TP"
    elif moe or compressed:
        layout = "DP-attention+EP" if moe else "DP-attention"
    else:
        layout = f"{dp} × TP{tp} replicas"

    vllm = [checked_flag("vllm", "--tensor-parallel-size", str(tp))]
    sglang = [checked_flag("sglang", "--tp-size", str(gpus if (moe or compressed) else tp))]
    if dp > 1:
        vllm.append(checked_flag("vllm", "--data-parallel-size", str(dp)))
        if moe or compressed:
            sglang.append(checked_flag("sglang", "--attn-dp-size", str(dp)))
        else:
            sglang.append(checked_flag("sglang", "--dp-size", str(dp)))
    if moe:
        vllm.append(checked_flag("vllm", "--enable-expert-parallel"))
        sglang.append(checked_flag("sglang", "--ep-size", str(ep)))
    if dp > 1 and (moe or compressed):
        reasoning.append(
            "SGLang 0.5.23 spells attention-DP --attn-dp-size (inside the TP group; "
            "--enable-dp-attention is deprecated); vLLM spells it --data-parallel-size, "
            "which with --enable-expert-parallel spreads experts over all DP × TP ranks."
        )
    return ParallelismAdvice(
        layout=layout,
        attention_tp=tp,
        attention_dp=dp,
        ep=ep,
        num_gpus=gpus,
        vllm_flags=tuple(vllm),
        sglang_flags=tuple(sglang),
        reasoning=tuple(reasoning),
        tradeoff=tradeoff,
        figures=tuple(figures),
        source=PLAYBOOK + ", 'GQA' (TP size from latency), 'MLA 서빙의 난제' (DP-attention)",
    )


# --- engine choice --------------------------------------------------------------------------


def engine_advice(prefix_overlap_pct: float, replicas: int = 1) -> EngineAdvice:
    """vLLM or SGLang from how much of each prompt repeats an earlier one (0–100 %)."""
    if (
        isinstance(prefix_overlap_pct, bool)
        or not isinstance(prefix_overlap_pct, int | float)
        or not 0 <= prefix_overlap_pct <= 100
    ):
        raise InputError(
            "prefix_overlap_pct", f"a percentage from 0 to 100, got {prefix_overlap_pct!r}"
        )
    pct = float(prefix_overlap_pct)
    reps = _int_in("replicas", replicas, 1, 100_000)

    def row_figure(i: int) -> Figure:
        band, v, s, workload = ENGINE_ROWS[i]
        return Figure(
            f"vLLM {v} vs SGLang {s} tok/s",
            f"{workload}, prefix overlap {band}",
            ENGINE_BENCH,
        )

    engine: Literal["vllm", "sglang", "either"]
    reasoning: list[str] = []
    if pct < 30:
        engine, i = "vllm", 0
        _, v, s, _ = ENGINE_ROWS[0]
        reasoning.append(
            "Little repeats: nothing for a prefix cache to reuse, and vLLM's lower per-step "
            f"overhead wins ({v} vs {s} tok/s, {(v / s - 1) * 100:+.0f} %)."
        )
        tradeoff = "If the workload drifts toward shared prompts (agents, RAG), re-measure."
    elif pct < 60:
        engine, i = "either", 1
        band, v, s, _ = ENGINE_ROWS[1]
        reasoning.append(
            f"{band} overlap measured even ({v} vs {s} tok/s); choose by the rest of the "
            "stack (model support, parsers, operations)."
        )
        if pct > 40:
            reasoning.append("40–60 % lies between measured rows: treat it as even and measure.")
        tradeoff = "No throughput reason either way at this overlap."
    else:
        engine, i = "sglang", 2
        (band, v, s, _), (band80, v80, s80, _) = ENGINE_ROWS[2], ENGINE_ROWS[3]
        reasoning.append(
            "Most of each prompt repeats: SGLang's RadixAttention keeps prefixes in a radix tree "
            f"and schedules by longest prefix, so repeated parts skip prefill ({v} vs {s} tok/s "
            f"at {band}, {v80} vs {s80} at {band80})."
        )
        tradeoff = "Gives up vLLM's edge on unique prompts, which this workload has few of."
    figures = [row_figure(i)]
    if engine == "sglang":
        figures.append(row_figure(3))

    sglang_flags: list[str] = []
    if pct >= 30:
        sglang_flags.append(checked_flag("sglang", "--schedule-policy", "lpm"))
    if reps > 1:
        routing = (
            f"{reps} replicas each keep their own prefix cache: a round-robin balancer spreads "
            "requests that share a prefix over all of them and divides the hit rate by up to "
            f"{reps}. Put a cache-aware router in front (the SGLang router's cache_aware policy, "
            "or hash the first ~1,000 prompt tokens at the ingress) so a shared prefix keeps "
            "landing on the replica that already holds it. SGLang's in-server --dp-size "
            "balancer (--load-balance-method) has no cache-aware choice."
        )
    else:
        routing = "One replica: no routing decision; the prefix cache sees every request."
    return EngineAdvice(
        engine=engine,
        prefix_overlap_pct=pct,
        measured_row=ENGINE_ROWS[i][0],
        reasoning=tuple(reasoning),
        routing=routing,
        sglang_flags=tuple(sglang_flags),
        tradeoff=tradeoff,
        figures=tuple(figures),
        source=ENGINE_BENCH + "; routing: ../shared/seeds/000 §4 (prefix-aware routing)",
    )


# --- MoE all-to-all -------------------------------------------------------------------------


# Across nodes, per phase: vLLM --all2all-backend, SGLang --deepep-mode, why, trade-off.
_MULTI_NODE_A2A: dict[Phase, tuple[str, str, str, str]] = {
    "prefill": (
        "deepep_high_throughput",
        "normal",
        "prefill: large token batches cross InfiniBand, where bandwidth matters more than "
        "per-message latency: DeepEP normal / high-throughput kernels.",
        "Best throughput for big batches; higher per-step latency, no CUDA graphs.",
    ),
    "decode": (
        "deepep_low_latency",
        "low_latency",
        "decode: a few tokens per step, so latency dominates: DeepEP low-latency kernels "
        "(CUDA-graph friendly).",
        "Lowest step latency; reserves fixed buffers and wins nothing on big prefills.",
    ),
    "mixed": (
        "deepep_low_latency",
        "auto",
        "prefill and decode in one server: SGLang's DeepEP 'auto' mode switches per batch; "
        "vLLM has one backend per server, so favour decode (low latency) and split prefill and "
        "decode (PD disaggregation) to give each phase its own backend.",
        "Prefill runs slower than with the high-throughput kernels until PD is split.",
    ),
}


def moe_comm_advice(nodes: int, phase: str) -> CommAdvice:
    """All-to-all backend for EP: one node vs several, prefill vs decode vs both in one server."""
    n = _int_in("nodes", nodes, 1, 4096)
    ph = cast(Phase, _choice("phase", phase, PHASES))

    table = (
        f"{PLAYBOOK}, 'all-to-all 백엔드': allgather_reducescatter general, naive basic, "
        "deepep_high_throughput for prefill, deepep_low_latency for decode; "
        f"{FACTS} §5 (vLLM docs: DeepEP high-throughput = multi-node prefill, low-latency = "
        "multi-node decode; SGLang: DeepEP needs ep_size = tp_size)"
    )
    reasoning: list[str] = []
    if n == 1:
        vllm = [checked_flag("vllm", "--all2all-backend", "allgather_reducescatter")]
        sglang = [checked_flag("sglang", "--moe-a2a-backend", "none")]
        reasoning.append(
            "One node: NVLink carries the exchange; the general all-gather / reduce-scatter "
            "path (vLLM 0.33.0's default) and SGLang's default (no dedicated A2A backend) are "
            "enough. DeepEP pays off once tokens cross InfiniBand."
        )
        tradeoff = "Simplest and default; leaves DeepEP's overlap tricks unused."
    else:
        backend, mode, why, tradeoff = _MULTI_NODE_A2A[ph]
        vllm = [checked_flag("vllm", "--all2all-backend", backend)]
        sglang = [
            checked_flag("sglang", "--moe-a2a-backend", "deepep"),
            checked_flag("sglang", "--deepep-mode", mode),
        ]
        reasoning.append(f"{n} nodes, {why}")
    reasoning.append(
        "Crossing nodes is where all-to-all degrades: with 32 GPUs, 992 paths open at once and "
        "contend on InfiniBand; token counts per GPU are unknown until the router decides."
    )
    return CommAdvice(
        nodes=n,
        phase=ph,
        vllm_flags=tuple(vllm),
        sglang_flags=tuple(sglang),
        reasoning=tuple(reasoning),
        tradeoff=tradeoff,
        source=table,
    )


# --- EPLB -----------------------------------------------------------------------------------


def eplb_advice(
    num_experts: int,
    redundant: int,
    *,
    ep_size: int | None = None,
    expert_weight_bytes: int | None = None,
) -> EplbAdvice:
    """What ``redundant`` replicated hot experts cost: redundant / num_experts more expert
    weight memory (32 of 256 = +12.5 %), bought for a flatter load across GPUs.

    ``expert_weight_bytes`` is the total bytes of all routed experts' weights, if known.
    """
    e = _int_in("num_experts", num_experts, 1, 65_536)
    r = _int_in("redundant", redundant, 0, 65_536)
    ep = None if ep_size is None else _int_in("ep_size", ep_size, 1, 65_536)
    total = None
    if expert_weight_bytes is not None:
        total = _int_in("expert_weight_bytes", expert_weight_bytes, 0, 2**60)

    fraction = r / e
    physical = e + r
    per_gpu = None if ep is None else physical / ep
    even = None if ep is None else physical % ep == 0
    extra_bytes = None if total is None else total * r // e

    reasoning = [
        f"{r} redundant copies of the hottest experts on top of {e}: "
        f"{r} / {e} = {fraction:.1%} more expert weight memory, taken from the KV cache.",
        "EPLB reads routing statistics, replicates popular experts and spreads them so no GPU "
        "holds two hot ones; the slowest GPU sets the pace of every MoE layer.",
    ]
    if ep is not None:
        reasoning.append(
            f"{physical} physical experts over {ep} EP ranks = {per_gpu:g} per GPU"
            + ("." if even else "; not a whole number: pick a redundant count that divides.")
        )
    vllm = (
        checked_flag("vllm", "--enable-eplb"),
        checked_flag("vllm", "--eplb-config", f"'{{\"num_redundant_experts\": {r}}}'"),
    )
    sglang = (
        checked_flag("sglang", "--enable-eplb"),
        checked_flag("sglang", "--eplb-algorithm", "deepseek"),
        checked_flag("sglang", "--ep-num-redundant-experts", str(r)),
    )
    return EplbAdvice(
        num_experts=e,
        redundant=r,
        physical_experts=physical,
        extra_weight_fraction=fraction,
        experts_per_gpu=per_gpu,
        divides_evenly=even,
        extra_weight_bytes=extra_bytes,
        vllm_flags=vllm,
        sglang_flags=sglang,
        reasoning=tuple(reasoning),
        tradeoff=(
            f"+{fraction:.1%} expert weights (less KV, fewer users) for a flatter load; in the "
            "playbook's run 32 of 256 took the hottest expert from 7.2× to 1.9× the mean and "
            "raised throughput 18 %."
        ),
        figures=EPLB_FIGURES,
        source=f"{PLAYBOOK}, '전문가 부하 편중' (EPLB)",
    )
