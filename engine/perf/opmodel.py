"""The op model of one copy: what a decode step, a prefill pass and a prompt cost on its GPUs
(``engine.perf.step``: each operation's bytes, FLOPs and communication against the GPU's rates,
plus the software stack's fixed costs), handed to the scheduler as ``Costs``.

Attention and cache costs come from the cache specs (``engine.perf.attention``), weights from
the memory model's roles (``engine.perf.shape``); a speculative step adds its draft passes
(``_draft_pass``) and commits the acceptance length kept in ``data/perf.yaml``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property

from engine.engines.memory import Split
from engine.kv.sizing import KvSizing
from engine.perf.attention import GroupCost, decode_costs, mla_context_flops, prefill_costs
from engine.perf.factors import PrefillMode, SpecMethod, acceptance, perf_facts
from engine.perf.rates import Rates
from engine.perf.scheduler import Costs, DecodeStep, PrefixReuse
from engine.perf.shape import PerfInputs, Shape
from engine.perf.speed import Phase
from engine.perf.stack import ExecMode, Kernels, Stack, StepKernels
from engine.perf.step import EpBalance, Overheads, Pass, forward
from engine.perf.terms import Term, fixed, phase_bound, roofline, total


@dataclass(frozen=True)
class Speculative:
    """MTP or EAGLE-3 with ``draft_tokens`` proposed per step."""

    method: SpecMethod
    draft_tokens: int


def phase(terms: tuple[Term, ...]) -> Phase:
    return Phase(total(terms), phase_bound(terms), terms)


def step_kernels(table: Kernels, shape: Shape, groups: tuple[GroupCost, ...]) -> StepKernels:
    """Kernels one pass launches through every layer: each layer's norms, its attention group's
    kernels, its FFN's (dense, or the MoE's with its shared experts)."""
    x = shape.experts
    moe_layers = x.layers if x is not None else 0
    layers = table.norms * shape.layers + sum(table.of(g.kind) * g.layers for g in groups)
    layers += table.dense_ffn * max(0, shape.ffn_layers - moe_layers)
    shared = any(r.role == "shared_experts" for r in shape.roles)
    moe = moe_layers * (table.moe + (table.shared_experts if shared else 0))
    return StepKernels(layers, moe, shape.layers)


def _draft_pass(
    shape: Shape,
    costs: tuple[GroupCost, ...],
    requests: float,
    rates: Rates,
    oh: Overheads,
) -> tuple[Term, ...]:
    """One draft pass for ``requests`` requests: the MTP layers (or, for EAGLE, one decoder
    layer of the target's size), the LM head for their logits, one layer's KV and the layer
    floor. A draft runs inside the target's step: no step overhead of its own."""
    head = next((r for r in shape.roles if r.role == "lm_head"), None)
    if shape.mtp_bytes_per_gpu:
        layer_bytes, layer_params = shape.mtp_bytes_per_gpu, shape.mtp_params_per_gpu
    else:
        body = [r for r in shape.roles if r.role != "lm_head"]
        layer_bytes = sum(r.bytes_per_gpu for r in body) / shape.layers
        layer_params = sum(r.params_per_gpu for r in body) / shape.layers
        x = shape.experts
        if x is not None:
            touched = x.touched(requests)
            layer_bytes += touched * x.bytes_per_expert / x.group
            layer_params += x.top_k * x.params_per_expert / x.group  # per token
    terms = [
        roofline(
            "draft.gemm.layer",
            layer_bytes,
            2 * layer_params * requests,
            rates.hbm_bytes_per_s,
            rates.bf16_flops,
        )
    ]
    if head is not None:
        terms.append(
            roofline(
                "draft.gemm.lm_head",
                head.bytes_per_gpu,
                2 * head.params_per_gpu * requests,
                rates.hbm_bytes_per_s,
                rates.flops(head.dtype),
            )
        )
    attn = next((c for c in costs if c.kind != "linear"), None)
    if attn is not None and attn.layers:
        terms.append(
            roofline(
                "draft.attention",
                attn.bytes / attn.layers * requests,
                attn.flops_per_query / attn.layers * requests,
                rates.attention_bytes_per_s,
                rates.bf16_flops,
            )
        )
    terms.append(fixed("draft.overhead.layers", oh.layer_seconds))
    return tuple(terms)


@dataclass(frozen=True)
class CopyModel:
    """The op model of one copy cut as ``split`` at one workload: the phases the pages show
    and the costs the scheduler runs on."""

    inp: PerfInputs
    split: Split
    shape: Shape
    kv: KvSizing
    rates: Rates
    stack: Stack  # the software stack's fixed costs (engine.perf.stack)
    mode: ExecMode  # how a decode step runs: replayed graphs, or eager
    prefill_mode: PrefillMode  # how a prefill pass is dispatched: compiled, or eager
    node: int  # GPUs per node: where collectives leave the scale-up domain
    isl: int
    osl: int
    speculative: Speculative | None
    budget: int
    reuse: PrefixReuse | None
    eb: EpBalance | None = None  # how routed tokens land on EP ranks (None: no EP)
    # passes already run, by their arguments (the scheduler and the page ask for the same ones)
    _groups: dict[str, tuple[GroupCost, ...]] = field(
        default_factory=dict, repr=False, compare=False
    )
    _passes: dict[tuple[str, float, float, float], tuple[Term, ...]] = field(
        default_factory=dict, repr=False, compare=False
    )

    @property
    def accepted(self) -> float:
        s = self.speculative
        if s is None:
            return 1.0
        return min(
            acceptance(s.method, s.draft_tokens).accepted_tokens_per_step, s.draft_tokens + 1.0
        )

    @property
    def prompt_tokens(self) -> int:
        return self.reuse.prefilled(self.isl) if self.reuse else self.isl

    @property
    def cached_tokens(self) -> int:
        return self.isl - self.prompt_tokens

    def _decode_costs(self) -> tuple[GroupCost, ...]:
        if "decode" not in self._groups:
            context = self.isl + (self.osl + 1) / 2
            costs = decode_costs(self.kv, self.inp.cfg, self.inp.arch, context)
            self._groups["decode"] = tuple(costs)
        return self._groups["decode"]

    def _prefill_costs(self) -> tuple[GroupCost, ...]:
        if "prefill" not in self._groups:
            cfg, arch = self.inp.cfg, self.inp.arch
            costs = prefill_costs(self.kv, cfg, arch, self.prompt_tokens, self.cached_tokens)
            self._groups["prefill"] = tuple(costs)
        return self._groups["prefill"]

    def decode_pass(self, busiest: float, total_requests: float) -> Phase:
        """The verify (or plain decode) pass: ``busiest`` requests on the busiest attention
        rank's micro-batch, ``total_requests`` over every rank's (they meet at the experts)."""
        key = ("decode", busiest, total_requests, 0.0)
        if key not in self._passes:
            q = 1 + (self.speculative.draft_tokens if self.speculative else 0)
            costs = self._decode_costs()
            p = Pass("decode", busiest * q, busiest * q, busiest, costs, False, total_requests * q)
            self._passes[key] = self._forward(p)
        return phase(self._passes[key])

    def _forward(self, p: Pass) -> tuple[Term, ...]:
        return forward(p, self.shape, self.split, self.rates, self.overheads, self.node, self.eb)

    @cached_property
    def kernels(self) -> StepKernels:
        return step_kernels(perf_facts().kernels, self.shape, self._decode_costs())

    @cached_property
    def overheads(self) -> Overheads:
        """The stack's fixed costs of a decode step at its execution mode."""
        s = self.stack
        per_kernel = s.cost("eager_kernel_seconds" if self.mode == "eager" else "kernel_seconds")
        return Overheads(
            per_kernel, self.kernels, s.cost("step_seconds"), s.cost("request_step_seconds")
        )

    def draft_pass(self, busiest: float) -> Phase | None:
        if self.speculative is None:
            return None
        costs = self._decode_costs()
        return phase(_draft_pass(self.shape, costs, busiest, self.rates, self.overheads))

    def decode(self, busiest: float, total_requests: float) -> DecodeStep:
        verify = self.decode_pass(busiest, total_requests)
        draft = self.draft_pass(busiest)
        drafts = self.speculative.draft_tokens if self.speculative else 0
        step = verify.seconds + (drafts * draft.seconds if draft else 0.0)
        return DecodeStep(verify.seconds, step, self.accepted)

    def chunk_terms(
        self, tokens: int, requests: int, at_experts: float | None = None
    ) -> tuple[Term, ...]:
        """One prefill pass of ``tokens`` prompt tokens over ``requests`` requests on a rank,
        the experts seeing ``at_experts`` tokens of every rank (None: this rank's alone)."""
        experts = float(tokens if at_experts is None else at_experts)
        key = ("prefill", tokens, requests, experts)
        if key not in self._passes:
            costs = self._prefill_costs()
            p = Pass("prefill", tokens, requests, requests, costs, True, experts)
            self._passes[key] = self._forward(p)
        return self._passes[key]

    def chunk(self, tokens: int, requests: int, at_experts: float | None = None) -> float:
        return total(self.chunk_terms(tokens, requests, at_experts))

    def prefill_chunk(self) -> Phase:
        """The first (full) chunk of one request's prompt, as the pages show it."""
        return phase(self.chunk_terms(min(self.prompt_tokens, self.budget), 1))

    def prompt_seconds(self, ratio: float = 1.0) -> float:
        """One request's prompt, in chunks of the budget, while the experts see ``ratio`` × its
        tokens (other DP ranks' prompts prefilled in the same steps); each chunk after the first
        (and the first after a cached prefix) re-expands the MLA latents of the tokens before
        it."""
        n, budget = self.prompt_tokens, self.budget
        full, last = divmod(n, budget)
        first_chunk = min(n, budget)
        own = self.chunk(first_chunk, 1, ratio * first_chunk) * max(full, 1)
        if full and last:
            own += self.chunk(last, 1, ratio * last)
        chunks = full + (1 if last else 0)
        past = self.cached_tokens
        first = 0 if past else 1
        flops = sum(
            mla_context_flops(self.kv, self.inp.cfg, past + j * budget)
            for j in range(first, chunks)
        )
        return own + flops / self.rates.bf16_flops

    def dispatch_seconds(self) -> float:
        """The host's dispatch of a prompt's prefill passes, every kernel of each (latency, not
        GPU time): compiled (a few launches per captured piece) or eager (op by op)."""
        name = "eager_kernel_seconds" if self.prefill_mode == "eager" else "prefill_kernel_seconds"
        passes = max(1, math.ceil(self.prompt_tokens / self.budget))
        return self.kernels.total * self.stack.cost(name) * passes

    def reload_seconds(self) -> float:
        """The host-tier hits' KV copied back to each GPU over its host link (each GPU loads
        its own share; a pipeline's stages load theirs side by side)."""
        if self.reuse is None or not self.reuse.host_tokens:
            return 0.0
        link = self.inp.gpu.host_link_bytes_per_s
        tokens = math.ceil(self.reuse.host_tokens)
        return self.kv.kv_bytes_at(tokens) / self.split.pp / link

    def costs(self) -> Costs:
        return Costs(
            decode=self.decode,
            chunk=self.chunk,
            prompt=self.prompt_seconds,
            dispatch_seconds=self.dispatch_seconds(),
            request_seconds=self.stack.cost("request_seconds"),
            reload_seconds=self.reload_seconds(),
            budget=self.budget,
            prompt_tokens=self.prompt_tokens,
        )
