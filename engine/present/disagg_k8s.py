"""Kubernetes manifests for a disaggregated plan, written only by the YAML library: a
LeaderWorkerSet per pool (its replicas are the pool's workers, each group one worker: one pod,
or a leader and its workers when a worker spans nodes), the router's Deployment and Service, and
the model-cache claim every pod mounts.

A LeaderWorkerSet gives every worker a stable address (its leader pod ``<set>-<i>`` under the
set's headless Service), which the router lists: each prefill server by URL (SGLang: and its
bootstrap port), each decode server by URL. A pod's own IP is its NIXL handshake host; when the
KV crosses the network every pod requests the cluster's RDMA device-plugin resource (and names
the RDMA devices where the plan does). The pod specs are ``engine.present.k8s``'s own (image,
GPUs, probes, the model-cache claim, the token Secret, the node network of a worker that spans
nodes).
"""

from __future__ import annotations

import math
import shlex
from typing import Any

import yaml

from engine import errors as E
from engine.disagg.plan import ROLES, DisaggPlan, node_var
from engine.engines import adapter
from engine.engines.base import PoolRole, PoolServer
from engine.engines.memory import GIB
from engine.errors import InputError
from engine.i18n import DEFAULT_LANG, Lang, t
from engine.launch.plan import LaunchPlan, launch_facts
from engine.present.k8s import (
    _DNS_LABEL,
    _DUMPER,
    DNS_NAME,
    LWS_API,
    KubeOptions,
    _container,
    _lws_script,
    _volumes,
    check_options,
)
from engine.present.render import comment, one_line
from engine.text.words import say

MAX_NAME = 48  # the base name: "-prefill" and a pod's "-<group>-<index>" must still fit 63


def _labels(name: str, role: str) -> dict[str, str]:
    return {"app.kubernetes.io/name": name, "app.kubernetes.io/component": role}


def _metadata(p: DisaggPlan, name: str, role: str, lang: Lang) -> dict[str, Any]:
    """Name, labels and what ``kubectl describe`` should say, in the reader's language: the
    plan's warnings, the shared model cache, why nothing runs (a blocked plan) or why this is not
    the plan to run."""
    plan = p.prefill
    notes = {
        f"serving-playbook/warning-{i}": one_line(say(w, lang, markdown=False))
        for i, w in enumerate(plan.warned, 1)
    }
    cache = launch_facts().kubernetes.model_cache
    notes["serving-playbook/model-cache"] = t(
        "manifest.model_cache",
        lang,
        access=t("manifest.access.many", lang),  # the pools run on several nodes
        gib=f"{math.ceil(plan.checkpoint_bytes * 1.1 / GIB):,}",
        path=cache.mount_path,
        claim=cache.claim,
    )
    if p.label is not None:
        notes["serving-playbook/not-the-pick"] = one_line(say(p.label, lang, markdown=False))
    if not p.runnable:
        for i, b in enumerate(p.blocked_by, 1):
            notes[f"serving-playbook/blocked-{i}"] = one_line(say(b, lang, markdown=False))
    return {"name": name, "labels": _labels(name, role), "annotations": notes}


def _pod(
    p: DisaggPlan, plan: LaunchPlan, role: PoolRole, opts: KubeOptions, leader: bool
) -> dict[str, Any]:
    """One pod of a pool's worker: the leader (or the whole worker) or a worker node."""
    multi = plan.nodes_per_copy > 1
    command = next(c for c in plan.commands if (c.role != "worker") == leader)
    network = launch_facts().kubernetes.multi_node_network
    host = multi and (network.host_network if opts.host_network is None else opts.host_network)
    gpus = plan.gpus_per_node if multi else plan.layout.gpus
    port = command.port
    c = _container(plan, list(command.argv), gpus, port, opts, host)
    if multi:
        c["command"], c["args"] = ["/bin/sh", "-c"], [_lws_script(plan, command)]
    if opts.rdma_resource is not None and p.nodes > 1:  # the KV crosses the network
        c["resources"]["limits"][opts.rdma_resource] = 1
        c["resources"]["requests"][opts.rdma_resource] = 1
    c["env"] = [_pod_env(e) for e in c["env"]]
    spec: dict[str, Any] = {"containers": [c], "volumes": _volumes(opts)}
    if host:
        spec["hostNetwork"] = True
        spec["dnsPolicy"] = "ClusterFirstWithHostNet"
    return spec


def _pod_env(e: dict[str, Any]) -> dict[str, Any]:
    """A script's node address becomes the pod's own IP (its peers reach the handshake there)."""
    if isinstance(e.get("value"), str) and e["value"] == node_var(0):
        return {"name": e["name"], "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}
    return e


def _lws(p: DisaggPlan, name: str, role: PoolRole, opts: KubeOptions, lang: Lang) -> dict[str, Any]:
    plan = p.prefill if role == "prefill" else p.decode
    z = p.candidate.sized
    assert z is not None
    workers = (z.prefill if role == "prefill" else z.decode).workers
    template: dict[str, Any] = {
        "size": plan.nodes_per_copy,
        "restartPolicy": "RecreateGroupOnPodRestart",
        "leaderTemplate": {
            "metadata": {"labels": {**_labels(name, role), "role": "leader"}},
            "spec": _pod(p, plan, role, opts, leader=True),
        },
    }
    if plan.nodes_per_copy > 1:
        template["workerTemplate"] = {
            "metadata": {"labels": {**_labels(name, role), "role": "worker"}},
            "spec": _pod(p, plan, role, opts, leader=False),
        }
    else:  # one pod a worker: the leader template is the only one there is
        template["workerTemplate"] = template.pop("leaderTemplate")
    return {
        "apiVersion": LWS_API,
        "kind": "LeaderWorkerSet",
        "metadata": _metadata(p, name, role, lang),
        "spec": {"replicas": workers if p.runnable else 0, "leaderWorkerTemplate": template},
    }


def router_argv(p: DisaggPlan, names: dict[PoolRole, str]) -> list[str]:
    """The router's command with every worker's leader by its stable address."""
    facts = p.router.facts
    z = p.candidate.sized
    assert z is not None
    eng = adapter(p.engine)
    out: list[str] = []
    for token in facts.argv:
        if token not in ("{prefill}", "{decode}"):
            out.append(token)
            continue
        role: PoolRole = "prefill" if token == "{prefill}" else "decode"
        plan = p.prefill if role == "prefill" else p.decode
        pool = z.prefill if role == "prefill" else z.decode
        name = names[role]
        for i in range(pool.workers):
            out += ["--" + role, f"http://{name}-{i}.{name}:{plan.port}"]
            boot = eng.bootstrap_port(PoolServer(role, 0, 0, None))
            if facts.bootstrap and role == "prefill" and boot is not None:
                out.append(str(boot))
    return out


def _router(
    p: DisaggPlan, name: str, names: dict[PoolRole, str], lang: Lang
) -> list[dict[str, Any]]:
    facts = p.router.facts
    argv = router_argv(p, names)
    if facts.install is not None:  # the package on a Python image, installed as the pod starts
        text = f"pip install --no-cache-dir {shlex.quote(facts.install)} && exec "
        container = {"command": ["/bin/sh", "-c"], "args": [text + shlex.join(argv)]}
    else:
        container = {"command": argv[:1], "args": argv[1:]}
    labels = _labels(name, "router")
    spec = {
        "name": "router",
        "image": facts.image or p.prefill.image,
        **container,
        "ports": [{"name": "http", "containerPort": facts.port, "protocol": "TCP"}],
        "readinessProbe": {"httpGet": {"path": "/health", "port": facts.port},
                           "periodSeconds": 10},
    }  # fmt: skip
    meta = _metadata(p, name, "router", lang)
    meta["annotations"]["serving-playbook/router"] = one_line(
        say(p.router.why, lang, markdown=False)
    )
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": meta,
        "spec": {
            "replicas": 1 if p.runnable else 0,
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": {"containers": [spec]}},
        },
    }
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "selector": labels,
            "ports": [{"name": "http", "port": facts.port, "targetPort": facts.port}],
        },
    }
    return [deployment, service]


def disagg_kubernetes_yaml(
    p: DisaggPlan, name: str, options: KubeOptions | None = None, lang: Lang = DEFAULT_LANG
) -> str:
    """The manifests as multi-document YAML: a LeaderWorkerSet per pool, the router's
    Deployment and Service (``options``: what the cluster decides, as for the aggregated
    plan's manifests; ``lang``: the language of the annotations and comments)."""
    opts = options or KubeOptions()
    check_options(opts)
    if not _DNS_LABEL.match(name) or len(name) > MAX_NAME:
        raise InputError("name", DNS_NAME(most=MAX_NAME, got=E.got(name)))
    names: dict[PoolRole, str] = {r: f"{name}-{r}" for r in ROLES}
    docs = [_lws(p, names[r], r, opts, lang) for r in ROLES]
    docs += _router(p, f"{name}-router", names, lang)
    text = yaml.dump_all(docs, Dumper=_DUMPER, sort_keys=False, default_flow_style=False, width=100)
    head: list[str] = []
    if not p.runnable:
        head = [comment(t("script.blocked", lang, why=say(b, lang))) for b in p.blocked_by]
        head.append(comment(t("manifest.blocked_replicas", lang)))
    elif p.label is not None:
        head = [comment(t("disagg.script.not_pick", lang, why=say(p.label, lang)))]
    return "\n".join(head) + ("\n" if head else "") + text
