"""A launch plan as text people paste: the command, a bash script, docker run, and its JSON.

Every string that came from a user or a config is data here, never code: shell words go through
``shlex.quote``; a comment line carries text only after ``one_line`` has folded every line
break, carriage return and Unicode separator into a space, so nothing a config says can end a
comment and start a command. The only expanded words are the ones this module writes itself
(``${LEADER_ADDR}`` for the first node's address, ``${IFACE_NAME}`` for its network interface).
Reasons are decisions, worded in the reader's language by ``engine.text.words``.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable

from engine.decision import Decision
from engine.i18n import DEFAULT_LANG, Lang, t
from engine.launch.launch_data import launch_facts
from engine.launch.plan import LEADER, LaunchPlan, NodeCommand
from engine.text.sources import clean
from engine.text.words import say, sources

# Every character that ends a line for a shell, a YAML parser or a Markdown renderer, plus the
# other C0/C1 controls.
_LINE_BREAKS = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\u0085\ufeff]+")
# The variables this module writes itself: a word that is one of them (or NAME=one of them)
# stays expandable inside double quotes.
_VAR = re.compile(
    r"^(?P<name>[A-Z_][A-Z0-9_]*=)?(?P<var>\$\{(?:LEADER_ADDR|IFACE_NAME)\}(?::\d{1,5})?)$"
)


def one_line(text: str) -> str:
    """``text`` with every line break and control character folded into one space."""
    return _LINE_BREAKS.sub(" ", text).strip()


def comment(text: str) -> str:
    """A bash comment line that cannot end early: ``# `` + the text on one line."""
    return "# " + one_line(text)


def word(token: str) -> str:
    """One shell word: the leader-address and interface placeholders stay expandable (double
    quotes), every other token is single-quoted by shlex when it needs to be."""
    m = _VAR.match(token)
    if m:
        return (m.group("name") or "") + f'"{m.group("var")}"'
    return shlex.quote(token)


def join(argv: tuple[str, ...] | list[str]) -> str:
    return " ".join(word(t) for t in argv)


# A router word: a URL list whose hosts may be the node-address variables the script asks for
_ROUTER_WORD = re.compile(r"^(?:[A-Za-z0-9:/._,@+=-]|\$\{NODE[0-9]{1,3}_ADDR\})+$")


def router_word(token: str) -> str:
    """One word of the router's command: a URL list naming ``${NODEn_ADDR}`` stays expandable
    (double quotes around nothing but safe characters and those variables); anything else is
    quoted as ``word`` quotes it."""
    if "${NODE" in token and _ROUTER_WORD.match(token):
        return f'"{token}"'
    return word(token)


def router_lines(plan: LaunchPlan, lang: Lang = DEFAULT_LANG) -> list[str]:
    """The script's ``router)`` case: the prefix-aware router in front of the servers, with its
    reason and the node addresses it needs."""
    r = plan.router
    if r is None:
        return []
    nodes = sorted({int(n) for n in re.findall(r"\$\{NODE([0-9]+)_ADDR\}", " ".join(r.argv))})
    lines = ["  router)", "    " + comment(t("script.router", lang, why=said(r.why, lang)))]
    lines += [f'    : "${{NODE{n}_ADDR:?set NODE{n}_ADDR to the address of node {n}}}"'
              for n in nodes]  # fmt: skip
    lines += ["    " + " ".join(router_word(tok) for tok in r.argv), "    ;;"]
    return lines


def option_lines(argv: list[str], head: int, quote: Callable[[list[str]], str] = join) -> list[str]:
    """The program (``head`` words), then an option with its value per line, each quoted by
    ``quote``."""
    lines = [quote(argv[:head])]
    i = head
    while i < len(argv):
        group = [argv[i]]
        if i + 1 < len(argv) and not argv[i + 1].startswith("--"):
            group.append(argv[i + 1])
            i += 1
        lines.append(quote(group))
        i += 1
    return lines


def shell(plan: LaunchPlan, command: NodeCommand | None = None) -> str:
    """One node's command, an option per line with ``\\`` continuations."""
    argv = list((command or plan.commands[0]).argv)
    return " \\\n  ".join(option_lines(argv, len(plan.program)))


def _prefix(command: NodeCommand) -> str:
    if command.devices is None:
        return ""
    return "CUDA_VISIBLE_DEVICES=" + ",".join(str(d) for d in command.devices) + " "


def said(decision: Decision, lang: Lang = DEFAULT_LANG) -> str:
    """A decision in words with its citations after it in brackets (a page lists them under
    the reasons; a script has only its comment line)."""
    cited = [clean(c) for c in sources([decision])]
    return say(decision, lang) + (f" [{'; '.join(cited)}]" if cited else "")


def blocked_stop(plan: LaunchPlan, lang: Lang = DEFAULT_LANG) -> list[str]:
    """For a plan that cannot start: the reasons on stderr and ``exit 1``, before any
    launcher line of the script runs (the commands below stay for reading)."""
    if plan.runnable:
        return []
    lines = [comment(t("script.blocked", lang, why=say(b, lang))) for b in plan.blocked_by]
    for b in plan.blocked_by:
        stop = t("script.blocked", lang, why=one_line(say(b, lang)))
        lines.append(f"echo {shlex.quote(stop)} >&2")
    return [*lines, "exit 1", ""]


def script(plan: LaunchPlan, lang: Lang = DEFAULT_LANG) -> str:
    """A bash script for the whole launch: ``set -euo pipefail``, the environment, the reasons as
    comments (in ``lang``), and one command per node (or per server) with the node it belongs
    on."""
    out = [
        "#!/usr/bin/env bash",
        comment(
            t(
                "script.header",
                lang,
                engine=plan.engine,
                version=plan.engine_version,
                model=plan.model_name,
                nodes=plan.nodes,
                per_node=plan.gpus_per_node,
                gpu=plan.gpu_key,
                layout=say(plan.layout.name(), lang),
            )
        ),
        comment(
            t("script.context", lang, context=f"{plan.context:,}", users=f"{plan.fit.users:,}")
        ),
        "set -euo pipefail",
        "",
    ]
    out += blocked_stop(plan, lang)
    if plan.warned:
        out += [comment(t("script.warning", lang, text=said(w, lang))) for w in plan.warned]
        out.append("")
    nic = launch_facts().multi_node.nic_env.placeholder
    if any("${" + nic + "}" == e.value for e in plan.env):
        out += [
            comment(t("script.set_nic", lang, nic=nic)),
            f': "${{{nic}:?set {nic} to the network interface that reaches the other nodes}}"',
        ]
    for e in plan.env:
        out.append(comment(f"{e.name}: {said(e.why, lang)}"))
        out.append(f"export {e.name}={word(e.value)}")
    if plan.env:
        out.append("")
    out += reason_comments(plan, lang)
    multi = any(c.role != "server" for c in plan.commands)
    if multi:
        out += [
            "",
            comment(t("script.leader", lang)),
            ': "${LEADER_ADDR:?set LEADER_ADDR to the address of node 0}"',
        ]
    if len(plan.commands) == 1:
        out += ["", shell(plan)]
        return "\n".join(out) + "\n"
    out += ["", comment(t("script.pick_node", lang))]
    by_node: dict[int, list[NodeCommand]] = {}
    for c in plan.commands:
        by_node.setdefault(c.node, []).append(c)
    branches = [
        line
        for node, commands in by_node.items()
        for line in node_case(
            str(node), [[_prefix(c) + shell(plan, c).replace("\n", "\n    ")] for c in commands]
        )
    ]
    out += node_switch(NODE_NUMBER, branches + router_lines(plan, lang))
    return "\n".join(out) + "\n"


NODE_NUMBER = "pass the node number (0 for the first node)"


def reason_comments(plan: LaunchPlan, lang: Lang) -> list[str]:
    """Comments for each flag with its reason, each option left to the engine with why, and
    each note of the plan."""
    out = [comment(f"{' '.join(f.tokens)}: {said(f.why, lang)}") for f in plan.flags]
    out += [
        comment(t("script.not_set", lang, flag=x.flag, why=said(x.why, lang)))
        for x in plan.left_to_engine
    ]
    out += [comment(t("script.note", lang, text=said(n, lang))) for n in plan.noted]
    return out


def node_switch(usage: str, branches: list[str]) -> list[str]:
    """The script's pick of what to start: a ``case`` over its first argument (required;
    ``usage`` says what to pass) with ``branches``, any other value refused."""
    head = [f'NODE="${{1:?{usage}}}"', 'case "$NODE" in']
    return [*head, *branches, '  *) echo "unknown node: $NODE" >&2; exit 2 ;;', "esac"]


def node_case(node: str, servers: list[list[str]]) -> list[str]:
    """A ``case`` branch that starts every server of one node: each server's lines (its last
    the command), in the background with a ``wait`` when there are several."""
    out = [f"  {node})"]
    background = len(servers) > 1
    for lines in servers:
        *head, command = lines
        out += ["    " + line for line in head]
        out.append("    " + command + (" &" if background else ""))
    if background:
        out.append("    wait")
    return [*out, "    ;;"]


def container_args(plan: LaunchPlan, command: NodeCommand | None = None) -> list[str]:
    """What follows the image name in ``docker run``."""
    argv = list((command or plan.commands[0]).argv)
    return argv[2:] if plan.image_has_entrypoint else argv


def docker(plan: LaunchPlan, command: NodeCommand | None = None) -> str:
    c = command or plan.commands[0]
    if plan.gpu_vendor == "amd":
        devices = ["--device", "/dev/kfd", "--device", "/dev/dri", "--group-add", "video"]
    elif c.devices is not None:
        # docker's documented form for several devices: --gpus '"device=0,1"'
        devices = ["--gpus", '"device=' + ",".join(str(d) for d in c.devices) + '"']
    else:
        devices = ["--gpus", "all"]
    net = ["--network", "host"] if c.role != "server" else ["-p", f"{c.port}:{c.port}"]
    head = ["docker", "run", *devices, "--ipc=host", *net]
    for e in plan.env:
        head += ["-e", f"{e.name}={e.value}"]
    if c.role != "server":
        head += ["-e", "LEADER_ADDR"]
    text = join(head)
    # Written unquoted so the shell expands $HOME; every other word is quoted.
    cache = '-v "$HOME/.cache/huggingface:/root/.cache/huggingface"'
    return f"{text} {cache} {shlex.quote(plan.image)} \\\n  " + join(container_args(plan, c))


__all__ = [
    "LEADER",
    "comment",
    "docker",
    "join",
    "one_line",
    "said",
    "script",
    "shell",
    "word",
]
