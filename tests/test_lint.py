"""The linter on the playbook's inherited commands and the issue's cases, one test per rule, each
with a command on which it must stay quiet."""

from __future__ import annotations

import json

import pytest

from engine.engines import adapter
from engine.errors import InputError
from engine.lint import LintReport, format_report, lint_command
from engine.lint.rule_data import lint_rules
from engine.model.loader import load_catalog, load_model

# The inherited command of seed 004 ('GLM-5.2를 띄우는 명령', SGLang, GLM-5.2 NVFP4, 8 × B300).
GLM52_SGLANG = """python3 -m sglang.launch_server \\
  --model nvidia/GLM-5.2-NVFP4 \\
  --tensor-parallel-size 8 \\
  --quantization modelopt_fp4 \\
  --tool-call-parser glm47 \\
  --reasoning-parser glm45 \\
  --trust-remote-code \\
  --chunked-prefill-size 16384 \\
  --mem-fraction-static 0.80"""
GLM5 = "zai-org/GLM-5"
SGLANG = "python3 -m sglang.launch_server --model-path"


def lint(text: str, model: str | None = None, gpu: str | None = None, gpus: int | None = None):
    return lint_command(text, load_catalog(model) if model else None, gpu, gpus)


def codes(report: LintReport) -> set[str]:
    return set(report.codes)


def severities(report: LintReport) -> dict[str, str]:
    return {f.code: f.severity for f in report.findings}


def text_of(report: LintReport, code: str) -> str:
    hits = [f for f in report.findings if f.code == code]
    assert hits, f"{code} not in {report.codes}"
    return hits[0].message + " " + hits[0].fix


# infos about what could not be checked: a made-up model name "m", no GPU given
UNCHECKED = {"model-not-loaded", "no-hardware"}


def checked(report: LintReport) -> tuple[str, ...]:
    return tuple(c for c in report.codes if c not in UNCHECKED)


def problems(report: LintReport) -> list[str]:
    return [f.code for f in report.findings if f.severity != "info"]


# --- the reference case: the inherited GLM-5.2 command --------------------------------------


def test_glm52_inherited_command_is_sglang_0_5_23_serving_the_nvfp4_checkpoint() -> None:
    report = lint(GLM52_SGLANG, GLM5, "B300", 8)
    assert report.engine == "sglang"
    assert report.engine_version == "0.5.23"
    assert report.model == "nvidia/GLM-5.2-NVFP4"
    assert report.linted_against == "zai-org/GLM-5 as NVFP4"


def test_glm52_on_b300_has_no_error_and_no_warning() -> None:
    report = lint(GLM52_SGLANG, GLM5, "B300", 8)
    assert problems(report) == []
    assert {"model-stand-in", "moe-experts-sliced"} <= codes(report)


def test_glm52_without_a_selected_model_finds_the_glm5_config_as_stand_in() -> None:
    report = lint(GLM52_SGLANG, None, "B300", 8)
    assert report.linted_against == "zai-org/GLM-5 as NVFP4"
    assert problems(report) == []


def test_glm52_every_flag_is_explained_with_a_reason() -> None:
    report = lint(GLM52_SGLANG, GLM5, "B300", 8)
    assert [e.flag for e in report.explanations] == [
        "--model",
        "--tensor-parallel-size",
        "--quantization",
        "--tool-call-parser",
        "--reasoning-parser",
        "--trust-remote-code",
        "--chunked-prefill-size",
        "--mem-fraction-static",
    ]
    for e in report.explanations:
        assert e.meaning and e.reason, e
    by_flag = {e.flag: e for e in report.explanations}
    assert by_flag["--model"].canonical == "--model-path"
    assert by_flag["--tensor-parallel-size"].canonical == "--tp-size"
    assert "20 %" in by_flag["--mem-fraction-static"].reason  # stays free
    assert "glm47" in by_flag["--tool-call-parser"].reason


def test_glm52_kv_cache_dtype_and_attention_backend_are_left_to_sglang() -> None:
    left = {e.flag: e.reason for e in lint(GLM52_SGLANG, GLM5, "B300", 8).left_to_engine}
    assert {"--kv-cache-dtype", "--attention-backend"} <= set(left)
    assert "fp8_e4m3" in left["--kv-cache-dtype"]  # B300 is SM 10.3: Blackwell
    assert "prefill" in left["--attention-backend"] and "decode" in left["--attention-backend"]


def test_glm52_on_h200_sglang_would_keep_dsa_kv_in_bf16() -> None:
    left = {e.flag: e.reason for e in lint(GLM52_SGLANG, GLM5, "H200", 8).left_to_engine}
    assert "bf16" in left["--kv-cache-dtype"]


def test_glm52_nvfp4_checkpoint_on_h200_has_no_fp4_tensor_cores() -> None:
    report = lint(GLM52_SGLANG, GLM5, "H200", 8)
    assert severities(report)["nvfp4-without-fp4"] == "error"


def test_playbook_enable_moe_ep_does_not_exist_in_sglang_and_the_fix_is_ep_size() -> None:
    report = lint(GLM52_SGLANG + " --enable-moe-ep", GLM5, "B300", 8)
    assert severities(report)["unknown-flag"] == "error"
    assert "--ep-size 8" in text_of(report, "unknown-flag")
    # experts stay sliced, but that is the same issue: said once, with the --ep-size fix
    assert "moe-experts-sliced" not in codes(report)
    assert "--ep-size 8" in report.corrected and "--enable-moe-ep" not in report.corrected


def test_deepseek_enable_moe_ep_command_gets_the_ep_size_fix_on_sglang() -> None:
    cmd = f"{SGLANG} deepseek-ai/DeepSeek-V3 --tp 8 --enable-moe-ep"
    report = lint(cmd, None, "H200", 8)
    assert severities(report)["unknown-flag"] == "error"
    assert "--ep-size 8" in text_of(report, "unknown-flag")
    assert problems(lint(report.corrected, None, "H200", 8)) == []


def test_deepseek_enable_moe_ep_on_vllm_is_enable_expert_parallel() -> None:
    report = lint("vllm serve deepseek-ai/DeepSeek-V3 -tp 8 --enable-moe-ep", None, "H200", 8)
    assert "--enable-expert-parallel" in text_of(report, "unknown-flag")
    assert "nor of SGLang" in text_of(report, "unknown-flag")


@pytest.mark.parametrize("spelling", ["--ep-size 8", "--expert-parallel-size 8", "--ep 8"])
def test_sglang_ep_size_spellings_keep_experts_whole(spelling: str) -> None:
    report = lint(GLM52_SGLANG + " " + spelling, GLM5, "B300", 8)
    assert "moe-experts-sliced" not in codes(report)
    assert problems(report) == []


# --- the false alarms ---------------------------------------------------------------


def test_tp_sliced_experts_are_an_info_with_the_trade_off_not_a_warning() -> None:
    report = lint("vllm serve deepseek-ai/DeepSeek-V3 --tensor-parallel-size 8", None, "H200", 8)
    assert severities(report)["moe-experts-sliced"] == "info"
    assert "--enable-expert-parallel" in text_of(report, "moe-experts-sliced")
    assert "not always" in text_of(report, "moe-experts-sliced")


def test_vllm_ep_keeps_experts_whole_and_one_gpu_has_nothing_to_slice() -> None:
    ep = lint("vllm serve deepseek-ai/DeepSeek-V3 -tp 8 -ep", None, "H200", 8)
    assert "moe-experts-sliced" not in codes(ep)
    one = lint("vllm serve Qwen/Qwen3-30B-A3B", None, "H200", 1)
    assert "moe-experts-sliced" not in codes(one)


def test_sglang_qwen25_and_qwen_are_the_same_tool_parser() -> None:
    cmd = "python -m sglang.launch_server --model-path Qwen/Qwen2.5-72B --tp-size 4"
    for name in ("qwen", "qwen25"):
        report = lint(f"{cmd} --tool-call-parser {name}", None, "H200", 4)
        assert "tool-parser-mismatch" not in codes(report), name


def test_vllm_gpt_oss_needs_no_reasoning_parser_harmony_separates_it() -> None:
    report = lint("vllm serve openai/gpt-oss-120b", None, "H200", 1)
    assert "missing-reasoning-parser" not in codes(report)


def test_missing_parsers_are_infos_naming_the_familys_parsers() -> None:
    report = lint("vllm serve zai-org/GLM-5-FP8 -tp 8", None, "H200", 8)
    assert severities(report)["missing-tool-parser"] == "info"
    assert "--tool-call-parser glm47 --enable-auto-tool-choice" in text_of(
        report, "missing-tool-parser"
    )
    assert "--reasoning-parser glm45" in text_of(report, "missing-reasoning-parser")


def test_a_base_checkpoint_needs_no_tool_parser() -> None:
    cmd = "sglang serve --model-path meta-llama/Meta-Llama-3.1-70B --tp 8"
    report = lint(cmd, None, "A100 80GB", 8)
    assert "missing-tool-parser" not in codes(report)


# --- the misses: fit, context, parsers the model does not need -----------------------


def test_glm5_bf16_on_8_h200_does_not_fit() -> None:
    report = lint("vllm serve zai-org/GLM-5 --tensor-parallel-size 8", None, "H200", 8)
    assert severities(report)["does-not-fit"] == "error"
    assert "zai-org/GLM-5-FP8" in text_of(report, "does-not-fit")
    assert "16 × H200" in text_of(report, "does-not-fit")


def test_glm5_fp8_on_8_h200_fits() -> None:
    report = lint("vllm serve zai-org/GLM-5-FP8 --tensor-parallel-size 8", None, "H200", 8)
    assert "does-not-fit" not in codes(report)
    assert report.linted_against == "zai-org/GLM-5 as FP8"


def test_gemma3_27b_bf16_on_one_l40s_does_not_fit() -> None:
    report = lint("vllm serve google/gemma-3-27b-it", None, "L40S", 1)
    assert severities(report)["does-not-fit"] == "error"
    two = lint("vllm serve google/gemma-3-27b-it -tp 2 --max-model-len 8192", None, "L40S", 2)
    assert problems(two) == []


def test_kimi_k2_at_128k_on_8_h200_does_not_fit_and_16k_does() -> None:
    cmd = "vllm serve moonshotai/Kimi-K2-Instruct --tensor-parallel-size 8 --trust-remote-code"
    report = lint(cmd + " --max-model-len 131072", None, "H200", 8)
    assert severities(report)["context-does-not-fit"] == "error"
    assert "--max-model-len 14336" in report.corrected
    assert problems(lint(cmd + " --max-model-len 16k", None, "H200", 8)) == []


def test_a_commands_max_num_seqs_frees_vllms_sampler_reserve_for_the_context() -> None:
    # Kimi-K2 (vocab 163,840) at TP 8 on H200: the profile run's sampler rows for vLLM's default
    # 1,024 sequences leave room for 14,336 tokens; 16 sequences leave room for 64k
    cmd = "vllm serve moonshotai/Kimi-K2-Instruct --tensor-parallel-size 8 --trust-remote-code"
    cmd += " --max-model-len 65536"
    assert "memory-tight" in codes(lint(cmd, None, "H200", 8))  # fits only without the reserve
    freed = codes(lint(cmd + " --max-num-seqs 16", None, "H200", 8))
    assert not {"memory-tight", "context-does-not-fit"} & freed
    assert "bad-value" in codes(lint(cmd + " --max-num-seqs 9" + "9" * 400, None, "H200", 8))


def test_llama4_scout_without_max_model_len_does_not_start_on_vllm() -> None:
    cmd = "vllm serve meta-llama/Llama-4-Scout-17B-16E-Instruct --tensor-parallel-size 8"
    report = lint(cmd, None, "H100 SXM", 8)
    assert severities(report)["context-default-does-not-fit"] == "error"
    assert "10,485,760" in text_of(report, "context-default-does-not-fit")
    assert problems(lint(cmd + " --max-model-len 65536", None, "H100 SXM", 8)) == []


def test_sglang_caps_a_default_context_that_does_not_fit_so_it_is_an_info() -> None:
    cmd = f"{SGLANG} meta-llama/Llama-4-Scout-17B-16E-Instruct --tp-size 8"
    report = lint(cmd, None, "H100 SXM", 8)
    assert severities(report)["context-default-does-not-fit"] == "info"


def test_a_context_beyond_the_limit_that_also_does_not_fit_is_said_once() -> None:
    cmd = "vllm serve moonshotai/Kimi-K2-Instruct -tp 8 --max-model-len 1M"
    report = lint(cmd, None, "H200", 8)
    assert "context-beyond-model" in codes(report)
    assert "context-does-not-fit" not in codes(report)
    assert "--max-model-len 14336" in report.corrected


def test_a_config_file_may_set_what_the_command_leaves_out() -> None:
    cmd = "vllm serve --config serve.yaml --enable-auto-tool-choice"
    assert problems(lint(cmd)) == []
    scout = "vllm serve meta-llama/Llama-4-Scout-17B-16E-Instruct -tp 8 --config serve.yaml"
    assert "context-default-does-not-fit" not in codes(lint(scout, None, "H100 SXM", 8))


def test_the_recipes_fp8_kv_cache_for_an_nvfp4_dsa_checkpoint_is_not_second_guessed() -> None:
    cmd = "vllm serve nvidia/GLM-5-NVFP4 -tp 8 --kv-cache-dtype fp8"
    report = lint(cmd, None, "B200", 8)
    assert "engine-should-choose" not in codes(report)


def test_fp8_kv_on_a_dsa_model_on_hopper_is_a_capacity_choice_explained_not_warned() -> None:
    # GLM-5.2's recipe sets --kv-cache-dtype fp8 on H100/H200 on purpose (capacity); vLLM
    # stores it as the packed fp8_ds_mla row there, what was asked, so nothing overrides it
    report = lint("vllm serve zai-org/GLM-5-FP8 -tp 8 --kv-cache-dtype fp8", None, "H200", 8)
    assert "engine-should-choose" not in codes(report)
    assert severities(report)["kv-dtype-capacity"] == "info"
    assert "capacity" in text_of(report, "kv-dtype-capacity")
    assert problems(report) == []


def test_context_beyond_the_models_limit_is_an_error_and_forced_a_warning() -> None:
    report = lint("vllm serve Qwen/Qwen3-32B -tp 2 --max-model-len 64k", None, "H200", 2)
    assert "40,960" in text_of(report, "context-beyond-model")
    assert severities(report)["context-beyond-model"] == "error"
    forced = lint(
        "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 vllm serve Qwen/Qwen3-32B -tp 2 --max-model-len 64k",
        None,
        "H200",
        2,
    )
    assert severities(forced)["context-beyond-model-forced"] == "warning"
    quiet = lint("python -m sglang.launch_server --model-path Qwen/Qwen3-32B --context-length 32K")
    assert "context-beyond-model" not in codes(quiet)


def test_a_yarn_override_raises_the_models_limit() -> None:
    cmd = (
        "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1 python -m sglang.launch_server --model "
        "Qwen/Qwen3-Next-80B-A3B-Thinking --tp 8 --json-model-override-args "
        """'{"rope_scaling":{"rope_type":"yarn","factor":4.0,"""
        """"original_max_position_embeddings":262144}}' """
        "--context-length 1010000"
    )
    assert problems(lint(cmd, None, "B200", 8)) == []


def test_deepseek_v3_with_the_r1_reasoning_parser_is_flagged() -> None:
    cmd = "vllm serve deepseek-ai/DeepSeek-V3 -tp 8 -ep --reasoning-parser deepseek_r1"
    report = lint(cmd, None, "H200", 8)
    assert severities(report)["reasoning-parser-unneeded"] == "warning"
    r1 = lint(cmd.replace("DeepSeek-V3", "DeepSeek-R1"), None, "H200", 8)
    assert "reasoning-parser-unneeded" not in codes(r1)


def test_deepseek_v3_with_its_own_switchable_reasoning_parser_is_quiet() -> None:
    # SGLang cookbook, DeepSeek-V3 'Reasoning Parser': thinking is switched per request
    cmd = f"{SGLANG} deepseek-ai/DeepSeek-V3 --reasoning-parser deepseek-v3 --tp 8"
    assert problems(lint(cmd, None, "MI300X", 8)) == []


def test_another_familys_tool_parser_is_a_warning_with_the_right_name() -> None:
    cmd = f"{SGLANG} zai-org/GLM-5-FP8 --tp-size 8 --tool-call-parser glm45"
    report = lint(cmd, None, "H200", 8)
    assert severities(report)["tool-parser-mismatch"] == "warning"
    assert "--tool-call-parser glm47" in report.corrected


def test_a_parser_the_engine_lacks_is_an_error() -> None:
    report = lint(f"{SGLANG} zai-org/GLM-4.7 --reasoning-parser glm47")
    assert severities(report)["bad-choice"] == "error"
    assert "glm45" in text_of(report, "bad-choice")


# --- the model the command names -------------------------------------------------------------


def test_a_command_for_another_model_says_so_and_is_checked_as_its_own_model() -> None:
    report = lint("vllm serve zai-org/GLM-5-FP8 -tp 8", "deepseek-ai/DeepSeek-V3", "H200", 8)
    assert "model-differs" in codes(report)
    assert "deepseek-ai/DeepSeek-V3" in text_of(report, "model-differs")
    assert "glm47" in text_of(report, "missing-tool-parser")
    assert "deepseek" not in text_of(report, "missing-tool-parser")


def test_glm52_with_deepseek_selected_is_checked_as_glm_not_deepseek() -> None:
    report = lint("vllm serve zai-org/GLM-5.2 -tp 8", "deepseek-ai/DeepSeek-V3", "B200", 8)
    assert "not deepseek-ai/DeepSeek-V3" in text_of(report, "model-stand-in")
    assert report.linted_against == GLM5
    assert "glm47" in text_of(report, "missing-tool-parser")


def test_a_smaller_sibling_of_the_family_is_not_a_stand_in() -> None:
    report = lint("vllm serve zai-org/GLM-4.5-Air-FP8 -tp 8", "zai-org/GLM-4.7", "H200", 8)
    assert report.linted_against is None
    assert "model-not-loaded" in codes(report)


def test_an_unknown_model_skips_the_model_checks_and_says_why() -> None:
    report = lint("vllm serve acme/Wombat-13B -tp 2", "deepseek-ai/DeepSeek-V3", "H200", 2)
    assert "different model" in text_of(report, "model-not-loaded")
    assert report.linted_against is None


def test_the_model_appears_once_in_the_flag_list() -> None:
    report = lint("vllm serve zai-org/GLM-5-FP8 -tp 8")
    assert all(e.flag != e.value for e in report.explanations)
    assert format_report(report).count("zai-org/GLM-5-FP8 zai-org/GLM-5-FP8") == 0


# --- severities: what the engine does ---------------------------------------------------------


def test_unknown_flag_names_the_closest_real_one() -> None:
    report = lint("vllm serve m --tensor-paralel-size 2")
    assert "--tensor-parallel-size" in text_of(report, "unknown-flag")
    assert severities(report)["unknown-flag"] == "error"


def test_old_no_spelling_points_to_this_versions_off_switch() -> None:
    report = lint("vllm serve m --no-enable-prefix-caching")
    assert "--disable-prefix-caching" in text_of(report, "unknown-flag")
    assert "--disable-prefix-caching" in report.corrected


def test_sglang_nsa_backends_are_dsa_backends_in_0_5_23() -> None:
    report = lint("python -m sglang.launch_server --model-path m --nsa-prefill-backend tilelang")
    assert "--dsa-prefill-backend tilelang" in report.corrected


def test_removed_vllm_flags_are_dropped_from_the_corrected_command() -> None:
    report = lint("vllm serve m --swap-space 32 --num-scheduler-steps 10 --max-model-len 4096")
    assert report.corrected.split() == ["vllm", "serve", "m", "\\", "--max-model-len", "4096"]


def test_mem_fraction_static_on_vllm_is_the_wrong_engines_flag() -> None:
    report = lint("vllm serve m --mem-fraction-static 0.8")
    assert "--gpu-memory-utilization 0.8" in text_of(report, "wrong-engine-flag")


def test_gpu_memory_utilization_on_sglang_is_the_wrong_engines_flag() -> None:
    report = lint("python -m sglang.launch_server --model-path m --gpu-memory-utilization 0.9")
    assert "--mem-fraction-static" in text_of(report, "wrong-engine-flag")


def test_the_settings_flags_are_the_plans_spellings() -> None:
    from engine.engines import ENGINES, SETTINGS, adapter
    from engine.launch.plan import PARALLEL_FLAGS
    from engine.lint.command_scenario import flag_for

    for engine in ENGINES:
        for setting in SETTINGS:
            if not adapter(engine).has(setting):
                continue
            flag = flag_for(setting, engine)
            info = adapter(engine).flags[flag]
            assert info.flag == flag, (setting, engine)
            if setting in ("tp", "pp", "dp", "ep"):
                assert flag in PARALLEL_FLAGS, flag


def test_the_lint_data_agrees_with_the_pinned_tables() -> None:
    from engine.lint.rule_data import data_problems

    assert data_problems(lint_rules()) == []


def test_every_equivalent_and_rename_is_a_real_flag() -> None:
    rules = lint_rules()
    for engine in ("vllm", "sglang"):
        for eq in getattr(rules.flag_equivalents, engine):
            assert eq.use in adapter(engine).flags
        for r in rules.renamed_flags[engine]:
            assert r.use is None or r.use in adapter(engine).flags
            assert r.written not in adapter(engine).flags


def test_sglang_prefix_abbreviations_are_infos_and_ambiguous_ones_errors() -> None:
    short = lint("python -m sglang.launch_server --model-path m --tp 2")
    assert checked(short) == ("abbreviated-flag",)
    assert severities(short)["abbreviated-flag"] == "info"
    ambiguous = lint("python -m sglang.launch_server --model-path m --enable-dp")
    assert "--enable-dp-attention" in text_of(ambiguous, "ambiguous-flag")


def test_vllm_underscore_and_dotted_spellings_are_real_flags() -> None:
    report = lint(
        "vllm serve m --max_model_len 8192 --speculative-config.method mtp "
        "--speculative-config.num_speculative_tokens 1"
    )
    assert checked(report) == ()


def test_deprecated_but_accepted_spelling_is_an_info_with_the_new_one() -> None:
    report = lint(f"{SGLANG} m --tp-size 8 --dp 8 --enable-dp-attention")
    assert severities(report)["deprecated-flag"] == "info"
    assert "--attn-dp-size" in text_of(report, "deprecated-flag")


def test_bad_choice_where_argparse_enforces_choices() -> None:
    report = lint("python -m sglang.launch_server --model-path m --kv-cache-dtype fp8")
    assert "fp8_e4m3" in text_of(report, "bad-choice")


def test_playbook_vllm_dtype_fp8_is_not_a_vllm_dtype() -> None:
    report = lint(
        "vllm serve deepseek-ai/DeepSeek-V3 --tensor-parallel-size 8 --dtype fp8 "
        "--kv-cache-dtype fp8 --max-model-len 131072 --gpu-memory-utilization 0.92"
    )
    assert "--quantization fp8" in text_of(report, "bad-choice")
    assert "--dtype" not in report.corrected


def test_a_value_given_to_an_on_off_switch_is_refused() -> None:
    report = lint("vllm serve m --trust-remote-code=true")
    assert severities(report)["value-on-switch"] == "error"
    stray = lint("python -m sglang.launch_server --model-path m --trust-remote-code true")
    assert "unexpected-argument" in codes(stray)


def test_duplicate_flag_keeps_the_last_value() -> None:
    report = lint("vllm serve m -tp 8 --tensor-parallel-size 4")
    assert "--tensor-parallel-size 4" in text_of(report, "duplicate-flag")
    assert report.corrected.count("-tp") == 0


def test_missing_value_and_missing_model() -> None:
    assert "missing-value" in codes(lint("python -m sglang.launch_server --model-path m --tp-size"))
    report = lint("python -m sglang.launch_server --tp-size 2")
    assert severities(report)["missing-model"] == "error"


def test_memory_fraction_above_the_threshold_warns_and_above_1_is_an_error() -> None:
    threshold = lint_rules().thresholds.memory_fraction_warn.value
    assert threshold == 0.95
    assert "memory-fraction-high" in codes(lint("vllm serve m --gpu-memory-utilization 0.97"))
    assert checked(lint("vllm serve m --gpu-memory-utilization 0.95")) == ()
    sg = lint("python -m sglang.launch_server --model-path m --mem-fraction-static 1.2")
    assert severities(sg)["memory-fraction-range"] == "error"


def test_tp_must_divide_the_attention_heads() -> None:
    report = lint("vllm serve Qwen/Qwen3.5-27B -tp 16", None, "H200", 16)
    assert severities(report)["tp-heads"] == "error"
    assert "24" in text_of(report, "tp-heads")


def test_tp_must_split_or_replicate_the_kv_heads() -> None:
    raw = dict(load_catalog("Qwen/Qwen3-32B").config.raw)
    model = load_model(raw | {"num_attention_heads": 48, "num_key_value_heads": 8}, "acme/X-48H")
    uneven = lint_command("vllm serve acme/X-48H -tp 6", model, "H200", 6)
    assert severities(uneven)["layout-invalid"] == "error"
    assert "8 KV heads" in text_of(uneven, "layout-invalid")
    replicated = lint_command("vllm serve acme/X-48H -tp 16", model, "H200", 16)
    assert "layout-invalid" not in codes(replicated) and "tp-heads" not in codes(replicated)


def test_more_gpus_than_available() -> None:
    report = lint("vllm serve Qwen/Qwen3-32B -tp 4 -dp 4", None, "H200", 8)
    assert severities(report)["parallel-exceeds-gpus"] == "error"
    fits = lint("vllm serve Qwen/Qwen3-32B -tp 4 -dp 2", None, "H200", 8)
    assert "parallel-exceeds-gpus" not in codes(fits)


# --- settings the engine should pick -----------------------------------------------------------


def test_kv_cache_dtype_on_a_dsa_model_is_a_capacity_choice_the_engine_keeps() -> None:
    # vLLM's DeepSeek-V3.2 guide calls fp8 its DSA default ("custom fp8 kvcache"): set by the
    # user it is explained, and the corrected command keeps it
    cmd = "vllm serve deepseek-ai/DeepSeek-V3.2 -tp 8 --enable-expert-parallel --kv-cache-dtype fp8"
    report = lint(cmd, None, "H200", 8)
    assert severities(report)["kv-dtype-capacity"] == "info"
    assert "engine-should-choose" not in codes(report)
    assert "--kv-cache-dtype fp8" in report.corrected


def test_a_dsa_kv_dtype_equal_to_the_engines_pick_is_only_info() -> None:
    cmd = GLM52_SGLANG + " --ep-size 8 --kv-cache-dtype fp8_e4m3"
    assert severities(lint(cmd, GLM5, "B300", 8))["engine-choice-restated"] == "info"
    fp8 = cmd.replace("NVFP4", "FP8").replace("--quantization modelopt_fp4", "")
    assert severities(lint(fp8, GLM5, "H200", 8))["kv-dtype-capacity"] == "info"


def test_attention_backend_on_a_dsa_model_is_left_to_the_engine() -> None:
    report = lint(GLM52_SGLANG + " --ep-size 8 --attention-backend flashmla", GLM5, "B300", 8)
    assert "prefill" in text_of(report, "engine-should-choose")


def test_kv_cache_dtype_on_a_gqa_model_is_the_users_call() -> None:
    report = lint("vllm serve Qwen/Qwen3-32B -tp 2 --kv-cache-dtype fp8", None, "H200", 2)
    assert problems(report) == []


def test_block_size_on_a_hybrid_model_is_left_to_vllm() -> None:
    cmd = "vllm serve Qwen/Qwen3-Next-80B-A3B-Thinking -tp 4 -ep --block-size 16"
    assert severities(lint(cmd, None, "H200", 4))["engine-should-choose"] == "warning"


# --- hardware ----------------------------------------------------------------------------------


def test_fp8_kv_on_ampere_is_storage_only_and_info() -> None:
    cmd = "vllm serve Qwen/Qwen3-32B -tp 2 --kv-cache-dtype fp8"
    assert severities(lint(cmd, None, "A100 80GB", 2))["fp8-kv-storage-only"] == "info"
    assert "fp8-kv-storage-only" not in codes(lint(cmd, None, "H100 SXM", 2))


def test_fp8_kv_with_flash_attn_backend_needs_hopper() -> None:
    cmd = "vllm serve Qwen/Qwen3-32B -tp 2 --kv-cache-dtype fp8 --attention-backend FLASH_ATTN"
    assert severities(lint(cmd, None, "L40S", 2))["fp8-kv-backend"] == "error"
    assert "fp8-kv-backend" not in codes(lint(cmd, None, "H200", 2))


def test_nvfp4_kv_cache_needs_blackwell() -> None:
    cmd = "vllm serve Qwen/Qwen3-32B --kv-cache-dtype nvfp4"
    assert "nvfp4-without-fp4" in codes(lint(cmd, None, "H100 SXM", 1))
    assert "nvfp4-without-fp4" not in codes(lint(cmd, None, "B200", 1))


def test_dsa_model_on_rtx_4090_has_no_kernels() -> None:
    report = lint(GLM52_SGLANG, GLM5, "RTX 4090", 8)
    assert severities(report)["dsa-kernel-missing"] == "error"


def test_dsa_model_on_rtx_5090_is_a_separate_sm120_path() -> None:
    report = lint(GLM52_SGLANG, GLM5, "RTX 5090", 8)
    assert severities(report)["dsa-kernel-sm120"] == "warning"
    assert "dsa-kernel-missing" not in codes(report)


def test_no_gpu_skips_the_memory_checks_and_says_so() -> None:
    report = lint("vllm serve zai-org/GLM-5 -tp 8")
    assert "does-not-fit" not in codes(report)
    assert "no-hardware" in codes(report)


# --- launchers and the shell around them ------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "engine"),
    [
        ("vllm serve m -tp 2", "vllm"),
        ("python -m vllm.entrypoints.openai.api_server --model m -tp 2", "vllm"),
        ("sglang serve --model-path m --tp-size 2", "sglang"),
        ("python3 -m sglang.launch_server --model-path m --tp-size 2", "sglang"),
        ("docker run --gpus all -p 8000:8000 --ipc=host vllm/vllm-openai:latest m -tp 2", "vllm"),
        (
            "docker run --gpus all --shm-size 32g lmsysorg/sglang:latest "
            "python3 -m sglang.launch_server --model-path m --tp-size 2",
            "sglang",
        ),
        ('command: ["/bin/sh", "-c"]\nargs: ["vllm serve m --tensor-parallel-size 2"]\n', "vllm"),
        ("args: [--model-path, m, --mem-fraction-static, '0.8']\n", "sglang"),
        ("CUDA_VISIBLE_DEVICES=0,1 VLLM_USE_DEEP_GEMM=0 vllm serve m -tp 2", "vllm"),
        ("export VLLM_USE_V1=1\nnohup vllm serve m -tp 2 > serve.log 2>&1 &", "vllm"),
    ],
)
def test_every_documented_launcher_form(text: str, engine: str) -> None:
    report = lint(text)
    assert report.engine == engine
    assert report.model == "m"
    assert problems(report) == [], report.findings


def test_docker_image_running_a_shell_script_is_read_inside_the_script() -> None:
    cmd = (
        "docker run --gpus all -p 8000:8000 --ipc=host vllm/vllm-openai:v0.18.0 \\\n"
        '  bash -lc \'pip install -U "transformers>=5.4.0" && \\\n'
        "    vllm serve zai-org/GLM-5-FP8 --tensor-parallel-size 8 --tool-call-parser glm47 \\\n"
        "      --reasoning-parser glm45 --enable-auto-tool-choice'"
    )
    report = lint(cmd, None, "H200", 8)
    assert report.model == "zai-org/GLM-5-FP8"
    assert problems(report) == []


def test_a_ray_pipeline_puts_one_stage_per_node() -> None:
    cmd = (
        "vllm serve moonshotai/Kimi-K2-Instruct --trust-remote-code --tensor-parallel-size 8 "
        "--pipeline-parallel-size 2 --max-model-len 2048 --kv-cache-dtype fp8"
    )
    report = lint(cmd, None, "H200", 16)
    assert report.gpus == 16
    assert problems(report) == []


def test_sglang_serve_takes_the_model_path_flag() -> None:
    report = lint("sglang serve --model-path Qwen/Qwen3-32B --tp-size 2", None, "H200", 2)
    assert report.launcher == "sglang serve"
    assert report.linted_against == "Qwen/Qwen3-32B"


def test_kubernetes_args_list() -> None:
    manifest = """
apiVersion: apps/v1
kind: Deployment
spec:
  template:
    spec:
      containers:
      - name: sglang
        command: ["python3", "-m", "sglang.launch_server"]
        args:
        - --model-path
        - zai-org/GLM-5-FP8
        - --tp
        - "8"
        - --mem-fraction-static
        - 0.88
"""
    report = lint(manifest, None, "H200", 8)
    assert report.parsed_from == "yaml" and report.engine == "sglang"
    assert "moe-experts-sliced" in codes(report)
    assert report.corrected.startswith("command:")


def test_args_only_manifest_infers_the_engine_from_the_flags() -> None:
    report = lint("args:\n  - --model\n  - m\n  - --gpu-memory-utilization\n  - '0.9'\n")
    assert report.engine == "vllm"
    assert "engine-inferred" in codes(report)


def test_env_prefix_comments_and_pipes_are_shell_not_flags() -> None:
    cmd = (
        "# launch\nCUDA_VISIBLE_DEVICES=0,1 VLLM_USE_DEEP_GEMM=0 vllm serve m \\\n"
        "  -tp 2 \\\n  --max-model-len 8192  # short first\n 2>&1 | tee serve.log"
    )
    report = lint(cmd)
    assert checked(report) == ()
    assert [e.flag for e in report.explanations] == ["MODEL", "-tp", "--max-model-len"]


def test_doubled_subcommand_is_an_error_with_the_fix() -> None:
    report = lint("vllm serve serve m -tp 2")
    assert severities(report)["repeated-subcommand"] == "error"
    assert report.corrected.startswith("vllm serve m")


def test_a_flag_cut_off_by_a_missing_backslash_is_a_warning_with_the_line() -> None:
    report = lint("vllm serve m \\\n  -tp 2\n  --enable-expert-parallel\n")
    assert severities(report)["detached-flag"] == "warning"
    assert "line 2" in text_of(report, "detached-flag")
    assert "--enable-expert-parallel" in report.corrected


def test_a_trailing_backslash_on_the_last_line_is_an_info() -> None:
    report = lint("vllm serve m \\\n  -tp 2 \\\n")
    assert severities(report)["dangling-backslash"] == "info"


def test_script_variables_are_expanded_and_branches_read_for_this_gpu() -> None:
    script = """if [ "$CC" = "10.0" ]; then
    DTYPE="FP4"
else
    DTYPE="FP8"
fi
vllm serve nvidia/Llama-3.3-70B-Instruct-$DTYPE --max-model-len 10240
"""
    on_hopper = lint(script, None, "H200", 1)
    assert problems(on_hopper) == []
    assert "DTYPE=FP8" in text_of(on_hopper, "shell-variable")
    on_blackwell = lint(script, None, "B200", 1)
    assert "DTYPE=FP4" in text_of(on_blackwell, "shell-variable")


def test_a_config_file_is_named_as_unchecked() -> None:
    assert "config-file" in codes(lint("vllm serve m --config serve.yaml"))


# --- the report --------------------------------------------------------------------------------


def test_findings_speak_to_the_user_without_internal_references() -> None:
    for cmd, model, gpu, n in (
        (GLM52_SGLANG + " --enable-moe-ep --kv-cache-dtype fp8_e4m3", GLM5, "H200", 8),
        ("vllm serve zai-org/GLM-5 -tp 8 --dtype fp8 --reasoning-parser x", None, "H200", 8),
    ):
        report = lint(cmd, model, gpu, n)
        for f in report.findings:
            words = (f.message + f.fix + f.source).lower()
            for internal in ("playbook", "seed", "../shared", "data/", "facts.md", "engine-gt"):
                assert internal not in words, (f.code, internal)
            assert f.code and f.severity and f.message and f.fix and f.source


def test_each_finding_is_reported_once() -> None:
    report = lint(GLM52_SGLANG + " --enable-moe-ep --enable-moe-ep", GLM5, "B300", 8)
    keys = [(f.code, f.flag, f.message) for f in report.findings]
    assert len(keys) == len(set(keys))


def test_every_finding_code_has_a_severity_and_a_source_in_data() -> None:
    rules = lint_rules()
    for code, rule in rules.findings.items():
        assert rule.source.strip(), code
    report = lint(GLM52_SGLANG, GLM5, "H200", 8)
    assert all(f.code in rules.findings for f in report.findings)


def test_the_corrected_command_of_a_broken_command_lints_clean() -> None:
    cmd = (
        "vllm serve Qwen/Qwen3-32B --tensor-paralel-size 2 --mem-fraction-static 0.8 "
        "--no-enable-prefix-caching --max-model-len 64k --gpu-memory-utilization 0.99"
    )
    report = lint(cmd, None, "H200", 2)
    assert len(problems(report)) >= 4
    assert problems(lint(report.corrected, None, "H200", 2)) == []


def test_report_serialises_to_json_and_text() -> None:
    report = lint(GLM52_SGLANG, GLM5, "B300", 8)
    data = json.loads(json.dumps(report.to_dict()))
    assert data["findings"][0]["code"]
    assert format_report(report).startswith("engine: SGLang 0.5.23")
    assert report.rows()[0].keys() == {"severity", "code", "message", "fix"}


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   \n\t",
        "vllm serve m --chat-template 'unbalanced",
        "ls -la",
        "python -m http.server 8000",
        "vllm serve " + "a" * 100_000,
        "command: [unclosed",
        "args:\n  - {nested: map}\n",
    ],
)
def test_text_that_is_not_a_command_raises_input_error_naming_command(text: str) -> None:
    with pytest.raises(InputError) as err:
        lint(text)
    assert err.value.field == "command"


@pytest.mark.parametrize("gpus", [0, -1, 10**9, True])
def test_a_bad_gpu_count_raises_input_error_naming_gpus(gpus: int) -> None:
    with pytest.raises(InputError) as err:
        lint_command("vllm serve m", gpus=gpus)
    assert err.value.field == "gpus"
