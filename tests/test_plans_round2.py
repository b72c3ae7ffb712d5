"""Plans an expert signs, round 2: SGLang DP-attention memory as the deployments set it, the
recipes' known issues applied, multi-node plumbing as the recipes' strategies write it, the tool
chat templates in the command, the decisions worded in both languages, and no Korean in English
output."""

from __future__ import annotations

import json
import re

import pytest

from engine.engines import adapter
from engine.launch.plan import LaunchPlan
from engine.present.render import script
from engine.present.study_report import plan_json, study_json
from engine.rules import DATA_DIR
from engine.study import Study
from engine.text.words import say, sources
from tests.study_util import run

HANGUL = re.compile(r"[\uac00-\ud7a3]")


def flags(p: LaunchPlan) -> dict[str, str | None]:
    return {f.flag: f.value for f in p.flags}


# --- SGLang DP-attention memory ------------------------------------------------------------------


def _v3_two_h100_nodes(users: int = 256) -> Study:
    return run(
        "deepseek-ai/DeepSeek-V3",
        engine="sglang",
        gpu="H100",
        gpus_per_node=8,
        nodes=2,
        users=users,
        context=16384,
    )


# The cookbook's DP-attention 16 + EP holds 240 users at 16K here (the fraction pinned at the
# decode batch per rank, each rank's prefill chunk its share of the budget); at 256 users DP 16
# without EP, which keeps no DeepEP buffers, holds all 256 and the search ranks that first.
@pytest.mark.parametrize("users", [200, 240])
def test_deepseek_v3_on_2x8_h100_with_sglang_runs_dp_attention_16_with_ep(users: int) -> None:
    st = _v3_two_h100_nodes(users)
    s = st.layout.split
    assert (st.layout.replicas, s.tp, s.dp, s.pp, s.ep) == (1, 1, 16, 1, True)
    p = st.plan
    assert p is not None
    f = flags(p)
    assert (f["--tp-size"], f["--attn-dp-size"], f["--ep-size"]) == ("16", "16", "16")
    # the plan sets what the sizing assumed: the decode CUDA-graph batch per attention rank and
    # the static fraction SGLang's own formula gives at that batch
    bs = -(-users // 16)
    assert f["--cuda-graph-max-bs-decode"] == str(8 * -(-bs // 8))
    assert float(f["--mem-fraction-static"] or 0) == pytest.approx(st.fit.fraction)
    assert st.fit.fraction > 0.7  # not the 0.335 of the default 512-batch graph reserve
    # DeepEP across the two nodes, as the multi-node strategies run EP over InfiniBand
    assert (f["--moe-a2a-backend"], f["--deepep-mode"]) == ("deepep", "auto")


def test_the_default_decode_batch_would_shrink_a_dp_16_pool_to_a_third() -> None:
    from engine.engines.memory import Split
    from engine.hardware.gpus import lookup_gpu

    sg = adapter("sglang")
    gpu = lookup_gpu("H100")
    default, _ = sg.default_fraction(gpu, Split(1, 16), chunk_tokens=8192, mla=True, vision=None)
    sized, _ = sg.default_fraction(
        gpu, Split(1, 16), chunk_tokens=8192, mla=True, vision=None, decode_graph_bs=16
    )
    assert default == pytest.approx(0.335, abs=0.002)
    assert sized > 0.78


def test_deepseek_r1_on_8_h200_at_512_users_with_sglang_runs_dp_attention_8() -> None:
    st = run("deepseek-ai/DeepSeek-R1", engine="sglang", gpu="H200", gpus_per_node=8, users=512)
    s = st.layout.split
    assert (st.layout.replicas, s.tp, s.dp) == (1, 1, 8)  # EP or sliced: the speed decides
    assert st.plan is not None and flags(st.plan)["--cuda-graph-max-bs-decode"] == "64"


def test_sglang_never_offers_pipeline_stages_with_dp_attention() -> None:
    st = _v3_two_h100_nodes()
    assert not any(c.layout.split.pp > 1 and c.layout.split.dp > 1 for c in st.search.candidates)
    assert any("#9805" in say(r.why) for r in st.search.rejected if "PP 2" in r.layout.describe())


def test_attn_dp_size_says_which_release_added_it_and_the_older_spelling() -> None:
    p = _v3_two_h100_nodes().plan
    assert p is not None
    why = next(f for f in p.flags if f.flag == "--attn-dp-size").reason
    assert "#41818" in why and "--dp-size 16 --enable-dp-attention" in why


# --- the recipes' known issues -------------------------------------------------------------------


def test_gpt_oss_120b_on_one_h100_carries_the_recipes_fix() -> None:
    st = run("openai/gpt-oss-120b", engine="vllm", gpu="H100", gpus_per_node=1)
    p = st.plan
    assert p is not None
    f = flags(p)
    assert f["--gpu-memory-utilization"] == "0.95"
    assert f["--max-num-batched-tokens"] == "1024"
    assert st.fit.fraction == 0.95 and st.fit.chunk_tokens == 1024
    # the reason cites the recipe's Known Limitations (listed under the reasons, as every source)
    cited = " ".join(
        sources([next(x.why for x in p.flags if x.flag == "--gpu-memory-utilization")])
    )
    assert "GPT-OSS.md" in cited and "Known Limitations" in cited


@pytest.mark.parametrize(
    ("model", "gpu", "n"),
    [("openai/gpt-oss-120b", "H200", 1), ("openai/gpt-oss-20b", "H100", 1)],
)
def test_the_fix_applies_only_where_its_condition_holds(model: str, gpu: str, n: int) -> None:
    st = run(model, engine="vllm", gpu=gpu, gpus_per_node=n)
    assert st.fit.fixes == ()
    assert st.plan is not None and "--gpu-memory-utilization" not in flags(st.plan)


def test_the_known_issue_condition_reads_the_config_not_the_name() -> None:
    # a fine-tune of the same shape under another repository name carries the same fix
    from engine.model.loader import MODELS_DIR

    cfg = json.loads((MODELS_DIR / "openai__gpt-oss-120b.json").read_text())
    st = run(cfg, engine="vllm", gpu="H100", gpus_per_node=1)
    assert [f.id for f in st.fit.fixes] == ["gpt-oss-tp1-hopper-80gb-oom"]


# --- multi-node plumbing -------------------------------------------------------------------------


def _vllm_two_nodes() -> Study:
    return run(
        "deepseek-ai/DeepSeek-V3",
        engine="vllm",
        gpu="H200",
        gpus_per_node=8,
        nodes=2,
        users=512,
        context=16384,
        tp=1,
        dp=16,
        ep=True,  # the layout the plumbing is for (the Kimi-K2 recipe's DP 16 + EP)
    )


def test_a_2_node_vllm_dp_ep_plan_carries_the_nic_variables_and_the_all_to_all_backend() -> None:
    st = _vllm_two_nodes()
    s = st.layout.split
    assert s.dp * s.tp == 16 and s.ep
    p = st.plan
    assert p is not None
    env = {e.name: e.value for e in p.env}
    assert env["GLOO_SOCKET_IFNAME"] == env["NCCL_SOCKET_IFNAME"] == "${IFACE_NAME}"
    f = flags(p)
    assert f["--all2all-backend"] == "deepep_low_latency"
    assert "--data-parallel-hybrid-lb" in f
    assert f["--gpu-memory-utilization"] == "0.85"  # the Kimi-K2 DP16 + EP recipe
    worker = next(c for c in p.commands if c.role == "worker")
    assert "--headless" not in worker.argv and worker.port == p.port  # each node serves its API
    assert worker.argv[worker.argv.index("--data-parallel-start-rank") + 1] == "8"
    text = script(p)
    assert ': "${IFACE_NAME:?' in text
    assert 'export GLOO_SOCKET_IFNAME="${IFACE_NAME}"' in text
    assert any("load balancer" in n for n in p.notes)


def test_ep_inside_a_node_keeps_the_default_all_to_all() -> None:
    st = run("deepseek-ai/DeepSeek-V3", engine="vllm", gpu="H200", gpus_per_node=8, users=512)
    assert st.plan is not None and "--all2all-backend" not in flags(st.plan)
    assert not [e for e in st.plan.env if e.name.endswith("SOCKET_IFNAME")]


def test_several_processes_per_node_say_they_need_a_load_balancer() -> None:
    st = run("Qwen/Qwen3-30B-A3B", engine="vllm", gpu="H200", gpus_per_node=8, users=16)
    p = st.plan
    assert p is not None and len({c.port for c in p.commands}) > 1
    assert any("load balancer" in n and "8000" in n for n in p.notes)


# --- small items ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "engine", "template"),
    [
        ("deepseek-ai/DeepSeek-V3", "vllm", "examples/tool_chat_template_deepseekv3.jinja"),
        ("deepseek-ai/DeepSeek-R1", "vllm", "examples/tool_chat_template_deepseekr1.jinja"),
        (
            "deepseek-ai/DeepSeek-V3",
            "sglang",
            "examples/chat_template/tool_chat_template_deepseekv3.jinja",
        ),
        (
            "deepseek-ai/DeepSeek-R1",
            "sglang",
            "examples/chat_template/tool_chat_template_deepseekr1.jinja",
        ),
    ],
)
def test_the_deepseek_tool_chat_template_goes_into_the_command(
    model: str, engine: str, template: str
) -> None:
    st = run(model, engine=engine, gpu="H200", gpus_per_node=8)
    assert st.plan is not None and flags(st.plan)["--chat-template"] == template


def test_sglang_does_not_justify_remote_code_with_the_vllm_recipe() -> None:
    st = run("moonshotai/Kimi-K2-Instruct", engine="sglang", gpu="H200", gpus_per_node=8)
    assert st.plan is not None
    why = next(f.reason for f in st.plan.flags if f.flag == "--trust-remote-code")
    assert "vLLM" not in why


def test_english_output_carries_no_korean() -> None:
    for path in DATA_DIR.rglob("*.yaml"):
        if "i18n" not in path.parts:
            assert not HANGUL.search(path.read_text(encoding="utf-8")), path
    for model in ("deepseek-ai/DeepSeek-V3", "zai-org/GLM-5", "Qwen/Qwen3-32B"):
        st = run(model, gpu="H200", gpus_per_node=8, users=256)
        assert not HANGUL.search(json.dumps(study_json(st), ensure_ascii=False)), model
        assert st.plan is not None and not HANGUL.search(script(st.plan)), model


# Codes whose text is a quote of the recipe or the software table (a citation, not prose).
QUOTED = ("flag.software", "flag.recipe", "env.recipe")


@pytest.mark.parametrize(
    ("model", "engine"),
    [("deepseek-ai/DeepSeek-V3.2", "vllm"), ("Qwen/Qwen3-Next-80B-A3B-Thinking", "sglang")],
)
def test_every_flag_and_left_out_flag_is_worded_in_korean_too(model: str, engine: str) -> None:
    st = run(model, engine=engine, gpu="H200", gpus_per_node=8, users=256)
    p = st.plan
    assert p is not None
    for why in [f.why for f in p.flags] + [x.why for x in p.left_to_engine]:
        if why.code in QUOTED:
            continue
        ko, en = say(why, "ko"), say(why, "en")
        assert ko != en and HANGUL.search(ko), why.code


def test_the_plan_json_keeps_its_keys_and_adds_the_codes() -> None:
    p = _vllm_two_nodes().plan
    assert p is not None
    out = plan_json(p)
    for f in out["flags"]:
        assert {"flag", "value", "reason", "code", "params"} <= set(f)
    for x in out["left_to_engine"]:
        assert {"flag", "reason", "code"} <= set(x)
    for e in out["env"]:
        assert {"name", "value", "reason", "code"} <= set(e)


def test_a_pinned_dp_attention_fraction_reserves_each_ranks_share_of_the_prefill_chunk() -> None:
    """SGLang divides --chunked-prefill-size by the DP size under DP-attention, so a rank's
    activations are those of chunk // dp tokens: the fraction the plan pins reserves those
    (16,384 over 16 ranks: the 2,048-token floor, as for any chunk of 2,048 or less), and it
    stays within the 0.9 the official commands run at."""
    from engine.engines.memory import Split
    from engine.hardware.gpus import lookup_gpu

    sg = adapter("sglang")
    gpu = lookup_gpu("H100")
    split = Split(1, 16)
    big, _ = sg.default_fraction(gpu, split, chunk_tokens=16384, mla=True, vision=None,
                                 decode_graph_bs=16)  # fmt: skip
    small, _ = sg.default_fraction(gpu, split, chunk_tokens=2048, mla=True, vision=None,
                                   decode_graph_bs=16)  # fmt: skip
    assert big == small <= 0.9
    unpinned, _ = sg.default_fraction(gpu, split, chunk_tokens=16384, mla=True, vision=None)
    assert unpinned < big  # SGLang's own default reserves the whole budget
    h200 = lookup_gpu("H200")
    capped, why = sg.default_fraction(h200, Split(1, 8), chunk_tokens=8192, mla=True,
                                      vision=None, decode_graph_bs=8)  # fmt: skip
    assert capped == 0.9 and why.code == "memory.fraction.sglang_capped"
