"""One forward pass of the model on one GPU, as a tuple of terms: GEMMs per weight role, the
routed experts the tokens touch, attention per layer group, the collectives, and the fixed costs.

``tokens`` are the tokens one attention rank runs in the pass (its requests × tokens per
request); DP-attention ranks run theirs side by side and meet at the FFN, where the experts
see every rank's tokens.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.engines.memory import Split
from engine.perf.attention import GroupCost
from engine.perf.comm import ACTIVATION_BYTES, all_reduce, collective, gather_scatter
from engine.perf.factors import Factors
from engine.perf.rates import Rates
from engine.perf.shape import Shape
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


def gemm_terms(p: Pass, shape: Shape, split: Split, rates: Rates) -> list[Term]:
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
    x = shape.experts
    if x is not None:
        moe_tokens = p.at_experts(split)  # every DP rank's tokens meet at the experts
        touched = x.touched(moe_tokens)
        out.append(
            roofline(
                f"{p.phase}.moe.experts",
                x.layers * touched * x.bytes_per_expert / x.group,
                2 * x.layers * moe_tokens * x.top_k * x.params_per_expert / x.group,
                rates.hbm_bytes_per_s,
                rates.flops(x.dtype),
                x.layers,
            )
        )
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


def comm_terms(p: Pass, shape: Shape, split: Split, rates: Rates, gpus_per_node: int) -> list[Term]:
    """TP all-reduce after attention and after the FFN; under DP-attention the FFN is wrapped
    in an all-gather and a reduce-scatter of every rank's tokens, or, with expert parallelism,
    a dispatch and a combine that send each token to the ranks of its top-k experts."""
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
            fan_out = min(x.top_k, group)
            sent = message * fan_out * (group - 1) / group
            out.append(
                collective(f"{p.phase}.comm.ep_dispatch_combine", sent, group_link, 2 * moe_layers)
            )
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


def overhead_terms(p: Pass, shape: Shape, f: Factors, per_request: bool) -> list[Term]:
    out = [fixed(f"{p.phase}.overhead.step", f.step_seconds.value)]
    if p.phase != "prefill":  # a prefill's small kernels hide behind its dispatch floor
        out.append(
            fixed(f"{p.phase}.overhead.layers", shape.layers * f.layer_seconds.value, shape.layers)
        )
        if shape.experts is not None:
            n = shape.experts.layers
            out.append(fixed(f"{p.phase}.overhead.moe_layers", n * f.moe_layer_seconds.value, n))
    if per_request and p.requests:
        out.append(
            fixed(
                f"{p.phase}.overhead.requests",
                p.requests * f.request_step_seconds.value,
                round(p.requests),
            )
        )
    return out


def forward(
    p: Pass,
    shape: Shape,
    split: Split,
    rates: Rates,
    f: Factors,
    gpus_per_node: int,
) -> tuple[Term, ...]:
    """Every term of one pass through every layer (all pipeline stages): the GPU's work. The
    host's dispatch of a prefill is the first token's latency, not GPU time
    (``engine.perf.estimate``)."""
    terms = gemm_terms(p, shape, split, rates)
    terms += attention_terms(p, rates)
    terms += comm_terms(p, shape, split, rates, gpus_per_node)
    if split.pp > 1:
        link = rates.p2p(split.gpus, gpus_per_node)
        message = p.tokens * shape.hidden * ACTIVATION_BYTES
        terms.append(collective(f"{p.phase}.comm.pp_handoff", message, link, split.pp - 1))
    terms += overhead_terms(p, shape, f, per_request=p.phase == "decode")
    return tuple(terms)
