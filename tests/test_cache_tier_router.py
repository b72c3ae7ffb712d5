"""The CPU tier behind the KV cache and the prefix-aware router, as the plans write them: the
flags each engine takes (and in its unit), the script's router, the manifests' memory request."""

from __future__ import annotations

import math
import subprocess

import yaml

from engine.present.k8s import kubernetes_yaml, manifest_name
from engine.present.render import script
from engine.scenario import make_scenario
from engine.study import study

GIB = 1 << 30


def _plan(**fields: object):  # type: ignore[no-untyped-def]
    st = study(make_scenario(**fields))
    assert st.plan is not None
    return st.plan


def _flags(plan) -> dict[str, str | None]:  # type: ignore[no-untyped-def]
    return {f.flag: f.value for f in plan.flags}


def test_vllm_sizes_its_cpu_tier_in_gib_per_engine_from_the_nodes_host_memory() -> None:
    """512 GiB per node of 8 GPUs, copies of TP 4: each engine (TP × PP = 4 GPUs) gets half."""
    plan = _plan(model="meta-llama/Llama-3.1-70B-Instruct", gpu="H100", gpus_per_node=8,
                 tp=4, replicas=2, kv_offload_gb=512.0)  # fmt: skip
    flags = _flags(plan)
    assert flags["--kv-offloading-backend"] == "native"
    assert float(flags["--kv-offloading-size"] or 0) == 512 * 4 / 8


def test_sglang_sizes_its_hierarchical_cache_in_gb_per_tp_rank() -> None:
    plan = _plan(model="meta-llama/Llama-3.1-70B-Instruct", gpu="H100", gpus_per_node=8,
                 engine="sglang", kv_offload_gb=512.0)  # fmt: skip
    flags = _flags(plan)
    assert "--enable-hierarchical-cache" in flags
    assert flags["--hicache-size"] == str(math.floor(512 * GIB / 8 / 1e9))  # 68 GB per rank
    assert any(x.flag == "--hicache-ratio" for x in plan.left_to_engine)


def test_no_host_memory_no_tier() -> None:
    plan = _plan(model="Qwen/Qwen3-8B", gpu="H100")
    assert not {"--kv-offloading-size", "--hicache-size"} & set(_flags(plan))


def test_the_manifests_request_the_host_memory_the_tier_pins() -> None:
    plan = _plan(model="meta-llama/Llama-3.1-70B-Instruct", gpu="H100", gpus_per_node=8,
                 tp=8, kv_offload_gb=300.0)  # fmt: skip
    docs = list(yaml.safe_load_all(kubernetes_yaml(plan, manifest_name(plan.model_name))))
    pod = next(d for d in docs if d["kind"] == "Deployment")
    container = pod["spec"]["template"]["spec"]["containers"][0]
    without = _plan(model="meta-llama/Llama-3.1-70B-Instruct", gpu="H100", gpus_per_node=8, tp=8)
    docs = list(yaml.safe_load_all(kubernetes_yaml(without, manifest_name(without.model_name))))
    base = next(d for d in docs if d["kind"] == "Deployment")["spec"]["template"]["spec"]
    base_gib = int(base["containers"][0]["resources"]["requests"]["memory"].removesuffix("Gi"))
    # the pod's own host memory (per GPU and /dev/shm) plus the 300 GiB the tier pins
    assert container["resources"]["requests"]["memory"] == f"{base_gib + 300}Gi"


def test_several_servers_and_a_repeated_share_get_the_prefix_aware_router() -> None:
    for engine, policy in (("vllm", "prefixaware"), ("sglang", "cache_aware")):
        plan = _plan(model="meta-llama/Llama-3.1-70B-Instruct", gpu="H100", gpus_per_node=8,
                     nodes=2, tp=8, replicas=2, prefix_overlap=50, prefix_kind="session",
                     engine=engine)  # fmt: skip
        assert plan.router is not None and policy in plan.router.argv
        text = script(plan)
        assert "  router)" in text and "${NODE1_ADDR}" in text
        assert subprocess.run(["bash", "-n"], input=text, text=True).returncode == 0
        docs = list(yaml.safe_load_all(kubernetes_yaml(plan, manifest_name(plan.model_name))))
        readme = next(d for d in docs if d["kind"] == "ConfigMap")["data"]["README"]
        assert "50 %" in readme


def test_no_repeated_share_or_one_server_no_router() -> None:
    plan = _plan(model="meta-llama/Llama-3.1-70B-Instruct", gpu="H100", gpus_per_node=8,
                 nodes=2, tp=8, replicas=2)  # fmt: skip
    assert plan.router is None and "  router)" not in script(plan)
    one = _plan(model="meta-llama/Llama-3.1-70B-Instruct", gpu="H100", prefix_overlap=80)
    assert one.router is None
