"""Plans an expert signs, round 3: the newest architectures' mandatory recipe arguments (and the
KV the engine then stores), GB200 racks as one NVLink domain, SGLang on 24 GB cards, and a linter
that never removes what a recipe requires."""

from __future__ import annotations

import math

import pytest

from engine.launch.plan import LaunchPlan
from engine.lint import lint_command
from engine.model.loader import load_catalog
from engine.study import Study
from engine.text.words import sources
from tests.study_util import run


def flags(p: LaunchPlan | None) -> dict[str, str | None]:
    assert p is not None
    return {f.flag: f.value for f in p.flags}


def _v4_flash_on_4_b200() -> Study:
    return run("deepseek-ai/DeepSeek-V4-Flash", engine="vllm", gpu="B200", gpus_per_node=4)


def _v4_pro_on_2x4_gb200() -> Study:
    return run("deepseek-ai/DeepSeek-V4-Pro", engine="vllm", gpu="GB200", gpus_per_node=4, nodes=2)


# --- DeepSeek-V4: the recipe's base arguments and the KV it stores ------------------------------


@pytest.mark.parametrize("case", [_v4_flash_on_4_b200, _v4_pro_on_2x4_gb200])
def test_deepseek_v4_plans_carry_the_recipes_base_arguments(case: object) -> None:
    st = case()  # type: ignore[operator]
    f = flags(st.plan)
    assert "--trust-remote-code" in f
    assert f["--kv-cache-dtype"] == "fp8"
    assert f["--block-size"] == "256"
    # Blackwell: the FP4 indexer cache of the recipe's hardware override
    assert f["--attention_config.use_fp4_indexer_cache"] == "True"
    assert st.plan is not None and st.plan.runnable


def test_deepseek_v4_kv_is_sized_in_the_packed_fp8_row_vllm_stores() -> None:
    st = _v4_flash_on_4_b200()
    kv = st.kv
    assert kv.kv_dtype.stored == "fp8_ds_mla" and kv.kv_dtype.mla_packed_bytes == 584
    assert kv.block_size == 256
    cfg = st.config
    ratios = (cfg.compress_ratios or [])[: cfg.num_hidden_layers]
    n4, n128 = ratios.count(4), ratios.count(128)
    # 448 fp8 NoPE + 64 bf16 RoPE (128 B) + 7 scale bytes + 1 pad; indexer keys 128 + 4
    row, keys = 448 + 128 + 7 + 1, 128 + 4
    want = n4 * (row + keys) / 4 + n128 * row / 128
    assert kv.growing_bytes_per_token == math.ceil(want)
    ctx = 32_768
    expected = cfg.num_hidden_layers * 128 * row + n4 * (ctx // 4) * (row + keys)
    expected += n128 * (ctx // 128) * row
    assert kv.kv_bytes_at(ctx) == expected


def test_the_fp8_kv_holds_about_twice_the_users_of_the_bf16_sizing() -> None:
    # the plan showed 1,108 users when the KV was sized in bf16, which vLLM refuses for V4
    fp8 = _v4_flash_on_4_b200()
    bf16 = run(
        "deepseek-ai/DeepSeek-V4-Flash", engine="vllm", gpu="B200", gpus_per_node=4, kv_dtype="bf16"
    )
    assert fp8.layout == bf16.layout
    assert fp8.fit.users >= 1.7 * bf16.fit.users


def test_v4_pro_on_two_gb200_trays_is_one_nvlink_domain() -> None:
    st = _v4_pro_on_2x4_gb200()
    p = st.plan
    assert p is not None and p.nodes_per_copy == 2 and p.multi_node_nvlink
    assert not p.deepep_over_network
    env = {e.name: e.value for e in p.env}
    assert env["NCCL_MNNVL_ENABLE"] == "1" and env["NCCL_CUMEM_ENABLE"] == "1"
    f = flags(p)
    # no DeepEP over InfiniBand; an EP group over the trays takes the NVLink all-to-all
    assert not (f.get("--all2all-backend") or "").startswith("deepep")
    ep = run(
        "deepseek-ai/DeepSeek-V4-Pro",
        engine="vllm",
        gpu="GB200",
        gpus_per_node=4,
        nodes=2,
        tp=1,
        dp=8,
        ep=True,
    ).plan
    assert flags(ep)["--all2all-backend"] == "flashinfer_nvlink_one_sided"
    # the speed model's collectives stay on NVLink: 8 GPUs of a 72-GPU domain
    assert st.gpu.node_gpus == 72 and st.gpu.tray_gpus == 4


def test_two_h200_nodes_stay_nodes_joined_by_a_network() -> None:
    p = run(
        "deepseek-ai/DeepSeek-V3",
        engine="vllm",
        gpu="H200",
        gpus_per_node=8,
        nodes=2,
        users=512,
        context=16384,
        tp=1,
        dp=16,
        ep=True,
    ).plan
    assert p is not None and not p.multi_node_nvlink and p.deepep_over_network
    assert flags(p)["--all2all-backend"].startswith("deepep")
    assert "NCCL_MNNVL_ENABLE" not in {e.name for e in p.env}


# --- MiniMax-M3 ----------------------------------------------------------------------------------


def test_minimax_m3_carries_the_msa_block_size() -> None:
    st = run("MiniMaxAI/MiniMax-M3", engine="vllm", gpu="H200", gpus_per_node=8)
    assert flags(st.plan)["--block-size"] == "128"
    assert st.kv.block_size == 128


# --- the linter keeps what a recipe requires ----------------------------------------------------

V4_RECIPE = (
    "vllm serve deepseek-ai/DeepSeek-V4-Flash --trust-remote-code --kv-cache-dtype fp8 "
    "--block-size 256 --data-parallel-size 4 --enable-expert-parallel "
    "--attention_config.use_fp4_indexer_cache True --moe-backend deep_gemm_mega_moe "
    "--tokenizer-mode deepseek_v4 --tool-call-parser deepseek_v4 --enable-auto-tool-choice "
    "--reasoning-parser deepseek_v4"
)


def _problems(text: str, model: str, gpu: str, n: int) -> list[str]:
    report = lint_command(text, load_catalog(model), gpu, n)
    return [f.code for f in report.findings if f.severity != "info"]


def test_the_v4_recipe_command_lints_clean_and_keeps_its_block_size() -> None:
    report = lint_command(V4_RECIPE, load_catalog("deepseek-ai/DeepSeek-V4-Flash"), "B200", 4)
    assert [f for f in report.findings if f.severity != "info"] == []
    assert "--block-size 256" in report.corrected


def test_a_v4_command_without_the_base_arguments_is_warned_and_corrected() -> None:
    bare = "vllm serve deepseek-ai/DeepSeek-V4-Flash --data-parallel-size 4 --block-size 64"
    report = lint_command(bare, load_catalog("deepseek-ai/DeepSeek-V4-Flash"), "B200", 4)
    required = [f for f in report.findings if f.code == "recipe-required"]
    assert {f.flag for f in required} == {"--trust-remote-code", "--kv-cache-dtype", "--block-size"}
    assert all(f.severity == "warning" for f in required)
    for words in ("--trust-remote-code", "--kv-cache-dtype fp8", "--block-size 256"):
        assert words in report.corrected
    assert "--block-size 64" not in report.corrected


def test_minimax_m3_without_its_block_size_is_warned_with_it_kept_once_written() -> None:
    m3 = "MiniMaxAI/MiniMax-M3"
    cmd = f"vllm serve {m3} --tensor-parallel-size 8 --enable-expert-parallel"
    assert "recipe-required" in _problems(cmd, m3, "H200", 8)
    fixed = lint_command(cmd, load_catalog(m3), "H200", 8).corrected
    assert "--block-size 128" in fixed
    assert _problems(fixed, m3, "H200", 8) == []


# --- SGLang on a 24 GB card: the chunk and the memory fraction chosen together -----------------


@pytest.mark.parametrize("model", ["Qwen/Qwen3-8B", "Qwen/Qwen2.5-VL-7B-Instruct"])
def test_sglang_on_one_rtx_4090_is_runnable(model: str) -> None:
    st = run(model, engine="sglang", gpu="RTX 4090", gpus_per_node=1)
    p = st.plan
    assert p is not None and p.runnable and st.verdict.runs
    assert st.fit.weights_fit and st.fit.context_fits and st.fit.users >= 1
    # the plan's own chunk no longer shrinks SGLang's fraction below the weights: the chunk it
    # writes is the one the fraction was computed from
    chunk = int(flags(p)["--chunked-prefill-size"] or 0)
    assert chunk == st.fit.chunk_tokens < 8192
    sg = st.engines["sglang"].fit
    assert sg is not None and sg.fraction * sg.memory_per_gpu > sg.weights_per_gpu
    at_asked = run(
        model, engine="sglang", gpu="RTX 4090", gpus_per_node=1, memory_fraction=0.451
    )  # the 0.451 SGLang computes at the 8,192-token chunk
    assert not at_asked.fit.weights_fit


def test_a_card_with_room_keeps_the_priority_chunk() -> None:
    st = run("Qwen/Qwen3-8B", engine="sglang", gpu="H100", gpus_per_node=1)
    assert flags(st.plan)["--chunked-prefill-size"] == "8192"


# --- a command without --max-model-len: what vLLM 0.33 does when the model's limit does not fit ---


def test_without_max_model_len_vllm_refuses_a_limit_that_does_not_fit() -> None:
    # vLLM takes the model's own limit and raises at start-up (kv_cache_utils.py
    # _check_enough_kv_cache_memory); the linter says so as an error for the model's own config
    scout = "meta-llama/Llama-4-Scout-17B-16E-Instruct"  # a 10,485,760-token limit
    cmd = f"vllm serve {scout} --tensor-parallel-size 8"
    codes = {f.code: f.severity for f in lint_command(cmd, load_catalog(scout), "H100", 8).findings}
    assert codes.get("context-default-does-not-fit") == "error"
    # --max-model-len auto lets vLLM fit the length itself: no such error
    auto = lint_command(cmd + " --max-model-len auto", load_catalog(scout), "H100", 8)
    assert "context-default-does-not-fit" not in {f.code for f in auto.findings}


def test_the_glm52_guide_command_on_8_h200_is_not_an_error() -> None:
    # GLM-5.2's own config.json is not at hand: GLM-5 stands in, and its limit (202,752) fits
    guide = (
        "vllm serve zai-org/GLM-5.2-FP8 --kv-cache-dtype fp8 --tensor-parallel-size 8 "
        "--speculative-config.method mtp --speculative-config.num_speculative_tokens 5 "
        "--tool-call-parser glm47 --reasoning-parser glm45 --enable-auto-tool-choice"
    )
    report = lint_command(guide, load_catalog("zai-org/GLM-5"), "H200", 8)
    assert not [f for f in report.findings if f.severity == "error"]


# --- SGLang: attention DP and --dp-size replicas are never one command ---------------------------


def test_sglang_never_combines_dp_size_replicas_with_attention_dp() -> None:
    # GLM-5-NVFP4 on 8 x B300: two copies of TP 2 x DP-attention 2 run as two servers on their
    # own GPUs (SGLang refuses --dp-size beside --attn-dp-size), not as one --dp-size 2 server
    import json

    from engine.rules import DATA_DIR

    cfg = json.loads((DATA_DIR / "models" / "zai-org__GLM-5.json").read_text())
    cfg["quantization_config"] = {"quant_method": "modelopt", "quant_algo": "NVFP4"}
    for users in (16, 256):
        st = run(cfg, engine="sglang", gpu="B300", gpus_per_node=8, users=users)
        p = st.plan
        assert p is not None
        for c in p.commands:
            words = list(c.argv)
            dp = int(words[words.index("--dp-size") + 1]) if "--dp-size" in words else 1
            attn = int(words[words.index("--attn-dp-size") + 1]) if "--attn-dp-size" in words else 1
            assert not (dp > 1 and attn > 1), words
        if st.layout.replicas > 1 and st.layout.split.dp > 1:
            assert len(p.commands) == st.layout.replicas
            assert {c.devices for c in p.commands} == {(0, 1, 2, 3), (4, 5, 6, 7)}


# --- draft heads the recipes name ----------------------------------------------------------------


def test_minimax_m3_drafts_with_the_recipes_eagle3_head_not_mtp() -> None:
    st = run("MiniMaxAI/MiniMax-M3", engine="vllm", gpu="H200", gpus_per_node=8, speculative=True)
    spec = flags(st.plan)["--speculative-config"] or ""
    assert '"method":"eagle3"' in spec and "Inferact/MiniMax-M3-EAGLE3" in spec
    assert '"attention_backend":"FLASH_ATTN"' in spec and '"mtp"' not in spec
    amd = run(
        "MiniMaxAI/MiniMax-M3", engine="vllm", gpu="MI355X", gpus_per_node=8, speculative=True
    )
    assert '"attention_backend":"TRITON_ATTN"' in (flags(amd.plan)["--speculative-config"] or "")


def test_gpt_oss_120b_latency_first_on_8_b200_is_tp_8_with_the_cookbooks_eagle3_head() -> None:
    st = run(
        "openai/gpt-oss-120b",
        engine="sglang",
        gpu="B200",
        gpus_per_node=8,
        latency="latency",
        users=1,
    )
    assert (st.layout.replicas, st.layout.tp) == (1, 8)
    f = flags(st.plan)
    assert f["--speculative-algorithm"] == "EAGLE3"
    assert f["--speculative-draft-model-path"] == "nvidia/gpt-oss-120b-Eagle3"
    assert (f["--speculative-num-steps"], f["--speculative-num-draft-tokens"]) == ("3", "4")
    env = {e.name: e.value for e in st.plan.env} if st.plan else {}
    assert env["SGLANG_ENABLE_SPEC_V2"] == "1"


# --- the recipes' smaller misses -----------------------------------------------------------------


def _env(st: Study) -> dict[str, str]:
    assert st.plan is not None
    return {e.name: e.value for e in st.plan.env}


@pytest.mark.parametrize(
    ("model", "gpu"),
    [("deepseek-ai/DeepSeek-R1", "MI300X"), ("moonshotai/Kimi-K2.5", "MI355X")],
)
def test_sglang_on_amd_turns_aiter_on(model: str, gpu: str) -> None:
    st = run(model, engine="sglang", gpu=gpu, gpus_per_node=8)
    assert _env(st)["SGLANG_USE_AITER"] == "1"


def test_mimo_v2_flash_drafts_with_the_mtp_layer_its_config_does_not_declare() -> None:
    st = run("XiaomiMiMo/MiMo-V2-Flash", engine="sglang", gpu="H200", gpus_per_node=4)
    assert st.family.mtp_layers == 1
    f = flags(st.plan) if st.mtp else {}
    if st.mtp:  # the speed model decides; when it drafts, it drafts as the cookbook does
        assert f["--speculative-algorithm"] == "EAGLE" and "--enable-multi-layer-eagle" in f
    pinned = run(
        "XiaomiMiMo/MiMo-V2-Flash", engine="sglang", gpu="H200", gpus_per_node=4, speculative=True
    )
    assert "--enable-multi-layer-eagle" in flags(pinned.plan)


def test_several_mtp_layers_draft_with_multi_layer_eagle() -> None:
    st = run("stepfun-ai/Step-3.7-Flash", engine="sglang", gpu="H200", speculative=True)
    assert st.family.mtp_layers == 3 and "--enable-multi-layer-eagle" in flags(st.plan)
    one = run("deepseek-ai/DeepSeek-V3", engine="sglang", gpu="H200", speculative=True)
    assert "--enable-multi-layer-eagle" not in flags(one.plan)


def test_deepseek_r1_on_hopper_uses_flashinfer_fp8_moe() -> None:
    assert _env(run("deepseek-ai/DeepSeek-R1", gpu="H200"))["VLLM_USE_FLASHINFER_MOE_FP8"] == "1"


def test_gpt_oss_on_rocm_keeps_every_compilation_key_of_its_recipe() -> None:
    f = flags(run("openai/gpt-oss-120b", gpu="MI355X", gpus_per_node=1).plan)
    assert f["-cc.use_inductor_graph_partition"] == "True"
    assert f["-cc.pass_config.fuse_rope_kvcache"] == "True"


def test_llama_4_scout_past_32k_tunes_the_attention_temperature() -> None:
    long = run("meta-llama/Llama-4-Scout-17B-16E-Instruct", gpu="H100", context=1_000_000, users=1)
    assert flags(long.plan)["--override-generation-config"] == '{"attn_temperature_tuning":true}'
    short = run("meta-llama/Llama-4-Scout-17B-16E-Instruct", gpu="H100", context=16_384)
    assert "--override-generation-config" not in flags(short.plan)


def test_nemotron_3_ultra_takes_its_own_recipe_before_the_nano_familys() -> None:
    st = run("nvidia/NVIDIA-Nemotron-3-Ultra-550B-A55B-BF16", gpu="B200", speculative=True)
    f = flags(st.plan)
    assert f["--speculative-config"] == '{"method":"mtp","num_speculative_tokens":5}'
    assert (f["--mamba-backend"], f["--mamba-ssm-cache-dtype"]) == ("triton", "float32")
    assert _env(st)["VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS"] == "1"
    assert st.plan is not None
    trust = next(x for x in st.plan.flags if x.flag == "--trust-remote-code")
    assert "Nemotron-3-Ultra" in " ".join(sources([trust.why]))  # its own recipe is cited


def test_kimi_k3_takes_its_own_recipes_hardware_overrides() -> None:
    rocm = _env(run("moonshotai/Kimi-K3", gpu="MI355X"))
    assert rocm["VLLM_USE_BREAKABLE_CUDAGRAPH"] == "0" and rocm["VLLM_ROCM_USE_AITER"] == "1"
    b300 = run("moonshotai/Kimi-K3", gpu="B300")
    assert flags(b300.plan)["--load-format"] == "fastsafetensors"
    assert _env(b300)["VLLM_USE_V2_MODEL_RUNNER"] == "1"


def test_mimo_v2_flash_kv_is_what_vllms_model_code_allocates_per_layer() -> None:
    # vLLM's mimo_v2_flash.py (MiMoV2FlashDecoderLayer) builds each SWA layer
    # (hybrid_layer_pattern 1) with swa_num_key_value_heads 8, swa_head_dim 192, swa_v_head_dim
    # 128 and each full layer with num_key_value_heads 4, head_dim 192, v_head_dim 128 (the
    # DiffKV backend keeps K and V at their own sizes): 9 x 4 x 320 x 2 + 39 x 8 x 320 x 2.
    # 147,456 is shared/engine-gt/vllm_kv_truth.py's figure: it gives every layer
    # ModelConfig.get_num_kv_heads (4) and get_head_size (192, V the same), 48 x 4 x 384 x 2,
    # the same gap tests/fixtures/SOURCES.md records for Gemma 4.
    from engine.diagnose import Options, diagnose
    from engine.model.loader import load_model

    d = diagnose(load_model("XiaomiMiMo/MiMo-V2-Flash").config, Options(kv_dtype="bf16"))
    assert d.kv.kv_bytes_per_token == 9 * 4 * 320 * 2 + 39 * 8 * 320 * 2 == 222_720
