"""A CPU tier behind the GPU's KV cache: the scenario's host memory per node
(``--kv-offload-gb``, GiB) turned into each engine's flags by its adapter (``cpu_tier``: vLLM's
native offloading connector sized per engine, SGLang's hierarchical cache sized per TP rank),
the options the adapter leaves out with why, and the memory the manifests request for it."""

from __future__ import annotations

from engine.decision import Code, Decision
from engine.engines import adapter
from engine.engines.memory import Split
from engine.launch.plan_parts import LeftOut, PlanFlag, checked
from engine.scenario import Engine, Scenario

GIB = 1 << 30
RATIO_LEFT = Code("plan.tier.sglang_ratio")


def tier_flags(
    engine: Engine, s: Scenario, split: Split
) -> tuple[list[PlanFlag], list[LeftOut], list[Decision]]:
    """The flags that give ``engine`` its CPU tier (none without host memory), what is left to
    the engine, and the plan's notes."""
    if not s.kv_offload_gb:
        return [], [], []
    eng = adapter(engine)
    flags = [
        checked(engine, eng.flag(setting), value, why)
        for setting, value, why in eng.cpu_tier(split, s.kv_offload_gb, s.gpus_per_node)
    ]
    left = [LeftOut(eng.flag("cpu_tier_ratio"), RATIO_LEFT())] if eng.has("cpu_tier_ratio") else []
    return flags, left, []


def tier_bytes_per_node(s: Scenario) -> int:
    """Host memory a node's pods request for the tier (the Kubernetes manifests)."""
    return int((s.kv_offload_gb or 0.0) * GIB)
