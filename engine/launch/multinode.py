"""What a copy that spans nodes needs besides its rank flags, as the recipes' multi-node
strategies write it: the NIC Gloo and NCCL talk over (``GLOO_SOCKET_IFNAME`` /
``NCCL_SOCKET_IFNAME``), and the MoE all-to-all on DeepEP once experts exchange tokens over
InfiniBand (the advisor's pick for several nodes, ``data/advisors.yaml``). Nodes of one NVLink
domain (GB200 / GB300 NVL72 trays, ``engine.launch.topology``) are not joined by a network: NCCL's
MNNVL variables, and vLLM's one-sided NVLink all-to-all instead of DeepEP's RDMA kernels."""

from __future__ import annotations

from engine.decision import Code, Name, Source
from engine.engines import Engine, adapter
from engine.engines.memory import Split
from engine.hardware.gpus import Gpu
from engine.launch.advisors import Phase, advisor_facts
from engine.launch.launch_data import launch_facts
from engine.launch.plan_parts import EnvVar, PlanFlag, checked
from engine.launch.topology import multi_node_nvlink, over_network

NIC = Code("env.nic", "placeholder", "source")
MNNVL_ENV = Code("env.mnnvl", "source")
A2A = Code("flag.all_to_all.deepep", "mode", "source")
A2A_NVLINK = Code("flag.all_to_all.nvlink", "backend", "gpus", "source")
DEEPEP_MODE = Code("flag.deepep_mode", "mode")
PHASE: Phase = "mixed"  # one server both prefills and decodes


def spans_nodes(split: Split, per_node: int) -> bool:
    return split.gpus > per_node


def uses_deepep(split: Split, per_node: int) -> bool:
    """Experts placed whole over an EP group that spans nodes: their tokens cross InfiniBand
    (pipeline stages one per node keep each EP group inside its node)."""
    return split.ep and split.moe_group > per_node


def deepep_over_network(engine: Engine, gpu: Gpu, split: Split, per_node: int) -> bool:
    """The plan runs DeepEP's internode kernels over the NICs (RDMA): an EP group that spans
    nodes, unless it stays in one NVLink domain where the engine has an NVLink all-to-all
    (vLLM) or DeepEP's NVSHMEM runs over NVLink (SGLang)."""
    return uses_deepep(split, per_node) and over_network(gpu, split.moe_group, per_node)


def a2a_flags(engine: Engine, split: Split, per_node: int, gpu: Gpu) -> list[PlanFlag]:
    """The all-to-all backend a multi-node EP copy runs (none inside one node: NVLink and the
    engine's default are enough there); inside one NVLink domain of several trays, the engine's
    NVLink all-to-all where it has one."""
    if not uses_deepep(split, per_node):
        return []
    eng = adapter(engine)
    mnnvl = launch_facts().multi_node.mnnvl
    nvlink = mnnvl.all_to_all.get(engine)
    if nvlink is not None and not over_network(gpu, split.moe_group, per_node):
        why = A2A_NVLINK(
            backend=Name(nvlink), gpus=split.moe_group, source=Source(mnnvl.all_to_all_source)
        )
        return [checked(engine, eng.flag("all_to_all"), nvlink, why)]
    facts = advisor_facts()
    mode = facts.all_to_all.multi_node[PHASE].deepep_mode
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


def mnnvl_env(engine: Engine, gpu: Gpu, split: Split, per_node: int) -> list[EnvVar]:
    """NCCL's cross-node NVLink variables for a copy over several trays of one NVLink domain."""
    if not multi_node_nvlink(gpu, split, per_node):
        return []
    mnnvl = launch_facts().multi_node.mnnvl
    why = MNNVL_ENV(source=Source(mnnvl.env_source))
    return [
        EnvVar(v.name, v.value, why) for v in mnnvl.env if v.engine is None or v.engine == engine
    ]
