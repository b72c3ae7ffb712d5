"""Kubernetes manifests for a launch plan parse and carry the fields Kubernetes requires."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from engine.errors import InputError
from engine.launch.k8s import kubernetes_yaml
from engine.launch.plan import LaunchPlan
from tests.study_util import run


def make(name: str, engine: str, gpu: str = "H200", n: int = 8) -> LaunchPlan:
    p = run(name, engine=engine, gpu=gpu, gpus_per_node=n, users=64, latency="latency").plan
    assert p is not None
    return p


def docs(text: str) -> list[dict[str, Any]]:
    out = [d for d in yaml.safe_load_all(text) if d is not None]
    for d in out:
        assert d["apiVersion"] and d["kind"] and d["metadata"]["name"]
    return out


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_deployment_and_service_have_the_required_fields(engine: str) -> None:
    p = make("Qwen/Qwen3-30B-A3B", engine)
    out = docs(kubernetes_yaml(p, "qwen3-30b", replicas=1))
    kinds = {d["kind"]: d for d in out}
    assert set(kinds) == {"Deployment", "Service"}
    dep, svc = kinds["Deployment"], kinds["Service"]
    assert dep["apiVersion"] == "apps/v1" and svc["apiVersion"] == "v1"
    spec = dep["spec"]
    assert spec["replicas"] == 1
    assert spec["selector"]["matchLabels"] == spec["template"]["metadata"]["labels"]
    assert svc["spec"]["selector"] == spec["template"]["metadata"]["labels"]
    (c,) = spec["template"]["spec"]["containers"]
    assert c["name"] and c["image"] == p.image
    assert c["command"] + c["args"] == p.argv
    assert c["resources"]["limits"]["nvidia.com/gpu"] == 8
    assert c["readinessProbe"]["httpGet"] == {"path": "/health", "port": 8000}
    assert c["ports"][0]["containerPort"] == 8000
    assert "--port" in c["args"] and c["args"][c["args"].index("--port") + 1] == "8000"
    assert {"name": "dshm", "mountPath": "/dev/shm"} in c["volumeMounts"]
    shm = next(v for v in spec["template"]["spec"]["volumes"] if v["name"] == "dshm")
    assert shm["emptyDir"]["medium"] == "Memory"


def test_amd_uses_amd_gpu_resource() -> None:
    p = make("Qwen/Qwen3-8B", "vllm", "MI300X", 1)
    dep = docs(kubernetes_yaml(p, "qwen3-8b"))[0]
    limits = dep["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]
    assert limits == {"amd.com/gpu": 1}


def test_replicas_include_the_prefix_aware_router() -> None:
    s = kubernetes_yaml(make("Qwen/Qwen3-8B", "sglang", n=1), "qwen3-8b", replicas=3)
    out = docs(s)
    assert out[0]["spec"]["replicas"] == 3
    cm = next(d for d in out if d["kind"] == "ConfigMap")
    assert (
        "sglang_router.launch_router --policy cache_aware --worker-urls" in cm["data"]["router.sh"]
    )
    assert "cache_aware" in s and not any(line.startswith("#") for line in s.splitlines())
    v = kubernetes_yaml(make("Qwen/Qwen3-8B", "vllm", n=1), "qwen3-8b", replicas=2)
    assert "--routing-logic prefixaware" in v
    single = kubernetes_yaml(make("Qwen/Qwen3-8B", "vllm", n=1), "qwen3-8b", replicas=1)
    assert "router" not in single.lower()


def test_bad_names_and_counts_raise_input_error() -> None:
    p = make("Qwen/Qwen3-8B", "vllm", n=1)
    with pytest.raises(InputError):
        kubernetes_yaml(p, "Bad_Name")
    with pytest.raises(InputError):
        kubernetes_yaml(p, "ok", replicas=0)
    with pytest.raises(InputError):
        kubernetes_yaml(make("Qwen/Qwen3-32B", "vllm", n=2), "ok", gpus_per_pod=1)
