"""Launch plans read from the Study: every flag and choice exists in the pinned engine tables, the
layout, context, weights and users are the Study's, and the playbook's and the recipes' calls
hold on every bundled model and hardware."""

from __future__ import annotations

import json
import math
import shlex

import pytest
import yaml

from engine.engines import adapter
from engine.engines.placement import weights_per_gpu
from engine.errors import InputError
from engine.launch.layout import Split
from engine.launch.plan import LaunchPlan, PlanError, checked, launch_facts
from engine.model.loader import catalog_names
from engine.present.render import docker, script, shell
from engine.present.study_report import plan_json
from engine.scenario import ENGINES
from engine.study import Study
from tests.study_util import run

HARDWARE = [
    ("H200", 8, 1),
    ("H100", 8, 1),
    ("B200", 8, 1),
    ("RTX 4090", 1, 1),
    ("L40S", 1, 1),
    ("H200", 8, 2),
]
GIB = 1 << 30


def plan_of(model: str, engine: str = "vllm", **fields: object) -> LaunchPlan:
    st = run(model, engine=engine, **fields)
    assert st.plan is not None
    return st.plan


def flag_value(p: LaunchPlan, flag: str) -> str | None:
    for f in p.flags:
        if f.flag == flag:
            return f.value
    raise AssertionError(f"{flag} not in {p.argv}")


def has(p: LaunchPlan, flag: str) -> bool:
    return any(f.flag == flag for f in p.flags)


def assert_in_tables(p: LaunchPlan) -> None:
    for f in p.flags:
        info = adapter(p.engine).lookup(f.flag)
        assert info is not None and not info.deprecated, f.flag
        assert info.takes_value == (f.value is not None), f.flag
        if f.value is not None and info.choices_enforced and info.choices is not None:
            assert f.value in info.choices, (f.flag, f.value)
        assert f.reason.strip(), f.flag
    for x in p.left_to_engine:
        assert x.reason.strip(), x.flag
    # every node's argv round-trips through its shell text
    for c in p.commands:
        flat = shell(p, c).replace("\\\n", " ").replace('"${LEADER_ADDR}', "${LEADER_ADDR}")
        assert shlex.split(flat.replace('"', "")) == [t.replace('"', "") for t in c.argv]


def context_flag(p: LaunchPlan) -> int:
    return int(flag_value(p, "--max-model-len" if p.engine == "vllm" else "--context-length") or 0)


@pytest.mark.parametrize("hw", HARDWARE, ids=[f"{g}x{n}x{m}" for g, n, m in HARDWARE])
def test_every_bundled_model_plans_a_runnable_launch_whenever_the_weights_fit(
    hw: tuple[str, int, int],
) -> None:
    gpu, per_node, nodes = hw
    for name in catalog_names():
        for engine in ENGINES:
            st = run(name, gpu=gpu, gpus_per_node=per_node, nodes=nodes, engine=engine)
            p = st.plan
            assert p is not None, name
            assert_in_tables(p)
            fit = st.fit
            # one decision: the plan's layout, context, weights and users are the Study's
            assert p.layout == st.layout and p.fit == fit and p.context == st.context
            gate_failed = any(g.status == "fail" for g in st.gates.gates if g.kind != "fit")
            if fit.weights_fit and not gate_failed:
                assert p.runnable and st.verdict.runs, (name, engine, st.verdict.reason)
                # a context that fits and never beyond the model's own limit
                assert context_flag(p) == st.context <= st.limit.tokens
                assert fit.context_fits or 0 < st.context < st.context_asked
                per_request = st.kv.bytes_per_request(st.context, padded=True)
                assert (
                    per_request
                    * (
                        math.ceil(st.config.num_hidden_layers / fit.layout.pp)
                        / st.config.num_hidden_layers
                    )
                    <= fit.kv_space_per_gpu + 1
                ), name
            else:
                assert not p.runnable and p.blocked_by, (name, engine)
            assert p.argv[:2] == (["vllm", "serve"] if engine == "vllm" else ["python3", "-m"])
            assert flag_value(p, "--port") == "8000"


def test_dp_ep_weights_per_gpu_of_deepseek_v32_match_a_hand_calculation() -> None:
    """TP 1 × DP 8 + EP on 8 GPUs (vLLM): every rank holds the embedding, the LM head, the
    attention (sharded and replicated parts), the dense FFNs, the shared experts, routers and
    norms whole, and 1/8 of the routed experts. MTP layers are not loaded (16 users)."""
    st = run(
        "deepseek-ai/DeepSeek-V3.2", gpu="H200", gpus_per_node=8, users=16, tp=1, dp=8, ep=True,
        speculative=False,
    )  # fmt: skip
    assert (st.layout.tp, st.layout.dp, st.layout.ep, st.layout.replicas) == (1, 8, True, 1)
    w = st.weights
    routed = w.bytes_of(["routed_experts"], mtp=False)
    whole = w.bytes_of(
        ["embedding", "lm_head", "attention", "replicated", "dense_ffn", "shared_experts",
         "router", "norm"],
        mtp=False,
    )  # fmt: skip
    by_hand = whole + math.ceil(routed / 8)
    assert abs(st.fit.weights_per_gpu - by_hand) <= 16  # per-role rounding
    # the FP8 checkpoint (685 GB) spread over 8 GPUs would be ~80 GiB; DP+EP keeps ~95 GiB
    assert 90 * GIB < st.fit.weights_per_gpu < 100 * GIB


def test_dp_ep_weights_per_gpu_of_glm5_match_a_hand_calculation() -> None:
    st = run("zai-org/GLM-5", gpu="H200", gpus_per_node=8, nodes=2, users=256)
    split = Split(tp=1, dp=8, ep=True)
    got, _ = weights_per_gpu(
        st.weights, "vllm", split, num_layers=st.config.num_hidden_layers, mtp=False, vision=False
    )
    w = st.weights
    whole = w.bytes_of(
        ["embedding", "lm_head", "attention", "replicated", "dense_ffn", "shared_experts",
         "router", "norm"],
        mtp=False,
    )  # fmt: skip
    assert abs(got - (whole + math.ceil(w.bytes_of(["routed_experts"], mtp=False) / 8))) <= 16
    # SGLang under DP-attention: embeddings whole, LM head / dense / shared over all 8 ranks
    sg, _ = weights_per_gpu(
        w, "sglang", split, num_layers=st.config.num_hidden_layers, mtp=False, vision=False
    )
    sg_hand = (
        w.bytes_of(["embedding", "attention", "replicated", "router", "norm"], mtp=False)
        + math.ceil(w.bytes_of(["lm_head", "dense_ffn", "shared_experts", "routed_experts"],
                               mtp=False) / 8)
    )  # fmt: skip
    assert abs(sg - sg_hand) <= 64


def test_llama_31_8b_on_8_h200_at_512_users_runs_eight_copies_at_tp1() -> None:
    st = run(
        "meta-llama/Meta-Llama-3.1-8B", gpu="H200", gpus_per_node=8, users=512, context=8192,
        latency="throughput",
    )  # fmt: skip
    assert st.layout.tp == 1 and st.layout.replicas * st.layout.dp == 8
    v = st.engines["vllm"].plan
    s = st.engines["sglang"].plan
    assert v is not None and s is not None
    assert flag_value(v, "--tensor-parallel-size") == "1"
    assert flag_value(v, "--data-parallel-size") == "8"  # one server, 8 replicas
    assert flag_value(s, "--tp-size") == "1" and flag_value(s, "--dp-size") == "8"


def test_deepseek_v32_on_8_h200_is_runnable_with_both_engines() -> None:
    for engine in ENGINES:
        st = run("deepseek-ai/DeepSeek-V3.2", gpu="H200", gpus_per_node=8, engine=engine)
        assert st.verdict.runs and st.plan is not None and st.plan.runnable, engine
        # DP-attention at TP 1-2, the layout the recipes and the cookbook run DSA at
        assert st.layout.dp > 1 and st.layout.tp <= 2, engine


def test_llama_4_scout_on_8_h100_sets_a_context_that_fits_below_its_10m_limit() -> None:
    st = run("meta-llama/Llama-4-Scout-17B-16E-Instruct", gpu="H100", gpus_per_node=8, context=None)
    assert st.limit.tokens == 10_485_760
    p = st.plan
    assert p is not None and p.runnable
    assert context_flag(p) == st.context < st.limit.tokens
    assert st.verdict.status == "shorter_context"


def test_falcon_7b_context_is_its_2048_default_limit() -> None:
    st = run("tiiuae/falcon-7b-instruct", context=32_768)
    assert st.limit.tokens == 2048 and st.context == 2048
    assert st.plan is not None and context_flag(st.plan) == 2048


def test_two_nodes_give_per_node_commands_and_a_leader_worker_set() -> None:
    st = run("deepseek-ai/DeepSeek-V3", gpu="H100", gpus_per_node=8, nodes=2, tp=8, pp=2)
    for engine in ENGINES:
        p = st.engines[engine].plan
        assert p is not None and p.runnable
        assert [c.node for c in p.commands] == [0, 1]
        assert [c.role for c in p.commands] == ["leader", "worker"]
        leader, worker = (list(c.argv) for c in p.commands)
        rank_flag = "--node-rank"
        assert leader[leader.index(rank_flag) + 1] == "0"
        assert worker[worker.index(rank_flag) + 1] == "1"
        if engine == "vllm":
            assert "--headless" in worker and "--headless" not in leader
            assert leader[leader.index("--nnodes") + 1] == "2"
        else:
            assert any(t.startswith("${LEADER_ADDR}:") for t in leader)
        docs = [d for d in yaml.safe_load_all(plan_json(p)["kubernetes_yaml"]) if d]
        lws = next(d for d in docs if d["kind"] == "LeaderWorkerSet")
        assert lws["apiVersion"] == "leaderworkerset.x-k8s.io/v1"
        tmpl = lws["spec"]["leaderWorkerTemplate"]
        assert tmpl["size"] == 2
        for role in ("leaderTemplate", "workerTemplate"):
            (c,) = tmpl[role]["spec"]["containers"]
            assert c["resources"]["limits"]["nvidia.com/gpu"] == 8
            assert "LWS_LEADER_ADDRESS" in c["args"][0]


def test_a_copy_that_fits_one_node_replicates_per_node_with_a_router() -> None:
    st = run("deepseek-ai/DeepSeek-V3", gpu="H200", gpus_per_node=8, nodes=2)
    assert st.layout.replicas == 2 and st.layout.split.gpus == 8
    p = st.plan
    assert p is not None and p.servers == 2
    docs = [d for d in yaml.safe_load_all(plan_json(p)["kubernetes_yaml"]) if d]
    kinds = [d["kind"] for d in docs]
    assert kinds == ["Deployment", "Service", "ConfigMap"]
    assert docs[0]["spec"]["replicas"] == 2


def test_moe_models_get_expert_parallel_with_tp() -> None:
    # EP or the experts sliced over TP is the speed model's call (within 2 % here); an EP
    # layout says so on the command line
    v = plan_of("Qwen/Qwen3-30B-A3B", "vllm", users=64, latency="latency", tp=4, ep=True)
    assert has(v, "--enable-expert-parallel")
    assert not has(plan_of("Qwen/Qwen3-32B", "vllm"), "--enable-expert-parallel")


def test_deepseek_v31_tool_parser_per_engine() -> None:
    v = plan_of("deepseek-ai/DeepSeek-V3.1", "vllm")
    s = plan_of("deepseek-ai/DeepSeek-V3.1", "sglang")
    assert flag_value(v, "--tool-call-parser") == "deepseek_v31"
    assert flag_value(s, "--tool-call-parser") == "deepseekv31"
    assert has(v, "--enable-auto-tool-choice")
    assert "deepseek_v31" in adapter("vllm").registries.tool_call_parsers
    assert flag_value(v, "--reasoning-parser") in adapter("vllm").registries.reasoning_parsers


def test_deepseek_r1_gets_its_reasoning_parser() -> None:
    assert flag_value(plan_of("deepseek-ai/DeepSeek-R1", "vllm"), "--reasoning-parser") == (
        "deepseek_r1"
    )


def test_base_checkpoints_get_no_tool_call_parser() -> None:
    for name in (
        "meta-llama/Meta-Llama-3.1-8B",
        "Qwen/Qwen2.5-72B",
        "nvidia/Nemotron-H-56B-Base-8K",
    ):
        p = plan_of(name, "vllm")
        assert not has(p, "--tool-call-parser") and not has(p, "--enable-auto-tool-choice"), name


def test_deepseek_v32_leaves_kv_dtype_and_backend_to_the_engine() -> None:
    for engine in ENGINES:
        p = plan_of("deepseek-ai/DeepSeek-V3.2", engine)
        left = {x.flag: x.reason for x in p.left_to_engine}
        assert "--kv-cache-dtype" in left and "per layer" in left["--kv-cache-dtype"]
        assert not has(p, "--kv-cache-dtype")


def test_the_scenarios_memory_fraction_and_kv_dtype_reach_both_engines_commands() -> None:
    st = run("meta-llama/Meta-Llama-3.1-8B", memory_fraction=0.8, kv_dtype="fp8")
    v, s = st.engines["vllm"].plan, st.engines["sglang"].plan
    assert v is not None and s is not None
    assert flag_value(v, "--gpu-memory-utilization") == "0.8"
    assert flag_value(s, "--mem-fraction-static") == "0.8"
    assert flag_value(v, "--kv-cache-dtype") == "fp8"
    assert flag_value(s, "--kv-cache-dtype") == "fp8_e4m3"
    assert st.engines["vllm"].fit is not None and st.engines["vllm"].fit.fraction == 0.8
    assert st.kv.kv_dtype.bytes == 1


def test_mtp_drafts_where_the_speed_model_says_they_pay_with_the_recipes_draft_length() -> None:
    few = run("deepseek-ai/DeepSeek-V3.2", users=4, latency="latency")
    assert few.mtp and few.plan is not None
    spec = json.loads(flag_value(few.plan, "--speculative-config") or "{}")
    assert spec == {"method": "mtp", "num_speculative_tokens": 3}
    sg = plan_of("deepseek-ai/DeepSeek-V3.2", "sglang", users=4, latency="latency")
    assert flag_value(sg, "--speculative-algorithm") == "EAGLE"
    assert flag_value(sg, "--speculative-num-steps") == "3"
    # the plan says why, with the speed model's TPOT with and without drafts
    why = next(f.why for f in few.plan.flags if f.flag == "--speculative-config")
    assert why["why"].code == "flag.mtp.speed"
    assert why["why"]["tpot"].value < why["why"]["tpot_without"].value


def test_mtp_is_left_off_where_drafts_cost_more_than_they_save_or_the_scenario_says_so() -> None:
    busy = run("deepseek-ai/DeepSeek-V3", users=512, latency="throughput")
    off = run("deepseek-ai/DeepSeek-V3", users=4, speculative=False)
    for st in (busy, off):
        assert not st.mtp and st.plan is not None
        assert not has(st.plan, "--speculative-config")
        assert any(x.flag == "--speculative-config" for x in st.plan.left_to_engine)
    assert run("deepseek-ai/DeepSeek-V3", users=512, speculative=True).mtp


def test_hybrid_batched_tokens_are_a_multiple_of_the_block_at_the_plans_tp() -> None:
    st = run("Qwen/Qwen3-Next-80B-A3B-Thinking", gpus_per_node=2)
    p = st.plan
    assert p is not None and st.kv.hybrid is not None
    block = st.kv.hybrid.block_size
    assert int(flag_value(p, "--max-num-batched-tokens") or 0) % block == 0
    assert any(x.flag == "--block-size" and str(block) in x.reason for x in p.left_to_engine)


def test_multimodal_text_only_and_images() -> None:
    text = plan_of("Qwen/Qwen3-VL-32B-Instruct", "vllm")
    assert has(text, "--language-model-only")
    img = plan_of("Qwen/Qwen3-VL-32B-Instruct", "vllm", images=True, latency="latency")
    assert not has(img, "--language-model-only")
    assert flag_value(img, "--mm-processor-cache-type") == "shm"
    with pytest.raises(InputError, match=r"^images: "):
        run("Qwen/Qwen3-32B", images=True)


def test_a_failed_gate_blocks_but_still_plans() -> None:
    st = run("deepseek-ai/DeepSeek-V3.2", gpu="RTX 4090", gpus_per_node=2)
    p = st.plan
    assert p is not None and not p.runnable
    assert any(b["gate"].code == "gate.failed.dsa" for b in p.blocked_by)
    assert p.argv[:3] == ["vllm", "serve", "deepseek-ai/DeepSeek-V3.2"]


def test_a_model_that_fits_nowhere_names_what_would() -> None:
    st = run("zai-org/GLM-5", gpu="H200", gpus_per_node=8)
    assert st.verdict.status == "does_not_fit"
    assert st.min_gpus == 16
    assert float(st.verdict.reason["times"].value) > 1  # the weights' overflow is said


def test_checked_rejects_flags_and_choices_not_in_the_tables() -> None:
    with pytest.raises(PlanError):
        checked("sglang", "--enable-expert-parallel", None, "x")
    with pytest.raises(PlanError):
        checked("vllm", "--mm-encoder-tp-mode", "tensor", "x")
    with pytest.raises(PlanError):
        checked("sglang", "--enable-dp-attention", None, "deprecated in 0.5.23")


def test_docker_script_and_json() -> None:
    p = plan_of("Qwen/Qwen3-8B", "sglang", gpus_per_node=1)
    d = docker(p)
    assert "--gpus all" in d and "--ipc=host" in d and "-p 8000:8000" in d
    assert "lmsysorg/sglang" in d
    v = docker(plan_of("Qwen/Qwen3-8B", "vllm", gpus_per_node=1))
    assert "vllm/vllm-openai" in v and "vllm serve" not in v
    j = plan_json(p)
    keys = {"argv", "flags", "left_to_engine", "kubernetes_yaml", "runnable", "blocked_by"}
    assert keys <= set(j) and {"tp", "dp", "attn_dp", "expert_parallel"} <= set(j["layout"])
    json.dumps(j)
    assert script(p).startswith("#!/usr/bin/env bash\n")


def test_launch_facts_are_read_once_from_data_with_sources() -> None:
    facts = launch_facts()
    assert facts is launch_facts()
    assert facts.mtp.vllm_num_speculative_tokens >= 1 and facts.mtp.source
    assert {"vllm", "sglang"} <= set(facts.routers)
    assert all(r.source for r in facts.routers.values())


def study_numbers(st: Study) -> tuple[int, int, int, int]:
    return (st.fit.weights_per_gpu, st.fit.kv_space_per_gpu, st.fit.users, st.context)


def test_a_pinned_layout_overrides_the_search_everywhere() -> None:
    auto = run("meta-llama/Meta-Llama-3.1-8B")
    pinned = run("meta-llama/Meta-Llama-3.1-8B", tp=1)
    assert auto.layout.tp > 1 and pinned.layout.tp == 1
    assert pinned.search.pinned and pinned.plan is not None
    assert flag_value(pinned.plan, "--tensor-parallel-size") == "1"
    assert study_numbers(pinned) != study_numbers(auto)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_plan_that_passes_trust_remote_code_never_notes_it_is_not_needed(engine: str) -> None:
    passing = 0
    for name in catalog_names():
        plan = run(name, gpu="H200", gpus_per_node=8, engine=engine).plan
        if plan is None or "--trust-remote-code" not in {f.flag for f in plan.flags}:
            continue
        passing += 1
        assert "software.remote_code_not_needed" not in {n.code for n in plan.noted}, name
    assert passing > 0
