"""A disaggregated plan as one bash script: every node's servers (the node picks its case by
number), the router's case, every flag and variable with its reason, in the reader's language.

The script writes as ``engine.present.render`` does: every word through ``shlex``, comments on
one line, a blocked plan stopping before any launcher. The only expanded words it writes are the
nodes' addresses (``${NODE<n>_ADDR}``), which it asks for before anything starts, and render's
own placeholders.
"""

from __future__ import annotations

import re
import shlex

from engine.disagg.plan import DisaggPlan, Server, node_var
from engine.i18n import DEFAULT_LANG, Lang, t
from engine.launch.plan import LaunchPlan
from engine.present.render import (
    NODE_NUMBER,
    comment,
    node_case,
    node_switch,
    one_line,
    option_lines,
    reason_comments,
    router_word,
    said,
    word,
)
from engine.text.words import say

_NODE_REF = re.compile(r"\$\{NODE([0-9]{1,4})_ADDR\}")

# One shell word: a word naming node addresses (``${NODE<n>_ADDR}``) stays expandable, any
# other is quoted as render.word quotes it (the router's words are written the same way).
node_word = router_word


def _join(argv: tuple[str, ...] | list[str]) -> str:
    return " ".join(node_word(a) for a in argv)


def _command(plan: LaunchPlan, s: Server) -> str:
    """One server's line: its devices and own variables, then the command an option a line."""
    pairs = [(e.name, e.value) for e in s.env]
    if s.command.devices is not None:
        pairs.append(("CUDA_VISIBLE_DEVICES", ",".join(str(d) for d in s.command.devices)))
    # an assignment's name stays unquoted (a quoted NAME=value is a command, not a variable)
    env = [f"{name}={node_word(value)}" for name, value in pairs]
    program, *options = option_lines(list(s.command.argv), len(plan.program), _join)
    return " \\\n      ".join([" ".join([*env, program]), *options])


def _head(p: DisaggPlan, lang: Lang) -> list[str]:
    z = p.candidate.sized
    assert z is not None
    speed = p.candidate.speed
    assert speed is not None
    return [
        "#!/usr/bin/env bash",
        comment(t("disagg.script.header", lang, engine=p.engine,
                  version=p.prefill.engine_version, model=p.prefill.model_name,
                  prefill=z.prefill.workers, prefill_layout=say(p.prefill.layout.name(), lang),
                  decode=z.decode.workers, decode_layout=say(p.decode.layout.name(), lang),
                  nodes=p.nodes, per_node=p.gpus_per_node, gpu=p.prefill.gpu_key)),
        comment(t("disagg.script.sized", lang, rate=f"{z.rate:g}", ttft=f"{speed.ttft_ms:,.0f}",
                  tpot=f"{speed.tpot_ms:.1f}", transfer=f"{z.transfer.seconds * 1e3:.2f}")),
        "set -euo pipefail",
        "",
    ]  # fmt: skip


def _stop(p: DisaggPlan, lang: Lang) -> list[str]:
    """A blocked plan prints why and stops before any launcher; one that is not the pick says
    so first (it still runs: it was asked for)."""
    out: list[str] = []
    if p.label is not None:
        out.append(comment(t("disagg.script.not_pick", lang, why=say(p.label, lang))))
    if p.runnable:
        return out + ([""] if out else [])
    for b in p.blocked_by:
        out.append(comment(t("script.blocked", lang, why=say(b, lang))))
        out.append(f"echo {shlex.quote('BLOCKED: ' + one_line(say(b, lang)))} >&2")
    return [*out, "exit 1", ""]


def _reasons(p: DisaggPlan, lang: Lang) -> list[str]:
    """The pools' environment and flags, each with its reason."""
    out: list[str] = []
    shared = {(e.name, e.value) for e in p.prefill.env} & {(e.name, e.value) for e in p.decode.env}
    for e in p.prefill.env:
        if (e.name, e.value) in shared and not _NODE_REF.search(e.value):
            out.append(comment(f"{e.name}: {said(e.why, lang)}"))
            out.append(f"export {e.name}={word(e.value)}")
    for role, plan in p.pools:
        title = t("disagg.script.pool", lang, role=t(f"disagg.pool.{role}", lang))
        out += [*([""] if out else []), comment(title)]
        for e in plan.env:
            if (e.name, e.value) not in shared or _NODE_REF.search(e.value):
                out.append(comment(f"{e.name}: {said(e.why, lang)}"))
        out += reason_comments(plan, lang)
    return out


def _cases(p: DisaggPlan, lang: Lang) -> list[str]:
    branches: list[str] = []
    by_node: dict[int, list[Server]] = {}
    for s in p.servers:
        by_node.setdefault(s.node, []).append(s)
    for node in sorted(by_node):
        lines = []
        for s in by_node[node]:
            plan = p.prefill if s.role == "prefill" else p.decode
            label = t(f"disagg.pool.{s.role}", lang)
            which = comment(t("disagg.script.server", lang, role=label, worker=s.worker + 1))
            lines.append([which, _command(plan, s)])
        branches += node_case(str(node), lines)
    r = p.router
    branches += ["  router)", "    " + comment(said(r.why, lang))]
    if r.facts.install is not None:
        branches.append("    " + comment(t("disagg.script.install", lang, package=r.facts.install)))
    branches += ["    " + _join(r.argv), "    ;;"]
    intro = ["", comment(t("disagg.script.pick_node", lang))]
    return intro + node_switch(f"{NODE_NUMBER}, or router", branches)


def disagg_script(p: DisaggPlan, lang: Lang = DEFAULT_LANG) -> str:
    """The whole launch as one bash script: pass a node's number to start its servers, or
    ``router`` to start the router."""
    out = _head(p, lang) + _stop(p, lang)
    for w in p.prefill.warned:
        out.append(comment(t("script.warning", lang, text=said(w, lang))))
    out += _reasons(p, lang)
    words = [*(a for s in p.servers for a in s.command.argv), *(e.value for s in p.servers
             for e in s.env), *p.router.argv]  # fmt: skip
    nodes = sorted({int(n) for w in words for n in _NODE_REF.findall(w)})
    if nodes:
        out += ["", comment(t("disagg.script.addresses", lang))]
        out += [f': "{node_var(n)[:-1]}:?set NODE{n}_ADDR to the address of node {n}}}"'
                for n in nodes]  # fmt: skip
    return "\n".join(out + _cases(p, lang)) + "\n"
