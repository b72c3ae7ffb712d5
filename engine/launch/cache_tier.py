"""A CPU tier behind the GPU's KV cache, as each engine sets it: the scenario's host memory per
node (``--kv-offload-gb``, GiB) shared by the engine instances on that node, each instance's
share in the unit its flag takes.

* vLLM: ``--kv-offloading-backend native`` (vLLM's own CPU offloading connector: no extra
  service) and ``--kv-offloading-size`` in GiB for the whole engine, split over its TP × PP
  ranks (vllm/config/vllm.py ``_post_init_kv_transfer_config``: ``kv_offloading_size × 2^30``
  bytes server-wide; every DP rank is an engine of its own). The tier stores whole blocks: a
  hybrid model's block of N tokens is its unit, and an LMCache tier in its stead must use a
  chunk size that is a multiple of N (the plan's LMCache note says so).
* SGLang: ``--enable-hierarchical-cache`` and ``--hicache-size`` in gigabytes (10^9 bytes) per
  TP rank: each rank's scheduler allocates its own host pool (mem_cache/memory_pool_host.py:
  ``hicache_size * 1e9 // size_per_token``); ``--hicache-ratio`` is left out (the size given
  wins over it).
"""

from __future__ import annotations

import math

from engine.decision import Code, Decimal, Decision
from engine.engines import adapter
from engine.engines.memory import Split
from engine.kv.sizing import KvSizing
from engine.launch.plan_parts import LeftOut, PlanFlag, checked
from engine.scenario import Engine, Scenario

GIB = 1 << 30
VLLM_BACKEND = Code("plan.tier.vllm_backend")
VLLM_SIZE = Code("plan.tier.vllm_size", "gib", "node", "gpus", "per_node")
SGLANG_ON = Code("plan.tier.sglang_on")
SGLANG_SIZE = Code("plan.tier.sglang_size", "gb", "node", "per_node")
SGLANG_RATIO = Code("plan.tier.sglang_ratio")


def host_bytes_per_gpu(s: Scenario) -> float:
    """The host memory the tier gives each GPU of a node (a node's share, evenly)."""
    return (s.kv_offload_gb or 0.0) * GIB / s.gpus_per_node


def tier_flags(
    engine: Engine, s: Scenario, split: Split, kv: KvSizing
) -> tuple[list[PlanFlag], list[LeftOut], list[Decision]]:
    """The flags that give ``engine`` its CPU tier (none without host memory), what is left to
    the engine, and the plan's notes."""
    if not s.kv_offload_gb:
        return [], [], []
    node = Decimal(s.kv_offload_gb, 0, "GiB")
    if engine == "vllm":
        ranks = split.tp * split.pp  # one DP rank: an engine of its own
        gib = s.kv_offload_gb * ranks / s.gpus_per_node
        flags = [
            checked(engine, "--kv-offloading-backend", "native", VLLM_BACKEND()),
            checked(engine, "--kv-offloading-size", f"{math.floor(gib * 100) / 100:g}",
                    VLLM_SIZE(gib=Decimal(gib, 1, "GiB"), node=node, gpus=ranks,
                              per_node=s.gpus_per_node)),
        ]  # fmt: skip
        return flags, [], []
    per_rank = s.kv_offload_gb * GIB / s.gpus_per_node / 1e9
    gb = max(1, math.floor(per_rank))
    eng = adapter(engine)
    flags = [
        checked(engine, "--enable-hierarchical-cache", None, SGLANG_ON()),
        checked(engine, "--hicache-size", str(gb),
                SGLANG_SIZE(gb=gb, node=node, per_node=s.gpus_per_node)),
    ]  # fmt: skip
    left = [LeftOut("--hicache-ratio", SGLANG_RATIO())] if eng.lookup("--hicache-ratio") else []
    return flags, left, []


def tier_bytes_per_node(s: Scenario) -> int:
    """Host memory a node's pods request for the tier (the Kubernetes manifests)."""
    return int((s.kv_offload_gb or 0.0) * GIB)
