"""Two pools for a request rate: the fewest prefill workers whose TTFT stays within the target,
the fewest decode workers that hold the requests in flight within the TPOT target, for every
pair of worker layouts; the pair with the fewest GPUs.

* **Prefill** (``Worker.workers_for``): the pool's TTFT budget is the target less the KV
  transfer and the decode worker's first step (a request waits for the step in flight, then is
  decoded once); P workers share the rate, each an M/D/1 queue.
* **Decode**: a decode worker runs at most C* requests within the TPOT target (and what its KV
  holds); Little's law puts rate × (transfer + (OSL − 1) × TPOT) requests in the decode pool (a
  request holds its KV there from the transfer's start to its last token), so D = ⌈that / C*⌉;
  then each worker's concurrency c = rate / D × (transfer + (OSL − 1) × TPOT(c)), solved by
  iteration from C* (it only falls).
* **The link**: both pools inside one NVLink domain (a node, or the trays of an NVL72 rack:
  ``engine.launch.topology``) cross the GPUs' scale-up link, else the network
  (``engine.disagg.transfer``); a pair is first tried inside one domain when its two workers fit
  one, and kept there only if every worker still does.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from engine.disagg.transfer import Transfer, kv_transfer, network_link, scale_up_link
from engine.disagg.workers import Worker
from engine.engines import adapter
from engine.launch.topology import nvlink_gpus
from engine.model.config import ModelConfig

FIXED_POINT_STEPS = 30  # the decode concurrency's iteration settles in a few; a bound


@dataclass(frozen=True)
class Pool:
    """``workers`` servers of one layout."""

    worker: Worker
    workers: int

    @property
    def gpus(self) -> int:
        return self.workers * self.worker.gpus


@dataclass(frozen=True)
class Sized:
    """A pair of pools sized for ``rate`` requests/s, and the times a request sees."""

    prefill: Pool
    decode: Pool
    transfer: Transfer
    rate: float
    osl: int
    prefill_ttft: float  # seconds: the prefill pool's queue and prefill at rate / P
    concurrency: float  # requests decoding on each decode worker (Little's law)
    most: int  # C*: the most one decode worker runs within the TPOT target
    tpot: float  # seconds per output token at that concurrency
    step: float  # seconds: one decode pass at that concurrency

    @property
    def running(self) -> int:
        """The whole number of requests each decode worker's step carries."""
        return max(1, math.ceil(self.concurrency - 1e-9))

    @property
    def first_step(self) -> float:
        """The decode worker's part of TTFT: the step in flight, then its own."""
        return 1.5 * self.step

    @property
    def ttft(self) -> float:
        return self.prefill_ttft + self.transfer.seconds + self.first_step

    @property
    def gpus(self) -> int:
        return self.prefill.gpus + self.decode.gpus

    @property
    def output_tokens_per_s(self) -> float:
        return self.rate * self.osl


def _decoders(
    dw: Worker, rate: float, transfer: Transfer, osl: int, most: int
) -> tuple[int, float]:
    """(decode workers, each one's concurrency) for ``rate`` with at most ``most`` requests a
    worker."""

    def residency(c: float) -> float:
        return transfer.seconds + (osl - 1) * dw.tpot(max(1, math.ceil(c - 1e-9)))

    n = max(1, math.ceil(rate * residency(most) / most - 1e-9))
    c = float(most)
    for _ in range(FIXED_POINT_STEPS):
        nxt = rate / n * residency(c)
        if abs(nxt - c) < 1e-3:
            c = nxt
            break
        c = nxt
    return n, min(c, float(most))


def size_pair(
    pw: Worker,
    dw: Worker,
    rate: float,
    ttft_target: float | None,
    tpot_target: float,
    cfg: ModelConfig,
    per_node: int,
) -> Sized | None:
    """The two pools of ``pw`` and ``dw`` for ``rate`` (None: the decode worker misses the TPOT
    target with one request, or the prefill alone misses the TTFT budget)."""
    eng = adapter(pw.model.inp.engine)
    state = dw.model.kv.state_bytes_per_request > 0
    if eng.pools_refused(pw.candidate.layout.split, dw.candidate.layout.split, state) is not None:
        return None
    most = dw.most_within(tpot_target)
    if most < 1:
        return None
    isl = pw.model.isl
    domain = nvlink_gpus(pw.model.inp.gpu, per_node)  # a node, or an NVL72 rack of trays
    for together in (True, False):
        if together and pw.gpus + dw.gpus > domain:
            continue
        gpu = pw.model.inp.gpu
        link = scale_up_link(gpu) if together else network_link(gpu)
        transfer = kv_transfer(dw.model.kv, isl, pw.candidate.layout.split,
                               dw.candidate.layout.split, cfg, link)  # fmt: skip
        step = dw.pass_seconds(most)
        budget = None
        if ttft_target is not None:
            budget = ttft_target - transfer.seconds - 1.5 * step
        prefills = pw.workers_for(rate, budget)
        if prefills is None:
            continue
        decodes, c = _decoders(dw, rate, transfer, dw.model.osl, most)
        running = max(1, math.ceil(c - 1e-9))
        sized = Sized(
            Pool(pw, prefills), Pool(dw, decodes), transfer, rate, dw.model.osl,
            pw.ttft(rate / prefills), c, most, dw.tpot(running), dw.pass_seconds(running),
        )  # fmt: skip
        if together and sized.gpus > domain:
            continue  # the pools outgrow one NVLink domain: their KV crosses the network
        return sized
    return None


def pairs(
    prefill: tuple[Worker, ...],
    decode: tuple[Worker, ...],
    rate: float,
    ttft_target: float | None,
    tpot_target: float,
    cfg: ModelConfig,
    per_node: int,
) -> list[Sized]:
    """Every pair of pools that serves the rate within the targets, fewest GPUs first (then
    the lower TPOT, then TTFT)."""
    found = [
        sized
        for pw in prefill
        for dw in decode
        if (sized := size_pair(pw, dw, rate, ttft_target, tpot_target, cfg, per_node)) is not None
    ]
    return sorted(found, key=lambda z: (z.gpus, z.tpot, z.ttft))
