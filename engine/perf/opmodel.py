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

from engine.engines.memory import Split
from engine.kv.sizing import KvSizing
from engine.perf.attention import GroupCost, decode_costs, mla_context_flops, prefill_costs
from engine.perf.factors import Factors, SpecMethod, acceptance
from engine.perf.rates import Rates
from engine.perf.scheduler import Costs, DecodeStep, PrefixReuse
from engine.perf.shape import PerfInputs, Shape
from engine.perf.speed import Phase
from engine.perf.step import Pass, forward
from engine.perf.terms import Term, fixed, phase_bound, roofline, total


@dataclass(frozen=True)
class Speculative:
    """MTP or EAGLE-3 with ``draft_tokens`` proposed per step."""

    method: SpecMethod
    draft_tokens: int


def phase(terms: tuple[Term, ...]) -> Phase:
    return Phase(total(terms), phase_bound(terms), terms)


def _draft_pass(
    shape: Shape,
    costs: tuple[GroupCost, ...],
    requests: float,
    rates: Rates,
    f: Factors,
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
    terms.append(fixed("draft.overhead.layers", f.layer_seconds.value))
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
    f: Factors
    node: int  # GPUs per node: where collectives leave the scale-up domain
    isl: int
    osl: int
    speculative: Speculative | None
    budget: int
    reuse: PrefixReuse | None
    dispatch_layer_seconds: float  # the host's dispatch of one layer of a prefill pass
    # passes already run, by their arguments (the scheduler and the page ask for the same ones)
    _groups: dict[str, tuple[GroupCost, ...]] = field(
        default_factory=dict, repr=False, compare=False
    )
    _passes: dict[tuple[str, float, float], tuple[Term, ...]] = field(
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
        key = ("decode", busiest, total_requests)
        if key not in self._passes:
            q = 1 + (self.speculative.draft_tokens if self.speculative else 0)
            costs = self._decode_costs()
            p = Pass("decode", busiest * q, busiest * q, busiest, costs, False, total_requests * q)
            self._passes[key] = forward(p, self.shape, self.split, self.rates, self.f, self.node)
        return phase(self._passes[key])

    def draft_pass(self, busiest: float) -> Phase | None:
        if self.speculative is None:
            return None
        return phase(_draft_pass(self.shape, self._decode_costs(), busiest, self.rates, self.f))

    def decode(self, busiest: float, total_requests: float) -> DecodeStep:
        verify = self.decode_pass(busiest, total_requests)
        draft = self.draft_pass(busiest)
        drafts = self.speculative.draft_tokens if self.speculative else 0
        step = verify.seconds + (drafts * draft.seconds if draft else 0.0)
        return DecodeStep(verify.seconds, step, self.accepted)

    def chunk_terms(self, tokens: int, requests: int) -> tuple[Term, ...]:
        """One prefill pass of ``tokens`` prompt tokens over ``requests`` requests on a rank."""
        key = ("prefill", tokens, requests)
        if key not in self._passes:
            p = Pass("prefill", tokens, requests, requests, self._prefill_costs(), True)
            self._passes[key] = forward(p, self.shape, self.split, self.rates, self.f, self.node)
        return self._passes[key]

    def chunk(self, tokens: int, requests: int) -> float:
        return total(self.chunk_terms(tokens, requests))

    def prefill_chunk(self) -> Phase:
        """The first (full) chunk of one request's prompt, as the pages show it."""
        return phase(self.chunk_terms(min(self.prompt_tokens, self.budget), 1))

    def prompt_seconds(self) -> float:
        """One request's prompt alone, in chunks of the budget; each chunk after the first (and
        the first after a cached prefix) re-expands the MLA latents of the tokens before it."""
        n, budget = self.prompt_tokens, self.budget
        full, last = divmod(n, budget)
        own = self.chunk(min(n, budget), 1) * max(full, 1)
        if full and last:
            own += self.chunk(last, 1)
        chunks = full + (1 if last else 0)
        past = self.cached_tokens
        first = 0 if past else 1
        flops = sum(
            mla_context_flops(self.kv, self.inp.cfg, past + j * budget)
            for j in range(first, chunks)
        )
        return own + flops / self.rates.bf16_flops

    def dispatch_seconds(self) -> float:
        """The host's dispatch of a prompt's prefill passes (latency, not GPU time)."""
        return (
            self.shape.layers
            * self.dispatch_layer_seconds
            * max(1, math.ceil(self.prompt_tokens / self.budget))
        )

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
            prompt_seconds=self.prompt_seconds(),
            dispatch_seconds=self.dispatch_seconds(),
            request_seconds=self.f.request_seconds.value,
            reload_seconds=self.reload_seconds(),
            budget=self.budget,
            prompt_tokens=self.prompt_tokens,
        )
