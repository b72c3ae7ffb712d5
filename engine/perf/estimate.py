"""``estimate(inputs, split, replicas, concurrency, isl, osl, speculative) -> Speed``.

One copy of the model (``split``: TP × DP-attention × PP, EP) serves ``concurrency`` requests at
once, each with ``isl`` prompt tokens and ``osl`` output tokens, as a closed loop: a finished
request is replaced by the next (how ``vllm bench serve --max-concurrency`` and aiconfigurator's
benchmarks drive an engine). ``replicas`` copies serve the same load each.

* Decode step: per layer group the bytes it reads (weights of every role on the GPU, the routed
  experts the step's tokens touch, each request's KV or state at its mean context ISL + OSL/2)
  against its FLOPs, max() of the two per operation; plus the collectives, a kernel floor per
  layer, the engine's cost per step and per running request.
* Prefill: the prompt in chunks of the engine's batched-token budget, each chunk a pass of the
  same operations at that many tokens (compute-bound, attention's quadratic term included; an
  MLA chunk after the first re-expands the latents of the chunks before it, as the engines run
  MLA prefill un-absorbed). The host's dispatch of the prefill (every layer launched: compiled
  code or captured graphs in vLLM and SGLang >= 0.5.10, op by op in older SGLang and on AMD;
  ``data/perf.yaml`` engines) delays the first token but is not GPU time: the engines overlap
  host work with the GPU's.
* TTFT, as a benchmark of B clients each sending ``prompts_per_client`` requests measures it
  (``data/perf.yaml`` benchmark: 10, InferenceMAX's client): a fixed cost per request, the
  dispatch, then
  - for the first wave (one request in ``prompts_per_client``), all B arrive at once and are
    prefilled packed up to the budget, request i after ceil(i · ISL / budget) steps;
  - afterwards requests arrive as others finish, about B / OSL per decode step, prefilled
    together: half the decode step in flight, their prefill step, and the wait behind the
    prefills of the rank ahead of them (M/D/1 at the prefills' share of the cycle, at most
    half the others).
  With ``max_running`` below the concurrency (the KV pool or the engine's request cap holds
  fewer), each client also waits for a running request to finish: it cycles concurrency /
  max_running request times. Not counted: the client's and the network's time, and prefix
  caching (every prompt is prefilled whole).
* The closed loop: one cycle of a client is the GPU's work for every running request: its
  prefill and (OSL − 1) decode steps (a closed loop keeps the GPU busy), E2E = that work, TPOT =
  (E2E − TTFT) / (OSL − 1): a request's decode phase pays for the prefills the GPU runs
  meanwhile. Output tokens/s = running × OSL / E2E.
* Speculative decoding: a step verifies 1 + draft tokens per request after ``draft`` passes of
  the draft (the MTP layers, or one decoder layer for EAGLE) and commits the acceptance length
  kept in ``data/perf.yaml`` with its source.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from engine import errors as E
from engine.engines import adapter
from engine.engines.memory import Split
from engine.errors import InputError
from engine.kv.sizing import KvSizing
from engine.perf.attention import GroupCost, decode_costs, mla_context_flops, prefill_costs
from engine.perf.calibration import Calibration
from engine.perf.factors import (
    Factors,
    SpecMethod,
    acceptance,
    perf_facts,
    prefill_layer_seconds,
    prefill_mode,
)
from engine.perf.rates import Rates, achieved_rates
from engine.perf.shape import PerfInputs, Shape, model_shape
from engine.perf.step import Pass, forward
from engine.perf.terms import PhaseBound, Term, fixed, phase_bound, roofline, total


@dataclass(frozen=True)
class Speculative:
    """MTP or EAGLE-3 with ``draft_tokens`` proposed per step."""

    method: SpecMethod
    draft_tokens: int


@dataclass(frozen=True)
class Phase:
    """One step of a phase: its terms, their sum and the bound that takes the most time."""

    seconds: float
    bound: PhaseBound
    terms: tuple[Term, ...]


@dataclass(frozen=True)
class Formula:
    """The numbers behind each result, as numbers, units and operators only (the pages word
    the left-hand sides per language): one decode step, one prefill chunk, TTFT, TPOT and the
    output tokens per second per GPU."""

    decode_step: str
    prefill_step: str
    ttft: str
    tpot: str
    per_gpu: str

    @property
    def text(self) -> str:
        return " ; ".join((self.decode_step, self.prefill_step, self.ttft, self.tpot, self.per_gpu))


@dataclass(frozen=True)
class Speed:
    ttft_ms: float
    tpot_ms: float
    output_tokens_per_s_per_user: float
    output_tokens_per_s_per_gpu: float
    output_tokens_per_s: float  # over every replica
    decode_bound: PhaseBound
    prefill_bound: PhaseBound
    decode: Phase  # one decode step (the verify pass with speculative decoding)
    draft: Phase | None  # one draft pass
    prefill: Phase  # one full prefill chunk
    accepted_tokens_per_step: float
    chunk_tokens: int
    gpus: int  # over every replica
    measured: bool  # rates from a Calibration, not catalog × fitted fractions
    formula: Formula

    @property
    def bound(self) -> dict[str, PhaseBound]:
        return {"prefill": self.prefill_bound, "decode": self.decode_bound}

    def to_json(self) -> dict[str, Any]:
        def terms(p: Phase | None) -> list[dict[str, Any]]:
            if p is None:
                return []
            return [
                {
                    "op": t.code,
                    "bytes": t.bytes,
                    "flops": t.flops,
                    "seconds": t.seconds,
                    "bound": t.bound,
                    "count": t.count,
                }
                for t in p.terms
            ]

        return {
            "ttft_ms": self.ttft_ms,
            "tpot_ms": self.tpot_ms,
            "output_tokens_per_s_per_user": self.output_tokens_per_s_per_user,
            "output_tokens_per_s_per_gpu": self.output_tokens_per_s_per_gpu,
            "output_tokens_per_s": self.output_tokens_per_s,
            "bound": self.bound,
            "formula": {
                "terms": terms(self.prefill) + terms(self.decode) + terms(self.draft),
                "decode_step": self.formula.decode_step,
                "prefill_step": self.formula.prefill_step,
                "ttft": self.formula.ttft,
                "tpot": self.formula.tpot,
                "output_tokens_per_s_per_gpu": self.formula.per_gpu,
            },
        }


def chunk_budget(inp: PerfInputs, split: Split) -> int:
    """Prompt tokens one step may prefill: the plan's chunk, else the engine's default for
    this GPU (vLLM's max_num_batched_tokens, SGLang's chunked_prefill_size)."""
    return inp.chunk_tokens or adapter(inp.engine).default_prefill_chunk(inp.gpu, split)


def _phase(terms: tuple[Term, ...]) -> Phase:
    return Phase(total(terms), phase_bound(terms), terms)


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.4g} ms"


def _sum_text(terms: tuple[Term, ...]) -> str:
    return " + ".join(_ms(t.seconds) for t in terms) + f" = {_ms(total(terms))}"


def _draft_pass(
    shape: Shape,
    kv: KvSizing,
    costs: list[GroupCost],
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


def _first_wave(
    n: int,
    isl: int,
    budget: int,
    own: float,
    chunk: Callable[[int, int], tuple[Term, ...]],
) -> tuple[float, float, float]:
    """The mean time to first token of ``n`` requests that arrive together, the time of one of
    the steps they are prefilled in, and the GPU time per prompt: prompts shorter than the
    budget are packed ``budget // ISL`` to a step (request i is done after ceil(i / k) steps),
    longer ones run one after the other (request i after i of them)."""
    if isl >= budget:
        return own * (n + 1) / 2, own, own
    k = budget // isl
    per_step = min(k, n)
    step = total(chunk(per_step * isl, per_step))
    q, r = divmod(n, k)
    mean_steps = (k * q * (q + 1) / 2 + r * (q + 1)) / n
    return mean_steps * step, step, step / per_step


def estimate(
    inp: PerfInputs,
    split: Split,
    replicas: int,
    concurrency: int,
    isl: int,
    osl: int,
    speculative: Speculative | None = None,
    *,
    gpus_per_node: int | None = None,
    max_running: int | None = None,
    calibration: Calibration | None = None,
    factors: Factors | None = None,
    prompts_per_client: float | None = None,
    engine_version: str | None = None,
    runs_as: str | None = None,
) -> Speed:
    """The speed of ``replicas`` copies cut as ``split``, each serving ``concurrency`` requests
    of ``isl`` input and ``osl`` output tokens. ``gpus_per_node``: where collectives leave
    NVLink for the network (default: the GPU's own domain, ``node_gpus``); ``max_running``: the
    requests one copy can run at once (an engine's request cap, or the users the KV pool holds;
    None: all of them. The engines admit by the KV a request holds now, not at its last token,
    so the memory model's users at the full context undercount what they run); ``factors``:
    other fitted factors than ``data/perf.yaml``'s (the fit script's trials);
    ``prompts_per_client``: requests each client sends in the benchmark TTFT is measured by
    (None: data/perf.yaml's convention; 1: one wave, every prompt at once); ``engine_version``:
    the engine's version when not the pinned one (how it runs a prefill depends on it);
    ``runs_as``: the engine whose way of running a prefill (``data/perf.yaml`` engines) applies
    when it is not the adapter's (the accuracy bench's TensorRT-LLM rows, run through the vLLM
    adapter)."""
    for name, value in (("replicas", replicas), ("concurrency", concurrency), ("isl", isl)):
        if value < 1:
            raise InputError(name, E.POSITIVE(got=E.got(value)))
    if osl < 1:
        raise InputError("osl", E.POSITIVE(got=E.got(osl)))
    f = factors or perf_facts().factors
    rates = achieved_rates(inp.gpu, f, calibration)
    node = gpus_per_node or inp.gpu.node_gpus
    shape = model_shape(inp, split)
    kv = inp.kv_at(split.tp)
    cfg, arch = inp.cfg, inp.arch

    # --- decode -----------------------------------------------------------------------------
    # the engine runs at most ``max_running`` of the clients' requests at once; the rest wait
    running = concurrency if max_running is None else max(1, min(concurrency, max_running))
    per_rank = math.ceil(running / split.dp)
    micro = math.ceil(per_rank / split.pp)  # a pipeline keeps pp micro-batches in flight
    context = isl + (osl + 1) / 2
    costs = decode_costs(kv, cfg, arch, context)
    drafts = speculative.draft_tokens if speculative else 0
    accepted = 1.0
    if speculative is not None:
        accepted = min(
            acceptance(speculative.method, drafts).accepted_tokens_per_step, drafts + 1.0
        )
    q = 1 + drafts
    step = Pass("decode", micro * q, micro * q, micro, tuple(costs), False)
    decode = _phase(forward(step, shape, split, rates, f, node))
    draft: Phase | None = None
    step_seconds = decode.seconds
    if speculative is not None:
        draft = _phase(_draft_pass(shape, kv, costs, micro, rates, f))
        step_seconds += drafts * draft.seconds
    per_token = step_seconds / accepted

    # --- prefill ----------------------------------------------------------------------------
    budget = chunk_budget(inp, split)
    pcosts = tuple(prefill_costs(kv, cfg, arch, isl))

    def chunk(tokens: int, requests: int) -> tuple[Term, ...]:
        p = Pass("prefill", tokens, requests, requests, pcosts, True)
        return forward(p, shape, split, rates, f, node)

    # one request alone: its prompt in chunks of the budget
    full_chunks, last = divmod(isl, budget)
    one = chunk(min(isl, budget), 1)
    own = total(one) if not full_chunks else full_chunks * total(one)
    if full_chunks and last:
        own += total(chunk(last, 1))
    # each chunk after the first re-expands the MLA latents of the chunks before it
    chunks = full_chunks + (1 if last else 0)
    context_flops = sum(mla_context_flops(kv, cfg, j * budget) for j in range(1, chunks))
    own += context_flops / rates.bf16_flops
    prefill = _phase(one)
    # the host's dispatch of a request's prefill (no CUDA graph: every layer launched, op by op
    # when the engine runs prefill eagerly) delays its first token; the engines overlap host
    # work with the GPU's (vLLM's async scheduling, SGLang's overlap schedule), so it is latency,
    # not GPU time (aiconfigurator adds it the same way, per request, to TTFT only)
    mode = prefill_mode(
        runs_as or inp.engine, engine_version, amd=inp.gpu.vendor == "amd",
        dp_attention=split.dp > 1, pipeline=split.pp > 1,
    )  # fmt: skip
    per_layer = prefill_layer_seconds(f, mode)
    dispatch = shape.layers * per_layer * max(1, math.ceil(isl / budget))
    fixed_s = f.request_seconds.value
    waves = prompts_per_client or perf_facts().benchmark.prompts_per_client
    # the first wave: every client's first request at once, the prompts packed up to the budget
    # per step; request i has its first token at the end of step ceil(i · ISL / budget)
    first, wave_step, wave_each = _first_wave(per_rank, isl, budget, own, chunk)
    first_ttft = fixed_s + dispatch + first / split.pp
    # after it, requests arrive as others finish: about running / OSL of them per decode step,
    # prefilled together (up to the budget); a request waits for the step in flight, its own
    # prefill, and the prefills of its rank ahead of it (utilisation rho: an M/D/1 wait)
    together = max(1, min(per_rank / osl, budget // isl, per_rank))
    if together > 1:
        k = int(together)
        each = total(chunk(k * isl, k)) / k
    else:
        k, each = 1, own
    decode_time = (osl - 1) * per_token
    prefills = per_rank * split.dp  # DP-attention ranks meet at the MoE layers
    gpu_prefill = (each + (wave_each - each) / waves) / split.pp
    # a client's cycle: its request's fixed cost and dispatch (latency, not GPU time), half the
    # step in flight, and the GPU's work: every running request's prefill, (OSL − 1) decodes
    work = fixed_s + dispatch + decode.seconds / 2 + prefills * gpu_prefill + decode_time
    rho = min(per_rank * gpu_prefill / work, 0.95)
    queue = min(rho / (2 * (1 - rho)), (per_rank - 1) / 2) * own / split.pp
    steady = fixed_s + dispatch + decode.seconds / 2 + k * each + queue
    ttft = steady + (first_ttft - steady) / waves

    # --- the closed loop --------------------------------------------------------------------
    # one cycle of a client is the GPU's work for every request: its prefill and (OSL - 1)
    # decode steps (a closed loop keeps the GPU busy), whether the prefills came in a wave or
    # one by one; what is not the first token is the decode phase
    e2e = max(work, ttft + decode_time)
    tpot = (e2e - ttft) / (osl - 1) if osl > 1 else per_token
    # admission: clients beyond the running requests wait whole requests for a slot; each
    # client's cycle is concurrency / running requests long, the engine's throughput unchanged
    admission = e2e * (concurrency / running - 1)
    ttft += admission
    per_copy = running * osl / e2e
    per_gpu = per_copy / split.gpus
    speed_formula = Formula(
        decode_step=_sum_text(decode.terms),
        prefill_step=_sum_text(prefill.terms),
        ttft=(
            f"{_ms(steady)} + ({_ms(first_ttft)} − {_ms(steady)}) / {waves:g}"
            + (f" + {_ms(e2e)} × ({concurrency} / {running} − 1)" if admission else "")
            + f" = {_ms(ttft)} ; {_ms(steady)} = {_ms(fixed_s)} + {_ms(dispatch)}"
            f" + {_ms(decode.seconds)} / 2"
            f" + {k} × {_ms(each)} + {_ms(queue)} ; {_ms(first_ttft)} = {_ms(fixed_s)}"
            f" + {_ms(dispatch)} + {_ms(first)}"
            f" ({per_rank} × {isl:,} / {budget:,} × {_ms(wave_step)})"
        ),
        tpot=(
            f"max(({_ms(decode.seconds)} + {drafts} × {_ms(draft.seconds if draft else 0.0)})"
            f" / {accepted:.3g}, ({_ms(e2e)} − {_ms(ttft - admission)}) / ({osl} − 1))"
            f" = {_ms(tpot)}"
            if osl > 1
            else f"{_ms(tpot)}"
        ),
        per_gpu=(f"{running} × {osl} / ({_ms(e2e)}) / {split.gpus} = {per_gpu:.4g} /s"),
    )
    return Speed(
        ttft_ms=ttft * 1e3,
        tpot_ms=tpot * 1e3,
        output_tokens_per_s_per_user=1.0 / tpot,
        output_tokens_per_s_per_gpu=per_gpu,
        output_tokens_per_s=per_copy * replicas,
        decode_bound=decode.bound,
        prefill_bound=prefill.bound,
        decode=decode,
        draft=draft,
        prefill=prefill,
        accepted_tokens_per_step=accepted,
        chunk_tokens=budget,
        gpus=split.gpus * replicas,
        measured=rates.measured,
        formula=speed_formula,
    )


def spread(
    inp: PerfInputs,
    split: Split,
    replicas: int,
    requests: int,
    isl: int,
    osl: int,
    speculative: Speculative | None = None,
    *,
    gpus_per_node: int | None = None,
    calibration: Calibration | None = None,
) -> Speed:
    """The speed of ``replicas`` copies serving ``requests`` at once between them, spread as
    requests spread: requests mod replicas copies run ceil(requests / replicas), the others
    floor(requests / replicas), and a copy with none is idle. Tokens/s is every copy's output
    (per GPU: over all the copies' GPUs, idle ones included); TTFT and TPOT are the means over
    the requests, as a benchmark of that load reports them, and tokens/s per user is 1 / TPOT.
    The phases, bounds and formulas under them are the busier copies'."""
    if replicas < 1 or requests < 1:
        field, value = ("replicas", replicas) if replicas < 1 else ("requests", requests)
        raise InputError(field, E.POSITIVE(got=E.got(value)))
    q, busier = divmod(requests, replicas)
    kw: dict[str, Any] = {"gpus_per_node": gpus_per_node, "calibration": calibration}
    if not busier:
        return estimate(inp, split, replicas, q, isl, osl, speculative, **kw)
    hi = estimate(inp, split, 1, q + 1, isl, osl, speculative, **kw)
    lo = estimate(inp, split, 1, q, isl, osl, speculative, **kw) if q else None
    rest = replicas - busier
    lo_tps = lo.output_tokens_per_s if lo else 0.0
    total_tps = busier * hi.output_tokens_per_s + rest * lo_tps
    gpus = split.gpus * replicas

    def mean(hi_v: float, lo_v: float) -> tuple[float, str]:
        value = (busier * (q + 1) * hi_v + rest * q * lo_v) / requests
        return value, (
            f"({busier * (q + 1)} × {hi_v:.4g} ms + {rest * q} × {lo_v:.4g} ms) / {requests}"
            f" = {value:.4g} ms"
        )

    ttft, ttft_text = mean(hi.ttft_ms, lo.ttft_ms if lo else 0.0)
    tpot, tpot_text = mean(hi.tpot_ms, lo.tpot_ms if lo else 0.0)
    per_gpu = total_tps / gpus
    formula = replace(
        hi.formula,
        ttft=f"{ttft_text} ; {hi.formula.ttft}",
        tpot=f"{tpot_text} ; {hi.formula.tpot}",
        per_gpu=(
            f"({busier} × {hi.output_tokens_per_s:.4g} /s + {rest} × {lo_tps:.4g} /s)"
            f" / ({replicas} × {split.gpus}) = {per_gpu:.4g} /s ; {hi.formula.per_gpu}"
        ),
    )
    return replace(
        hi,
        ttft_ms=ttft,
        tpot_ms=tpot,
        output_tokens_per_s_per_user=1000.0 / tpot,
        output_tokens_per_s_per_gpu=per_gpu,
        output_tokens_per_s=total_tps,
        gpus=gpus,
        formula=formula,
    )
