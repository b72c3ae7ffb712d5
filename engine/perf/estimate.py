"""``estimate(inputs, split, replicas, concurrency, isl, osl, speculative) -> Speed``.

One copy of the model (``split``: TP × DP-attention × PP, EP) serves ``concurrency`` requests at
once, each with ``isl`` prompt tokens and ``osl`` output tokens, as a closed loop: a finished
request is replaced by the next (how ``vllm bench serve --max-concurrency`` and aiconfigurator's
benchmarks drive an engine). ``replicas`` copies serve the same load each.

Two halves: the op model (``engine.perf.opmodel``: each step as a sum of operations — weights
read by role, the routed experts a batch touches, KV or state read per the cache spec, FLOPs at
the weight and activation dtype, the collectives, the stack's fixed costs — against the GPU's
rates) and the scheduler (``engine.perf.scheduler``: waves, queueing, admission, prefix reuse,
DP ranks). This module joins them and writes the formula.

* Decode step: per layer group the bytes it reads against its FLOPs, max() of the two per
  operation, plus the collectives, a kernel floor per layer, the engine's cost per step and per
  running request; each request's KV at its mean context ISL + OSL/2.
* Prefill: the prompt in chunks of the engine's batched-token budget (compute-bound,
  attention's quadratic term included; an MLA chunk after the first re-expands the latents of
  the chunks before it, as the engines run MLA prefill un-absorbed). The host's dispatch of the
  prefill (every layer launched: compiled code or captured graphs in vLLM and SGLang >= 0.5.10,
  op by op in older SGLang and on AMD; ``data/perf.yaml`` engines) delays the first token but
  is not GPU time: the engines overlap host work with the GPU's.
* TTFT, TPOT and tokens/s: the scheduler's closed loop (``Scheduler.closed_loop``).
* Speculative decoding: a step verifies 1 + draft tokens per request after ``draft`` passes of
  the draft (the MTP layers, or one decoder layer for EAGLE) and commits the acceptance length
  kept in ``data/perf.yaml`` with its source.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

from engine import errors as E
from engine.engines import adapter
from engine.engines.memory import Split
from engine.errors import InputError
from engine.perf.balance import popularity_sigma, rank_skew
from engine.perf.calibration import Calibration
from engine.perf.factors import (
    Factors,
    error_band,
    perf_facts,
    prefill_mode,
)
from engine.perf.opmodel import CopyModel, Speculative
from engine.perf.rates import achieved_rates
from engine.perf.scheduler import Load, PrefixReuse, Scheduler, Timeline
from engine.perf.shape import PerfInputs, Shape, model_shape
from engine.perf.speed import Formula, Speed
from engine.perf.step import EpBalance
from engine.perf.terms import Term, total

__all__ = ["Speculative", "Speed", "chunk_budget", "copy_model", "estimate", "spread"]


def chunk_budget(inp: PerfInputs, split: Split) -> int:
    """Prompt tokens one step may prefill: the plan's chunk, else the engine's default for
    this GPU (vLLM's max_num_batched_tokens, SGLang's chunked_prefill_size)."""
    return inp.chunk_tokens or adapter(inp.engine).default_prefill_chunk(inp.gpu, split)


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.4g} ms"


def _sum_text(terms: tuple[Term, ...]) -> str:
    return " + ".join(_ms(t.seconds) for t in terms) + f" = {_ms(total(terms))}"


def _check(replicas: int, concurrency: int, isl: int, osl: int) -> None:
    for name, value in (
        ("replicas", replicas), ("concurrency", concurrency), ("isl", isl), ("osl", osl)
    ):  # fmt: skip
        if value < 1:
            raise InputError(
                name, f"a positive integer, got {value}", expects=E.POSITIVE(got=E.got(value))
            )


def copy_model(
    inp: PerfInputs,
    split: Split,
    isl: int,
    osl: int,
    speculative: Speculative | None = None,
    *,
    gpus_per_node: int | None = None,
    calibration: Calibration | None = None,
    factors: Factors | None = None,
    engine_version: str | None = None,
    runs_as: str | None = None,
    reuse: PrefixReuse | None = None,
    redundant_experts: int = 0,
    eager: bool = False,
) -> CopyModel:
    """The op model of one copy at this workload (see ``estimate`` for the arguments)."""
    f = factors or perf_facts().factors
    stack = f.stack(inp.engine, inp.gpu.vendor)
    shape = model_shape(inp, split)
    mode = prefill_mode(
        runs_as or inp.engine, engine_version, amd=inp.gpu.vendor == "amd",
        dp_attention=split.dp > 1, pipeline=split.pp > 1,
    )  # fmt: skip
    return CopyModel(
        inp=inp,
        split=split,
        shape=shape,
        kv=inp.kv_at(split.tp),
        rates=achieved_rates(inp.gpu, f, stack.cost("collective_latency_seconds"), calibration),
        stack=stack,
        mode="eager" if eager else "graph",
        prefill_mode="eager" if eager else mode,
        node=gpus_per_node or inp.gpu.node_gpus,
        isl=isl,
        osl=osl,
        speculative=speculative,
        budget=chunk_budget(inp, split),
        reuse=reuse,
        eb=ep_balance(shape, split, redundant_experts),
    )


def scheduler(inp: PerfInputs, split: Split, runs_as: str | None = None) -> Scheduler:
    """How one copy of ``split`` schedules on ``inp``'s engine (its DP balance: data/perf.yaml
    engines)."""
    balance = perf_facts().engines[runs_as or inp.engine].dp_balance
    return Scheduler(split.dp, split.pp, balance)


def ep_balance(shape: Shape, split: Split, redundant: int) -> EpBalance | None:
    """How routed tokens land on the EP ranks of ``split`` (None: experts sliced, or no MoE):
    the router's popularity (``data/perf.yaml`` routing) over the ranks, with ``redundant``
    EPLB copies."""
    x = shape.experts
    if x is None or not split.ep or x.group <= 1:
        return None
    routing = perf_facts().routing
    sigma = popularity_sigma(routing.hottest_over_mean, routing.experts)
    skew = rank_skew(x.count, x.group, redundant, sigma)
    return EpBalance(skew, (x.count + redundant) / x.group)


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
    reuse: PrefixReuse | None = None,
    redundant_experts: int = 0,
    eager: bool = False,
) -> Speed:
    """The speed of ``replicas`` copies cut as ``split``, each serving ``concurrency`` requests
    of ``isl`` input and ``osl`` output tokens. ``gpus_per_node``: where collectives leave
    NVLink for the network (default: the GPU's own domain, ``node_gpus``); ``max_running``: the
    requests one copy can run at once (an engine's request cap, or the users the KV pool holds;
    None: all of them. The engines admit by the KV a request holds now, not at its last token,
    so the memory model's users at the full context undercount what they run); ``factors``:
    other fitted factors than ``data/perf.yaml``'s (the fit script's trials, a calibration on a
    user's benchmark); ``prompts_per_client``: requests each client sends in the benchmark TTFT
    is measured by (None: data/perf.yaml's convention; 1: one wave, every prompt at once);
    ``engine_version``: the engine's version when not the pinned one (how it runs a prefill
    depends on it); ``runs_as``: the engine whose way of running a prefill (``data/perf.yaml``
    engines) applies when it is not the adapter's (the accuracy bench's TensorRT-LLM rows, run
    through the vLLM adapter); ``reuse``: prompt tokens per request a prefix cache holds (GPU
    hits not prefilled; host-tier hits not prefilled but copied back first);
    ``redundant_experts``: EPLB's redundant expert copies (``--ep-num-redundant-experts``);
    ``eager``: the launch turns CUDA graphs off (``--enforce-eager``, SGLang's
    ``--disable-cuda-graph``): every kernel of a step is launched by the host."""
    _check(replicas, concurrency, isl, osl)
    model = copy_model(
        inp, split, isl, osl, speculative, gpus_per_node=gpus_per_node, calibration=calibration,
        factors=factors, engine_version=engine_version, runs_as=runs_as, reuse=reuse,
        redundant_experts=redundant_experts, eager=eager,
    )  # fmt: skip
    waves = prompts_per_client or perf_facts().benchmark.prompts_per_client
    load = Load(concurrency, osl, waves, max_running)
    line = scheduler(inp, split, runs_as).closed_loop(model.costs(), load)
    return _speed(model, line, load, replicas, runs_as)


def _speed(
    model: CopyModel, line: Timeline, load: Load, replicas: int, runs_as: str | None
) -> Speed:
    """The Speed of ``model`` run as ``line``, with its phases, range and formula."""
    split, inp = model.split, model.inp
    decode = model.decode_pass(line.micro, math.ceil(line.running / split.pp))
    draft = model.draft_pass(line.micro)
    prefill = model.prefill_chunk()
    per_gpu = line.per_copy / split.gpus
    return Speed(
        ttft_ms=line.ttft * 1e3,
        tpot_ms=line.tpot * 1e3,
        output_tokens_per_s_per_user=1.0 / line.tpot,
        output_tokens_per_s_per_gpu=per_gpu,
        output_tokens_per_s=line.per_copy * replicas,
        decode_bound=decode.bound,
        prefill_bound=prefill.bound,
        decode=decode,
        draft=draft,
        prefill=prefill,
        accepted_tokens_per_step=model.accepted,
        chunk_tokens=model.budget,
        gpus=split.gpus * replicas,
        measured=model.rates.measured,
        formula=_formula(model, line, load, decode.terms, prefill.terms, draft),
        band=error_band(runs_as or inp.engine, inp.gpu.vendor),
    )


def _formula(
    model: CopyModel,
    line: Timeline,
    load: Load,
    decode_terms: tuple[Term, ...],
    prefill_terms: tuple[Term, ...],
    draft: Any,
) -> Formula:
    costs_latency = model.stack.cost("request_seconds")
    dispatch = model.dispatch_seconds()
    reload = model.reload_seconds()
    fixed_text = f"{_ms(costs_latency)} + {_ms(dispatch)}" + (f" + {_ms(reload)}" if reload else "")
    d = line.decode
    drafts = model.speculative.draft_tokens if model.speculative else 0
    osl, conc, running = load.osl, load.concurrency, line.running
    per_gpu = line.per_copy / model.split.gpus
    return Formula(
        decode_step=_sum_text(decode_terms),
        prefill_step=_sum_text(prefill_terms),
        ttft=(
            f"{_ms(line.steady)} + ({_ms(line.first_ttft)} − {_ms(line.steady)}) / {line.waves:g}"
            + (f" + {_ms(line.e2e)} × ({conc} / {running} − 1)" if line.admission else "")
            + f" = {_ms(line.ttft)} ; {_ms(line.steady)} = {fixed_text}"
            f" + {_ms(d.pass_seconds)} / 2"
            f" + {line.together} × {_ms(line.each)} + {_ms(line.queue)} ; {_ms(line.first_ttft)}"
            f" = {fixed_text} + {_ms(line.wave.mean_seconds)}"
            f" ({line.per_rank} × {model.prompt_tokens:,} / {model.budget:,}"
            f" × {_ms(line.wave.step_seconds)})"
        ),
        tpot=(
            f"max(({_ms(d.pass_seconds)} + {drafts} × {_ms(draft.seconds if draft else 0.0)})"
            f" / {d.accepted:.3g}, ({_ms(line.e2e)} − {_ms(line.ttft - line.admission)})"
            f" / ({osl} − 1)) = {_ms(line.tpot)}"
            if osl > 1
            else f"{_ms(line.tpot)}"
        ),
        per_gpu=f"{running} × {osl} / ({_ms(line.e2e)}) / {model.split.gpus} = {per_gpu:.4g} /s",
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
    reuse: PrefixReuse | None = None,
    redundant_experts: int = 0,
    max_running: int | None = None,
    engine_version: str | None = None,
    eager: bool = False,
    factors: Factors | None = None,
    prompts_per_client: float | None = None,
) -> Speed:
    """The speed of ``replicas`` copies serving ``requests`` at once between them, spread as
    requests spread: requests mod replicas copies run ceil(requests / replicas), the others
    floor(requests / replicas), and a copy with none is idle. Tokens/s is every copy's output
    (per GPU: over all the copies' GPUs, idle ones included); TTFT and TPOT are the means over
    the requests, as a benchmark of that load reports them, and tokens/s per user is 1 / TPOT.
    The phases, bounds and formulas under them are the busier copies'. ``max_running``: what one
    copy runs at once (the rest of its requests wait for a slot); ``factors``,
    ``prompts_per_client`` and the other arguments go to ``estimate`` as they are."""
    if replicas < 1 or requests < 1:
        bad = replicas if replicas < 1 else requests
        raise InputError(
            "replicas" if replicas < 1 else "requests",
            "a positive integer",
            expects=E.POSITIVE(got=E.got(bad)),
        )
    q, busier = divmod(requests, replicas)
    kw: dict[str, Any] = {
        "gpus_per_node": gpus_per_node, "calibration": calibration, "reuse": reuse,
        "redundant_experts": redundant_experts, "max_running": max_running,
        "engine_version": engine_version, "eager": eager,
        "factors": factors, "prompts_per_client": prompts_per_client,
    }  # fmt: skip
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
