"""Kubernetes manifests for a launch plan, written only by the YAML library (no comments, no
text glued around it): a Deployment + Service when one copy of the model fits a node, a
LeaderWorkerSet (one pod per node: a leader and its workers) when a copy spans nodes, and the
prefix-aware router when more than one server answers.

Why a router: each server keeps its own prefix cache, so a round-robin Service sends a shared
prefix to a server that has not seen it and the cache hit is lost. A prefix-aware router keeps
requests with the same prefix on the same server:

* SGLang: ``sglang_router`` (``--policy cache_aware``);
* vLLM: the vLLM production-stack router (``--routing-logic prefixaware``, Kubernetes service
  discovery by label; docs.vllm.ai/projects/production-stack, "Prefix Aware Routing").
"""

from __future__ import annotations

import re
from typing import Any

import yaml

from engine.engines import adapter
from engine.errors import InputError
from engine.launch.plan import LEADER, LaunchPlan, NodeCommand, launch_facts
from engine.launch.render import join

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
LWS_API = "leaderworkerset.x-k8s.io/v1"


def manifest_name(model_name: str) -> str:
    """A DNS label from a model name ("deepseek-ai/DeepSeek-V3" -> "deepseek-v3")."""
    base = model_name.rsplit("/", 1)[-1].lower()
    name = "".join(c if c.isascii() and c.isalnum() else "-" for c in base).strip("-")
    name = re.sub(r"-{2,}", "-", name)
    return (name or "model")[:50].rstrip("-") or "model"


def _labels(name: str) -> dict[str, str]:
    return {"app.kubernetes.io/name": name, "app.kubernetes.io/component": "engine"}


def _resource(plan: LaunchPlan) -> str:
    return "amd.com/gpu" if plan.gpu_vendor == "amd" else "nvidia.com/gpu"


def _probes(port: int) -> dict[str, Any]:
    return {
        "readinessProbe": {
            "httpGet": {"path": "/health", "port": port},
            "initialDelaySeconds": 60,
            "periodSeconds": 10,
            "failureThreshold": 3,
        },
        # Loading hundreds of GB of weights takes minutes: the startup probe holds liveness off.
        "startupProbe": {
            "httpGet": {"path": "/health", "port": port},
            "periodSeconds": 10,
            "failureThreshold": 180,
        },
        "livenessProbe": {
            "httpGet": {"path": "/health", "port": port},
            "periodSeconds": 30,
            "failureThreshold": 3,
        },
    }


def _env(plan: LaunchPlan) -> list[dict[str, str]]:
    env = [{"name": "HF_HOME", "value": "/root/.cache/huggingface"}]
    env += [{"name": e.name, "value": e.value} for e in plan.env]
    return env


def _volumes() -> list[dict[str, Any]]:
    return [
        {
            "name": "dshm",
            "emptyDir": {"medium": "Memory", "sizeLimit": launch_facts().kubernetes.shm_size},
        },
        {"name": "hf-cache", "emptyDir": {}},
    ]


def _mounts() -> list[dict[str, str]]:
    return [
        {"name": "dshm", "mountPath": "/dev/shm"},
        {"name": "hf-cache", "mountPath": "/root/.cache/huggingface"},
    ]


def _container(plan: LaunchPlan, argv: list[str], gpus: int, port: int | None) -> dict[str, Any]:
    split = adapter(plan.engine).command_words  # vllm serve | python3 -m sglang.launch_server
    c: dict[str, Any] = {
        "name": "engine",
        "image": plan.image,
        "command": argv[:split],
        "args": argv[split:],
        "env": _env(plan),
        "resources": {"limits": {_resource(plan): gpus}, "requests": {_resource(plan): gpus}},
        "volumeMounts": _mounts(),
    }
    if port is not None:
        c["ports"] = [{"name": "http", "containerPort": port, "protocol": "TCP"}]
        c.update(_probes(port))
    return c


def _metadata(plan: LaunchPlan, name: str) -> dict[str, Any]:
    """Name and labels; the plan's warnings ride along as annotations (the manifest has no
    comments), so ``kubectl describe`` shows them to whoever applies it."""
    meta: dict[str, Any] = {"name": name, "labels": _labels(name)}
    if plan.warnings:
        meta["annotations"] = {
            f"serving-playbook/warning-{i}": w for i, w in enumerate(plan.warnings, 1)
        }
    return meta


def _deployment(plan: LaunchPlan, name: str, replicas: int, gpus_per_pod: int) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": _metadata(plan, name),
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": _labels(name)},
            "template": {
                "metadata": {"labels": _labels(name)},
                "spec": {
                    "containers": [_container(plan, plan.argv, gpus_per_pod, plan.port)],
                    "volumes": _volumes(),
                },
            },
        },
    }


def _service(plan: LaunchPlan, name: str, selector: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "labels": _labels(name)},
        "spec": {
            "selector": selector,
            "ports": [{"name": "http", "port": plan.port, "targetPort": plan.port}],
        },
    }


# LeaderWorkerSet injects these into every pod of a group (lws docs: "LWS_LEADER_ADDRESS",
# "LWS_WORKER_INDEX").
_RANK_FLAGS = {"--node-rank": "$LWS_WORKER_INDEX"}


def _lws_script(plan: LaunchPlan, command: NodeCommand, worker: bool) -> str:
    """``sh -c`` text for a leader or worker pod: the node's argv with the rank and the leader's
    address taken from the variables LeaderWorkerSet sets. Every token is shell-quoted."""
    argv = list(command.argv)
    for i, token in enumerate(argv):
        if worker and token == "--data-parallel-start-rank":
            per_node = int(argv[argv.index("--data-parallel-size-local") + 1])
            argv[i + 1] = f"__DP_START__{per_node}"
        elif worker and token in _RANK_FLAGS:
            argv[i + 1] = "__RANK__"
    text = join(argv)
    text = text.replace(f'"{LEADER}', '"${LWS_LEADER_ADDRESS}')
    text = text.replace("__RANK__", '"$LWS_WORKER_INDEX"')
    text = re.sub(r"__DP_START__(\d+)", r'"$((LWS_WORKER_INDEX * \1))"', text)
    return "exec " + text


def _lws(plan: LaunchPlan, name: str, groups: int) -> dict[str, Any]:
    leader_cmd = next(c for c in plan.commands if c.role == "leader")
    worker_cmd = next(c for c in plan.commands if c.role == "worker")

    def pod(command: NodeCommand, worker: bool) -> dict[str, Any]:
        c = _container(plan, [], plan.gpus_per_node, None if worker else plan.port)
        c["command"] = ["/bin/sh", "-c"]
        c["args"] = [_lws_script(plan, command, worker)]
        return {"containers": [c], "volumes": _volumes()}

    leader_labels = {**_labels(name), "role": "leader"}
    return {
        "apiVersion": LWS_API,
        "kind": "LeaderWorkerSet",
        "metadata": _metadata(plan, name),
        "spec": {
            "replicas": groups,
            "leaderWorkerTemplate": {
                "size": plan.nodes_per_copy,
                "restartPolicy": "RecreateGroupOnPodRestart",
                "leaderTemplate": {
                    "metadata": {"labels": leader_labels},
                    "spec": pod(leader_cmd, False),
                },
                "workerTemplate": {
                    "metadata": {"labels": {**_labels(name), "role": "worker"}},
                    "spec": pod(worker_cmd, True),
                },
            },
        },
    }


def router_command(plan: LaunchPlan, name: str, servers: int) -> list[str]:
    """The prefix-aware router for ``servers`` engine servers (``data/launch.yaml`` routers)."""
    urls = [f"http://{name}-{i}.{name}:{plan.port}" for i in range(servers)]
    out: list[str] = []
    for token in launch_facts().routers[plan.engine].argv:
        if token == "{worker_urls}":
            out += urls
        else:
            out.append(token.format(selector=f"app.kubernetes.io/name={name}", port=plan.port))
    return out


def _router_configmap(plan: LaunchPlan, name: str, servers: int) -> dict[str, Any]:
    cmd = router_command(plan, name, servers)
    router = launch_facts().routers[plan.engine]
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": f"{name}-router", "labels": {"app.kubernetes.io/name": name}},
        "data": {
            "README": (
                f"{servers} servers each keep their own prefix cache: send traffic through this "
                "prefix-aware router, not only the round-robin Service. "
                f"Image: {router.image or plan.image}. Source: {router.source}."
            ),
            "router.sh": join(cmd) + "\n",
        },
    }


def kubernetes_yaml(
    plan: LaunchPlan, name: str, replicas: int | None = None, gpus_per_pod: int | None = None
) -> str:
    """The manifests as multi-document YAML: Deployment + Service, or a LeaderWorkerSet + a
    Service for its leaders when a copy spans nodes; a router ConfigMap for several servers.
    ``replicas`` overrides the plan's server count; ``gpus_per_pod`` its GPUs per pod."""
    if not _DNS_LABEL.match(name) or len(name) > 56:
        raise InputError(
            "name", f"a DNS label of at most 56 lowercase letters, digits or '-', got {name!r}"
        )
    multi = plan.nodes_per_copy > 1
    servers = plan.servers if replicas is None else replicas
    if isinstance(servers, bool) or not isinstance(servers, int) or not 1 <= servers <= 1024:
        raise InputError("replicas", f"a whole number from 1 to 1024, got {servers!r}")
    per_pod = gpus_per_pod
    if per_pod is None:
        per_pod = plan.gpus_per_node if multi else _gpus_per_server(plan)
    if isinstance(per_pod, bool) or not isinstance(per_pod, int) or per_pod < 1:
        raise InputError("gpus_per_pod", f"a positive whole number, got {per_pod!r}")
    if per_pod < _gpus_per_server(plan) and not multi:
        raise InputError(
            "gpus_per_pod",
            f"at least the plan's {_gpus_per_server(plan)} GPUs per server (one pod runs one "
            "engine)",
        )
    if multi:
        docs: list[dict[str, Any]] = [
            _lws(plan, name, servers),
            _service(plan, name, {**_labels(name), "role": "leader"}),
        ]
    else:
        docs = [_deployment(plan, name, servers, per_pod), _service(plan, name, _labels(name))]
    if servers > 1:
        docs.append(_router_configmap(plan, name, servers))
    return yaml.safe_dump_all(docs, sort_keys=False, default_flow_style=False, width=100)


def _gpus_per_server(plan: LaunchPlan) -> int:
    """GPUs one server uses: a whole node when copies share a server, else one copy."""
    c = plan.commands[0]
    if c.devices is not None:
        return len(c.devices)
    return min(plan.gpus_per_node, plan.gpus)
