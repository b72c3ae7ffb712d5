"""The files a user downloads: the launch script, ``docker run``, the Kubernetes manifests, and
the report of the whole Study as JSON (exactly ``python -m engine study … --json``) and as
Markdown. Each is text made by the engine's own writers; this module names the files.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Literal

from engine.i18n import DEFAULT_LANG, Lang, t
from engine.launch.plan import LaunchPlan
from engine.present.k8s import kubernetes_yaml, manifest_name
from engine.present.render import (
    NODE_NUMBER,
    blocked_stop,
    comment,
    docker,
    node_case,
    node_switch,
    script,
)
from engine.present.study_report import study_json, study_markdown
from engine.scenario import cli_line
from engine.study import Study
from engine.text.safe import json_text
from engine.text.words import say

Kind = Literal[
    "script", "docker", "kubernetes", "json", "markdown", "command", "bench", "calibration"
]


@dataclass(frozen=True)
class Artifact:
    """A file to download: its ``text``, or the writer that makes it when first asked (a page
    draws a download button without writing the file; the click writes it)."""

    kind: Kind
    file_name: str
    mime: str
    content: str | Callable[[], str] = field(repr=False, compare=False)

    @cached_property
    def text(self) -> str:
        return self.content if isinstance(self.content, str) else self.content()


def docker_script(plan: LaunchPlan, lang: Lang = DEFAULT_LANG) -> str:
    """``docker run`` for every node as one bash script: one command when a single server
    runs, else the node picks its line by number (as the launch script does); a blocked plan
    stops first with its reasons in ``lang``, as the launch script does."""
    head = [
        "#!/usr/bin/env bash",
        comment(
            t(
                "script.docker_header",
                lang,
                model=plan.model_name,
                nodes=plan.nodes,
                per_node=plan.gpus_per_node,
                gpu=plan.gpu_key,
                layout=say(plan.layout.name(), lang),
                image=plan.image,
            )
        ),
        "set -euo pipefail",
        "",
        *blocked_stop(plan, lang),
    ]
    if len(plan.commands) == 1:
        return "\n".join([*head, docker(plan)]) + "\n"
    multi = any(c.role != "server" for c in plan.commands)
    if multi:
        head += [
            comment(t("script.leader", lang)),
            ': "${LEADER_ADDR:?set LEADER_ADDR to the address of node 0}"',
            "",
        ]
    if any(e.value == "${IFACE_NAME}" for e in plan.env):
        head += [
            ': "${IFACE_NAME:?set IFACE_NAME to the network interface that reaches the other '
            'nodes}"',
            "",
        ]
    by_node: dict[int, list[str]] = {}
    for c in plan.commands:
        by_node.setdefault(c.node, []).append(docker(plan, c).replace("\n", "\n    "))
    branches = [
        line
        for node, commands in by_node.items()
        for line in node_case(str(node), [[text] for text in commands])
    ]
    return "\n".join(head + node_switch(NODE_NUMBER, branches)) + "\n"


def study_json_text(st: Study) -> str:
    """The Study as ``python -m engine study … --json`` prints it."""
    return json_text(study_json(st)) + "\n"


def cli_command(st: Study) -> str | None:
    """The CLI command that prints this Study (None for an uploaded config)."""
    return cli_line(st.scenario)


def launch_artifacts(st: Study, plan: LaunchPlan, lang: Lang = DEFAULT_LANG) -> list[Artifact]:
    """What a launch plan downloads as: the script (its reasons in ``lang``), docker run and the
    manifests."""
    name = manifest_name(plan.model_name)
    launch = script(plan, lang)
    return [
        Artifact("script", f"launch-{name}-{plan.engine}.sh", "text/x-shellscript", launch),
        Artifact(
            "docker",
            f"docker-{name}-{plan.engine}.sh",
            "text/x-shellscript",
            lambda: docker_script(plan, lang),
        ),
        Artifact(
            "kubernetes",
            f"{name}-{plan.engine}.yaml",
            "application/yaml",
            lambda: kubernetes_yaml(plan, name, lang=lang),
        ),
    ]


def report_artifacts(
    st: Study, lang: Lang = DEFAULT_LANG, link: str | None = None
) -> list[Artifact]:
    """The whole Study as JSON (language-free, the CLI's) and as Markdown in ``lang``."""
    name = manifest_name(st.model.name)
    return [
        Artifact("json", f"study-{name}.json", "application/json", lambda: study_json_text(st)),
        Artifact(
            "markdown", f"study-{name}.md", "text/markdown", lambda: study_markdown(st, lang, link)
        ),
    ]
