"""One server of each pool: a copy of the model sized and timed for what it runs.

A prefill worker only prefills: the speed model's scheduler asks its pool apart
(``Scheduler.prefill_pool``: its TTFT at a request rate, an M/D/1 queue in front of one prompt's
prefill). A decode worker only decodes: its TPOT at a number of running requests
(``Scheduler.decode_pool``, no prefill between its steps), and the requests its KV pool holds at
the workload's length, sized without the prefill chunk's activations (the engines' decode-server
accounting: ``SearchInputs.role``). Both come from the layout search of one copy at each size a
node allows (its divisors, then whole nodes), so a worker is cut and sized exactly as an
aggregated copy would be; nothing here times an operation.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from functools import cached_property

from engine.engines.memory import ServerRole
from engine.errors import InputError
from engine.launch.candidate import Candidate, SearchInputs
from engine.launch.layout import candidate_reuse, search
from engine.perf.estimate import copy_model
from engine.perf.opmodel import CopyModel
from engine.perf.scheduler import Costs, PrefixReuse, Scheduler
from engine.scenario import MAX_NODES, Scenario

# the node multiples a worker may span when it does not fit one node (8 nodes of 8: 64 GPUs)
NODE_MULTIPLES = (2, 4, 8)
# a worker's users when its layouts are sized: enough that no plan caps its requests below what
# its KV pool holds (vLLM's sampler-reserve cap applies to a few users only)
PROBE_USERS = 65_536


def worker_sizes(per_node: int) -> list[int]:
    """GPUs one worker may take: the divisors of a node, then whole nodes."""
    sizes = [d for d in range(1, per_node + 1) if per_node % d == 0]
    return sizes + [per_node * m for m in NODE_MULTIPLES if m <= MAX_NODES]


def worker_scenario(s: Scenario, gpus: int) -> Scenario:
    """One worker of ``gpus`` GPUs (the scenario's node size), its layout left to the search."""
    per_node = min(gpus, s.gpus_per_node)
    update = {
        "gpus_per_node": per_node,
        "nodes": gpus // per_node,
        "replicas": 1,
        "users": PROBE_USERS,
        "tp": None,
        "dp": None,
        "pp": None,
        "ep": None,
        "max_num_seqs": None,
    }
    return s.model_copy(update=update)


@dataclass(frozen=True)
class Worker:
    """One server of a pool: its candidate layout (memory and users as the pool's role runs
    it), its op model at the workload and its scheduler."""

    role: ServerRole
    candidate: Candidate
    model: CopyModel
    scheduler: Scheduler
    _tpot: dict[int, float] = field(default_factory=dict, repr=False, compare=False)

    @property
    def gpus(self) -> int:
        return self.candidate.layout.gpus

    @cached_property
    def costs(self) -> Costs:
        return self.model.costs()

    # --- prefill ---------------------------------------------------------------------------

    @property
    def prompt_seconds(self) -> float:
        """GPU seconds of one prompt's prefill, through every pipeline stage."""
        return self.costs.prompt(1.0)

    @property
    def stage_seconds(self) -> float:
        """How long one prompt holds the worker's first stage: the next one starts after it."""
        return self.costs.prompt(1.0) / self.scheduler.pp

    @property
    def latency_seconds(self) -> float:
        """A request's time outside the GPU: the engine's per-request cost, the host's dispatch
        of its prefill, a CPU-tier reload."""
        c = self.costs
        return c.request_seconds + c.dispatch_seconds + c.reload_seconds

    def ttft(self, rate: float) -> float:
        """Seconds to a prompt's prefilled KV with ``rate`` requests/s on this worker."""
        return self.scheduler.prefill_pool(self.costs, rate)

    def workers_for(self, rate: float, budget: float | None) -> int | None:
        """The fewest workers whose TTFT at ``rate`` requests/s among them stays within
        ``budget`` seconds (None: none does, the prefill alone takes longer). Without a budget
        the fewest whose queue drains (utilization below 1). The M/D/1 wait
        ρ / (2 (1 − ρ)) × s (s: a stage's share of the prompt) within the slack the latency and
        the prompt leave gives the highest utilization ρ_max = 2k / (1 + 2k), k = slack / s;
        then P = ⌈rate × s / (dp × ρ_max)⌉."""
        stage, dp = self.stage_seconds, self.scheduler.dp
        if budget is None:
            return math.floor(rate * stage / dp) + 1
        slack = budget - self.latency_seconds - self.prompt_seconds
        if slack <= 0:
            return None
        k = slack / stage
        rho = 2 * k / (1 + 2 * k)
        n = max(1, math.ceil(rate * stage / (dp * rho) - 1e-9))
        while self.ttft(rate / n) > budget:  # the closed form's rounding, at most a step
            n += 1
        return n

    # --- decode ----------------------------------------------------------------------------

    @property
    def capacity(self) -> int:
        """Requests of the workload's length its KV pool holds at once."""
        return self.candidate.running

    def tpot(self, running: int) -> float:
        """Seconds per output token with ``running`` requests decoding on this worker."""
        if running not in self._tpot:
            self._tpot[running] = self.scheduler.decode_pool(self.costs, running)
        return self._tpot[running]

    def pass_seconds(self, running: int) -> float:
        """One decode pass (the verify pass with drafts) at ``running`` requests."""
        per_rank = math.ceil(running / self.scheduler.dp)
        micro = math.ceil(per_rank / self.scheduler.pp)
        return self.costs.decode(micro, micro * self.scheduler.dp).pass_seconds

    def most_within(self, target: float) -> int:
        """The most requests it runs within ``target`` seconds per output token, up to what its
        KV holds (0: not even one)."""
        top = self.capacity
        if top < 1 or self.tpot(1) > target:
            return 0
        if self.tpot(top) <= target:
            return top
        lo, hi = 1, top  # lo meets the target, hi does not
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if self.tpot(mid) <= target:
                lo = mid
            else:
                hi = mid
        return lo


def _reuse(inp: SearchInputs, s: Scenario, c: Candidate, role: ServerRole) -> PrefixReuse | None:
    """The prompt tokens a prefill worker finds in its prefix cache (engine.reuse, as one copy
    with its pool free between prompts: the router sends a repeated head where it was
    prefilled); a decode worker's requests arrive prefilled."""
    if role != "prefill":
        return None
    r = candidate_reuse(inp, s, 1, c.layout.split, c.kv_space_per_gpu, c.context, 1)
    return PrefixReuse(r.gpu_tokens, r.host_tokens) if r is not None else None


def _worker(inp: SearchInputs, s: Scenario, c: Candidate, role: ServerRole) -> Worker:
    isl, osl = s.workload(c.context)
    chunk = c.chunk_tokens
    perf_in = inp if chunk == inp.chunk_tokens else replace(inp, chunk_tokens=chunk)
    model = copy_model(
        perf_in, c.layout.split, isl, osl, inp.speculative if role == "decode" else None,
        gpus_per_node=s.gpus_per_node, calibration=inp.calibration,
        reuse=_reuse(inp, s, c, role),
    )  # fmt: skip
    return Worker(role, c, model, Scheduler(c.layout.dp, c.layout.pp))


def workers(inp: SearchInputs, s: Scenario, role: ServerRole) -> tuple[Worker, ...]:
    """Every layout of one worker of ``role`` at each size the scenario's node allows, whose
    weights and one request of the workload fit (a size nothing fits on is skipped)."""
    pool_inp = replace(inp, role=role)
    out: list[Worker] = []
    for n in worker_sizes(s.gpus_per_node):
        one = worker_scenario(s, n)
        try:
            found = search(pool_inp, one)
        except InputError:
            continue
        for c in found.candidates:
            if c.layout.replicas == 1 and c.weights_fit and c.context_fits and c.running > 0:
                out.append(_worker(pool_inp, one, c, role))
    return tuple(out)
