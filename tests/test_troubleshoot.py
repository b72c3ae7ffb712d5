"""Symptom → cause ranking depends on the model's family and the GPU."""

from __future__ import annotations

import re

import pytest

from engine.errors import InputError
from engine.hardware.gpus import lookup_gpu
from engine.lint import ModelFacts, ParserNames
from engine.software.tables import flag_table
from engine.troubleshoot import SYMPTOMS, troubleshoot

GLM5 = ModelFacts(
    architecture="GlmMoeDsaForCausalLM",
    attention_family="DSA",
    moe=True,
    num_attention_heads=64,
    num_kv_heads=64,
    max_position_embeddings=202752,
    num_experts=256,
    has_tool_parser_need=True,
    has_reasoning_parser_need=True,
    tool_call_parser=ParserNames("glm47", "glm47"),
    reasoning_parser=ParserNames("glm45", "glm45"),
)
QWEN3_32B = ModelFacts("Qwen3ForCausalLM", "GQA", False, 64, 8, 40960)
DSV3 = ModelFacts("DeepseekV3ForCausalLM", "MLA", True, 128, 128, 163840, num_experts=256)
QWEN3_NEXT = ModelFacts(
    "Qwen3NextForCausalLM", "HYBRID", True, 16, 2, 262144, num_experts=512,
    attention_block_tokens=544,
)  # fmt: skip
BASE_MODEL = ModelFacts("LlamaForCausalLM", "GQA", False, 32, 8, 4096)

REQUIRED = {
    "no-tool-calls",
    "thinking-leaks",
    "memory-fills-fast",
    "slow-ttft-shared-prefix",
    "outputs-change-with-prefix-cache",
    "no-valid-attention-backend",
    "moe-one-gpu-busy",
    "hybrid-prefix-hits-zero",
}


def ids(symptom: str, facts: ModelFacts, gpu: str | None = None) -> list[str]:
    return [c.id for c in troubleshoot(symptom, facts, lookup_gpu(gpu) if gpu else None)]


def test_symptoms_cover_the_playbooks_list_with_unique_ids() -> None:
    symptom_ids = [s.id for s in SYMPTOMS]
    assert len(set(symptom_ids)) == len(symptom_ids)
    assert set(symptom_ids) >= REQUIRED
    assert all(s.label for s in SYMPTOMS)


@pytest.mark.parametrize("symptom", [s.id for s in SYMPTOMS])
@pytest.mark.parametrize("facts", [GLM5, QWEN3_32B, DSV3, QWEN3_NEXT])
def test_every_cause_has_mechanism_check_fix_source_and_is_ranked(
    symptom: str, facts: ModelFacts
) -> None:
    causes = troubleshoot(symptom, facts, lookup_gpu("H200"))
    assert len(causes) >= 3
    assert [c.score for c in causes] == sorted((c.score for c in causes), reverse=True)
    for c in causes:
        assert c.why and c.check and c.fixes and c.score_reasons and c.source
        assert 0 <= c.score <= 1


def test_every_flag_a_fix_names_exists_in_vllm_or_sglang() -> None:
    known = set(flag_table("vllm")) | set(flag_table("sglang"))
    for s in SYMPTOMS:
        for facts in (GLM5, QWEN3_32B, DSV3, QWEN3_NEXT, BASE_MODEL):
            for cause in troubleshoot(s.id, facts, None):
                for fix in cause.fixes:
                    for flag in re.findall(r"`(--[a-z0-9-]+)", fix):
                        assert flag in known or flag == "--enable-moe-ep", (cause.id, flag)


def test_symptom_by_label_and_unknown_symptom() -> None:
    assert troubleshoot("The model never calls tools", GLM5, None)[0].id == "tool-parser-missing"
    with pytest.raises(InputError) as err:
        troubleshoot("gpu on fire", GLM5, None)
    assert err.value.field == "symptom"


# --- ranking depends on the model and the GPU -----------------------------------------------


def test_dsa_model_on_rtx_4090_crashes_for_missing_dsa_kernels_first() -> None:
    order = ids("no-valid-attention-backend", GLM5, "RTX 4090")
    assert order[0] == "dsa-no-kernel"


def test_dense_gqa_model_on_rtx_4090_suspects_a_pinned_backend_not_dsa() -> None:
    order = ids("no-valid-attention-backend", QWEN3_32B, "RTX 4090")
    assert order[0] == "forced-backend"
    assert order[-1] == "dsa-no-kernel"


def test_dsa_model_on_rtx_5090_suspects_sm100_kernels_first() -> None:
    order = ids("no-valid-attention-backend", GLM5, "RTX 5090")
    assert order[:2] == ["sm100-kernels-on-sm120", "dsa-no-kernel"]


def test_mla_with_fp8_kv_on_rtx_pro_6000() -> None:
    order = ids("no-valid-attention-backend", DSV3, "RTX PRO 6000")
    assert order[:2] == ["sm100-kernels-on-sm120", "mla-fp8-kv-on-triton"]


def test_memory_fills_fast_moe_mla_vs_dense_gqa() -> None:
    assert ids("memory-fills-fast", DSV3, "H200")[:2] == ["moe-without-ep", "mla-latent-replicated"]
    dense = ids("memory-fills-fast", QWEN3_32B, "H200")
    assert dense[0] == "kv-per-token-large"
    assert set(dense[-4:]) == {
        "moe-without-ep",
        "mla-latent-replicated",
        "hybrid-state-slots",
        "dsa-bf16-kv-on-hopper",
    }


def test_dsa_on_hopper_bf16_kv_outranks_it_on_blackwell() -> None:
    def rank(gpu: str) -> int:
        return ids("memory-fills-fast", GLM5, gpu).index("dsa-bf16-kv-on-hopper")

    assert rank("H200") < rank("B200")


def test_outputs_change_hybrid_is_not_bit_identical_dense_is_batch_order() -> None:
    assert ids("outputs-change-with-prefix-cache", QWEN3_NEXT)[0] == "hybrid-not-bit-identical"
    assert ids("outputs-change-with-prefix-cache", QWEN3_32B)[0] == "batch-nondeterminism"


def test_hybrid_zero_hits_prompts_shorter_than_one_block() -> None:
    causes = troubleshoot("hybrid-prefix-hits-zero", QWEN3_NEXT, None)
    assert causes[0].id == "prompts-shorter-than-block"
    assert "544 tokens" in causes[0].why
    assert ids("hybrid-prefix-hits-zero", QWEN3_32B)[0] == "not-hybrid"


def test_ttft_shared_prefix_hybrid_block_vs_replica_routing() -> None:
    assert ids("slow-ttft-shared-prefix", QWEN3_NEXT)[0] == "prefix-shorter-than-block"
    assert ids("slow-ttft-shared-prefix", QWEN3_32B)[0] == "replicas-without-cache-aware-routing"


def test_one_gpu_busy_moe_is_expert_imbalance_with_eplb_fix() -> None:
    causes = troubleshoot("moe-one-gpu-busy", DSV3, None)
    assert causes[0].id == "expert-load-imbalance"
    assert "7.2×" in causes[0].why
    assert any("--ep-num-redundant-experts 32" in fix for fix in causes[0].fixes)
    assert ids("moe-one-gpu-busy", QWEN3_32B)[0] == "dense-uneven-routing"


def test_no_tool_calls_names_the_familys_parser() -> None:
    causes = troubleshoot("no-tool-calls", GLM5, None)
    assert causes[0].id == "tool-parser-missing"
    assert "--tool-call-parser glm47" in causes[0].fixes[0]
    assert ids("no-tool-calls", BASE_MODEL)[0] == "not-a-tool-model"


def test_thinking_leaks_names_the_reasoning_parser() -> None:
    causes = troubleshoot("thinking-leaks", GLM5, None)
    assert causes[0].id == "reasoning-parser-missing"
    assert "--reasoning-parser glm45" in causes[0].fixes[0]
