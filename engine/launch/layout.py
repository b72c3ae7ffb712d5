"""The layout search: every way both engines can cut the GPUs for this model — replicas × TP ×
DP-attention × EP × PP across nodes — with each one's per-GPU weights, KV space and users at the
workload's context, ranked with the serving playbook's reasoning.

The ranking, in order: the weights fit; one request of the workload's context fits; every user
fits; then the playbook's preferences (seed 004): small dense models replicate (TP only as large
as the workload needs, more TP when inter-token latency comes first); MLA / DSA at high
concurrency run DP-attention so the latent KV is not copied on every rank, at low concurrency
TP + EP; a copy of the model stays inside one node unless it cannot fit there. Each candidate
keeps why it ranked where it did, so the page can show the table with the pick and why.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache

from pydantic import Field

from engine.engines import adapter
from engine.errors import InputError
from engine.hardware.gpus import Gpu
from engine.kv.sizing import KvSizing
from engine.launch.known_issues import KnownIssue, Where, avoided, fixes_for
from engine.launch.memory import (
    Engine,
    Reserve,
    Split,
    WeightShare,
    device_memory,
    weights_per_gpu,
)
from engine.launch.multinode import uses_deepep
from engine.model.architecture import Architecture
from engine.model.config import ModelConfig
from engine.model.family import AttentionFamily, FamilyVerdict
from engine.model.weights import WeightReport, is_gated
from engine.rules import Strict, load_data
from engine.scenario import Scenario


class LayoutRules(Strict):
    """``data/launch.yaml`` ``layout``: the thresholds the ranking uses, each with a source."""

    dp_attention_min_users: int = Field(ge=1)
    dp_attention_min_users_source: str
    dsa_prefers_dp_attention: bool
    dsa_source: str
    replicate_source: str
    latency_tp_source: str
    expert_parallel_with_tp: bool
    expert_parallel_source: str
    fp8_block_divisibility_source: str
    context_round_tokens: int = Field(ge=1)
    decode_graph_bs_step: int = Field(ge=1)
    decode_graph_bs_source: str = Field(min_length=1)


@cache
def layout_rules() -> LayoutRules:
    return load_data(LayoutRules, "launch.yaml", "layout")


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

    def describe(self) -> str:
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
    fraction_why: str
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
    why: tuple[str, ...]
    rank_key: tuple[float, ...]
    chunk_tokens: int | None = None  # the prefill chunk this layout was sized with
    decode_graph_bs: int | None = None  # a decode CUDA-graph batch the plan sets (SGLang)
    fraction_pinned: bool = False  # the sizing assumed a fraction the plan must set
    fixes: tuple[KnownIssue, ...] = ()  # the recipes' known-issue fixes applied here

    @property
    def taken_before_kv(self) -> float:
        """Share of the GPU's memory the weights and the engine's reserve take before any KV."""
        reserve = self.reserve.total if self.reserve else 0
        return (self.weights_per_gpu + reserve) / self.memory_per_gpu if self.memory_per_gpu else 0

    def memory_formula(self) -> str:
        reserve = f" − reserve {self.reserve.total:,} B" if self.reserve else ""
        return (
            f"{self.memory_per_gpu:,} B × {self.fraction:g} = {self.usable_per_gpu:,} B usable"
            f"{reserve} − weights {self.weights_per_gpu:,} B = {self.kv_space_per_gpu:,} B for KV"
        )

    def users_formula(self) -> str:
        per_rank = self.users_per_copy // max(self.layout.dp, 1)
        return (
            f"{self.kv_space_per_gpu:,} B ÷ {self.bytes_per_request_per_gpu:,} B per request at "
            f"{self.context:,} tokens = {per_rank} per attention rank × DP {self.layout.dp} × "
            f"{self.layout.replicas} replica(s) = {self.users}"
        )


@dataclass(frozen=True)
class LayoutSearch:
    pick: Candidate
    candidates: tuple[Candidate, ...]  # ranked, the pick first
    rejected: tuple[tuple[str, str], ...]  # (layout, why it cannot run)
    pinned: bool
    reasons: tuple[str, ...]  # why the pick won, in the playbook's words


def divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


# --- what a split must satisfy -----------------------------------------------------------------


def split_problem(cfg: ModelConfig, arch: Architecture, fam: FamilyVerdict, s: Split) -> str | None:
    """Why the engines refuse ``s`` for this model, or None."""
    heads = cfg.num_attention_heads
    if heads % s.tp:
        return f"TP {s.tp} does not divide the {heads} attention heads"
    if arch.attention_layers and not fam.attention_family.latent:
        kv = cfg.num_key_value_heads
        if (kv >= s.tp and kv % s.tp) or (kv < s.tp and s.tp % kv):
            return f"TP {s.tp} cannot split or replicate the {kv} KV heads evenly"
    for name in ("linear_num_value_heads", "mamba_num_heads", "kda_num_heads"):
        n = getattr(cfg, name)
        if n and n % s.tp:
            return f"TP {s.tp} does not divide {name} ({n})"
    if s.dp > 1 and not fam.moe:
        return "DP-attention is for MoE models; a dense model replicates instead"
    if s.ep and not fam.moe:
        return "expert parallelism needs experts"
    if s.ep and fam.num_experts % s.moe_group:
        return f"{fam.num_experts} experts do not split evenly over {s.moe_group} EP ranks"
    if s.pp > cfg.num_hidden_layers:
        return f"PP {s.pp} exceeds the {cfg.num_hidden_layers} layers"
    return _fp8_block_problem(cfg, arch, fam, s)


def _fp8_block_problem(
    cfg: ModelConfig, arch: Architecture, fam: FamilyVerdict, s: Split
) -> str | None:
    """vLLM's block-FP8 shape checks (fp8_utils.validate_fp8_block_shape for linear layers,
    Fp8MoEMethod.create_weights for experts): a TP-split or merged (gate + up) projection must
    be a whole number of weight blocks per rank; an unsplit, unmerged one need not be."""
    block = _fp8_block_n(cfg)
    if not block:
        return None
    inter = cfg.intermediate_size
    dense = any(layer.ffn == "dense" for layer in arch.layers)
    if dense and inter and (s.tp > 1 or is_gated(cfg)) and (inter // s.tp) % block:
        return (
            f"FP8 block quantization: intermediate_size {inter} ÷ TP {s.tp} "
            f"is not a multiple of the {block}-wide weight block"
        )
    if fam.moe and cfg.moe_intermediate_size:
        group = 1 if s.ep else s.moe_group  # expert parallelism keeps experts whole
        if (cfg.moe_intermediate_size // group) % block:
            return (
                f"FP8 block quantization: moe_intermediate_size {cfg.moe_intermediate_size} "
                f"÷ {group} rank(s) is not a multiple of the {block}-wide weight block"
            )
    return None


def _fp8_block_n(cfg: ModelConfig) -> int:
    q = cfg.quantization_config or {}
    block = q.get("weight_block_size")
    if isinstance(block, list) and len(block) == 2 and isinstance(block[0], int) and block[0] > 0:
        return int(block[0])
    return 0


def _splits(
    cfg: ModelConfig, scenario: Scenario, fam: FamilyVerdict
) -> Iterator[tuple[int, Split]]:
    """Every (replicas, split) the GPUs allow, honouring pinned fields."""
    per_node, total = scenario.gpus_per_node, scenario.total_gpus
    for replicas in divisors(total):
        if scenario.replicas is not None and replicas != scenario.replicas:
            continue
        size = total // replicas
        if size > per_node and size % per_node:
            continue  # a copy spans whole nodes or stays inside one
        if size < per_node and per_node % size:
            continue
        nodes_per_copy = max(1, size // per_node)
        pps = sorted({1, nodes_per_copy}) if nodes_per_copy > 1 else [1]
        for pp in pps:
            if scenario.pp is not None and pp != scenario.pp:
                continue
            for tp in divisors(size // pp):
                dp = size // pp // tp
                if scenario.tp is not None and tp != scenario.tp:
                    continue
                if scenario.dp is not None and dp != scenario.dp:
                    continue
                eps = [False, True] if fam.moe and tp * dp > 1 else [False]
                for ep in eps:
                    if scenario.ep is not None and ep != scenario.ep:
                        continue
                    yield replicas, Split(tp, dp, pp, ep)


# --- evaluating one candidate ------------------------------------------------------------------


def largest_context(kv: KvSizing, space: int, stage: float, limit: int) -> int:
    """Longest context one request can have in ``space`` bytes (0 when not even one token)."""

    def need(c: int) -> float:
        return kv.bytes_per_request(c, padded=True) * stage

    if need(1) > space:
        return 0
    if need(limit) <= space:
        return limit
    lo, hi = 1, limit
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if need(mid) <= space:
            lo = mid
        else:
            hi = mid - 1
    return lo


def users_at(
    kv: KvSizing, space: int, context: int, split: Split, replicas: int, stage: float
) -> tuple[int, int]:
    """(bytes per request per GPU, users over all copies) at ``context``: each attention rank
    holds its own requests in ``space`` bytes; DP ranks and replicas multiply."""
    if context < 1:
        return 0, 0
    per_request = math.ceil(kv.bytes_per_request(context, padded=True) * stage)
    if space <= 0:
        return per_request, 0
    per_rank = space // per_request if per_request else 0
    return per_request, per_rank * split.dp * replicas


def stage_share(cfg: ModelConfig, pp: int) -> float:
    """Share of the layers (and so of the KV) on the busiest pipeline stage."""
    return math.ceil(cfg.num_hidden_layers / pp) / cfg.num_hidden_layers if pp > 1 else 1.0


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


def evaluate(inp: SearchInputs, scenario: Scenario, replicas: int, s: Split) -> Candidate:
    cfg = inp.cfg
    w_gpu, shares = weights_per_gpu(
        inp.weights,
        inp.engine,
        s,
        num_layers=cfg.num_hidden_layers,
        mtp=inp.mtp,
        vision=inp.vision,
        vision_replicated=inp.vision and s.tp > 1,
    )
    memory = device_memory(inp.gpu)
    eng = adapter(inp.engine)
    where = Where(cfg, s, inp.gpu, scenario.gpus_per_node, w_gpu, scenario.memory_fraction is None)
    fixes = fixes_for(inp.engine, where)
    fixed_fraction = next(
        (f.fix.memory_fraction for f in fixes if f.fix and f.fix.memory_fraction), None
    )
    chunk = next((f.fix.prefill_chunk for f in fixes if f.fix and f.fix.prefill_chunk), None)
    chunk = chunk or inp.chunk_tokens
    decode_bs = _decode_graph_bs(inp, scenario, replicas, s)
    if scenario.memory_fraction:
        fraction, fraction_why = scenario.memory_fraction, "chosen for this scenario"
    elif fixed_fraction is not None:
        fraction = fixed_fraction
        fraction_why = "; ".join(
            f"{f.source}: {f.quote}" for f in fixes if f.fix and f.fix.memory_fraction
        )
    else:
        fraction, fraction_why = eng.default_fraction(
            inp.gpu,
            s,
            chunk_tokens=chunk,
            mla=inp.family.attention_family.latent,
            vision=_vision_dims(cfg) if inp.vision else None,
            decode_graph_bs=decode_bs,
            deepep=uses_deepep(s, scenario.gpus_per_node),
        )
        fraction_why = eng.fraction_note(fraction_why)
    pinned = scenario.memory_fraction is None and (
        fixed_fraction is not None or decode_bs is not None
    )
    reserve = eng.reserve(cfg, inp.gpu, s, chunk)
    usable = int(memory * fraction)
    kv = inp.kv_at(s.tp)
    stage = stage_share(cfg, s.pp)
    room = _room(inp, usable, w_gpu, reserve, kv, stage, s, replicas)
    max_num_seqs = scenario.max_num_seqs
    default_seqs = eng.default_max_num_seqs(inp.gpu)
    if max_num_seqs is not None:
        if reserve is not None:  # the sampler rows of the sequences the scenario sets
            reserve = eng.reserve(cfg, inp.gpu, s, chunk, max_num_seqs=max_num_seqs)
            room = _room(inp, usable, w_gpu, reserve, kv, stage, s, replicas)
    elif (
        reserve is not None
        and default_seqs is not None
        and eng.sampler_reserve
        and not (room.context_fits and room.users >= scenario.users)
    ):
        # vLLM's profile run reserves sampler rows for max_num_seqs requests (1,024 by default
        # on large GPUs); a workload of a few users gets that memory back with --max-num-seqs
        wanted = math.ceil(scenario.users / (replicas * s.dp))
        cap = 1 << max(0, wanted - 1).bit_length()
        if cap < default_seqs:
            capped = eng.reserve(cfg, inp.gpu, s, chunk, max_num_seqs=cap)
            if capped is not None and capped.total < reserve.total:
                reserve, max_num_seqs = capped, cap
                room = _room(inp, usable, w_gpu, reserve, kv, stage, s, replicas)
    space, max_ctx, context = room.space, room.max_ctx, room.context
    context_fits, weights_fit = room.context_fits, space > 0
    per_request, users = room.per_request, room.users
    if max_num_seqs is not None:
        users = min(users, max_num_seqs * s.dp * replicas)
    users_per_copy = users // replicas
    users_fit = users >= scenario.users
    why: list[str] = []
    if not weights_fit:
        why.append(
            f"weights {w_gpu / 2**30:,.1f} GiB per GPU leave no room in "
            f"{usable / 2**30:,.1f} GiB usable"
        )
    elif not context_fits:
        why.append(f"one request fits only {max_ctx:,} of the {inp.context:,} tokens asked")
    elif not users_fit:
        why.append(f"{users:,} of {scenario.users:,} users fit at {context:,} tokens")
    key = _rank_key(
        inp,
        scenario,
        replicas,
        s,
        weights_fit,
        context_fits,
        users_fit,
        users,
        max_ctx,
        max(0, w_gpu + (reserve.total if reserve else 0) - usable),
    )
    return Candidate(
        layout=Layout(replicas, s),
        weights_per_gpu=w_gpu,
        weight_shares=shares,
        memory_per_gpu=memory,
        fraction=fraction,
        fraction_why=fraction_why,
        usable_per_gpu=usable,
        reserve=reserve,
        max_num_seqs=max_num_seqs,
        kv_space_per_gpu=max(space, 0),
        kv_bytes_per_token_per_gpu=math.ceil(kv.kv_bytes_per_token * stage),
        state_bytes_per_request_per_gpu=math.ceil(kv.state_bytes_per_request_padded * stage),
        context=context,
        bytes_per_request_per_gpu=per_request,
        users_per_copy=users_per_copy,
        users=users,
        weights_fit=weights_fit,
        context_fits=context_fits,
        users_fit=users_fit,
        why=tuple(why),
        rank_key=key,
        chunk_tokens=chunk,
        decode_graph_bs=decode_bs,
        fraction_pinned=pinned,
        fixes=fixes,
    )


@dataclass(frozen=True)
class _Room:
    space: int  # bytes left for KV per GPU
    max_ctx: int  # the longest request that fits (0: none)
    context_fits: bool
    context: int  # the context this layout gives
    per_request: int
    users: int


def _room(
    inp: SearchInputs,
    usable: int,
    weights: int,
    reserve: Reserve | None,
    kv: KvSizing,
    stage: float,
    s: Split,
    replicas: int,
) -> _Room:
    space = usable - weights - (reserve.total if reserve else 0)
    max_ctx = largest_context(kv, space, stage, inp.limit) if space > 0 else 0
    context_fits = max_ctx >= inp.context
    if context_fits or max_ctx == 0:
        context = inp.context  # what fits, or (nothing fits) what was asked
    else:
        step = layout_rules().context_round_tokens
        context = max_ctx // step * step if max_ctx >= step else max_ctx
    per_request, users = users_at(kv, space, context, s, replicas, stage)
    if max_ctx == 0:
        users = 0
    return _Room(space, max_ctx, context_fits, context, per_request, users)


def _decode_graph_bs(inp: SearchInputs, scenario: Scenario, replicas: int, s: Split) -> int | None:
    """Under DP-attention, the decode CUDA-graph batch sized to the users per attention rank,
    as the SGLang deployments set it (``--cuda-graph-max-bs-decode``): the engine's own default
    batch multiplies its graph reserve by the DP size (memory_hook.py reserve_for_graph_mb:
    ``max_bs × dp_size × 3`` MiB, ``× 1.5`` more above 300), which would shrink the static pool
    of a DP 16 copy to a third of the GPU. None where the engine's memory accounting does not
    read the batch, or the scenario pins the fraction itself."""
    if s.dp <= 1 or scenario.memory_fraction is not None:
        return None
    eng = adapter(inp.engine)
    default = eng.decode_graph_bs(inp.gpu, s)
    if default is None:
        return None
    rules = layout_rules()
    per_rank = math.ceil(scenario.users / (replicas * s.dp))
    step = rules.decode_graph_bs_step
    wanted = max(step, step * math.ceil(per_rank / step))
    return min(default, wanted)


def _vision_dims(cfg: ModelConfig) -> tuple[int, int] | None:
    vc = cfg.vision_config or {}
    layers = vc.get("num_hidden_layers") or vc.get("depth")
    hidden = vc.get("hidden_size") or vc.get("embed_dim")
    if (
        isinstance(layers, int)
        and isinstance(hidden, int)
        and 0 < layers < 1000
        and 0 < hidden < 65536
    ):
        return layers, hidden
    return None


def _prefers_dp_attention(inp: SearchInputs, scenario: Scenario) -> bool:
    rules = layout_rules()
    fam = inp.family.attention_family
    if not inp.family.moe or not fam.latent or scenario.latency == "latency":
        return False
    return (fam == AttentionFamily.DSA and rules.dsa_prefers_dp_attention) or (
        scenario.users > rules.dp_attention_min_users
    )


def _rank_key(
    inp: SearchInputs,
    scenario: Scenario,
    replicas: int,
    s: Split,
    weights_fit: bool,
    context_fits: bool,
    users_fit: bool,
    users: int,
    max_ctx: int,
    deficit: int,
) -> tuple[float, ...]:
    """Smaller is better. Feasibility first (when nothing holds the weights, the layout that
    comes closest), then the playbook's preferences."""
    per_node = scenario.gpus_per_node
    copy_gpus = s.gpus
    cross_node = copy_gpus > per_node
    tp_cross_node = s.tp > per_node
    want_dp = _prefers_dp_attention(inp, scenario)
    moe = inp.family.moe
    # style: 0 = the shape the playbook wants for this model and workload
    if moe and want_dp:
        style = 0 if (s.dp > 1 and s.ep) else 1
    elif moe:
        style = 0 if s.dp == 1 else 1
    else:
        style = 0
    ep_pref = 0
    if moe and s.tp * s.dp > 1:
        want_ep = s.dp > 1 or layout_rules().expert_parallel_with_tp
        ep_pref = 0 if s.ep == want_ep else 1
    # TP size: latency first wants the largest TP inside a node; otherwise the smallest copy
    # that serves the workload, so the rest of the GPUs replicate
    size_pref = -min(s.tp, per_node) if scenario.latency == "latency" else copy_gpus
    # experts sliced over GPUs of different nodes all-reduce every MoE layer over InfiniBand;
    # across nodes the experts go whole (EP) and tokens travel (data/advisors.yaml all_to_all)
    sliced_across_nodes = moe and not s.ep and s.moe_group > per_node
    return (
        0 if weights_fit else 1,
        0 if weights_fit else deficit,
        0 if context_fits else 1,
        -max_ctx if not context_fits else 0,
        0 if users_fit else 1,
        1 if sliced_across_nodes else 0,
        -users if not users_fit else 0,
        1 if tp_cross_node else 0,
        1 if cross_node else 0,
        style,
        size_pref,
        ep_pref,
        s.pp,
        -replicas,
    )


def search(inp: SearchInputs, scenario: Scenario) -> LayoutSearch:
    """Evaluate every layout the GPUs allow and rank them; a pinned field narrows the set."""
    good: list[Candidate] = []
    rejected: list[tuple[str, str]] = []
    for replicas, s in _splits(inp.cfg, scenario, inp.family):
        problem = split_problem(inp.cfg, inp.arch, inp.family, s)
        name = Layout(replicas, s).describe()
        issue = avoided(inp.engine, inp.cfg, s) if problem is None else None
        if issue is not None:
            problem = f"{issue.symptom} ({issue.source})"
        if problem is not None:
            rejected.append((name, problem))
            continue
        try:
            good.append(evaluate(inp, scenario, replicas, s))
        except InputError as err:  # e.g. a linear-attention head count TP cannot split
            rejected.append((name, err.expected))
    if not good:
        why = rejected[0][1] if rejected else "no layout of these GPUs"
        field = "tp" if scenario.pinned else "gpus"
        raise InputError(field, f"a layout the engines can run on these GPUs ({why})")
    good.sort(key=lambda c: c.rank_key)
    pick = good[0]
    return LayoutSearch(
        pick, tuple(good), tuple(rejected), scenario.pinned, _reasons(inp, scenario, pick)
    )


def _reasons(inp: SearchInputs, scenario: Scenario, c: Candidate) -> tuple[str, ...]:
    rules = layout_rules()
    fam = inp.family
    lay = c.layout
    out: list[str] = []
    if scenario.pinned:
        out.append("the layout fields you pinned (TP / DP / EP / PP / replicas)")
    if not c.weights_fit:
        out.append("no layout of these GPUs holds the weights")
        return tuple(out)
    if lay.split.gpus > scenario.gpus_per_node:
        out.append(
            f"one copy needs {lay.split.gpus} GPUs: the weights do not fit in one node's "
            f"{scenario.gpus_per_node} GPUs with room for the workload"
        )
    if fam.moe and fam.attention_family.latent:
        if lay.dp > 1:
            out.append(
                f"{fam.attention_family}: the compressed latent KV would be copied on every TP "
                f"rank; DP-attention {lay.dp} keeps each request's KV on one rank "
                + (
                    f"({rules.dsa_source})"
                    if fam.attention_family == AttentionFamily.DSA
                    else f"(above {rules.dp_attention_min_users} concurrent users: "
                    f"{rules.dp_attention_min_users_source})"
                )
            )
        else:
            out.append(
                f"{fam.attention_family} at {scenario.users} concurrent users or latency first: "
                f"TP keeps every GPU on every request ({rules.dp_attention_min_users_source})"
            )
    elif lay.replicas > 1 and lay.split.gpus < scenario.gpus_per_node * scenario.nodes:
        out.append(
            f"TP {lay.tp} is the smallest split that serves the workload; {lay.replicas} "
            f"replicas use the other GPUs ({rules.replicate_source})"
        )
    elif scenario.latency == "latency" and lay.tp > 1:
        out.append(f"latency first: TP {lay.tp} splits each request ({rules.latency_tp_source})")
    if lay.ep:
        out.append(
            f"MoE: {fam.num_experts} experts placed whole on {lay.split.moe_group} ranks "
            f"(expert parallel) instead of sliced ({rules.expert_parallel_source})"
        )
    elif fam.moe and lay.split.moe_group > 1:
        out.append(
            f"MoE: experts sliced over {lay.split.moe_group} ranks (both engines' default); "
            "expert parallelism is the alternative"
        )
    if not c.context_fits:
        out.append(f"the longest context that fits is {c.context:,} tokens")
    return tuple(out)
