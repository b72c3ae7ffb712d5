"""Disaggregated plans that run: every flag and choice from the pinned tables, the script's shell,
the manifests against the Kubernetes and LeaderWorkerSet schemas, blocked and non-winning
candidates labelled."""

from __future__ import annotations

import re
import subprocess
from dataclasses import replace
from functools import cache
from typing import Any

import pytest
import yaml

from engine.disagg import disaggregate
from engine.disagg.choice import launch_plan
from engine.disagg.compare import AGG_NONE
from engine.disagg.plan import DisaggPlan, disagg_plan
from engine.engines import adapter
from engine.errors import InputError
from engine.model import store
from engine.model.config import normalize
from engine.model.loader import LoadedModel, load_catalog
from engine.present.disagg_k8s import disagg_kubernetes_yaml
from engine.present.disagg_render import disagg_script, node_word
from engine.present.k8s import KubeOptions
from engine.scenario import make_scenario
from engine.study import study
from tests.study_util import run
from tests.test_injection import bash_commands
from tests.test_k8s import schema_errors

# (model, GPU, engine, rate, ISL, OSL, TTFT ms, TPOT ms): one node's workers side by side, and
# a MoE whose workers span nodes (DP-attention + EP over DeepEP in the decode pool)
CASES = [
    ("Qwen/Qwen3-32B", "H200", "vllm", 8.0, 8192, 256, 1500, 20),
    ("Qwen/Qwen3-32B", "H200", "sglang", 8.0, 8192, 256, 1500, 20),
    ("deepseek-ai/DeepSeek-V3", "H100 SXM", "sglang", 10.0, 4096, 1024, 3000, 60),
    ("deepseek-ai/DeepSeek-V3", "H100 SXM", "vllm", 10.0, 4096, 1024, 3000, 60),
]


@cache
def plan_of(case: tuple[Any, ...]) -> DisaggPlan:
    model, gpu, engine, rate, isl, osl, ttft, tpot = case
    st = run(
        model, gpu=gpu, engine=engine, input_tokens=isl, output_tokens=osl,
        context=isl + osl, ttft_ms=ttft, tpot_ms=tpot,
    )  # fmt: skip
    return disagg_plan(st, disaggregate(st, rate), None)


def _ids(case: tuple[Any, ...]) -> str:
    return f"{case[0].split('/')[-1]}-{case[2]}"


@pytest.mark.parametrize("case", CASES, ids=_ids)
def test_every_flag_and_choice_is_in_the_pinned_table(case: tuple[Any, ...]) -> None:
    p = plan_of(case)
    eng = adapter(p.engine)
    for s in p.servers:
        argv = s.command.argv[len(p.prefill.program) :]
        for i, token in enumerate(argv):
            if not token.startswith("--"):
                continue
            info = eng.lookup(token)
            assert info is not None and info.flag == token and not info.deprecated, token
            if info.takes_value and info.choices_enforced and info.choices:
                assert argv[i + 1] in info.choices, (token, argv[i + 1])
    roles = {s.role for s in p.servers}
    assert roles == {"prefill", "decode"}


def test_each_engine_names_its_pool_role() -> None:
    v = plan_of(CASES[0])
    producer = next(s for s in v.servers if s.role == "prefill").command.argv
    consumer = next(s for s in v.servers if s.role == "decode").command.argv
    assert '"kv_role":"kv_producer"' in producer[producer.index("--kv-transfer-config") + 1]
    assert '"kv_role":"kv_consumer"' in consumer[consumer.index("--kv-transfer-config") + 1]
    g = plan_of(CASES[1])
    for s in g.servers:
        argv = s.command.argv
        assert argv[argv.index("--disaggregation-mode") + 1] == s.role
        assert argv[argv.index("--disaggregation-transfer-backend") + 1] == "mooncake"


def test_servers_sharing_a_node_get_their_own_gpus_and_ports() -> None:
    for case in CASES[:2]:
        p = plan_of(case)
        by_node: dict[int, list[Any]] = {}
        for s in p.servers:
            by_node.setdefault(s.node, []).append(s)
        for servers in by_node.values():
            devices = [d for s in servers for d in (s.command.devices or ())]
            assert len(devices) == len(set(devices))
            ports = [s.command.port for s in servers]
            assert len(ports) == len(set(ports))
            boots = [s.bootstrap_port for s in servers if s.bootstrap_port is not None]
            assert len(boots) == len(set(boots))
            side = [e.value for s in servers for e in s.env if e.name.endswith("_PORT")]
            assert len(side) == len(set(side))


def test_the_router_lists_every_prefill_and_decode_server() -> None:
    p = plan_of(CASES[1])  # SGLang: each prefill URL with its bootstrap port
    argv = p.router.argv
    z = p.candidate.sized
    assert z is not None
    assert argv.count("--prefill") == z.prefill.workers
    assert argv.count("--decode") == z.decode.workers
    i = argv.index("--prefill")
    assert argv[i + 2] == "8998" and "--pd-disaggregation" in argv
    v = plan_of(CASES[0])
    assert "--vllm-pd-disaggregation" in v.router.argv


def test_wide_ep_pools_run_their_own_all_to_all_mode() -> None:
    p = plan_of(CASES[2])
    decode = next(s for s in p.servers if s.role == "decode").command.argv
    assert decode[decode.index("--moe-a2a-backend") + 1] == "deepep"
    assert decode[decode.index("--deepep-mode") + 1] == "low_latency"
    prefill = next(s for s in p.servers if s.role == "prefill").command.argv
    if "--deepep-mode" in prefill:  # a prefill worker whose experts cross nodes
        assert prefill[prefill.index("--deepep-mode") + 1] == "normal"


@pytest.mark.parametrize("case", CASES, ids=_ids)
def test_the_script_is_valid_bash_and_asks_for_every_node_address(case: tuple[Any, ...]) -> None:
    p = plan_of(case)
    text = disagg_script(p)
    subprocess.run(["bash", "-n"], input=text, text=True, check=True)
    used = set(re.findall(r"\$\{NODE([0-9]+)_ADDR\}", text))
    asked = set(re.findall(r"\$\{NODE([0-9]+)_ADDR:\?", text))
    assert used and used == asked  # every address the script expands, it asks for first
    assert text.index("_ADDR:?") < text.index('case "$NODE"')
    assert "  router)" in text and text.count("--disaggregation-mode") + text.count(
        "--kv-transfer-config"
    ) >= len(p.servers)
    ko = disagg_script(p, "ko")
    subprocess.run(["bash", "-n"], input=ko, text=True, check=True)


def test_a_node_address_stays_expandable_and_nothing_else_does() -> None:
    assert node_word("http://${NODE3_ADDR}:8000") == '"http://${NODE3_ADDR}:8000"'
    assert node_word("${NODE1_ADDR}:25000") == '"${NODE1_ADDR}:25000"'
    assert node_word("$(rm -rf /)${NODE1_ADDR}") == "'$(rm -rf /)${NODE1_ADDR}'"
    assert node_word("${HOME}") == "'${HOME}'"


CLUSTER = KubeOptions("models-rwx", "my-hf", False, "rdma/ib", "ib0")


@pytest.mark.parametrize("case", CASES, ids=_ids)
def test_the_manifests_pass_the_kubernetes_and_lws_schemas(case: tuple[Any, ...]) -> None:
    p = plan_of(case)
    for opts in (None, CLUSTER):
        docs = list(yaml.safe_load_all(disagg_kubernetes_yaml(p, "m", opts)))
        kinds = [d["kind"] for d in docs]
        assert kinds == ["LeaderWorkerSet", "LeaderWorkerSet", "Deployment", "Service"]
        for d in docs:
            assert schema_errors(d) == [], (d["kind"], schema_errors(d)[:3])


def test_each_pool_is_a_leaderworkerset_with_its_own_replicas_and_gpus() -> None:
    p = plan_of(CASES[2])
    z = p.candidate.sized
    assert z is not None
    docs = list(yaml.safe_load_all(disagg_kubernetes_yaml(p, "dsv3", CLUSTER)))
    prefill, decode = docs[0], docs[1]
    assert prefill["spec"]["replicas"] == z.prefill.workers
    assert decode["spec"]["replicas"] == z.decode.workers
    nodes = z.decode.worker.gpus // 8
    assert decode["spec"]["leaderWorkerTemplate"]["size"] == nodes
    pod = decode["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]
    limits = pod["containers"][0]["resources"]["limits"]
    assert limits["nvidia.com/gpu"] == 8 and limits["rdma/ib"] == 1
    claims = {
        v["persistentVolumeClaim"]["claimName"]
        for d in docs[:2]
        for t in ("leaderTemplate", "workerTemplate")
        if t in d["spec"]["leaderWorkerTemplate"]
        for v in d["spec"]["leaderWorkerTemplate"][t]["spec"]["volumes"]
        if "persistentVolumeClaim" in v
    }
    assert claims == {"models-rwx"}  # one model cache for both pools
    router = docs[2]["spec"]["template"]["spec"]["containers"][0]
    argv = router["command"] + router["args"]
    assert f"http://dsv3-prefill-0.dsv3-prefill:{p.prefill.port}" in argv


def test_a_vllm_pod_reaches_its_peers_at_its_own_ip() -> None:
    p = plan_of(CASES[0])
    pod = next(iter(yaml.safe_load_all(disagg_kubernetes_yaml(p, "m"))))
    spec = pod["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]
    env = {e["name"]: e for e in spec["containers"][0]["env"]}
    assert env["VLLM_NIXL_SIDE_CHANNEL_HOST"]["valueFrom"]["fieldRef"] == {
        "fieldPath": "status.podIP"
    }


def test_a_candidate_that_is_not_the_pick_is_labelled_in_the_script_and_the_manifests() -> None:
    p = plan_of(CASES[0])
    labelled = replace(p, label=AGG_NONE(gpus=8))
    assert "NOT THE PICK" in disagg_script(labelled)
    docs = list(yaml.safe_load_all(disagg_kubernetes_yaml(labelled, "m")))
    assert all("serving-playbook/not-the-pick" in d["metadata"]["annotations"]
               for d in docs if d["kind"] != "Service")  # fmt: skip


def test_a_blocked_study_stops_its_pools_before_any_launcher() -> None:
    # DeepSeek-V3.2's DSA kernels do not exist on Ada: the gates block every plan
    st = run("deepseek-ai/DeepSeek-V3.2", gpu="L40S", gpus_per_node=8, nodes=4)
    d = disaggregate(st, 1.0)
    if d.sized is None:
        with pytest.raises(InputError):
            disagg_plan(st, d, None)
        return
    p = disagg_plan(st, d, None)
    assert not p.runnable and p.blocked_by
    text = disagg_script(p)
    assert text.index("exit 1") < text.index("case ")
    docs = list(yaml.safe_load_all(disagg_kubernetes_yaml(p, "m")))
    assert all(d["spec"]["replicas"] == 0 for d in docs if d["kind"] != "Service")


def test_no_candidate_is_a_coded_refusal_naming_the_rate() -> None:
    st = run("meta-llama/Llama-3.1-70B-Instruct", gpu="H100 SXM", tpot_ms=1.0)
    with pytest.raises(InputError) as err:
        disagg_plan(st, disaggregate(st, 1.0), None)
    assert err.value.field == "request_rate"
    assert err.value.expects is not None and err.value.expects.code == "error.disagg.none"


def test_named_rdma_devices_reach_each_engines_transfer() -> None:
    for engine in ("sglang", "vllm"):
        st = run(
            "Qwen/Qwen3-32B", gpu="H200", engine=engine, input_tokens=8192, output_tokens=256,
            context=8448, ttft_ms=1500, tpot_ms=20, rdma_devices="mlx5_0, mlx5_1,mlx5_0",
        )  # fmt: skip
        assert st.scenario.rdma_devices == "mlx5_0,mlx5_1"
        p = disagg_plan(st, disaggregate(st, 8.0), None)
        assert p.nodes > 1  # the KV crosses the network
        s = p.servers[0]
        if engine == "sglang":
            argv = s.command.argv
            assert argv[argv.index("--disaggregation-ib-device") + 1] == "mlx5_0,mlx5_1"
        else:
            assert ("UCX_NET_DEVICES", "mlx5_0:1,mlx5_1:1") in [(e.name, e.value) for e in s.env]


SEVENTEEN = ",".join(f"m{i}" for i in range(17))


@pytest.mark.parametrize("bad", ["mlx5_0;rm -rf /", "$(id)", SEVENTEEN, "a b"])
def test_rdma_device_names_are_names_or_refused(bad: str) -> None:
    with pytest.raises(InputError) as err:
        run("Qwen/Qwen3-8B", rdma_devices=bad)
    assert err.value.field == "rdma_devices"


# a newline, quotes, a command substitution, an ESC byte and a Markdown reference link
HOSTILE = "x\ntouch PWNED\n'\"$(touch PWNED)\x1b[31m[t][r]"


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_a_hostile_config_stays_data_in_the_disaggregated_script_and_manifests(
    lang: str, tmp_path: Any
) -> None:
    cfg = dict(load_catalog("Qwen/Qwen3-32B").config.raw)
    cfg["architectures"] = [HOSTILE, "Qwen3ForCausalLM"]
    cfg["_name_or_path"] = HOSTILE
    cfg["auto_map"] = {"AutoModelForCausalLM": HOSTILE}  # asks for --trust-remote-code
    digest = store.put(LoadedModel(normalize(cfg), "json", HOSTILE + ".json"))
    st = study(make_scenario(source="file", model="upload", digest=digest, gpu="H200",
                             input_tokens=8192, output_tokens=256, context=8448, ttft_ms=1500,
                             tpot_ms=20, request_rate=8, disaggregated=True))  # fmt: skip
    p = launch_plan(st)
    assert p is not None and p.runnable
    script = disagg_script(p, lang)
    text = disagg_kubernetes_yaml(p, "m", lang=lang)
    for out in (script, text):
        assert "\x1b" not in out  # no raw escape byte reaches a terminal
    # bash parses the script and defining it runs nothing; no command it holds is the payload's
    commands = bash_commands(script, tmp_path)
    assert not any(words and words[0] == "touch" for words in commands)
    assert not any(tmp_path.iterdir())
    docs = list(yaml.safe_load_all(text))
    notes = [v for d in docs for v in d["metadata"].get("annotations", {}).values()]
    assert notes and not any("\n" in v or "\x1b" in v for v in notes)
