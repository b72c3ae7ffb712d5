"""What a copy that spans nodes needs besides its rank flags, as the recipes' multi-node
strategies write it: the NIC Gloo and NCCL talk over (``GLOO_SOCKET_IFNAME`` /
``NCCL_SOCKET_IFNAME``), and the MoE all-to-all on DeepEP once experts exchange tokens over
InfiniBand (the advisor's pick for several nodes, ``data/advisors.yaml``)."""

from __future__ import annotations

from engine.decision import Code, Name, Source
from engine.engines import Engine, adapter
from engine.engines.memory import Split
from engine.launch.advisors import Phase, advisor_facts
from engine.launch.launch_data import launch_facts
from engine.launch.plan_parts import EnvVar, PlanFlag, checked

NIC = Code("env.nic", "placeholder", "source")
A2A = Code("flag.all_to_all.deepep", "mode", "source")
DEEPEP_MODE = Code("flag.deepep_mode", "mode")
PHASE: Phase = "mixed"  # one server both prefills and decodes


def spans_nodes(split: Split, per_node: int) -> bool:
    return split.gpus > per_node


def uses_deepep(split: Split, per_node: int) -> bool:
    """Experts placed whole over an EP group that spans nodes: their tokens cross InfiniBand
    (pipeline stages one per node keep each EP group inside its node)."""
    return split.ep and split.moe_group > per_node


def a2a_flags(engine: Engine, split: Split, per_node: int, phase: Phase = PHASE) -> list[PlanFlag]:
    """The all-to-all backend a multi-node EP copy runs (none inside one node: NVLink and the
    engine's default are enough there), in the mode of the phase its server runs (a
    disaggregated pool's: high throughput to prefill, low latency to decode)."""
    if not uses_deepep(split, per_node):
        return []
    eng = adapter(engine)
    facts = advisor_facts()
    mode = facts.all_to_all.multi_node[phase].deepep_mode
    out: list[PlanFlag] = []
    for setting, value in eng.deepep(mode):
        why = (
            A2A(mode=Name(value), source=Source(facts.sources["a2a"]))
            if setting == "all_to_all"
            else DEEPEP_MODE(mode=Name(value))
        )
        out.append(checked(engine, eng.flag(setting), value, why))
    return out


def nic_env(split: Split, per_node: int) -> list[EnvVar]:
    """The NIC variables every node of a multi-node copy sets, as a placeholder the launch
    script asks for (``${IFACE_NAME}``)."""
    if not spans_nodes(split, per_node):
        return []
    nic = launch_facts().multi_node.nic_env
    why = NIC(placeholder=Name(nic.placeholder), source=Source(nic.source))
    return [EnvVar(name, "${" + nic.placeholder + "}", why) for name in nic.vars]
