"""The prefix-aware router in front of several servers: with more than one server and a prompt
head that repeats, each server keeps its own prefix cache, so a request must reach the server
that already holds its prefix (a session's history, a system prompt) — the router of the
engine's project with its cache-aware policy (``data/launch.yaml`` routers: SGLang's
``sglang_router`` with ``--policy cache_aware``, vLLM's production-stack ``vllm-router`` with
``--routing-logic prefixaware``). The serving playbook (seed 000): requests of one session or one
system prompt spread over pods fragment the cache; route on the prompt's head."""

from __future__ import annotations

from dataclasses import dataclass

from engine.decision import Code, Decision, Name, Percent
from engine.launch.launch_data import launch_facts
from engine.launch.plan_parts import NodeCommand
from engine.scenario import Engine, Scenario

WHY = Code("plan.router.why", "servers", "share", "kind", "policy")
KINDS = {"system": Code("plan.router.kind.system"), "session": Code("plan.router.kind.session")}


@dataclass(frozen=True)
class Router:
    """The router a launch script starts beside the servers, and why."""

    argv: tuple[str, ...]
    why: Decision
    source: str


def _url(c: NodeCommand) -> str:
    """A server's URL: its node's address (the script asks for each) and its port."""
    return "http://${NODE" + str(c.node) + "_ADDR}:" + str(c.port)


def plan_router(
    engine: Engine, s: Scenario, commands: tuple[NodeCommand, ...], model: str
) -> Router | None:
    """The router for the plan's servers, or None (one server, or no repeated prompt head)."""
    servers = [c for c in commands if c.port is not None and c.role in ("server", "leader")]
    if len(servers) < 2 or s.prefix_overlap <= 0:
        return None
    facts = launch_facts().routers[engine]
    urls = [_url(c) for c in servers]
    argv: list[str] = []
    for token in facts.script_argv:
        if token == "{worker_urls}":
            argv += urls
        elif token == "{backends}":
            argv.append(",".join(urls))
        elif token == "{models}":
            argv.append(",".join([model] * len(urls)))
        else:
            argv.append(token)
    why = WHY(
        servers=len(servers),
        share=Percent(s.prefix_overlap / 100),
        kind=KINDS[s.prefix_kind](),
        policy=Name(facts.policy),
    )
    return Router(tuple(argv), why, facts.source)
