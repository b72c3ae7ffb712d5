"""One forward pass of the model on one GPU, as a tuple of terms: GEMMs per weight role, the
routed experts the tokens touch, attention per layer group, the collectives, and the fixed costs.

``tokens`` are the tokens one attention rank runs in the pass (its requests × tokens per
request); DP-attention ranks run theirs side by side and meet at the FFN, where the experts
see every rank's tokens.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from engine.engines.memory import Split
from engine.perf.attention import GroupCost
from engine.perf.balance import busiest_expert_rank, touched_on_rank
from engine.perf.comm import ACTIVATION_BYTES, all_reduce, collective, gather_scatter
from engine.perf.rates import Rates
from engine.perf.shape import Experts, Shape
from engine.perf.stack import StepKernels
from engine.perf.terms import Term, fixed, roofline


@dataclass(frozen=True)
class Pass:
    """What one pass runs on one attention rank."""

    phase: str  # "decode", "prefill" or "draft": the codes' prefix
    tokens: float  # tokens through the layers on one attention rank
    logit_tokens: float  # tokens the LM head runs for (prefill: one per request)
    requests: float  # requests on one attention rank
    attention: tuple[GroupCost, ...]  # per request (decode) or per token (prefill)
    attention_per_token: bool  # prefill: attention costs scale with tokens, not requests
    moe_tokens: float | None = None  # tokens of every rank at the experts (None: tokens × DP)

    def at_experts(self, split: Split) -> float:
        """Tokens the experts (and DP-attention's gather) see: every rank's."""
        return self.tokens * split.dp if self.moe_tokens is None else self.moe_tokens


@dataclass(frozen=True)
class EpBalance:
    """How routed tokens land on expert-parallel ranks: the busiest rank's share over the mean
    (``engine.perf.balance.rank_skew``) and the expert slots each rank holds (with EPLB's
    redundant copies)."""

    skew: float
    slots_per_rank: float


def _expert_term(p: Pass, x: Experts, split: Split, rates: Rates, eb: EpBalance | None) -> Term:
    """The routed experts of one pass. Sliced over the group (TP-MoE) every GPU runs a slice of
    every expert the tokens touch; placed whole (EP) each rank runs its own experts, and the
    layer waits for the rank with the most routed picks (``busiest_expert_rank``), reading the
    experts of its own that they touch."""
    moe_tokens = p.at_experts(split)  # every DP rank's tokens meet at the experts
    code = f"{p.phase}.moe.experts"
    if not split.ep or x.group <= 1 or eb is None:
        touched = x.touched(moe_tokens)
        return roofline(
            code,
            x.layers * touched * x.bytes_per_expert / x.group,
            2 * x.layers * moe_tokens * x.top_k * x.params_per_expert / x.group,
            rates.hbm_bytes_per_s,
            rates.flops(x.dtype),
            x.layers,
        )
    picks = busiest_expert_rank(moe_tokens * x.top_k, x.group, eb.skew)
    touched = touched_on_rank(picks, eb.slots_per_rank)
    return roofline(
        code,
        x.layers * touched * x.bytes_per_expert,
        2 * x.layers * picks * x.params_per_expert,
        rates.hbm_bytes_per_s,
        rates.flops(x.dtype),
        x.layers,
    )


def gemm_terms(
    p: Pass, shape: Shape, split: Split, rates: Rates, eb: EpBalance | None = None
) -> list[Term]:
    out = []
    for r in shape.roles:
        # a role split over more GPUs than the attention TP group (SGLang's dense FFN under
        # DP-attention) runs the gathered tokens of that many ranks
        gathered = p.tokens * max(1, r.divisor // split.tp)
        tokens = p.logit_tokens if r.role == "lm_head" else gathered
        out.append(
            roofline(
                f"{p.phase}.gemm.{r.role}",
                r.bytes_per_gpu,
                2 * r.params_per_gpu * tokens,
                rates.hbm_bytes_per_s,
                rates.flops(r.dtype),
            )
        )
    if shape.experts is not None:
        out.append(_expert_term(p, shape.experts, split, rates, eb))
    return out


def attention_terms(p: Pass, rates: Rates) -> list[Term]:
    out = []
    scale = p.tokens if p.attention_per_token else p.requests
    queries = p.tokens / p.requests if p.requests else 0.0
    for g in p.attention:
        flops = g.flops_per_query * (p.tokens if p.attention_per_token else p.requests * queries)
        out.append(
            roofline(
                f"{p.phase}.attention.{g.kind}",
                g.bytes * scale,
                flops,
                rates.attention_bytes_per_s,
                rates.bf16_flops,
                g.layers,
            )
        )
    return out


def _ep_dispatch(
    p: Pass,
    x: Experts,
    shape: Shape,
    split: Split,
    rates: Rates,
    gpus_per_node: int,
    eb: EpBalance | None,
) -> Term:
    """EP's dispatch and combine around each MoE layer: every token is sent once to each other
    rank holding one of its top-k experts (k picks over G ranks reach G (1 − (1 − 1/G)^k)
    distinct ones), its hidden state out and back, each member of an attention-TP group sending
    its share of the group's tokens (DeepEP's dispatch is per rank). Across nodes DeepEP's
    internode kernels send it once per remote node over RDMA and forward it inside the node over
    NVLink
    (deepseek-ai/DeepEP README, "normal kernels ... NVLink and RDMA forwarding"): the network
    carries one copy per distinct remote node. The busiest rank receives its share of the
    routed picks (``busiest_expert_rank``) when that is more than a rank sends."""
    group = split.moe_group
    link = rates.link(group, gpus_per_node)
    span = group if group <= gpus_per_node else math.ceil(group / gpus_per_node)
    dests = span * (1 - (1 - 1 / span) ** x.top_k)
    # an attention-TP group holds its rank's tokens on every member: each sends its 1/tp share
    message = p.tokens / split.tp * shape.hidden * ACTIVATION_BYTES
    sent = message * dests * (span - 1) / span
    if eb is not None and span == group:
        picks = busiest_expert_rank(p.at_experts(split) * x.top_k, group, eb.skew)
        unique = dests / x.top_k  # a token's picks on one rank travel once
        received = picks * unique * shape.hidden * ACTIVATION_BYTES * (group - 1) / group
        sent = max(sent, received)
    return collective(f"{p.phase}.comm.ep_dispatch_combine", sent, link, 2 * x.layers)


def comm_terms(
    p: Pass,
    shape: Shape,
    split: Split,
    rates: Rates,
    gpus_per_node: int,
    eb: EpBalance | None = None,
) -> list[Term]:
    """TP all-reduce after attention and after the FFN; under DP-attention the FFN is wrapped
    in an all-gather and a reduce-scatter of every rank's tokens, or, with expert parallelism,
    a dispatch and a combine that send each token to the ranks of its top-k experts (the
    busiest receiving rank's share when it receives more than a rank sends)."""
    tp, dp, group = split.tp, split.dp, split.moe_group
    message = p.tokens * shape.hidden * ACTIVATION_BYTES
    gathered = p.at_experts(split) * shape.hidden * ACTIVATION_BYTES
    out: list[Term | None] = []
    tp_link = rates.link(tp, gpus_per_node)
    group_link = rates.link(group, gpus_per_node)
    if dp == 1:
        out.append(
            all_reduce(
                f"{p.phase}.comm.tp_allreduce",
                message,
                tp,
                tp_link,
                shape.mixer_layers + shape.ffn_layers,
            )
        )
    else:
        out.append(
            all_reduce(f"{p.phase}.comm.tp_allreduce", message, tp, tp_link, shape.mixer_layers)
        )
        x = shape.experts
        moe_layers = x.layers if (x is not None and split.ep) else 0
        if moe_layers and x is not None:
            out.append(_ep_dispatch(p, x, shape, split, rates, gpus_per_node, eb))
        out.append(
            gather_scatter(
                f"{p.phase}.comm.dp_gather",
                gathered,
                group,
                group_link,
                shape.ffn_layers - moe_layers,
            )
        )
    return [t for t in out if t is not None]


@dataclass(frozen=True)
class Overheads:
    """The software stack's fixed costs of one pass (``engine.perf.stack``), scaled by what they
    depend on: the kernels the pass launches (each at the step's execution mode: a graph
    replay's floor or the host's launch), the scheduler's pass, each running request's
    bookkeeping."""

    kernel_seconds: float
    kernels: StepKernels
    step_seconds: float
    request_step_seconds: float

    @property
    def layer_seconds(self) -> float:
        """The kernels of one average layer (a draft layer's floor)."""
        return 0.0 if not self.kernels.per_layer else self.kernel_seconds * self.kernels.per_layer


def overhead_terms(p: Pass, shape: Shape, oh: Overheads, per_request: bool) -> list[Term]:
    out = [fixed(f"{p.phase}.overhead.step", oh.step_seconds)]
    if p.phase != "prefill":  # a prefill's small kernels hide behind its dispatch floor
        k = oh.kernels
        out.append(fixed(f"{p.phase}.overhead.layers", k.layers * oh.kernel_seconds, shape.layers))
        if shape.experts is not None:
            n = shape.experts.layers
            out.append(fixed(f"{p.phase}.overhead.moe_layers", k.moe_layers * oh.kernel_seconds, n))
    if per_request and p.requests:
        out.append(
            fixed(
                f"{p.phase}.overhead.requests",
                p.requests * oh.request_step_seconds,
                round(p.requests),
            )
        )
    return out


def forward(
    p: Pass,
    shape: Shape,
    split: Split,
    rates: Rates,
    oh: Overheads,
    gpus_per_node: int,
    eb: EpBalance | None = None,
) -> tuple[Term, ...]:
    """Every term of one pass through every layer (all pipeline stages): the GPU's work. The
    host's dispatch of a prefill is the first token's latency, not GPU time
    (``engine.perf.estimate``)."""
    terms = gemm_terms(p, shape, split, rates, eb)
    terms += attention_terms(p, rates)
    terms += comm_terms(p, shape, split, rates, gpus_per_node, eb)
    if split.pp > 1:
        link = rates.p2p(split.gpus, gpus_per_node)
        message = p.tokens * shape.hidden * ACTIVATION_BYTES
        terms.append(collective(f"{p.phase}.comm.pp_handoff", message, link, split.pp - 1))
    terms += overhead_terms(p, shape, oh, per_request=p.phase == "decode")
    return tuple(terms)
