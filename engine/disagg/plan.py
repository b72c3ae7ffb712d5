"""The launch plan of a disaggregated candidate: one launch plan per pool (a worker's flags,
each with its reason, as the Study's planner writes them for that worker's layout, with the
pool's all-to-all mode), every worker placed on the nodes it takes, the flags and environment
that make each server one of its pool (the engine adapter's: its role, the KV connector, its
ports), and the router that sends each request to a prefill server and then a decode server.

Workers are placed in order, prefill first: one smaller than a node takes the next free GPUs of
the current node (its own ``CUDA_VISIBLE_DEVICES``, port and transfer ports), one of whole nodes
starts on a fresh node and runs as a multi-node copy does (a leader and workers). A server's
peers reach it at its node's address, which the script asks for (``${NODE<n>_ADDR}``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from engine.decision import Code, Decision, Source
from engine.disagg.candidate import Disaggregated
from engine.disagg.facts import RouterFacts, disagg_facts
from engine.disagg.sizing import Pool, Sized
from engine.engines import adapter
from engine.engines.base import PoolRole, PoolServer
from engine.errors import InputError
from engine.launch.nodes import node_commands
from engine.launch.plan import (
    LEADER,
    EnvVar,
    LaunchPlan,
    NodeCommand,
    PlanFlag,
    build_plan,
    checked,
)
from engine.launch.plan_inputs import PlanInputs
from engine.scenario import Engine
from engine.study import Study

ROUTER = Code("disagg.router.why", "prefill", "decode", "source")
ROLES: tuple[PoolRole, ...] = ("prefill", "decode")
NO_CANDIDATE = Code("error.disagg.none", "why")


def node_var(node: int) -> str:
    """The script's variable for node ``node``'s address."""
    return "${NODE" + str(node) + "_ADDR}"


@dataclass(frozen=True)
class Server:
    """One command of one worker on its node: the pool, the worker's index in it, the node,
    the command (argv, rank, port, devices) and the environment the server sets itself."""

    role: PoolRole
    worker: int
    node: int
    command: NodeCommand
    env: tuple[EnvVar, ...]
    bootstrap_port: int | None

    @property
    def serves(self) -> bool:
        """Does it run an API server the router sends requests to?"""
        return self.command.port is not None and self.command.role in ("server", "leader")


@dataclass(frozen=True)
class Router:
    """The router in PD mode: its command, why, where it is from, its image and what to
    install first (None: the engine's image carries it)."""

    argv: tuple[str, ...]
    why: Decision
    facts: RouterFacts


@dataclass(frozen=True)
class DisaggPlan:
    engine: Engine
    candidate: Disaggregated
    prefill: LaunchPlan  # one prefill worker's plan (its pool's flags as its first server's)
    decode: LaunchPlan
    servers: tuple[Server, ...]
    nodes: int
    gpus_per_node: int
    router: Router
    label: Decision | None  # why this is not the plan to run; None: it is the pick

    @property
    def runnable(self) -> bool:
        return self.prefill.runnable and self.decode.runnable

    @property
    def blocked_by(self) -> tuple[Decision, ...]:
        return tuple(dict.fromkeys(self.prefill.blocked_by + self.decode.blocked_by))

    @property
    def pools(self) -> tuple[tuple[PoolRole, LaunchPlan], ...]:
        return (("prefill", self.prefill), ("decode", self.decode))


def plan_inputs(st: Study) -> PlanInputs:
    """The model-side facts the Study's own plans were built from, less its memory gate: a
    worker's own fit is its own (a pool's worker may need more GPUs than the scenario's)."""
    gates = replace(st.gates, gates=tuple(g for g in st.gates.gates if g.kind != "fit"))
    return PlanInputs(
        st.model, st.config, st.gpu, st.architecture, st.family, st.weights, st.limit,
        st.context_asked, st.mtp, st.text_only, gates,
    )  # fmt: skip


@dataclass(frozen=True)
class _Slot:
    role: PoolRole
    worker: int
    node: int  # the first node it runs on
    devices: tuple[int, ...] | None  # its GPUs on a node it shares; None: whole nodes
    index_on_host: int  # servers of its pool already on its node
    ranks_before: int  # engine DP ranks already on its node (transfer ports)


def place(z: Sized, per_node: int) -> tuple[list[_Slot], int]:
    """Every worker on the nodes it takes, prefill first; and the nodes used."""
    slots: list[_Slot] = []
    node, used = 0, 0
    on_node: list[_Slot] = []
    pools: tuple[tuple[PoolRole, Pool], ...] = (("prefill", z.prefill), ("decode", z.decode))
    for role, pool in pools:
        size = pool.worker.gpus
        for i in range(pool.workers):
            if size >= per_node:
                if used:
                    node, used, on_node = node + 1, 0, []
                slots.append(_Slot(role, i, node, None, 0, 0))
                node += size // per_node
                continue
            if used + size > per_node:
                node, used, on_node = node + 1, 0, []
            same = sum(1 for s in on_node if s.role == role)
            ranks = sum(_dp(z, s.role) for s in on_node)
            devices = tuple(range(used, used + size))
            slot = _Slot(role, i, node, devices, same, ranks)
            slots.append(slot)
            on_node.append(slot)
            used += size
    return slots, node + (1 if used else 0)


def rdma_of(st: Study, network: bool) -> tuple[str, ...]:
    """The RDMA devices named for the transfer, where it crosses the network."""
    named = st.scenario.rdma_devices
    return tuple(named.split(",")) if network and named else ()


def _dp(z: Sized, role: PoolRole) -> int:
    pool = z.prefill if role == "prefill" else z.decode
    return pool.worker.candidate.layout.dp


def _pool_plan(st: Study, pool: Pool, role: PoolRole) -> LaunchPlan:
    s = st.scenario
    c = pool.worker.candidate
    per_node = min(c.layout.gpus, s.gpus_per_node)
    users = max(1, c.running)
    worker = s.model_copy(update={"gpus_per_node": per_node,
                                  "nodes": c.layout.gpus // per_node, "users": users})  # fmt: skip
    view = st.primary
    runs = not st.gates.failed(memory=False)  # a kernel or a format no worker can change
    return build_plan(plan_inputs(st), worker, s.engine, c, pool.worker.model.kv, view.software,
                      runs, role)  # fmt: skip


def _server_flags(plan: LaunchPlan, pool: list[PlanFlag], port: int) -> list[PlanFlag]:
    """The worker's plan flags with its own port, then its pool flags."""
    port_flag = adapter(plan.engine).flag("port")
    flags = [replace(f, value=str(port)) if f.flag == port_flag else f for f in plan.flags]
    return flags + pool


def _servers(st: Study, plan: LaunchPlan, slot: _Slot, network: bool) -> list[Server]:
    """The commands of one placed worker, with its pool's flags and environment."""
    eng = adapter(plan.engine)
    host = node_var(slot.node) if network else None
    server = PoolServer(slot.role, slot.index_on_host, slot.ranks_before, host,
                        rdma_of(st, network))  # fmt: skip
    pool = [checked(plan.engine, f.flag, f.value, f.why) for f in eng.pool_flags(server)]
    port = plan.port + (slot.devices[0] if slot.devices else 0)
    flags = _server_flags(plan, pool, port)
    worker = st.scenario.model_copy(
        update={"gpus_per_node": plan.gpus_per_node, "nodes": plan.nodes}
    )
    commands = node_commands(plan.engine, plan.program, flags, plan.layout, worker,
                             st.family.moe)  # fmt: skip
    env = tuple(EnvVar(n, v, why) for n, v, why in eng.pool_env(server))
    out = []
    for c in commands:
        argv = tuple(node_var(slot.node) + t[len(LEADER):] if t.startswith(LEADER) else t
                     for t in c.argv)  # fmt: skip
        placed = replace(c, node=slot.node + c.node, argv=argv, devices=slot.devices,
                         port=port if c.port is not None else None)  # fmt: skip
        boot = eng.bootstrap_port(server) if slot.role == "prefill" else None
        out.append(Server(slot.role, slot.worker, slot.node + c.node, placed, env, boot))
    return out


def router(engine: Engine, servers: list[Server]) -> Router:
    """The router in PD mode over every serving leader of each pool."""
    facts = disagg_facts().router(engine)
    argv: list[str] = []
    for token in facts.argv:
        if token in ("{prefill}", "{decode}"):
            role = token.strip("{}")
            for s in servers:
                if s.role != role or not s.serves:
                    continue
                argv += ["--" + role, f"http://{node_var(s.node)}:{s.command.port}"]
                if facts.bootstrap and s.bootstrap_port is not None:
                    argv.append(str(s.bootstrap_port))
        else:
            argv.append(token)
    count = {r: sum(1 for s in servers if s.role == r and s.serves) for r in ("prefill", "decode")}
    why = ROUTER(prefill=count["prefill"], decode=count["decode"], source=Source(facts.source))
    return Router(tuple(argv), why, facts)


def disagg_plan(st: Study, d: Disaggregated, label: Decision | None) -> DisaggPlan:
    """The launch plan of ``d``, ``st``'s disaggregated candidate (``label``: why it is not the
    plan to run, for one asked for anyway). Raises InputError naming the request rate when there
    is no candidate."""
    z = d.sized
    if z is None:
        assert d.problem is not None
        raise InputError("request_rate", NO_CANDIDATE(why=d.problem))
    per_node = st.scenario.gpus_per_node
    plans: dict[str, LaunchPlan] = {"prefill": _pool_plan(st, z.prefill, "prefill"),
                                    "decode": _pool_plan(st, z.decode, "decode")}  # fmt: skip
    slots, nodes = place(z, per_node)
    network = nodes > 1
    servers = [s for slot in slots for s in _servers(st, plans[slot.role], slot, network)]
    pods = {r: _pod_plan(st, plans[r], r, network) for r in ROLES}
    return DisaggPlan(
        st.scenario.engine, d, pods["prefill"], pods["decode"], tuple(servers), nodes,
        per_node, router(st.scenario.engine, servers), label,
    )  # fmt: skip


def _pod_plan(st: Study, plan: LaunchPlan, role: PoolRole, network: bool) -> LaunchPlan:
    """One worker of the pool as its own host runs it (the first on its host: the default
    ports): its flags with the pool's, its commands, its environment with the pool's (the
    handshake host an address each server names: ``${NODE0_ADDR}`` in a script, the pod's IP in
    Kubernetes)."""
    eng = adapter(plan.engine)
    server = PoolServer(role, 0, 0, node_var(0) if network else None, rdma_of(st, network))
    flags = list(plan.flags)
    flags += [checked(plan.engine, f.flag, f.value, f.why) for f in eng.pool_flags(server)]
    worker = st.scenario.model_copy(
        update={"gpus_per_node": plan.gpus_per_node, "nodes": plan.nodes}
    )
    commands = node_commands(plan.engine, plan.program, flags, plan.layout, worker,
                             st.family.moe)  # fmt: skip
    env = plan.env + tuple(EnvVar(n, v, why) for n, v, why in eng.pool_env(server))
    return replace(plan, flags=tuple(flags), commands=commands, env=env)


__all__ = ["DisaggPlan", "Router", "Server", "disagg_plan", "node_var", "place"]
