"""The scheduler half of the speed model: what one copy of the model runs in each step, and
when each request gets its first token and its last, over the op model's costs (``Costs``).

vLLM's and SGLang's schedulers (vllm/v1/core/sched/scheduler.py, SGLang's scheduler.py) admit
requests while the KV pool and the request cap (``--max-num-seqs`` / ``--max-running-requests``)
hold them, prefill prompts in chunks of a token budget, and decode every running request once per
step. Modelled here as a closed loop (``vllm bench serve --max-concurrency``: a client sends its
next request when its last finishes), as InferenceMAX's client drives it (``prompts_per_client``
requests per client, all B clients' first at once):

* **waves**: the first wave (every client at once) is prefilled packed up to the budget, request
  i after ceil(i · ISL / budget) steps; afterwards about B / OSL requests arrive per decode step;
* **queueing**: a request waits for the step in flight, its own prefill, and the prefills of its
  rank ahead of it (an M/D/1 wait at the prefills' share of the cycle);
* **admission**: clients beyond what the copy runs at once wait whole requests for a slot;
* **prefix reuse** (``PrefixReuse``): prompt tokens found in the GPU's prefix cache are not
  prefilled; those found in a CPU tier are not prefilled either, but their KV is copied back
  over the GPU's host link first (the op model's ``reload_seconds``);
* **pools**: a prefill-only worker's TTFT at a request rate and a decode-only worker's TPOT at a
  concurrency, asked apart (``prefill_pool``, ``decode_pool``), for disaggregated serving.

The op model (``engine.perf.opmodel``) owns every byte, FLOP and fixed cost; nothing here knows
a layer, a dtype or a GPU.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from engine import errors as E
from engine.errors import InputError
from engine.perf.balance import DpBalance, busiest_rank, mean_ceil_share


@dataclass(frozen=True)
class PrefixReuse:
    """Mean prompt tokens per request found in a prefix cache: ``gpu_tokens`` in the GPU's
    (neither prefilled nor copied) and ``host_tokens`` in a CPU tier (not prefilled; their KV
    bytes are copied host → GPU over the GPU's host link before the prefill)."""

    gpu_tokens: float
    host_tokens: float = 0.0

    def __post_init__(self) -> None:
        for name in ("gpu_tokens", "host_tokens"):
            value = getattr(self, name)
            if not math.isfinite(value):
                raise InputError(f"reuse.{name}", "a finite number", expects=E.FINITE())
            if value < 0:
                raise InputError(f"reuse.{name}", "at least 0", expects=E.AT_LEAST(low=0))

    @property
    def tokens(self) -> float:
        return self.gpu_tokens + self.host_tokens

    def prefilled(self, isl: int) -> int:
        """Prompt tokens each request still prefills: the prompt less its hits, at least the
        last token (an engine computes the last prompt token's logits even on a full hit)."""
        return max(1, isl - math.floor(min(self.tokens, isl)))


@dataclass(frozen=True)
class DecodeStep:
    """One decode step on the busiest rank: the verify pass, the whole step (with its drafts)
    and the tokens it commits per request."""

    pass_seconds: float
    step_seconds: float
    accepted: float

    @property
    def per_token(self) -> float:
        return self.step_seconds / self.accepted


@dataclass(frozen=True)
class Costs:
    """What the op model charges for one copy: ``decode(busiest, total)`` a decode step with
    ``busiest`` requests in the busiest attention rank's micro-batch and ``total`` over every
    rank's; ``chunk(tokens, requests, at_experts)`` the GPU seconds of one prefill pass of
    ``tokens`` on one rank while the experts see ``at_experts`` tokens of every rank;
    ``prompt(ratio)`` one request's prompt (chunked) while the experts see ``ratio`` × its
    tokens; and the latencies that are not GPU time: the host's dispatch of a prompt, the fixed
    cost of a request, the host-tier reload."""

    decode: Callable[[float, float], DecodeStep]
    chunk: Callable[[int, int, float], float]
    prompt: Callable[[float], float]
    dispatch_seconds: float
    request_seconds: float
    reload_seconds: float
    budget: int  # prompt tokens one step may prefill on one rank
    prompt_tokens: int  # tokens one request prefills (its prompt less its prefix hits)


@dataclass(frozen=True)
class Load:
    """The closed loop: ``concurrency`` clients, each request ``osl`` output tokens, each client
    sending ``prompts_per_client`` requests; ``max_running``: what one copy runs at once (None:
    every client)."""

    concurrency: int
    osl: int
    prompts_per_client: float
    max_running: int | None = None


@dataclass(frozen=True)
class FirstWave:
    """Every client's first request at once: the mean wait for its first token (GPU time),
    one of the steps it is prefilled in, and the GPU seconds per prompt in them."""

    mean_seconds: float
    step_seconds: float
    per_prompt: float


@dataclass(frozen=True)
class Timeline:
    """What the closed loop gives, with every part the formula quotes."""

    running: int  # requests the copy runs at once
    per_rank: int  # on each attention rank when spread evenly (the first wave's)
    busiest: float  # on the busiest attention rank as the engine spreads them
    micro: int  # in one pipeline micro-batch of that rank
    arrivals: float  # requests arriving per decode step over the copy
    share: float  # of them, expected on the busiest rank (E[ceil(A / DP)])
    decode: DecodeStep
    wave: FirstWave
    first_ttft: float  # the first wave's mean TTFT
    together: int  # requests prefilled together in the steady state
    each: float  # GPU seconds per prompt when prefilled together
    stall: float  # GPU seconds per cycle the decodes wait for prefills
    queue: float  # the wait behind the rank's other prefills
    steady: float  # the steady state's TTFT
    waves: float  # prompts per client
    work: float  # a client's cycle: every running request's prefill and decodes
    e2e: float
    ttft: float  # admission included
    admission: float
    tpot: float
    per_copy: float  # output tokens/s of the copy


@dataclass(frozen=True)
class Scheduler:
    """How one copy schedules: ``dp`` attention ranks (DP-attention) that meet at the MoE
    layers, spread requests as ``balance`` says (``engine.perf.balance``), ``pp`` pipeline stages
    (micro-batches in flight).

    DP-attention ranks each prefill and decode only their own requests, but a step ends when
    the busiest rank's does: a decode step runs the busiest rank's requests
    (``busiest_rank``), and a prefill on one rank holds every other rank at the next MoE layer
    (SGLang's ``--enable-prefill-delayer``, off by default, exists to line them up). Prompts
    arriving in the same step are dealt out over the ranks and prefilled side by side, so the
    decodes wait for the busiest rank's share of a step's arrivals (``mean_ceil_share``), while
    the experts see every rank's prompt tokens."""

    dp: int = 1
    pp: int = 1
    balance: DpBalance = "least_loaded"

    def first_wave(self, costs: Costs, n: int) -> FirstWave:
        """``n`` requests arrive together on each rank, the ranks prefilling side by side:
        prompts shorter than the budget are packed ``budget // ISL`` to a step (request i is
        done after ceil(i / k) steps), longer ones run one after the other (request i after i
        of them)."""
        isl, budget, dp = costs.prompt_tokens, costs.budget, self.dp
        if isl >= budget:
            own = costs.prompt(dp)
            return FirstWave(own * (n + 1) / 2, own, own)
        k = budget // isl
        per_step = min(k, n)
        step = costs.chunk(per_step * isl, per_step, dp * per_step * isl)
        q, r = divmod(n, k)
        mean_steps = (k * q * (q + 1) / 2 + r * (q + 1)) / n
        return FirstWave(mean_steps * step, step, step / per_step)

    def prefill_tokens_per_s(self, costs: Costs, requests: int) -> float:
        """Prompt tokens/s of a wave of ``requests`` prompts sent at once, dealt out over the
        ranks, each rank prefilling its own side by side: the prompts over the time the wave's
        last prompt is done."""
        n = math.ceil(requests / self.dp)
        isl, budget = costs.prompt_tokens, costs.budget
        if isl >= budget:
            seconds = n * costs.prompt(self.dp)
        else:
            per_step = min(budget // isl, n)
            step = costs.chunk(per_step * isl, per_step, self.dp * per_step * isl)
            seconds = math.ceil(n / per_step) * step
        return requests * isl / (seconds / self.pp)

    def closed_loop(self, costs: Costs, load: Load) -> Timeline:
        """TTFT, TPOT and the copy's output tokens/s with ``load`` running.

        One cycle of a client is the GPU's work for every running request: its prefill and
        (OSL − 1) decode steps (a closed loop keeps the GPU busy); E2E = that work, TPOT =
        (E2E − TTFT) / (OSL − 1): a request's decode phase pays for the prefills the GPU runs
        meanwhile. TTFT is the steady state's, plus the first wave's excess over it spread over
        the client's prompts; clients beyond the running requests wait whole requests."""
        dp, pp, osl = self.dp, self.pp, load.osl
        cap = load.max_running
        running = load.concurrency if cap is None else max(1, min(load.concurrency, cap))
        per_rank = math.ceil(running / dp)
        busiest = busiest_rank(running, dp, self.balance)
        micro = math.ceil(busiest / pp)  # a pipeline keeps pp micro-batches in flight
        step = costs.decode(micro, math.ceil(running / pp))
        isl, budget = costs.prompt_tokens, costs.budget
        latency = costs.request_seconds + costs.dispatch_seconds + costs.reload_seconds
        waves = load.prompts_per_client
        wave = self.first_wave(costs, per_rank)
        first_ttft = latency + wave.mean_seconds / pp
        # after it, requests arrive as others finish: about running / OSL per decode step,
        # dealt out over the ranks; the busiest rank prefills its share, packed up to the
        # budget, while the experts see every rank's
        arrivals = running / osl
        share = mean_ceil_share(arrivals, dp)
        ratio = arrivals / share if share else 1.0
        together = max(1, min(share, budget // isl, per_rank))
        if together > 1:
            k = int(together)
            each = costs.chunk(k * isl, k, ratio * k * isl) / k
        else:
            k, each = 1, costs.prompt(ratio)
        decode_time = (osl - 1) * step.per_token
        # the decodes wait for the prefills of every step of a cycle, the first wave's (every
        # rank's at once) in one of the client's prompts
        steady_stall = osl * share * each
        stall = (steady_stall + (per_rank * wave.per_prompt - steady_stall) / waves) / pp
        work = latency + step.pass_seconds / 2 + stall + decode_time
        # a request waits for the step in flight, its own prefill, and the prefills of its rank
        # ahead of it (an M/D/1 wait at the prefills' share of the cycle, at most half the rank)
        rho = min(stall / work, 0.95)
        queue = min(rho / (2 * (1 - rho)), (per_rank - 1) / 2) * costs.prompt(ratio) / pp
        steady = latency + step.pass_seconds / 2 + k * each + queue
        ttft = steady + (first_ttft - steady) / waves
        e2e = max(work, ttft + decode_time)
        tpot = (e2e - ttft) / (osl - 1) if osl > 1 else step.per_token
        admission = e2e * (load.concurrency / running - 1)
        return Timeline(
            running, per_rank, busiest, micro, arrivals, share, step, wave, first_ttft, k, each,
            stall, queue, steady, waves, work, e2e, ttft + admission, admission, tpot,
            running * osl / e2e,
        )  # fmt: skip

    def prefill_pool(self, costs: Costs, rate: float) -> float:
        """Mean TTFT (s) of a prefill-only copy fed ``rate`` requests/s (Poisson arrivals, at
        least 0): its latencies, the prompt's prefill on a rank, and the M/D/1 wait behind the
        others' (utilisation: rate × prompt seconds over the ranks; at or above 1 it never
        drains)."""
        if not math.isfinite(rate):
            raise InputError("rate", "a finite number", expects=E.FINITE())
        if rate < 0:
            raise InputError("rate", "at least 0", expects=E.AT_LEAST(low=0))
        service = costs.prompt(1.0) / self.pp
        rho = rate * service / self.dp
        if rho >= 1:
            return math.inf
        wait = rho / (2 * (1 - rho)) * service
        latency = costs.request_seconds + costs.dispatch_seconds + costs.reload_seconds
        return latency + service + wait

    def decode_pool(self, costs: Costs, concurrency: int) -> float:
        """TPOT (s) of a decode-only copy running ``concurrency`` requests: its decode step at
        that load (the busiest rank's) per committed token, no prefill between its steps."""
        if concurrency < 1:
            raise InputError(
                "concurrency",
                f"a positive integer, got {concurrency}",
                expects=E.POSITIVE(got=E.got(concurrency)),
            )
        busiest = busiest_rank(concurrency, self.dp, self.balance)
        micro = math.ceil(busiest / self.pp)
        return costs.decode(micro, math.ceil(concurrency / self.pp)).per_token
