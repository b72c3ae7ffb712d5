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

import math
import re
import shlex
from dataclasses import dataclass
from typing import Any

import yaml

from engine import errors as E
from engine.decision import Code
from engine.engines import adapter
from engine.engines.memory import GIB
from engine.errors import InputError
from engine.i18n import DEFAULT_LANG, Lang, t
from engine.launch.plan import LEADER, LaunchPlan, NodeCommand, launch_facts
from engine.present.render import comment, join, one_line
from engine.text.words import say

# \Z, not $: $ also matches before a trailing newline ("models\n" is no DNS label)
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?\Z")
_RESOURCE = re.compile(
    r"^[a-z0-9]([-a-z0-9.]{0,61}[a-z0-9])?/[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?\Z"
)
_NIC = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,14}\Z")
# what the cluster's own names must be (data/i18n/<lang>/errors.yaml)
DNS_LABEL = Code("error.k8s.dns_label", "got")
DNS_NAME = Code("error.k8s.dns_name", "most", "got")
RESOURCE = Code("error.k8s.resource", "got")
NIC = Code("error.k8s.nic", "got")
GPUS_PER_POD = Code("error.k8s.gpus_per_pod", "least")
LWS_API = "leaderworkerset.x-k8s.io/v1"

# libyaml's safe emitter where PyYAML was built with it (its Linux wheels are): the same YAML
# as the pure-Python SafeDumper (long quoted strings fold at other places) in a quarter of the
# time, which a page that shows the manifests pays on every rerun
_DUMPER: Any = yaml.CSafeDumper if yaml.__with_libyaml__ else yaml.SafeDumper


def manifest_name(model_name: str) -> str:
    """A DNS label from a model name ("deepseek-ai/DeepSeek-V3" -> "deepseek-v3")."""
    base = model_name.rsplit("/", 1)[-1].lower()
    name = "".join(c if c.isascii() and c.isalnum() else "-" for c in base).strip("-")
    name = re.sub(r"-{2,}", "-", name)
    return (name or "model")[:50].rstrip("-") or "model"


@dataclass(frozen=True)
class KubeOptions:
    """What a cluster decides and the plan cannot know: the claim holding the model cache, the
    Secret holding the Hugging Face token, and for a copy that spans nodes the pods' network
    (the node's own network for NCCL over RDMA, or the cluster network), an RDMA device-plugin
    resource to request, and the NIC Gloo and NCCL bind to. None: the data/launch.yaml default
    (clearly named placeholders where the cluster must supply a name)."""

    model_cache_claim: str | None = None
    hf_token_secret: str | None = None
    host_network: bool | None = None
    rdma_resource: str | None = None
    nic: str | None = None


def _labels(name: str) -> dict[str, str]:
    return {"app.kubernetes.io/name": name, "app.kubernetes.io/component": "engine"}


def _resource(plan: LaunchPlan) -> str:
    return "amd.com/gpu" if plan.gpu_vendor == "amd" else "nvidia.com/gpu"


def load_seconds(plan: LaunchPlan) -> int:
    """Seconds a node takes to read its share of the checkpoint from the model cache."""
    probes = launch_facts().kubernetes.probes
    per_node = plan.checkpoint_bytes / max(1, plan.nodes_per_copy)
    return math.ceil(per_node / GIB / probes.read_gib_per_second)


def _probes(plan: LaunchPlan, port: int) -> dict[str, Any]:
    """Readiness after the checkpoint's load estimate; a startup probe that waits the load
    estimate plus the engine's warm-up before liveness may restart the pod."""
    probes = launch_facts().kubernetes.probes
    period = probes.period_seconds
    load = load_seconds(plan)
    startup = math.ceil((load + probes.warmup_seconds) / period)
    return {
        "readinessProbe": {
            "httpGet": {"path": "/health", "port": port},
            "initialDelaySeconds": load,
            "periodSeconds": period,
            "failureThreshold": 3,
        },
        "startupProbe": {
            "httpGet": {"path": "/health", "port": port},
            "periodSeconds": period,
            "failureThreshold": max(startup, 1),
        },
        "livenessProbe": {
            "httpGet": {"path": "/health", "port": port},
            "periodSeconds": 30,
            "failureThreshold": 3,
        },
    }


def _nic_value(value: str, opts: KubeOptions, host: bool) -> str:
    """The NIC placeholder of the launch script, as a pod sees it: its cluster interface, or on
    the node's network the NIC the user names."""
    nic = launch_facts().multi_node.nic_env
    if value != "${" + nic.placeholder + "}":
        return value
    if opts.nic is not None:
        return opts.nic
    return "REPLACE_WITH_NODE_NIC" if host else nic.pod_interface


def _env(plan: LaunchPlan, opts: KubeOptions, host: bool) -> list[dict[str, Any]]:
    kube = launch_facts().kubernetes
    token = kube.hf_token
    env: list[dict[str, Any]] = [{"name": "HF_HOME", "value": kube.model_cache.mount_path}]
    env.append(
        {
            "name": token.env,
            "valueFrom": {
                "secretKeyRef": {
                    "name": opts.hf_token_secret or token.secret,
                    "key": token.key,
                    "optional": True,
                }
            },
        }
    )
    env += [{"name": e.name, "value": _nic_value(e.value, opts, host)} for e in plan.env]
    return env


def _volumes(opts: KubeOptions) -> list[dict[str, Any]]:
    kube = launch_facts().kubernetes
    return [
        {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": kube.shm_size}},
        {
            "name": "hf-cache",
            "persistentVolumeClaim": {
                "claimName": opts.model_cache_claim or kube.model_cache.claim
            },
        },
    ]


def _mounts() -> list[dict[str, str]]:
    return [
        {"name": "dshm", "mountPath": "/dev/shm"},
        {"name": "hf-cache", "mountPath": launch_facts().kubernetes.model_cache.mount_path},
    ]


def _container(
    plan: LaunchPlan,
    argv: list[str],
    gpus: int,
    port: int | None,
    opts: KubeOptions,
    host: bool = False,
) -> dict[str, Any]:
    split = adapter(plan.engine).command_words  # vllm serve | python3 -m sglang.launch_server
    limits: dict[str, Any] = {_resource(plan): gpus}
    rdma = _rdma_resource(plan, opts)
    if rdma is not None:
        limits[rdma] = 1
    c: dict[str, Any] = {
        "name": "engine",
        "image": plan.image,
        "command": argv[:split],
        "args": argv[split:],
        "env": _env(plan, opts, host),
        "resources": {"limits": limits, "requests": {**limits, **_host_requests(plan, gpus)}},
        "volumeMounts": _mounts(),
    }
    if plan.multi_node_nvlink:  # the IMEX channel of the copy's ComputeDomain
        c["resources"]["claims"] = [{"name": launch_facts().kubernetes.compute_domain.claim}]
    if host:
        caps = launch_facts().kubernetes.multi_node_network.capabilities
        c["securityContext"] = {"capabilities": {"add": list(caps)}}
    if port is not None:
        c["ports"] = [{"name": "http", "containerPort": port, "protocol": "TCP"}]
        c.update(_probes(plan, port))
    return c


def _rdma_resource(plan: LaunchPlan, opts: KubeOptions) -> str | None:
    """The RDMA device-plugin resource a pod requests: the one named, on every pod of a copy
    over nodes; where DeepEP's kernels cross the network, always (a placeholder name when none
    is given), since they cannot start without the RDMA devices."""
    if plan.nodes_per_copy <= 1:
        return None
    if opts.rdma_resource is not None:
        return opts.rdma_resource
    if plan.deepep_over_network:
        return launch_facts().kubernetes.multi_node_network.rdma_resource
    return None


def _host_requests(plan: LaunchPlan, gpus: int) -> dict[str, str]:
    """CPU cores and host memory per GPU, plus the memory-backed /dev/shm and the host memory
    the engine pins for the KV cache's CPU tier (its GPUs' share of the node's), so the
    scheduler places the pod where that memory is free."""
    kube = launch_facts().kubernetes
    r = kube.pod_requests
    gib = r.memory_gib_per_gpu * gpus + _gib(kube.shm_size) + _tier_gib(plan, gpus)
    return {"cpu": str(r.cpu_per_gpu * gpus), "memory": f"{gib}Gi"}


def _gib(quantity: str) -> int:
    """A ``<n>Gi`` / ``<n>Mi`` quantity in whole GiB, rounded up."""
    n = int(quantity[:-2])
    return n if quantity.endswith("Gi") else -(-n // 1024)


def _tier_gib(plan: LaunchPlan, gpus: int) -> int:
    """GiB of host memory a pod's engine pins for the KV cache's CPU tier."""
    if plan.host_cache_bytes_per_node <= 0:
        return 0
    share = plan.host_cache_bytes_per_node * min(gpus, plan.gpus_per_node) / plan.gpus_per_node
    return math.ceil(share / GIB)


def _metadata(plan: LaunchPlan, name: str, lang: Lang) -> dict[str, Any]:
    """Name and labels; the plan's warnings ride along as annotations in the reader's language
    (the manifest has no comments), so ``kubectl describe`` shows them to whoever applies it."""
    meta: dict[str, Any] = {"name": name, "labels": _labels(name)}
    notes = {
        f"serving-playbook/warning-{i}": one_line(say(w, lang, markdown=False))
        for i, w in enumerate(plan.warned, 1)
    }
    cache = launch_facts().kubernetes.model_cache
    access = "many" if plan.nodes_per_copy > 1 else "either"
    notes["serving-playbook/model-cache"] = t(
        "manifest.model_cache",
        lang,
        access=t(f"manifest.access.{access}", lang),
        gib=f"{math.ceil(plan.checkpoint_bytes * 1.1 / GIB):,}",
        path=cache.mount_path,
        claim=cache.claim,
    )
    if not plan.runnable:  # kubectl describe says why nothing runs
        for i, b in enumerate(plan.blocked_by, 1):
            notes[f"serving-playbook/blocked-{i}"] = one_line(say(b, lang, markdown=False))
    meta["annotations"] = notes
    return meta


def _deployment(
    plan: LaunchPlan, name: str, replicas: int, gpus_per_pod: int, opts: KubeOptions, lang: Lang
) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": _metadata(plan, name, lang),
        "spec": {
            "replicas": replicas if plan.runnable else 0,
            "selector": {"matchLabels": _labels(name)},
            "template": {
                "metadata": {"labels": _labels(name)},
                "spec": {
                    "containers": [_container(plan, plan.argv, gpus_per_pod, plan.port, opts)],
                    "volumes": _volumes(opts),
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


# LeaderWorkerSet sets these in every pod of a group (api/leaderworkerset/v1
# leaderworkerset_types.go: LwsLeaderAddress, LwsWorkerIndex; the leader's index is 0).
_LEADER_VAR = "${LWS_LEADER_ADDRESS}"
_INDEX_VAR = "$LWS_WORKER_INDEX"


def _lws_script(plan: LaunchPlan, command: NodeCommand) -> str:
    """``sh -c`` text for a leader or worker pod: the node's argv, every word shell-quoted, with
    the rank, the DP start rank and the leader's address of the multi-node words taken from the
    variables LeaderWorkerSet sets. Only those words, found by position in the words this module
    appended, are rewritten; nothing a model id, a served name or another value contains is."""
    eng = adapter(plan.engine)
    argv = list(command.argv)
    start = command.multi_node_from if command.multi_node_from is not None else len(argv)
    words = [shlex.quote(t) for t in argv[:start]]
    rank_flags = {eng.flag(s) for s in ("node_rank",) if eng.has(s)}
    start_flags = {eng.flag(s) for s in ("dp_start_rank",) if eng.has(s)}
    local = max(1, plan.layout.dp // max(1, plan.nodes_per_copy))
    tail = argv[start:]
    i = 0
    while i < len(tail):
        token = tail[i]
        nxt = tail[i + 1] if i + 1 < len(tail) else None
        if token in rank_flags and nxt is not None:
            words += [shlex.quote(token), f'"{_INDEX_VAR}"']
            i += 2
            continue
        if token in start_flags and nxt is not None:
            words += [shlex.quote(token), f'"$(({_INDEX_VAR[1:]} * {local}))"']
            i += 2
            continue
        if token == LEADER or token.startswith(LEADER + ":"):
            port = token[len(LEADER) :]
            words.append(f'"{_LEADER_VAR}"' + shlex.quote(port) if port else f'"{_LEADER_VAR}"')
        else:
            words.append(shlex.quote(token))
        i += 1
    return "exec " + " ".join(words)


def _lws(plan: LaunchPlan, name: str, groups: int, opts: KubeOptions, lang: Lang) -> dict[str, Any]:
    leader_cmd = next(c for c in plan.commands if c.role == "leader")
    worker_cmd = next(c for c in plan.commands if c.role == "worker")
    network = launch_facts().kubernetes.multi_node_network
    host = network.host_network if opts.host_network is None else opts.host_network

    def pod(command: NodeCommand) -> dict[str, Any]:
        c = _container(plan, [], plan.gpus_per_node, command.port, opts, host)
        c["command"] = ["/bin/sh", "-c"]
        c["args"] = [_lws_script(plan, command)]
        spec: dict[str, Any] = {"containers": [c], "volumes": _volumes(opts)}
        if host:
            spec["hostNetwork"] = True
            spec["dnsPolicy"] = "ClusterFirstWithHostNet"
        if plan.multi_node_nvlink:
            spec.update(_nvlink_domain_pod(name))
        return spec

    leader_labels = {**_labels(name), "role": "leader"}
    return {
        "apiVersion": LWS_API,
        "kind": "LeaderWorkerSet",
        "metadata": _metadata(plan, name, lang),
        "spec": {
            "replicas": groups if plan.runnable else 0,
            "leaderWorkerTemplate": {
                "size": plan.nodes_per_copy,
                "restartPolicy": "RecreateGroupOnPodRestart",
                "leaderTemplate": {
                    "metadata": {"labels": leader_labels},
                    "spec": pod(leader_cmd),
                },
                "workerTemplate": {
                    "metadata": {"labels": {**_labels(name), "role": "worker"}},
                    "spec": pod(worker_cmd),
                },
            },
        },
    }


# LeaderWorkerSet labels every pod of one group with its group's key
# (api/leaderworkerset/v1 leaderworkerset_types.go: GroupUniqueHashLabelKey).
_GROUP_KEY = "leaderworkerset.sigs.k8s.io/group-key"


def _channel_template(name: str) -> str:
    return f"{name}-imex-channel"


def _nvlink_domain_pod(name: str) -> dict[str, Any]:
    """What a pod of a copy over trays of one NVLink domain adds: the ComputeDomain's IMEX
    channel as a resource claim, and every pod of its group on one NVLink partition."""
    cd = launch_facts().kubernetes.compute_domain
    return {
        "resourceClaims": [
            {"name": cd.claim, "resourceClaimTemplateName": _channel_template(name)}
        ],
        "affinity": {
            "podAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "labelSelector": {
                            "matchExpressions": [{"key": _GROUP_KEY, "operator": "Exists"}],
                            "matchLabels": _labels(name),
                        },
                        "matchLabelKeys": [_GROUP_KEY],
                        "topologyKey": cd.clique_label,
                    }
                ]
            }
        },
    }


def _compute_domain(plan: LaunchPlan, name: str) -> dict[str, Any]:
    """The ComputeDomain (NVIDIA DRA Driver for GPUs) whose IMEX channels let the pods of a copy
    map each other's GPU memory over the rack's NVLink."""
    cd = launch_facts().kubernetes.compute_domain
    return {
        "apiVersion": cd.api_version,
        "kind": "ComputeDomain",
        "metadata": {"name": f"{name}-nvlink", "labels": _labels(name)},
        "spec": {
            "numNodes": 0,
            "channel": {"resourceClaimTemplate": {"name": _channel_template(name)}},
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


def _router_configmap(plan: LaunchPlan, name: str, servers: int, lang: Lang) -> dict[str, Any]:
    cmd = router_command(plan, name, servers)
    router = launch_facts().routers[plan.engine]
    readme = t(
        "manifest.router",
        lang,
        servers=f"{servers:,}",
        image=router.image or plan.image,
        source=router.source,
    )
    if plan.router is not None:
        readme = t("manifest.router_why", lang, why=say(plan.router.why, lang), readme=readme)
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": f"{name}-router", "labels": {"app.kubernetes.io/name": name}},
        "data": {
            "README": readme,
            "router.sh": join(cmd) + "\n",
        },
    }


def check_options(opts: KubeOptions) -> None:
    """Refuse a cluster name that is not one (InputError naming the option)."""
    for field, value in (
        ("model_cache_claim", opts.model_cache_claim),
        ("hf_token_secret", opts.hf_token_secret),
    ):
        if value is not None and not _DNS_LABEL.match(value):
            raise InputError(field, DNS_LABEL(got=E.got(value)))
    if opts.rdma_resource is not None and not _RESOURCE.match(opts.rdma_resource):
        raise InputError("rdma_resource", RESOURCE(got=E.got(opts.rdma_resource)))
    if opts.nic is not None and not _NIC.match(opts.nic):
        raise InputError("nic", NIC(got=E.got(opts.nic)))


def kubernetes_yaml(
    plan: LaunchPlan,
    name: str,
    replicas: int | None = None,
    gpus_per_pod: int | None = None,
    options: KubeOptions | None = None,
    lang: Lang = DEFAULT_LANG,
) -> str:
    """The manifests as multi-document YAML: Deployment + Service, or a LeaderWorkerSet + a
    Service for its leaders when a copy spans nodes; a router ConfigMap for several servers.
    ``replicas`` overrides the plan's server count; ``gpus_per_pod`` its GPUs per pod;
    ``options`` what the cluster decides (model-cache claim, token Secret, network); ``lang``
    the language of the annotations and comments."""
    opts = options or KubeOptions()
    check_options(opts)
    if not _DNS_LABEL.match(name) or len(name) > 56:
        raise InputError("name", DNS_NAME(most=56, got=E.got(name)))
    multi = plan.nodes_per_copy > 1
    servers = plan.servers if replicas is None else replicas
    if isinstance(servers, bool) or not isinstance(servers, int) or not 1 <= servers <= 1024:
        raise InputError("replicas", E.RANGE(low=1, high=1024, got=E.got(servers)))
    per_pod = gpus_per_pod
    if per_pod is None:
        per_pod = plan.gpus_per_node if multi else _gpus_per_server(plan)
    if isinstance(per_pod, bool) or not isinstance(per_pod, int) or per_pod < 1:
        raise InputError("gpus_per_pod", E.POSITIVE(got=E.got(per_pod)))
    if per_pod < _gpus_per_server(plan) and not multi:
        raise InputError("gpus_per_pod", GPUS_PER_POD(least=_gpus_per_server(plan)))
    if multi:
        workers_serve = any(c.role == "worker" and c.port is not None for c in plan.commands)
        selector = _labels(name) if workers_serve else {**_labels(name), "role": "leader"}
        docs: list[dict[str, Any]] = [
            _lws(plan, name, servers, opts, lang),
            _service(plan, name, selector),
        ]
        if plan.multi_node_nvlink:
            docs.insert(0, _compute_domain(plan, name))
    else:
        docs = [
            _deployment(plan, name, servers, per_pod, opts, lang),
            _service(plan, name, _labels(name)),
        ]
    if servers > 1:
        docs.append(_router_configmap(plan, name, servers, lang))
    text = yaml.dump_all(docs, Dumper=_DUMPER, sort_keys=False, default_flow_style=False, width=100)
    if plan.runnable:
        return text
    head = [comment(t("script.blocked", lang, why=say(b, lang))) for b in plan.blocked_by]
    head.append(comment(t("manifest.blocked_replicas", lang)))
    return "\n".join(head) + "\n" + text


def _gpus_per_server(plan: LaunchPlan) -> int:
    """GPUs one server uses: a whole node when copies share a server, else one copy."""
    c = plan.commands[0]
    if c.devices is not None:
        return len(c.devices)
    return min(plan.gpus_per_node, plan.gpus)
