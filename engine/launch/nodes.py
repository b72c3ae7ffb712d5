"""One command per node (or per server): several copies of a model on one node share a server
or run side by side on their own GPUs; a copy that spans nodes runs a leader and workers with the
multi-node flags of the engine's adapter (spelled from its pinned table)."""

from __future__ import annotations

from engine.engines import adapter
from engine.launch.candidate import Layout
from engine.launch.launch_data import launch_facts
from engine.launch.plan_parts import LEADER, NodeCommand, PlanError, PlanFlag, Role
from engine.scenario import Engine, Scenario


def copies_per_node(lay: Layout, per_node: int) -> int:
    return max(1, per_node // lay.split.gpus) if lay.split.gpus <= per_node else 1


def merges_copies(engine: Engine, moe: bool, attention_dp: int = 1) -> bool:
    """Can one server hold several full copies on a node? vLLM's --data-parallel-size does for
    a dense model (its DP ranks are independent replicas); for a MoE model vLLM spreads the
    experts over the DP ranks, a different layout, so copies stay separate servers. SGLang's
    --dp-size is "data-parallel replicas of the model" for both, but not beside attention DP:
    copies that run it are separate servers."""
    return adapter(engine).merges_copies(moe, attention_dp)


def _multi_node_args(engine: Engine, lay: Layout, per_node: int, rank: int) -> list[str]:
    """The extra tokens of node ``rank`` of a copy that spans nodes."""
    ports = launch_facts().multi_node.ports
    return adapter(engine).multi_node_args(lay.split, per_node, rank, LEADER, ports)


def node_commands(
    engine: Engine,
    program: list[str],
    flags: list[PlanFlag],
    lay: Layout,
    s: Scenario,
    moe: bool,
) -> tuple[NodeCommand, ...]:
    eng = adapter(engine)
    per_node = s.gpus_per_node
    port = launch_facts().port
    base = list(program)
    for f in flags:
        base += f.tokens
    for token in _multi_node_args(engine, lay, per_node, 0) if lay.split.gpus > per_node else []:
        _check_token(engine, token)
    out: list[NodeCommand] = []
    if lay.split.gpus > per_node:
        nodes_per_copy = lay.split.gpus // per_node
        for node in range(s.nodes):
            rank = node % nodes_per_copy
            argv = base + _multi_node_args(engine, lay, per_node, rank)
            role: Role = "leader" if rank == 0 else "worker"
            serves = eng.node_serves_api(lay.split, rank)
            out.append(
                NodeCommand(
                    node, role, rank, tuple(argv), None, port if serves else None, len(base)
                )
            )
        return tuple(out)
    copies = copies_per_node(lay, per_node)
    if copies == 1 or merges_copies(engine, moe, lay.split.dp):
        return tuple(NodeCommand(n, "server", 0, tuple(base), None, port) for n in range(s.nodes))
    size = lay.split.gpus
    for node in range(s.nodes):
        for i in range(copies):
            argv = _with_port(engine, base, port + i)
            devices = tuple(range(i * size, (i + 1) * size))
            out.append(NodeCommand(node, "server", 0, tuple(argv), devices, port + i))
    return tuple(out)


def _check_token(engine: Engine, token: str) -> None:
    eng = adapter(engine)
    if token.startswith("--") and eng.lookup(token) is None:
        raise PlanError(f"{engine} {eng.version} has no option {token}")


def _with_port(engine: Engine, argv: list[str], port: int) -> list[str]:
    out = list(argv)
    i = out.index(adapter(engine).flag("port"))
    out[i + 1] = str(port)
    return out
