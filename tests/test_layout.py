"""The layout search: the playbook's parallelism calls, derived from the config and the workload
(seed 004: GQA replicates, TP size from latency, MLA/DSA DP-attention at high concurrency)."""

from __future__ import annotations

import pytest

from engine.errors import InputError
from engine.launch.layout import REJECT_DENSE_DP, REJECT_HEADS, Split, split_problem
from engine.model.architecture import build_architecture
from engine.model.config import normalize
from engine.model.family import classify
from engine.model.loader import load_model
from tests.study_util import run


def test_a_small_dense_model_replicates_when_the_load_saturates_one_copy() -> None:
    # 512 users: each GPU is busy on its own copy; TP would only add all-reduces
    st = run("meta-llama/Meta-Llama-3.1-8B", gpus_per_node=8, users=512, context=8192,
             latency="throughput")  # fmt: skip
    assert st.layout.dp == 1 and not st.layout.ep
    assert st.layout.tp == 1 and st.layout.replicas == 8


def test_latency_first_gives_a_dense_model_the_largest_tp_in_a_node() -> None:
    st = run("Qwen/Qwen3-32B", gpus_per_node=8, users=32, latency="latency")
    assert st.layout.tp == 8 and st.layout.replicas == 1


def test_at_low_load_tp_gives_more_tokens_per_gpu_than_replicas() -> None:
    # 8 users: decode streams the weights once per step whatever the batch, so one TP 8 copy
    # reads an eighth of them per GPU where 4 copies of TP 2 each read a half for 2 users
    st = run("meta-llama/Llama-3.1-70B-Instruct", gpu="H200", gpus_per_node=8, users=8)
    assert st.layout.tp == 8 and st.layout.replicas == 1
    said = next(r for r in st.search.reasons if r.code == "layout.vs.speed.throughput")
    rival = next(c for c in st.search.candidates if c.layout.name() == said["rival"])
    assert st.fit.speed and rival.speed
    assert st.fit.speed.output_tokens_per_s_per_gpu > 1.15 * rival.speed.output_tokens_per_s_per_gpu


def test_every_tp_the_search_offers_divides_the_heads() -> None:
    st = run("tiiuae/falcon-7b-instruct", gpu="L40S", gpus_per_node=8)
    for c in st.search.candidates:
        assert 71 % c.layout.tp == 0
    assert REJECT_HEADS(tp=2, heads=71) in [r.why for r in st.search.rejected]


def test_mla_moe_at_low_concurrency_is_tp_plus_ep() -> None:
    st = run("deepseek-ai/DeepSeek-V3", gpus_per_node=8, users=16, context=8192)
    assert (st.layout.tp, st.layout.dp) == (8, 1)
    # both shapes fit every user: the speed, or the playbook's TP + EP below 128 users, decides
    # (EP's busiest rank at 16 users reads more experts than a slice of each: engine.perf.balance)
    codes = [r.code for r in st.search.reasons]
    assert {"layout.vs.speed.throughput", "layout.vs.style.tp_ep"} & set(codes)


def test_mla_moe_whose_users_do_not_fit_at_tp_takes_dp_attention_for_the_memory() -> None:
    # 64 users of 32K do not fit the replicated latent at TP 8; DP-attention holds more
    st = run("deepseek-ai/DeepSeek-V3", gpus_per_node=8, users=64)
    assert st.layout.dp > 1 and st.fit.users >= 64
    tp8 = run("deepseek-ai/DeepSeek-V3", gpus_per_node=8, users=64, tp=8, dp=1)
    assert tp8.fit.users < 64 <= st.fit.users or st.fit.users > tp8.fit.users


def test_mla_moe_at_high_concurrency_uses_dp_attention_to_stop_latent_replication() -> None:
    st = run("deepseek-ai/DeepSeek-V3", gpus_per_node=8, users=512)
    assert (st.layout.tp, st.layout.dp) == (1, 8)  # EP or the experts sliced: the speed decides
    # the latent is stored once per request, not on every rank: more users fit than at TP 8
    tp8 = run("deepseek-ai/DeepSeek-V3", gpus_per_node=8, users=512, tp=8, dp=1)
    assert st.fit.users > tp8.fit.users


def test_latency_priority_keeps_dsa_tensor_parallel_while_the_users_fit() -> None:
    st = run(
        "deepseek-ai/DeepSeek-V3.2", gpus_per_node=8, users=32, latency="latency", context=8192
    )
    assert st.layout.dp == 1 and st.layout.tp == 8
    balanced = run("deepseek-ai/DeepSeek-V3.2", gpus_per_node=8, users=32, context=8192)
    # DSA's kernels are built for DP-attention at TP 1-2 (SGLang and vLLM docs)
    assert balanced.layout.dp > 1 and balanced.layout.tp <= 2


def test_a_copy_stays_inside_one_node_unless_it_cannot_fit_there() -> None:
    fits = run("Qwen/Qwen3-235B-A22B", gpus_per_node=8, nodes=2)
    assert fits.layout.split.gpus <= 8 and fits.layout.replicas >= 2
    spans = run("deepseek-ai/DeepSeek-V3", gpu="H100", gpus_per_node=8, nodes=2)
    assert spans.layout.split.gpus == 16 and spans.layout.replicas == 1


def test_dp_attention_is_refused_for_a_dense_model() -> None:
    cfg = load_model("Qwen/Qwen3-32B").config
    arch = build_architecture(cfg)
    problem = split_problem(cfg, arch, classify(cfg, arch), Split(tp=1, dp=8))
    assert problem == REJECT_DENSE_DP()


def test_fp8_block_quantization_limits_the_tp_that_slices_experts() -> None:
    cfg = load_model("deepseek-ai/DeepSeek-V3").config  # FP8 blocks of 128, moe_intermediate 2048
    arch = build_architecture(cfg)
    fam = classify(cfg, arch)
    # 2048 / 32 ranks = 64 columns per rank, half a block; expert parallelism keeps experts whole
    assert split_problem(cfg, arch, fam, Split(tp=16, dp=2)) is not None
    assert split_problem(cfg, arch, fam, Split(tp=16, dp=2, ep=True)) is None


def test_fp8_blocks_bind_a_merged_gate_up_even_at_tp1_but_an_unmerged_ffn_only_when_split() -> None:
    block_fp8 = {"quant_method": "fp8", "weight_block_size": [128, 128]}
    # vLLM validate_fp8_block_shape: merged (gate + up) outputs are checked at any TP
    gated = {**load_model("meta-llama/Meta-Llama-3.1-8B").config.raw}
    gated.update(intermediate_size=14400, quantization_config=block_fp8)  # 14,400 = 112.5 blocks
    cfg = normalize(gated)
    arch = build_architecture(cfg)
    assert split_problem(cfg, arch, classify(cfg, arch), Split(tp=1)) is not None
    # Nemotron-H's relu² FFN has no merged projection: only a TP split must be whole blocks
    plain = {**load_model("nvidia/Nemotron-H-56B-Base-8K").config.raw}
    plain.update(intermediate_size=32832, quantization_config=block_fp8)  # 256.5 blocks
    cfg = normalize(plain)
    arch = build_architecture(cfg)
    fam = classify(cfg, arch)
    assert split_problem(cfg, arch, fam, Split(tp=1)) is None
    assert split_problem(cfg, arch, fam, Split(tp=2)) is not None


def test_a_pinned_layout_that_cannot_run_names_the_field() -> None:
    with pytest.raises(InputError, match=r"^tp: "):
        run("Qwen/Qwen3-32B", gpus_per_node=8, tp=3)
    with pytest.raises(InputError, match=r"^tp: "):
        run("Qwen/Qwen3-32B", gpus_per_node=8, tp=8, dp=2)


def test_the_candidates_are_ranked_with_the_pick_first_and_reasons_for_the_rest() -> None:
    st = run("deepseek-ai/DeepSeek-V3", gpus_per_node=8, users=256)
    assert st.search.candidates[0] is st.fit
    keys = [c.rank_key for c in st.search.candidates]
    assert keys == sorted(keys)
    assert all(c.why for c in st.search.candidates if not c.users_fit)


def test_a_pinned_tp_3_on_8_gpus_names_the_128_heads_and_the_8_gpus() -> None:
    with pytest.raises(InputError) as err:
        run("deepseek-ai/DeepSeek-V3", gpu="H200", gpus_per_node=8, tp=3)
    why = err.value.why
    assert why is not None and why.code == "layout.reject.both"
    shape, gpus = dict(why.params)["a"], dict(why.params)["b"]
    assert shape.code == REJECT_HEADS.code and dict(shape.params) == {"tp": 3, "heads": 128}
    assert gpus.code == "layout.reject.gpus" and dict(gpus.params)["gpus"] == 8


def test_a_pinned_tp_that_divides_the_heads_but_not_the_gpus_names_only_the_gpus() -> None:
    with pytest.raises(InputError) as err:
        run("meta-llama/Llama-3.1-70B-Instruct", gpu="H100", gpus_per_node=6, tp=4)
    assert err.value.why is not None and err.value.why.code == "layout.reject.gpus"
