"""Kubernetes manifests for a launch plan parse and carry the fields Kubernetes requires."""

from __future__ import annotations

import json
import shlex
import subprocess
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml
from jsonschema import Draft202012Validator
from referencing import Registry, Resource

from engine.cli import main
from engine.errors import InputError
from engine.i18n import catalog
from engine.launch.launch_data import launch_facts
from engine.launch.plan import LaunchPlan
from engine.present.k8s import KubeOptions, kubernetes_yaml, load_seconds
from tests.study_util import run


def make(name: str, engine: str, gpu: str = "H200", n: int = 8) -> LaunchPlan:
    p = run(name, engine=engine, gpu=gpu, gpus_per_node=n, users=64, latency="latency", tp=n).plan
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


# --- schema check, model cache, token, network, probes -------------------------------------------

SCHEMAS = Path(__file__).resolve().parent / "fixtures" / "kubernetes"
K8S = json.loads((SCHEMAS / "kubernetes-v1.37.0-strict-subset.json").read_text())
LWS = json.loads((SCHEMAS / "leaderworkerset-v1-subset.json").read_text())
CD = json.loads((SCHEMAS / "computedomain-v1beta1-subset.json").read_text())
REGISTRY = Registry().with_resources(
    [(s["$id"], Resource.from_contents(s)) for s in (K8S, LWS, CD)]
)
KINDS = {
    "Deployment": "io.k8s.api.apps.v1.Deployment",
    "Service": "io.k8s.api.core.v1.Service",
    "ConfigMap": "io.k8s.api.core.v1.ConfigMap",
}


def schema_errors(doc: dict[str, Any]) -> list[str]:
    """Errors against the Kubernetes v1.37 OpenAPI schema (strict) or the LeaderWorkerSet API."""
    if doc["kind"] == "LeaderWorkerSet":
        schema: dict[str, Any] = LWS
    elif doc["kind"] == "ComputeDomain":
        schema = CD
    else:
        schema = {"$ref": f"{K8S['$id']}#/$defs/{KINDS[doc['kind']]}"}
    validator = Draft202012Validator(schema, registry=REGISTRY)
    return [f"{list(e.path)}: {e.message}" for e in validator.iter_errors(doc)]


def two_nodes(engine: str) -> LaunchPlan:
    """DeepSeek-V3 on two nodes (H200 for vLLM's DP + EP, H100 where SGLang needs both)."""
    gpu = "H200" if engine == "vllm" else "H100 SXM"
    users = 512 if engine == "vllm" else 256
    st = run(
        "deepseek-ai/DeepSeek-V3",
        engine=engine,
        gpu=gpu,
        gpus_per_node=8,
        nodes=2,
        users=users,
        context=16384,
        tp=1,
        dp=16,
        ep=True,  # DP 16 + EP over both nodes: the plumbing under test
    )
    assert st.plan is not None and st.plan.nodes_per_copy == 2
    return st.plan


SINGLE = [
    ("Qwen/Qwen3-8B", "vllm", "H200", 8, {}),
    ("Qwen/Qwen3-30B-A3B", "vllm", "H200", 8, {"users": 16}),
    ("Qwen/Qwen3-8B", "sglang", "H100 SXM", 1, {}),
    ("meta-llama/Llama-3.1-70B-Instruct", "vllm", "MI300X", 8, {}),
]
CLUSTER = KubeOptions("models-rwx", "my-hf", False, "rdma/ib", "ib0")


@pytest.mark.parametrize("case", SINGLE, ids=lambda c: f"{c[0]}-{c[1]}-{c[3]}")
def test_single_node_manifests_pass_the_kubernetes_schema(case: tuple[Any, ...]) -> None:
    model, engine, gpu, n, extra = case
    p = run(model, engine=engine, gpu=gpu, gpus_per_node=n, **extra).plan
    assert p is not None
    for opts in (None, CLUSTER):
        for d in docs(kubernetes_yaml(p, "m", options=opts)):
            assert schema_errors(d) == [], d["kind"]


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_multi_node_manifests_pass_the_kubernetes_and_lws_schemas(engine: str) -> None:
    p = two_nodes(engine)
    for opts in (None, CLUSTER):
        out = docs(kubernetes_yaml(p, "m", options=opts))
        assert out[0]["kind"] == "LeaderWorkerSet"
        for d in out:
            assert schema_errors(d) == [], d["kind"]


def test_the_schema_check_is_strict() -> None:
    dep = docs(kubernetes_yaml(make("Qwen/Qwen3-8B", "vllm", n=1), "m"))[0]
    dep["spec"]["template"]["spec"]["containers"][0]["bogus"] = 1
    dep["spec"]["replicas"] = "two"
    assert len(schema_errors(dep)) >= 2


def _pod_specs(text: str) -> list[dict[str, Any]]:
    out = []
    for d in docs(text):
        if d["kind"] == "Deployment":
            out.append(d["spec"]["template"]["spec"])
        elif d["kind"] == "LeaderWorkerSet":
            tpl = d["spec"]["leaderWorkerTemplate"]
            out += [tpl["leaderTemplate"]["spec"], tpl["workerTemplate"]["spec"]]
    return out


def _env(spec: dict[str, Any]) -> dict[str, Any]:
    return {e["name"]: e for e in spec["containers"][0]["env"]}


def test_the_model_cache_is_a_named_claim_and_the_token_a_secret() -> None:
    p = make("Qwen/Qwen3-8B", "vllm", n=1)
    for spec in _pod_specs(kubernetes_yaml(p, "m")):
        cache = next(v for v in spec["volumes"] if v["name"] == "hf-cache")
        assert "emptyDir" not in cache
        assert cache["persistentVolumeClaim"]["claimName"] == "hf-model-cache-replace-me"
        assert _env(spec)["HF_TOKEN"]["valueFrom"]["secretKeyRef"] == {
            "name": "hf-token-secret",
            "key": "HF_TOKEN",
            "optional": True,
        }
    named = kubernetes_yaml(p, "m", options=KubeOptions("team-models", "team-hf"))
    (spec,) = _pod_specs(named)
    cache = next(v for v in spec["volumes"] if v["name"] == "hf-cache")
    assert cache["persistentVolumeClaim"]["claimName"] == "team-models"
    assert _env(spec)["HF_TOKEN"]["valueFrom"]["secretKeyRef"]["name"] == "team-hf"
    with pytest.raises(InputError):
        kubernetes_yaml(p, "m", options=KubeOptions(model_cache_claim="Not A Label"))


def test_the_token_key_the_pod_reads_is_the_one_the_help_names(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # a Secret made as --hf-token-secret's help (and the Flags page) says is the one read: a gated
    # model otherwise fails with 401 after apply
    key = launch_facts().kubernetes.hf_token.key
    assert main(["plan", "--help"]) == 0
    help_text = " ".join(capsys.readouterr().out.split())
    assert f"Secret whose {key} key holds" in help_text
    for lang in ("en", "ko"):
        assert key in catalog(lang)["flags.kube.secret_help"], lang
    (spec,) = _pod_specs(kubernetes_yaml(make("Qwen/Qwen3-8B", "vllm", n=1), "m"))
    assert _env(spec)["HF_TOKEN"]["valueFrom"]["secretKeyRef"]["key"] == key


def test_pods_request_cpu_and_host_memory_beside_their_gpus() -> None:
    for p in (make("Qwen/Qwen3-8B", "vllm", n=1), two_nodes("vllm")):
        for spec in _pod_specs(kubernetes_yaml(p, "m")):
            requests = spec["containers"][0]["resources"]["requests"]
            gpus = requests["nvidia.com/gpu"]
            assert int(requests["cpu"]) == 2 * gpus
            # 6 GiB per GPU plus the memory-backed /dev/shm (32Gi)
            assert requests["memory"] == f"{6 * gpus + 32}Gi"


def test_deepep_over_the_network_always_requests_the_rdma_devices() -> None:
    # SGLang's DP 16 + EP over two H100 nodes runs DeepEP across InfiniBand: the RDMA resource
    # is requested even when the cluster names none (a placeholder to replace)
    p = two_nodes("sglang")
    assert p.deepep_over_network
    for spec in _pod_specs(kubernetes_yaml(p, "m")):
        limits = spec["containers"][0]["resources"]["limits"]
        assert limits["rdma/rdma_shared_device_a"] == 1
    for spec in _pod_specs(kubernetes_yaml(p, "m", options=CLUSTER)):
        assert spec["containers"][0]["resources"]["limits"]["rdma/ib"] == 1


def _v4_pro_on_two_gb200_trays(engine: str = "vllm") -> LaunchPlan:
    st = run("deepseek-ai/DeepSeek-V4-Pro", engine=engine, gpu="GB200", gpus_per_node=4, nodes=2)
    assert st.plan is not None and st.plan.nodes_per_copy == 2
    return st.plan


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_two_gb200_trays_get_a_compute_domain_not_rdma(engine: str) -> None:
    p = _v4_pro_on_two_gb200_trays(engine)
    assert p.multi_node_nvlink and not p.deepep_over_network
    out = docs(kubernetes_yaml(p, "m"))
    assert [d["kind"] for d in out][:2] == ["ComputeDomain", "LeaderWorkerSet"]
    for d in out:
        assert schema_errors(d) == [], d["kind"]
    template = out[0]["spec"]["channel"]["resourceClaimTemplate"]["name"]
    for spec in _pod_specs(kubernetes_yaml(p, "m")):
        (claim,) = spec["resourceClaims"]
        assert claim["resourceClaimTemplateName"] == template
        c = spec["containers"][0]
        assert c["resources"]["claims"] == [{"name": claim["name"]}]
        assert not any(k.startswith("rdma/") for k in c["resources"]["limits"])
        term = spec["affinity"]["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0]
        assert term["topologyKey"] == "nvidia.com/gpu.clique"
        env = _env(spec)
        assert env["NCCL_MNNVL_ENABLE"]["value"] == "1"
        assert env["NCCL_CUMEM_ENABLE"]["value"] == "1"


def test_multi_node_pods_run_on_the_node_network_with_rdma_and_the_nic() -> None:
    p = two_nodes("vllm")
    for spec in _pod_specs(kubernetes_yaml(p, "m")):
        assert spec["hostNetwork"] is True and spec["dnsPolicy"] == "ClusterFirstWithHostNet"
        c = spec["containers"][0]
        assert "IPC_LOCK" in c["securityContext"]["capabilities"]["add"]
        assert _env(spec)["NCCL_SOCKET_IFNAME"]["value"] == "REPLACE_WITH_NODE_NIC"
    for spec in _pod_specs(kubernetes_yaml(p, "m", options=CLUSTER)):
        assert "hostNetwork" not in spec
        assert spec["containers"][0]["resources"]["limits"]["rdma/ib"] == 1
        assert _env(spec)["GLOO_SOCKET_IFNAME"]["value"] == "ib0"
    # hybrid DP load balancing: every pod serves, so the Service selects every pod of the group
    svc = next(d for d in docs(kubernetes_yaml(p, "m")) if d["kind"] == "Service")
    assert "role" not in svc["spec"]["selector"]


def test_the_readiness_and_startup_probes_are_sized_to_the_checkpoint() -> None:
    small = make("Qwen/Qwen3-8B", "vllm", n=1)
    big = make("deepseek-ai/DeepSeek-V3", "vllm")
    assert load_seconds(big) > 20 * load_seconds(small)
    seen = []
    for p in (small, big):
        (spec,) = _pod_specs(kubernetes_yaml(p, "m"))
        c = spec["containers"][0]
        ready, startup = c["readinessProbe"], c["startupProbe"]
        assert ready["initialDelaySeconds"] == load_seconds(p)
        assert startup["failureThreshold"] * startup["periodSeconds"] > load_seconds(p)
        seen.append((ready["initialDelaySeconds"], startup["failureThreshold"]))
    assert seen[1] > seen[0]


# --- LeaderWorkerSet: rank words substituted by position, never by text -------------------------

HOSTILE = ["org/__RANK__", "__DP_START__8", "$LWS_WORKER_INDEX", "${LEADER_ADDR}x", "a'b\"c"]


def _sh_words(text: str) -> list[str]:
    """The words ``sh -c text`` would exec, with LeaderWorkerSet's variables of worker 1."""
    probe = text.replace("exec ", "printf '%s\\n' ", 1)
    env = {"PATH": "/usr/bin:/bin", "LWS_WORKER_INDEX": "1", "LWS_LEADER_ADDRESS": "10.0.0.1"}
    done = subprocess.run(
        ["/bin/sh", "-c", probe], capture_output=True, text=True, env=env, check=True
    )
    return done.stdout.splitlines()


def _with_hostile_words(p: LaunchPlan) -> LaunchPlan:
    """The plan with hostile words where a served name and other values would be."""
    commands = []
    for c in p.commands:
        start = c.multi_node_from
        assert start is not None
        head = [*c.argv[:start], "--served-model-name", *HOSTILE]
        commands.append(replace(c, argv=(*head, *c.argv[start:]), multi_node_from=len(head)))
    return replace(p, commands=tuple(commands))


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_lws_placeholders_cannot_rewrite_a_model_id_or_a_value(engine: str) -> None:
    p = _with_hostile_words(two_nodes(engine))
    lws = next(d for d in docs(kubernetes_yaml(p, "m")) if d["kind"] == "LeaderWorkerSet")
    pod = lws["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]
    text = pod["containers"][0]["args"][0]
    worker = next(c for c in p.commands if c.role == "worker")
    start = worker.multi_node_from
    assert start is not None
    words = _sh_words(text)
    assert words[:start] == list(worker.argv[:start])  # every hostile word arrives as written
    tail = words[start:]
    assert any("10.0.0.1" in w for w in tail) and not any("LEADER_ADDR" in w for w in tail)
    if engine == "sglang":
        assert tail[tail.index("--node-rank") + 1] == "1"
    else:
        assert tail[tail.index("--data-parallel-start-rank") + 1] == "8"
    assert shlex.quote(HOSTILE[0]) in text


def test_the_cli_prints_manifests_with_the_clusters_own_names(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["plan", "deepseek-ai/DeepSeek-V3", "--gpu", "H100", "--gpus", "8", "--nodes", "2"]
    cluster = ["--model-cache-claim", "models", "--hf-token-secret", "hf", "--nic", "ib0"]
    assert main([*argv, "--kubernetes", *cluster, "--host-network"]) == 0
    docs = [d for d in yaml.safe_load_all(capsys.readouterr().out) if d]
    text = json.dumps(docs)
    assert '"claimName": "models"' in text and '"hostNetwork": true' in text
    env = [e for d in docs for e in _all_env(d)]
    assert {"name": "NCCL_SOCKET_IFNAME", "value": "ib0"} in env
    assert any(e.get("valueFrom", {}).get("secretKeyRef", {}).get("name") == "hf" for e in env)


def test_the_cli_refuses_a_claim_that_is_not_a_dns_label(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["plan", "Qwen/Qwen3-8B", "--kubernetes", "--model-cache-claim", "a b$(x)"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: model_cache_claim:")


def _all_env(node: Any) -> list[dict[str, Any]]:
    if isinstance(node, dict):
        found = list(node["env"]) if isinstance(node.get("env"), list) else []
        return found + [e for v in node.values() for e in _all_env(v)]
    if isinstance(node, list):
        return [e for v in node for e in _all_env(v)]
    return []


def test_the_fast_emitter_writes_the_same_manifests_as_pyyamls_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # libyaml's emitter folds long quoted strings elsewhere; what the YAML says is the same,
    # for a plan that runs and for a blocked one whose annotations quote long reasons
    from engine.present import k8s

    blocked = run("moonshotai/Kimi-K2-Instruct", gpu="H100", gpus_per_node=1, users=16).plan
    assert blocked is not None and not blocked.runnable
    for plan in (make("Qwen/Qwen3-30B-A3B", "vllm"), make("Qwen/Qwen3-30B-A3B", "sglang"), blocked):
        fast = kubernetes_yaml(plan, "m")
        monkeypatch.setattr(k8s, "_DUMPER", yaml.SafeDumper)
        slow = kubernetes_yaml(plan, "m")
        monkeypatch.undo()
        assert list(yaml.safe_load_all(fast)) == list(yaml.safe_load_all(slow))


def test_the_fast_emitter_keeps_a_hostile_string_one_escaped_scalar() -> None:
    # a newline, quotes, $(...), an ESC byte and a Markdown reference link: the manifest holds
    # them escaped inside one double-quoted scalar (no raw ESC, no second line) and reads back
    from engine.present import k8s

    hostile = 'a\nb "q" $(touch PWNED) \x1b[31m [t][r]\n[r]: https://evil.example'
    text = yaml.dump_all([{"k": hostile}], Dumper=k8s._DUMPER, default_flow_style=False)
    assert "\x1b" not in text and text.count("\n") == 1
    assert next(yaml.safe_load_all(text))["k"] == hostile
