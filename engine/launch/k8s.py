"""A Kubernetes Deployment + Service for a LaunchPlan, and the prefix-aware router in front of
the replicas when there is more than one.

Why a router: each replica keeps its own prefix cache, so a round-robin Service sends a shared
prefix to a replica that has not seen it and the cache hit is lost. A prefix-aware router keeps
requests with the same prefix on the same replica:

* SGLang: ``sglang_router`` (``--policy cache_aware``; workers by URL or Kubernetes discovery);
* vLLM: the vLLM production-stack router (``--routing-logic prefixaware``, Kubernetes service
  discovery by label; docs.vllm.ai/projects/production-stack, "Prefix Aware Routing").
"""

from __future__ import annotations

import re
from typing import Any

import yaml

from engine.errors import InputError
from engine.launch.plan import LaunchPlan, launch_facts

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")


def _labels(name: str) -> dict[str, str]:
    return {"app.kubernetes.io/name": name, "app.kubernetes.io/component": "engine"}


def _deployment(plan: LaunchPlan, name: str, replicas: int, gpus_per_pod: int) -> dict[str, Any]:
    resource = "amd.com/gpu" if plan.gpu.vendor == "amd" else "nvidia.com/gpu"
    argv = plan.argv
    split = 2 if plan.engine == "vllm" else 3  # vllm serve | python3 -m sglang.launch_server
    container: dict[str, Any] = {
        "name": "engine",
        "image": plan.image,
        "command": argv[:split],
        "args": argv[split:],
        "ports": [{"name": "http", "containerPort": plan.port, "protocol": "TCP"}],
        "env": [{"name": "HF_HOME", "value": "/root/.cache/huggingface"}],
        "resources": {"limits": {resource: gpus_per_pod}, "requests": {resource: gpus_per_pod}},
        "volumeMounts": [
            {"name": "dshm", "mountPath": "/dev/shm"},
            {"name": "hf-cache", "mountPath": "/root/.cache/huggingface"},
        ],
        "readinessProbe": {
            "httpGet": {"path": "/health", "port": plan.port},
            "initialDelaySeconds": 60,
            "periodSeconds": 10,
            "failureThreshold": 3,
        },
        # Loading hundreds of GB of weights takes minutes: the startup probe holds liveness off.
        "startupProbe": {
            "httpGet": {"path": "/health", "port": plan.port},
            "periodSeconds": 10,
            "failureThreshold": 180,
        },
        "livenessProbe": {
            "httpGet": {"path": "/health", "port": plan.port},
            "periodSeconds": 30,
            "failureThreshold": 3,
        },
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "labels": _labels(name)},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": _labels(name)},
            "template": {
                "metadata": {"labels": _labels(name)},
                "spec": {
                    "containers": [container],
                    "volumes": [
                        {
                            "name": "dshm",
                            "emptyDir": {
                                "medium": "Memory",
                                "sizeLimit": launch_facts().kubernetes.shm_size,
                            },
                        },
                        {"name": "hf-cache", "emptyDir": {}},
                    ],
                },
            },
        },
    }


def _service(plan: LaunchPlan, name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "labels": _labels(name)},
        "spec": {
            "selector": _labels(name),
            "ports": [{"name": "http", "port": plan.port, "targetPort": plan.port}],
        },
    }


def router_command(plan: LaunchPlan, name: str, replicas: int) -> list[str]:
    """The prefix-aware router for ``replicas`` engine pods of Deployment ``name``
    (``data/launch.yaml`` routers)."""
    urls = [f"http://{name}-{i}.{name}:{plan.port}" for i in range(replicas)]
    out: list[str] = []
    for token in launch_facts().routers[plan.engine].argv:
        if token == "{worker_urls}":
            out += urls
        else:
            out.append(token.format(selector=f"app.kubernetes.io/name={name}", port=plan.port))
    return out


def _router_configmap(plan: LaunchPlan, name: str, replicas: int) -> dict[str, Any]:
    cmd = router_command(plan, name, replicas)
    if plan.engine == "sglang":
        note = (
            "SGLang cache-aware router: keeps requests sharing a prefix on the replica whose "
            "radix cache holds it. The worker URLs are placeholders for the pod addresses; "
            "sglang_router can also discover pods itself (--service-discovery --selector "
            f"app.kubernetes.io/name={name} --service-discovery-port {plan.port})."
        )
    else:
        note = (
            f"vLLM production-stack router (image {launch_facts().routers['vllm'].image}) with "
            "prefix-aware routing: keeps requests sharing a prefix on the replica whose prefix "
            "cache holds it; it finds the engine pods by label. llm-d's prefix-cache scorer is the "
            "Gateway-API alternative."
        )
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": f"{name}-router", "labels": {"app.kubernetes.io/name": name}},
        "data": {"README": note, "router.sh": " ".join(cmd) + "\n"},
    }


def kubernetes_yaml(
    plan: LaunchPlan, name: str, replicas: int = 1, gpus_per_pod: int | None = None
) -> str:
    """Deployment + Service (+ a router ConfigMap when ``replicas`` > 1) as multi-document YAML."""
    if not _DNS_LABEL.match(name) or len(name) > 56:
        raise InputError(
            "name", f"a DNS label of at most 56 lowercase letters, digits or '-', got {name!r}"
        )
    if isinstance(replicas, bool) or not isinstance(replicas, int) or not 1 <= replicas <= 1024:
        raise InputError("replicas", f"a whole number from 1 to 1024, got {replicas!r}")
    per_pod = plan.gpus if gpus_per_pod is None else gpus_per_pod
    if isinstance(per_pod, bool) or not isinstance(per_pod, int) or per_pod < 1:
        raise InputError("gpus_per_pod", f"a positive whole number, got {per_pod!r}")
    if per_pod < plan.gpus:
        raise InputError(
            "gpus_per_pod", f"at least the plan's {plan.gpus} GPUs (one pod runs one engine)"
        )
    docs: list[dict[str, Any]] = [
        _deployment(plan, name, replicas, per_pod),
        _service(plan, name),
    ]
    header = [
        f"# {plan.engine} {plan.engine_version} serving {plan.model_id} "
        f"on {per_pod} × {plan.gpu.key} per pod",
        f"# {replicas} replica(s); every flag's reason is in the plan (plan --json).",
    ]
    if not plan.runnable:
        header += [f"# BLOCKED: {b}" for b in plan.blocked_by]
    if replicas > 1:
        docs.append(_router_configmap(plan, name, replicas))
        header += [
            f"# {replicas} replicas each keep their own prefix cache: put a prefix-aware router",
            "# in front of them (ConfigMap below), not just the round-robin Service:",
            "#   " + " ".join(router_command(plan, name, replicas)),
        ]
    body = yaml.safe_dump_all(docs, sort_keys=False, default_flow_style=False, width=100)
    return "\n".join(header) + "\n" + body
