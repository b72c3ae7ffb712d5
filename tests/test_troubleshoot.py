"""Symptom → cause ranking depends on the model's family and the GPU; the table, its scores
and its texts (English and Korean) hold together."""

from __future__ import annotations

import re

import pytest

from engine.engines import adapter
from engine.errors import InputError
from engine.gates import kernel_gates
from engine.hardware.gpus import Gpu, all_gpus, lookup_gpu
from engine.i18n import LANGS, Lang, catalog
from engine.lint import dsa_kernel_path
from engine.software.software_report import known_architectures
from engine.troubleshoot import SYMPTOMS, symptoms, troubleshoot
from engine.troubleshoot.cause_table import troubleshoot_table
from engine.troubleshoot.facts import ModelFacts, ParserNames
from engine.troubleshoot.scoring import CONDITIONS, SCORERS, clamp, problems

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
    known = set(adapter("vllm").flags) | set(adapter("sglang").flags)
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


def test_symptom_by_its_korean_label_and_unknown_language() -> None:
    korean = {s.id: s.label for s in symptoms("ko")}["no-tool-calls"]
    assert troubleshoot(korean, GLM5, None, "ko")[0].id == "tool-parser-missing"
    with pytest.raises(InputError) as err:
        troubleshoot("no-tool-calls", GLM5, None, "fr")
    assert err.value.field == "lang"


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


# --- the table, its scores and its texts ----------------------------------------------------

TABLE = troubleshoot_table()
ALL_FACTS = (GLM5, QWEN3_32B, DSV3, QWEN3_NEXT, BASE_MODEL)
SOME_GPUS: tuple[Gpu | None, ...] = (
    None,
    *(lookup_gpu(name) for name in ("H200", "B200", "RTX 4090", "RTX 5090", "A100 80GB", "MI300X")),
)
GLM5_WITHOUT_SGLANG_PARSER = ModelFacts(
    "GlmMoeDsaForCausalLM", "DSA", True, 64, 64, 202752, num_experts=256,
    has_tool_parser_need=True, tool_call_parser=ParserNames("glm47", None),
)  # fmt: skip
HANGUL = re.compile(r"[\uac00-\ud7a3]")
PLACEHOLDER = re.compile(r"\{\w+\}")


def fix_texts(lang: Lang) -> dict[tuple[str, str], list[str]]:
    """(cause, fix) -> the catalog texts of that fix and of its variants, unfilled."""
    texts = catalog(lang)
    out: dict[tuple[str, str], list[str]] = {}
    for cause in TABLE.causes:
        for fix in cause.fixes:
            keys = [fix.key, *cause.variants.get(fix.key, {}).values()]
            out[cause.id, fix.key] = [texts[f"troubleshoot.cause.{cause.id}.{k}"] for k in keys]
    return out


def test_the_table_names_only_scoring_functions_facts_and_conditions_that_exist() -> None:
    assert problems(TABLE) == []
    for cause in TABLE.causes:
        assert cause.rate in SCORERS, cause.id
        assert set(cause.adjust) <= set(SCORERS[cause.rate].facts), cause.id
        for alternatives in cause.variants.values():
            assert set(alternatives) <= set(CONDITIONS), cause.id


def test_every_cause_cites_a_readable_source() -> None:
    for cause in TABLE.causes:
        assert len(cause.source) > 10, cause.id
        assert "../" not in cause.source and "/work/" not in cause.source, cause.id
    for named in (*TABLE.generation_sets.values(), *TABLE.architecture_sets.values()):
        assert "../" not in named.source and "/work/" not in named.source


def test_every_text_of_every_cause_is_in_english_and_korean() -> None:
    for lang in LANGS:
        texts = catalog(lang)
        for symptom in TABLE.symptoms:
            assert f"troubleshoot.symptom.{symptom.id}" in texts, (lang, symptom.id)
        for cause in TABLE.causes:
            keys = [*cause.text_keys]
            keys += [k for alternatives in cause.variants.values() for k in alternatives.values()]
            for key in keys:
                assert f"troubleshoot.cause.{cause.id}.{key}" in texts, (lang, cause.id, key)
            for fact in cause.adjust:
                assert f"troubleshoot.fact.{fact}" in texts, (lang, fact)


def test_every_fix_flag_exists_in_its_engines_pinned_table() -> None:
    for cause in TABLE.causes:
        for fix in cause.fixes:
            for engine, flags in fix.flags.items():
                for flag in flags:
                    assert adapter(engine).lookup(flag) is not None, (cause.id, engine, flag)
                    assert flag in adapter(engine).flags, (
                        cause.id,
                        engine,
                        flag,
                    )  # no abbreviation


@pytest.mark.parametrize("lang", LANGS)
def test_the_flags_a_fix_text_names_are_the_flags_the_table_declares(lang: Lang) -> None:
    declared = {
        (cause.id, fix.key): {flag for flags in fix.flags.values() for flag in flags}
        for cause in TABLE.causes
        for fix in cause.fixes
    }
    for where, texts in fix_texts(lang).items():
        for text in texts:
            named = {
                flag
                for span in re.findall(r"`([^`]*)`", text)
                for flag in re.findall(r"(?<![\w-])--[a-z0-9][a-z0-9-]*", span)
            }
            assert named == declared[where], (lang, where)


def test_named_sets_hold_generations_and_architectures_the_catalogs_know() -> None:
    generations = {gpu.generation for gpu in all_gpus()}
    for named in TABLE.generation_sets.values():
        assert named.generations <= generations
    for named in TABLE.architecture_sets.values():
        assert named.architectures <= known_architectures()


@pytest.mark.parametrize("symptom", [s.id for s in SYMPTOMS])
def test_every_score_is_its_base_plus_the_facts_that_moved_it(symptom: str) -> None:
    for facts in ALL_FACTS:
        for gpu in SOME_GPUS:
            for cause in troubleshoot(symptom, facts, gpu):
                amounts = [amount for _, amount in cause.score_reasons]
                assert cause.score == clamp(sum(amounts)), cause.id
                assert 0 <= cause.score <= 1
                assert len(cause.score_reasons) == len(cause.facts) + 1
                assert all(amount != 0 for amount in amounts[1:])


def test_why_ranked_here_names_the_missing_dsa_kernels_on_ada_and_not_on_hopper() -> None:
    ada = {c.id: c for c in troubleshoot("no-valid-attention-backend", GLM5, lookup_gpu("4090"))}
    hopper = {c.id: c for c in troubleshoot("no-valid-attention-backend", GLM5, lookup_gpu("H200"))}
    assert ada["dsa-no-kernel"].facts == ("dsa", "dsa_kernels_missing")
    assert hopper["dsa-no-kernel"].facts == ("dsa", "dsa_kernels_native")
    assert ada["dsa-no-kernel"].score > hopper["dsa-no-kernel"].score
    assert "RTX 4090" in ada["dsa-no-kernel"].score_reasons[2][0]


def test_dsa_kernel_facts_follow_the_kernel_gates_for_every_gpu() -> None:
    path_fact = {
        "none": "dsa_kernels_missing",
        "sm120": "dsa_kernels_sm120_only",
        "native": "dsa_kernels_native",
        "other-vendor": "dsa_kernels_other_vendor",
    }
    for gpu in all_gpus():
        causes = {c.id: c for c in troubleshoot("no-valid-attention-backend", GLM5, gpu)}
        assert causes["dsa-no-kernel"].facts == ("dsa", path_fact[dsa_kernel_path(gpu)]), gpu.key


def test_mla_triton_only_follows_the_mla_kernel_gate_for_every_gpu() -> None:
    for gpu in all_gpus():
        causes = {c.id: c for c in troubleshoot("no-valid-attention-backend", DSV3, gpu)}
        gate = kernel_gates().mla.archs.get(gpu.arch)
        limited = gate is not None and gate.status != "pass"
        assert ("mla_triton_only" in causes["mla-fp8-kv-on-triton"].facts) is limited, gpu.key


def test_no_text_leaves_a_parameter_unfilled() -> None:
    for lang in LANGS:
        for s in SYMPTOMS:
            for facts in (*ALL_FACTS, GLM5_WITHOUT_SGLANG_PARSER):
                for gpu in SOME_GPUS:
                    for c in troubleshoot(s.id, facts, gpu, lang):
                        reasons = (reason for reason, _ in c.score_reasons)
                        for text in (c.title, c.why, c.check, *c.fixes, *reasons):
                            assert not PLACEHOLDER.search(text), (lang, c.id, text)


def test_a_parser_name_the_facts_lack_is_left_for_the_user_to_fill() -> None:
    fix = troubleshoot("no-tool-calls", GLM5_WITHOUT_SGLANG_PARSER, None)[0].fixes[0]
    assert "--tool-call-parser glm47" in fix
    assert "--tool-call-parser NAME" in fix


def test_hybrid_block_size_unknown_names_the_usual_sizes() -> None:
    facts = ModelFacts("Qwen3NextForCausalLM", "HYBRID", True, 16, 2, 262144, num_experts=512)
    why = troubleshoot("hybrid-prefix-hits-zero", facts, None)[0].why
    assert "544" in why and "528" in why


def test_fp8_kv_fix_on_a_gpu_without_fp8_math_is_for_capacity_only() -> None:
    with_fp8 = troubleshoot("memory-fills-fast", QWEN3_32B, lookup_gpu("H200"))[0].fixes[0]
    without = troubleshoot("memory-fills-fast", QWEN3_32B, lookup_gpu("A100 80GB"))[0].fixes[0]
    assert with_fp8 != without
    assert "A100 80GB" in without


def test_korean_answers_are_korean_and_ranked_like_english() -> None:
    for s in SYMPTOMS:
        english = troubleshoot(s.id, DSV3, lookup_gpu("H200"), "en")
        korean = troubleshoot(s.id, DSV3, lookup_gpu("H200"), "ko")
        assert [(c.id, c.score, c.facts) for c in korean] == [
            (c.id, c.score, c.facts) for c in english
        ]
        for c in korean:
            assert HANGUL.search(c.title) and HANGUL.search(c.why) and HANGUL.search(c.check)
            assert all(HANGUL.search(reason) for reason, _ in c.score_reasons)
        assert [c.source for c in korean] == [c.source for c in english]
    assert all(HANGUL.search(s.label) for s in symptoms("ko"))
