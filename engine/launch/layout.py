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
from dataclasses import dataclass, replace

from engine import errors as E
from engine.decision import Bytes, Code, Decision, Name, Source, Tokens
from engine.engines import adapter
from engine.engines.memory import GIB, Reserve, Split, device_memory, memory_rules
from engine.engines.placement import WeightShare, weights_per_gpu
from engine.errors import InputError
from engine.kv.sizing import KvSizing
from engine.launch.candidate import (
    Candidate,
    Layout,
    LayoutSearch,
    Rejected,
    SearchInputs,
    shortfall,
)
from engine.launch.known_issues import KnownIssue, Where, avoided, fixes_for, symptom
from engine.launch.layout_reasons import reasons
from engine.launch.multinode import uses_deepep
from engine.launch.nodes import copies_per_node, merges_copies
from engine.launch.ranking import layout_rules, operating_point, rank_parts, with_speed
from engine.model.architecture import Architecture
from engine.model.config import ModelConfig
from engine.model.family import FamilyVerdict
from engine.model.weights import is_gated
from engine.perf import PrefixReuse, Speed, spread
from engine.perf.estimate import copy_model, scheduler
from engine.perf.factors import perf_facts
from engine.perf.scheduler import Load
from engine.reuse import Reuse, layout_reuse
from engine.scenario import PIN_SIZES, Scenario


def divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


# --- what a split must satisfy -----------------------------------------------------------------


REJECT_HEADS = Code("layout.reject.heads", "tp", "heads")
REJECT_KV_HEADS = Code("layout.reject.kv_heads", "tp", "kv_heads")
REJECT_LINEAR_HEADS = Code("layout.reject.linear_heads", "tp", "field", "n")
REJECT_DENSE_DP = Code("layout.reject.dense_dp")
REJECT_DENSE_EP = Code("layout.reject.dense_ep")
REJECT_EXPERTS = Code("layout.reject.experts", "experts", "ranks")
REJECT_PP = Code("layout.reject.pp_layers", "pp", "layers")
REJECT_FP8_DENSE = Code("layout.reject.fp8_dense", "inter", "tp", "block")
REJECT_FP8_MOE = Code("layout.reject.fp8_moe", "inter", "ranks", "block")
REJECT_ENGINE = Code("layout.reject.engine", "why")
REJECT_KNOWN_ISSUE = Code("layout.reject.known_issue", "symptom", "source")
REJECT_GPUS = Code("layout.reject.gpus", "field", "value", "gpus", "per_node")
REJECT_BOTH = Code("layout.reject.both", "a", "b")  # two refusals of one pinned layout


def split_problem(
    cfg: ModelConfig, arch: Architecture, fam: FamilyVerdict, s: Split
) -> Decision | None:
    """Why the engines refuse ``s`` for this model, or None."""
    heads = cfg.num_attention_heads
    if heads % s.tp:
        return REJECT_HEADS(tp=s.tp, heads=heads)
    if arch.attention_layers and not fam.attention_family.latent:
        kv = cfg.num_key_value_heads
        if (kv >= s.tp and kv % s.tp) or (kv < s.tp and s.tp % kv):
            return REJECT_KV_HEADS(tp=s.tp, kv_heads=kv)
    for name in ("linear_num_value_heads", "mamba_num_heads", "kda_num_heads"):
        n = getattr(cfg, name)
        if n and n % s.tp:
            return REJECT_LINEAR_HEADS(tp=s.tp, field=Name(name), n=n)
    if s.dp > 1 and not fam.moe:
        return REJECT_DENSE_DP()
    if s.ep and not fam.moe:
        return REJECT_DENSE_EP()
    if s.ep and fam.num_experts % s.moe_group:
        return REJECT_EXPERTS(experts=fam.num_experts, ranks=s.moe_group)
    if s.pp > cfg.num_hidden_layers:
        return REJECT_PP(pp=s.pp, layers=cfg.num_hidden_layers)
    return _fp8_block_problem(cfg, arch, fam, s)


def _fp8_block_problem(
    cfg: ModelConfig, arch: Architecture, fam: FamilyVerdict, s: Split
) -> Decision | None:
    """vLLM's block-FP8 shape checks (fp8_utils.validate_fp8_block_shape for linear layers,
    Fp8MoEMethod.create_weights for experts): a TP-split or merged (gate + up) projection must
    be a whole number of weight blocks per rank; an unsplit, unmerged one need not be."""
    block = _fp8_block_n(cfg)
    if not block:
        return None
    inter = cfg.intermediate_size
    dense = any(layer.ffn == "dense" for layer in arch.layers)
    if dense and inter and (s.tp > 1 or is_gated(cfg)) and (inter // s.tp) % block:
        return REJECT_FP8_DENSE(inter=inter, tp=s.tp, block=block)
    if fam.moe and cfg.moe_intermediate_size:
        group = 1 if s.ep else s.moe_group  # expert parallelism keeps experts whole
        if (cfg.moe_intermediate_size // group) % block:
            return REJECT_FP8_MOE(inter=cfg.moe_intermediate_size, ranks=group, block=block)
    return None


def _fp8_block_n(cfg: ModelConfig) -> int:
    q = cfg.quantization_config or {}
    block = q.get("weight_block_size")
    if isinstance(block, list) and len(block) == 2 and isinstance(block[0], int) and block[0] > 0:
        return int(block[0])
    return 0


def count_layouts(scenario: Scenario, moe: bool) -> int:
    """How many layouts ``search`` walks for ``scenario``: its cost, known before it starts."""
    return sum(1 for _ in _splits(scenario, moe))


def _splits(scenario: Scenario, moe: bool) -> Iterator[tuple[int, Split]]:
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
                eps = [False, True] if moe and tp * dp > 1 else [False]
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


FRACTION_SCENARIO = Code("memory.fraction.scenario")
CHUNK_FRACTION = Code("memory.fraction.smaller_chunk", "base", "chunk", "asked")
FRACTION_KNOWN_ISSUE = Code("memory.fraction.known_issue", "issue", "source")
WHY_WEIGHTS = Code("layout.why.weights", "weights", "usable")
WHY_CONTEXT = Code("layout.why.context", "fits", "asked")
WHY_USERS = Code("layout.why.users", "users", "asked", "context")


@dataclass
class _Sizing:
    """One layout's memory as the engine sizes it, handed from step to step of ``evaluate``:
    the weights on a GPU, the memory fraction and why, the prefill chunk, the engine's reserve,
    the room left for the KV cache, and the request cap (``--max-num-seqs``) where one is set."""

    weights: int  # per GPU
    shares: tuple[WeightShare, ...]
    memory: int
    fixes: tuple[KnownIssue, ...]
    chunk: int | None
    decode_bs: int | None
    fraction: float
    fraction_why: Decision
    pinned: bool  # the fraction is fixed (a known issue, the decode graph), not the engine's
    reserve: Reserve | None
    usable: int
    kv: KvSizing
    stage: float
    room: _Room
    max_num_seqs: int | None = None


def evaluate(inp: SearchInputs, scenario: Scenario, replicas: int, s: Split) -> Candidate:
    m = _sizing(inp, scenario, replicas, s)
    _cap_requests(inp, scenario, replicas, s, m)
    space, context = m.room.space, m.room.context
    context_fits, weights_fit = m.room.context_fits, space > 0
    users = m.room.users
    if m.max_num_seqs is not None:
        users = min(users, m.max_num_seqs * s.dp * replicas)
    users_fit = users >= scenario.users
    rank = rank_parts(
        inp,
        scenario,
        replicas,
        s,
        weights_fit,
        context_fits,
        users_fit,
        users,
        context,
        shortfall(m.weights, m.reserve, m.usable),
    )
    # requests the engine runs at once: the engines admit by the KV a request holds now, so at
    # the workload's own length (prompt + output), not at the full context
    isl, osl = scenario.workload(context)
    _, running = users_at(m.kv, space, min(isl + osl, context), s, replicas, m.stage)
    running = min(running, m.max_num_seqs * s.dp * replicas) if m.max_num_seqs else running
    speed = peak = reuse = None
    peak_users = 0
    if weights_fit and context >= 1:
        speed, reuse, peak_users, peak = _speeds(inp, scenario, replicas, s, m, running, users_fit)
    return Candidate(
        layout=Layout(replicas, s),
        weights_per_gpu=m.weights,
        weight_shares=m.shares,
        memory_per_gpu=m.memory,
        fraction=m.fraction,
        fraction_why=m.fraction_why,
        usable_per_gpu=m.usable,
        reserve=m.reserve,
        max_num_seqs=m.max_num_seqs,
        kv_space_per_gpu=max(space, 0),
        kv_bytes_per_token_per_gpu=math.ceil(m.kv.kv_bytes_per_token * m.stage),
        state_bytes_per_request_per_gpu=math.ceil(m.kv.state_bytes_per_request_padded * m.stage),
        context=context,
        bytes_per_request_per_gpu=m.room.per_request,
        users_per_copy=users // replicas,
        users=users,
        weights_fit=weights_fit,
        context_fits=context_fits,
        users_fit=users_fit,
        why=_why_short(inp, scenario, m, users),
        rank=rank,
        chunk_tokens=m.chunk,
        decode_graph_bs=m.decode_bs,
        fraction_pinned=m.pinned,
        fixes=m.fixes,
        speed=speed,
        peak=peak,
        peak_users=peak_users,
        running=running,
        reuse=reuse,
    )


def _sizing(inp: SearchInputs, scenario: Scenario, replicas: int, s: Split) -> _Sizing:
    """The weights on each GPU, the fraction (the scenario's, a known issue's fix, or the
    engine's own from the prefill chunk and the decode batch) and the room it leaves; a smaller
    chunk where the engine's own fraction leaves no room for one request."""
    cfg = inp.cfg
    w_gpu, shares = weights_per_gpu(
        inp.weights,
        inp.engine,
        s,
        num_layers=cfg.num_hidden_layers,
        # drafts from the checkpoint's MTP layers load them; a separate draft head does not
        mtp=inp.mtp and (inp.speculative is None or inp.speculative.method == "mtp"),
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
    fraction, fraction_why, engine_own = _fraction(inp, scenario, s, chunk, decode_bs, fixes)
    pinned = scenario.memory_fraction is None and (
        fixed_fraction is not None or decode_bs is not None
    )
    reserve = eng.reserve(cfg, inp.gpu, s, chunk)
    usable = int(memory * fraction)
    kv = inp.kv_at(s.tp)
    stage = stage_share(cfg, s.pp)
    room = _room(inp, usable, w_gpu, reserve, kv, stage, s, replicas)
    if engine_own and not eng.fraction_covers_everything and reserve is None:
        smaller = _chunk_with_room(inp, scenario, replicas, s, chunk, decode_bs, w_gpu, room)
        if smaller is not None:
            chunk, fraction, fraction_why, room = smaller
            usable = int(memory * fraction)
    return _Sizing(
        weights=w_gpu,
        shares=shares,
        memory=memory,
        fixes=fixes,
        chunk=chunk,
        decode_bs=decode_bs,
        fraction=fraction,
        fraction_why=fraction_why,
        pinned=pinned,
        reserve=reserve,
        usable=usable,
        kv=kv,
        stage=stage,
        room=room,
    )


def _cap_requests(
    inp: SearchInputs, scenario: Scenario, replicas: int, s: Split, m: _Sizing
) -> None:
    """The request cap: the scenario's (the sampler rows it reserves), or a smaller one than
    the engine's default where the sampler memory it frees gives a longer request or more
    users."""
    cfg, eng = inp.cfg, adapter(inp.engine)
    m.max_num_seqs = scenario.max_num_seqs
    default_seqs = eng.default_max_num_seqs(inp.gpu)
    if m.max_num_seqs is not None:
        if m.reserve is not None:  # the sampler rows of the sequences the scenario sets
            m.reserve = eng.reserve(cfg, inp.gpu, s, m.chunk, max_num_seqs=m.max_num_seqs)
            m.room = _room(inp, m.usable, m.weights, m.reserve, m.kv, m.stage, s, replicas)
    elif (
        m.reserve is not None
        and default_seqs is not None
        and eng.sampler_reserve
        and not (m.room.context_fits and m.room.users >= scenario.users)
    ):
        # vLLM's profile run reserves sampler rows for max_num_seqs requests (1,024 by default
        # on large GPUs); a workload of a few users gets that memory back with --max-num-seqs
        wanted = math.ceil(scenario.users / (replicas * s.dp))
        cap = 1 << max(0, wanted - 1).bit_length()
        if cap < default_seqs:
            capped = eng.reserve(cfg, inp.gpu, s, m.chunk, max_num_seqs=cap)
            if capped is not None and capped.total < m.reserve.total:
                freed = _room(inp, m.usable, m.weights, capped, m.kv, m.stage, s, replicas)
                # only where the memory it frees gives a longer request or more users: the
                # plan's reason for the flag says the default leaves too little for the KV
                if (freed.max_ctx, freed.users) > (m.room.max_ctx, m.room.users):
                    m.reserve, m.max_num_seqs, m.room = capped, cap, freed


def _why_short(
    inp: SearchInputs, scenario: Scenario, m: _Sizing, users: int
) -> tuple[Decision, ...]:
    """The first thing the layout falls short of: the weights, one request of the context, or
    the users asked for (nothing where it holds them all)."""
    if m.room.space <= 0:
        return (WHY_WEIGHTS(weights=Bytes(m.weights), usable=Bytes(m.usable)),)
    if not m.room.context_fits:
        # the context this layout gives (what --max-model-len sets and the reasons compare)
        return (WHY_CONTEXT(fits=Tokens(m.room.context), asked=Tokens(inp.context)),)
    if users < scenario.users:
        return (WHY_USERS(users=users, asked=scenario.users, context=Tokens(m.room.context)),)
    return ()


def _speeds(
    inp: SearchInputs,
    scenario: Scenario,
    replicas: int,
    s: Split,
    m: _Sizing,
    running: int,
    users_fit: bool,
) -> tuple[Speed | None, Reuse | None, int, Speed | None]:
    """The layout's speed with every user asked for, the copies admitting what their KV and
    request cap hold (the prefix cache's hits at the requests they run at once); where it holds
    every user, its operating point too (a layout short of users ranks after every one that
    holds them). (speed, reuse, peak users, peak)"""
    space, context, chunk = m.room.space, m.room.context, m.chunk
    admit = max(1, running // replicas)
    load = min(scenario.users, running)
    reuse = candidate_reuse(inp, scenario, replicas, s, space, context, load)
    speed = copies_speed(inp, scenario, replicas, s, chunk, context, scenario.users, admit, reuse)
    if not users_fit:
        return speed, reuse, 0, None

    def at(n: int) -> Speed | None:
        hits = candidate_reuse(inp, scenario, replicas, s, space, context, n)
        return copies_speed(inp, scenario, replicas, s, chunk, context, n, admit, hits)

    # the TPOT alone where no prefix repeats (the hits change with the load)
    probe = (
        _tpot_probe(inp, scenario, replicas, s, chunk, context, admit) if reuse is None else None
    )
    peak_users, peak = operating_point(scenario, running, at, unit=s.dp * replicas, tpot_at=probe)
    return speed, reuse, peak_users, peak


def candidate_reuse(
    inp: SearchInputs,
    scenario: Scenario,
    replicas: int,
    s: Split,
    space: int,
    context: int,
    concurrent: int,
) -> Reuse | None:
    """What each request finds in the prefix cache (and a CPU tier) on this layout at this
    load (engine.reuse): None when no part of a prompt repeats."""
    if scenario.prefix_overlap <= 0 or space <= 0:
        return None
    merged = replicas if merges_copies(inp.engine, inp.family.moe) else 1
    merged = min(merged, copies_per_node(Layout(replicas, s), scenario.gpus_per_node))
    return layout_reuse(
        inp.engine,
        inp.kv_at(s.tp),
        scenario,
        context,
        space_per_gpu=space,
        stage=stage_share(inp.cfg, s.pp),
        split=s,
        copies=replicas,
        concurrent=concurrent,
        behind_one_endpoint=max(1, merged),
    )


def _fraction(
    inp: SearchInputs,
    scenario: Scenario,
    s: Split,
    chunk: int | None,
    decode_bs: int | None,
    fixes: tuple[KnownIssue, ...],
) -> tuple[float, Decision, bool]:
    """The memory fraction the layout is sized with, why, and whether it is the engine's own
    (computed from the prefill chunk and the decode batch) rather than a chosen or fixed one."""
    fixing = [f for f in fixes if f.fix and f.fix.memory_fraction]
    if scenario.memory_fraction:
        return scenario.memory_fraction, FRACTION_SCENARIO(), False
    if fixing:
        assert fixing[0].fix is not None and fixing[0].fix.memory_fraction is not None
        why = FRACTION_KNOWN_ISSUE(
            issue=symptom(fixing[0]),
            source=Source("; ".join(f"{f.source}: {f.quote}" for f in fixing)),
        )
        return fixing[0].fix.memory_fraction, why, False
    eng = adapter(inp.engine)
    fraction, why = eng.default_fraction(
        inp.gpu,
        s,
        chunk_tokens=chunk,
        mla=inp.family.attention_family.latent,
        vision=_vision_dims(inp.cfg) if inp.vision else None,
        decode_graph_bs=decode_bs,
        deepep=uses_deepep(s, scenario.gpus_per_node),
        role=inp.role,
        draft_tokens=1 + (inp.speculative.draft_tokens if inp.speculative else 0),
    )
    return fraction, eng.fraction_note(why), True


def _chunk_with_room(
    inp: SearchInputs,
    scenario: Scenario,
    replicas: int,
    s: Split,
    chunk: int | None,
    decode_bs: int | None,
    weights: int,
    room: _Room,
) -> tuple[int, float, Decision, _Room] | None:
    """A smaller prefill chunk where the engine's own fraction is computed from it (SGLang
    reserves activations for the chunk outside its static pool), on a small card (60 GiB or
    less: no 10 GiB floor, SGLang's own chunk 4,096 or less), where at the chunk asked
    that fraction leaves no room for the weights and one request of the context: the largest chunk,
    halving down to the engine's smallest activation term, where it does (else the one that
    gives the longest request). None: the chunk stays (it is what the priority asked)."""
    own = adapter(inp.engine).default_prefill_chunk(inp.gpu, s)
    asked = chunk or own
    floor = memory_rules().sglang_static_memory.mem_fraction_static_default.constants_mb
    memory = device_memory(inp.gpu)
    small = memory <= floor.floor_from_gib * GIB  # no 10 GiB floor: the chunk's reserve rules
    if room.context_fits or asked <= own or not small:
        # a card the engine itself gives a chunk this large is not short of room for it
        return None
    kv, stage = inp.kv_at(s.tp), stage_share(inp.cfg, s.pp)
    options: list[tuple[int, float, Decision, _Room]] = []
    tried = asked // 2
    while tried >= floor.min_activation_tokens:
        fraction, why, _ = _fraction(inp, scenario, s, tried, decode_bs, ())
        got = _room(inp, int(memory * fraction), weights, None, kv, stage, s, replicas)
        options.append((tried, fraction, CHUNK_FRACTION(base=why, chunk=tried, asked=asked), got))
        if got.context_fits:
            break  # the largest chunk that holds a request of the whole context
        tried //= 2
    best = max(options, key=lambda o: (o[3].max_ctx, o[0]), default=None)
    return best if best is not None and best[3].max_ctx > room.max_ctx else None


def copies_speed(
    inp: SearchInputs,
    scenario: Scenario,
    replicas: int,
    s: Split,
    chunk: int | None,
    context: int,
    concurrent: int,
    admit: int,
    reuse: Reuse | None = None,
) -> Speed | None:
    """The layout's speed with ``concurrent`` requests spread over its copies as they spread
    (``engine.perf.spread``: below one request per copy, or where they do not divide, some
    copies run fewer or are idle), each of the workload's input and output tokens at this
    context, with the prompt tokens the prefix cache holds (``reuse``) not prefilled; a copy
    runs at most ``admit`` at once (its KV pool and request cap), the others wait for a slot.
    The plan's engine version and execution mode come with ``inp``."""
    if concurrent < 1:
        return None
    isl, osl = scenario.workload(context)
    perf_in = inp if chunk == inp.chunk_tokens else replace(inp, chunk_tokens=chunk)
    try:
        return spread(
            perf_in,
            s,
            replicas,
            concurrent,
            isl,
            osl,
            inp.speculative,
            gpus_per_node=scenario.gpus_per_node,
            calibration=inp.calibration,
            max_running=admit,
            engine_version=inp.engine_version,
            eager=inp.eager,
            factors=inp.factors,
            reuse=PrefixReuse(reuse.gpu_tokens, reuse.host_tokens) if reuse else None,
        )
    except InputError:
        return None


def _tpot_probe(
    inp: SearchInputs,
    scenario: Scenario,
    replicas: int,
    s: Split,
    chunk: int | None,
    context: int,
    admit: int,
) -> Callable[[int], float]:
    """The TPOT (ms) ``copies_speed`` gives at ``n`` requests spread evenly over the copies (``n`` a
    multiple of them), without building the whole Speed: the copy's op model is made once and
    the scheduler run at each load (``engine.perf.estimate`` does the same per call)."""
    isl, osl = scenario.workload(context)
    perf_in = inp if chunk == inp.chunk_tokens else replace(inp, chunk_tokens=chunk)
    try:
        model = copy_model(
            perf_in, s, isl, osl, inp.speculative,
            gpus_per_node=scenario.gpus_per_node, calibration=inp.calibration,
            factors=inp.factors, engine_version=inp.engine_version, eager=inp.eager,
        )  # fmt: skip
        costs = model.costs()
    except InputError:
        return lambda n: math.inf
    sched = scheduler(perf_in, s)
    waves = perf_facts().benchmark.prompts_per_client

    def tpot(n: int) -> float:
        try:
            line = sched.closed_loop(costs, Load(max(1, n // replicas), osl, waves, admit))
        except InputError:
            return math.inf
        return line.tpot * 1e3

    return tpot


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


def search(inp: SearchInputs, scenario: Scenario) -> LayoutSearch:
    """Evaluate every layout the GPUs allow and rank them; a pinned field narrows the set."""
    good: list[Candidate] = []
    rejected: list[Rejected] = []
    for replicas, s in _splits(scenario, inp.family.moe):
        problem = split_problem(inp.cfg, inp.arch, inp.family, s)
        layout = Layout(replicas, s)
        issue = avoided(inp.engine, inp.cfg, s) if problem is None else None
        if issue is not None:
            problem = REJECT_KNOWN_ISSUE(symptom=symptom(issue), source=Source(issue.source))
        if problem is not None:
            rejected.append(Rejected(layout, problem))
            continue
        try:
            good.append(evaluate(inp, scenario, replicas, s))
        except InputError as err:  # e.g. a linear-attention head count TP cannot split
            rejected.append(Rejected(layout, err.why or REJECT_ENGINE(why=err.expects)))
    if not good:
        raise _nothing_runs(inp, scenario, rejected)
    good = with_speed(scenario, good)
    good.sort(key=lambda c: c.rank_key)
    pick = good[0]
    return LayoutSearch(
        pick,
        tuple(good),
        tuple(rejected),
        scenario.pinned,
        reasons(inp, scenario, pick, tuple(good)),
    )


def _nothing_runs(inp: SearchInputs, scenario: Scenario, rejected: list[Rejected]) -> InputError:
    """The error when no layout of these GPUs can run: the field to blame, and the first
    rejection's reason (worded by the reader: the CLI and the pages)."""
    field = "tp" if scenario.pinned else "gpus"
    expected = E.RUNNABLE_LAYOUT()
    if rejected:
        return InputError(field, expected, why=rejected[0].why)
    # no split of these GPUs was tried: the pinned sizes against the model's own shapes too, so
    # a TP that divides neither the GPUs nor the heads says both
    shape = None
    if scenario.pinned:
        pinned = Split(
            tp=scenario.tp or 1, dp=scenario.dp or 1, pp=scenario.pp or 1, ep=bool(scenario.ep)
        )
        shape = split_problem(inp.cfg, inp.arch, inp.family, pinned)
    for name in PIN_SIZES:
        value = getattr(scenario, name)
        if value is not None and scenario.total_gpus % value:
            why = REJECT_GPUS(
                field=Name(name.upper()),
                value=value,
                gpus=scenario.total_gpus,
                per_node=scenario.gpus_per_node,
            )
            return InputError(
                name, expected, why=why if shape is None else REJECT_BOTH(a=shape, b=why)
            )
    return InputError(field, expected, why=shape)
