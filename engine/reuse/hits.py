"""The prefix-cache hit model: the mean prompt tokens per request an engine finds cached on the
GPU and in a CPU tier, and how that follows from the workload and the engine.

* What repeats: ``share`` × ISL tokens at the head of each prompt — one system prompt shared by
  every request (``system``: ``prefixes`` of them in use), or each session's own history re-sent
  with its next turn (``session``: ``prefixes`` live sessions).
* Where a hit can land (``data/prefix_cache.yaml``): vLLM on a full block of its block size (a
  hybrid model's inflated block, where the linear state is cached), SGLang on a page of its
  radix tree (page 1 by default; a hybrid's tracked state every 256 tokens); a prompt found
  whole still recomputes its last token.
* Room: each engine instance (a DP rank of a copy) keeps its own cache. A system prompt takes
  its tokens once per instance beside the running requests; a session's history waits in the
  pool between its turns. The share of the repeated prefixes the free pool holds is the share a
  returning request finds (LRU keeps the most recent; nothing is kept when nothing is free).
* A CPU tier (the host memory given to the KV cache) holds what the GPU pool evicts, up to its
  size in tokens: those tokens are not prefilled but copied host → GPU.
* A session returns to the instance that served it: across replicas the plan's prefix-aware
  router sees to it; across DP ranks the engines' own balancers do not (1 / DP).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache
from typing import Any

from pydantic import Field

from engine.engines import Engine
from engine.engines.memory import Split
from engine.kv.sizing import KvSizing
from engine.rules import Loose, load_data
from engine.scenario import Scenario


class _EngineRule(Loose):
    unit: str
    hybrid_unit: str | None = None
    hybrid_unit_tokens: int | None = Field(default=None, ge=1)
    source: str
    hybrid_source: str


class _Rules(Loose):
    engines: dict[str, _EngineRule]
    dp_routing_source: str


@cache
def cache_rules() -> _Rules:
    return load_data(_Rules, "prefix_cache.yaml")


def hit_unit(engine: Engine, kv: KvSizing) -> int:
    """The token boundary a prefix hit lands on: the engine's block or page (``kv.block_size``,
    the hybrid-aligned block in vLLM), or SGLang's tracked linear state for a hybrid."""
    rule = cache_rules().engines[engine]
    linear = kv.hybrid is not None or kv.state_bytes_per_request > 0  # a cached linear state
    if linear and rule.hybrid_unit_tokens is not None:
        return max(rule.hybrid_unit_tokens, kv.block_size)
    return max(1, kv.block_size)


@dataclass(frozen=True)
class Room:
    """One engine instance (a DP rank of one copy): its KV pool in tokens, the requests it runs
    at once, and the tokens its share of the CPU tier holds."""

    pool_tokens: float
    running: float
    host_tokens: float = 0.0


@dataclass(frozen=True)
class Reuse:
    """What a request finds cached, on average (tokens of its prompt), and why."""

    isl: int
    repeated: int  # the prompt's repeated head, in tokens
    unit: int  # where a hit lands
    cacheable: (
        int  # the repeated head rounded down to the unit (and one token short of a whole prompt)
    )
    affinity: float  # the chance a returning session lands where its prefix is
    resident: float  # the share of the repeated prefixes the GPU pool keeps
    in_host: float  # the share the CPU tier keeps beyond them
    needed_tokens: float  # what keeping every repeated prefix takes, per instance
    shared_tokens: int  # a system prompt's tokens, kept once per instance

    @property
    def gpu_tokens(self) -> float:
        return self.affinity * self.resident * self.cacheable

    @property
    def host_tokens(self) -> float:
        return self.affinity * self.in_host * self.cacheable

    @property
    def hit_rate(self) -> float:
        """The share of each prompt not prefilled."""
        return (self.gpu_tokens + self.host_tokens) / self.isl if self.isl else 0.0

    @property
    def prefill_saved(self) -> float:
        return self.gpu_tokens + self.host_tokens

    @property
    def formula(self) -> str:
        return (
            f"repeated = {self.repeated:,} tokens; cacheable = floor({self.repeated:,} / "
            f"{self.unit}) × {self.unit} = {self.cacheable:,}; GPU hit = {self.affinity:.3g} × "
            f"{self.resident:.3g} × {self.cacheable:,} = {self.gpu_tokens:,.0f}; host hit = "
            f"{self.affinity:.3g} × {self.in_host:.3g} × {self.cacheable:,} = "
            f"{self.host_tokens:,.0f}; hit rate = {self.prefill_saved:,.0f} / {self.isl:,} = "
            f"{self.hit_rate:.3f}"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "repeated_tokens": self.repeated,
            "unit_tokens": self.unit,
            "cacheable_tokens": self.cacheable,
            "gpu_tokens": self.gpu_tokens,
            "host_tokens": self.host_tokens,
            "hit_rate": self.hit_rate,
            "resident": self.resident,
            "in_host": self.in_host,
            "affinity": self.affinity,
            "shared_prefix_tokens": self.shared_tokens,
            "formula": self.formula,
        }


def prefix_reuse(
    engine: Engine,
    kv: KvSizing,
    s: Scenario,
    isl: int,
    osl: int,
    room: Room,
    instances: int,
    dp: int,
) -> Reuse:
    """The mean tokens of each ``isl``-token prompt found cached on one engine instance of
    ``instances`` (``dp`` of them ranks of one copy), with ``room`` for each."""
    repeated = math.floor(s.prefix_overlap / 100 * isl)
    if repeated <= 0 or isl <= 1:
        return Reuse(isl, 0, 1, 0, 1.0, 0.0, 0.0, 0.0, 0)
    unit = hit_unit(engine, kv)
    cacheable = min(repeated, isl - 1) // unit * unit
    system = s.prefix_kind == "system"
    in_flight = isl + osl / 2  # a running request's tokens at its decode midpoint
    if system:
        needed = float(s.live_prefixes * repeated)  # each instance keeps each prompt once
        busy = room.running * (in_flight - repeated)
        affinity = 1.0
        shared = repeated
    else:
        sessions = s.live_prefixes / max(instances, 1)  # the router spreads whole sessions
        idle = max(sessions - room.running, 1.0)  # histories waiting for their next turn
        needed = idle * repeated
        busy = room.running * in_flight
        affinity = 1.0 / dp
        shared = 0
    free = max(0.0, room.pool_tokens - busy)
    resident = min(1.0, free / needed) if needed else 1.0
    in_host = min(1.0 - resident, room.host_tokens / needed) if needed else 0.0
    return Reuse(isl, repeated, unit, cacheable, affinity, resident, in_host, needed, shared)


def room_of(
    kv_space_per_gpu: int,
    kv_bytes_per_token_per_gpu: int,
    state_bytes_per_request_per_gpu: int,
    running_per_rank: float,
    host_bytes_per_gpu: float,
) -> Room:
    """One instance's room from its per-GPU figures (each rank's GPUs hold the same share of its
    KV): the pool and the host tier in tokens, after each running request's constant state."""
    per_token = max(kv_bytes_per_token_per_gpu, 1)
    space = kv_space_per_gpu - running_per_rank * state_bytes_per_request_per_gpu
    return Room(max(0.0, space / per_token), running_per_rank, host_bytes_per_gpu / per_token)


def layout_reuse(
    engine: Engine,
    kv: KvSizing,
    s: Scenario,
    context: int,
    *,
    space_per_gpu: int,
    stage: float,
    split: Split,
    copies: int,
    concurrent: float,
    behind_one_endpoint: int = 1,
) -> Reuse:
    """The prefix reuse of a layout (``copies`` copies cut as ``split``) serving ``concurrent``
    requests at once over all its copies, at ``context``, from its per-GPU memory: the KV space
    left, the KV bytes per token and the constant state per request on the busiest pipeline
    stage (``stage``); the host memory per node spread evenly over its GPUs.
    ``behind_one_endpoint``: copies one server holds (a router reaches the server, not the copy
    inside it)."""
    isl, osl = s.workload(context)
    per_rank = concurrent / max(copies, 1) / max(split.dp, 1)
    host = (s.kv_offload_gb or 0.0) * (1 << 30) / s.gpus_per_node
    room = room_of(
        space_per_gpu,
        math.ceil(kv.kv_bytes_per_token * stage),
        math.ceil(kv.state_bytes_per_request_padded * stage),
        per_rank,
        host,
    )
    instances = copies * split.dp
    return prefix_reuse(engine, kv, s, isl, osl, room, instances, split.dp * behind_one_endpoint)
