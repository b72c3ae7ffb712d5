"""The linter against the playbook's inherited commands and one test per rule, plus commands on
which no rule may fire."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.errors import InputError
from engine.hardware.gpus import lookup_gpu
from engine.lint import (
    EQUIVALENT_FLAGS,
    Engine,
    LintReport,
    ModelFacts,
    ParserNames,
    cli_main,
    format_report,
    lint_command,
)
from engine.software.tables import flag_table

GLM5 = ModelFacts(
    architecture="GlmMoeDsaForCausalLM",
    attention_family="DSA",
    moe=True,
    num_attention_heads=64,
    num_kv_heads=64,
    max_position_embeddings=202752,
    model_type="glm_moe_dsa",
    num_experts=256,
    has_tool_parser_need=True,
    has_reasoning_parser_need=True,
    tool_call_parser=ParserNames("glm47", "glm47"),
    reasoning_parser=ParserNames("glm45", "glm45"),
    name="zai-org/GLM-5",
)
DSV32 = ModelFacts(
    architecture="DeepseekV32ForCausalLM",
    attention_family="DSA",
    moe=True,
    num_attention_heads=128,
    num_kv_heads=128,
    max_position_embeddings=163840,
    model_type="deepseek_v32",
    num_experts=256,
)
DSV3 = ModelFacts(
    architecture="DeepseekV3ForCausalLM",
    attention_family="MLA",
    moe=True,
    num_attention_heads=128,
    num_kv_heads=128,
    max_position_embeddings=163840,
    model_type="deepseek_v3",
    num_experts=256,
)
QWEN3_32B = ModelFacts(
    architecture="Qwen3ForCausalLM",
    attention_family="GQA",
    moe=False,
    num_attention_heads=64,
    num_kv_heads=8,
    max_position_embeddings=40960,
    model_type="qwen3",
)
QWEN35_27B = ModelFacts(
    architecture="Qwen3_5ForConditionalGeneration",
    attention_family="GQA",
    moe=False,
    num_attention_heads=24,
    num_kv_heads=4,
    max_position_embeddings=262144,
)
QWEN3_30B_A3B = ModelFacts(
    architecture="Qwen3MoeForCausalLM",
    attention_family="GQA",
    moe=True,
    num_attention_heads=32,
    num_kv_heads=4,
    max_position_embeddings=40960,
    num_experts=128,
)
QWEN3_NEXT = ModelFacts(
    architecture="Qwen3NextForCausalLM",
    attention_family="HYBRID",
    moe=True,
    num_attention_heads=16,
    num_kv_heads=2,
    max_position_embeddings=262144,
    num_experts=512,
)

# The playbook's inherited command, verbatim (../shared/seeds/004, 'GLM-5.2를 띄우는 명령').
GLM52_SGLANG = """python3 -m sglang.launch_server \\
  --model nvidia/GLM-5.2-NVFP4 \\
  --tensor-parallel-size 8 \\
  --quantization modelopt_fp4 \\
  --tool-call-parser glm47 \\
  --reasoning-parser glm45 \\
  --trust-remote-code \\
  --chunked-prefill-size 16384 \\
  --mem-fraction-static 0.80"""


def codes(report: LintReport) -> set[str]:
    return set(report.codes)


def finding(report: LintReport, code: str) -> str:
    hits = [f for f in report.findings if f.code == code]
    assert hits, f"{code} not in {report.codes}"
    return hits[0].message + " " + hits[0].fix


# --- the reference case: the inherited GLM-5.2 command --------------------------------------


def test_glm52_inherited_command_is_sglang_0_5_23() -> None:
    report = lint_command(GLM52_SGLANG, GLM5, lookup_gpu("B300"), 8)
    assert report.engine == "sglang"
    assert report.engine_version == "0.5.23"
    assert report.model == "nvidia/GLM-5.2-NVFP4"


def test_glm52_every_flag_is_explained_with_a_reason() -> None:
    report = lint_command(GLM52_SGLANG, GLM5, lookup_gpu("B300"), 8)
    written = [e.flag for e in report.explanations]
    assert written == [
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
    assert "20%" in by_flag["--mem-fraction-static"].reason
    assert "glm47" in by_flag["--tool-call-parser"].reason


def test_glm52_kv_cache_dtype_and_attention_backend_are_left_to_sglang() -> None:
    report = lint_command(GLM52_SGLANG, GLM5, lookup_gpu("B300"), 8)
    left = {e.flag: e.reason for e in report.left_to_engine}
    assert set(left) == {"--kv-cache-dtype", "--attention-backend"}
    assert "fp8_e4m3" in left["--kv-cache-dtype"]  # B300 is SM 10.3: Blackwell
    assert "prefill" in left["--attention-backend"] and "decode" in left["--attention-backend"]


def test_glm52_on_h200_sglang_would_keep_dsa_kv_in_bfloat16() -> None:
    report = lint_command(GLM52_SGLANG, GLM5, lookup_gpu("H200"), 8)
    left = {e.flag: e.reason for e in report.left_to_engine}
    assert "bfloat16" in left["--kv-cache-dtype"]


def test_glm52_on_b300_only_missing_expert_parallelism_is_found() -> None:
    report = lint_command(GLM52_SGLANG, GLM5, lookup_gpu("B300"), 8)
    assert report.codes == ("moe-without-ep",)
    assert "--ep-size 8" in finding(report, "moe-without-ep")


def test_glm52_nvfp4_checkpoint_on_h200_has_no_fp4_tensor_cores() -> None:
    report = lint_command(GLM52_SGLANG, GLM5, lookup_gpu("H200"), 8)
    assert "nvfp4-without-fp4" in codes(report)
    assert [f.severity for f in report.findings if f.code == "nvfp4-without-fp4"] == ["error"]


def test_playbook_enable_moe_ep_does_not_exist_in_sglang_0_5_23() -> None:
    report = lint_command(GLM52_SGLANG + " --enable-moe-ep", GLM5, lookup_gpu("B300"), 8)
    text = finding(report, "enable-moe-ep")
    assert "--ep-size" in text
    # the flag does nothing, so expert parallelism is still off
    assert "moe-without-ep" in codes(report)


def test_sglang_ep_size_spellings_turn_expert_parallelism_on() -> None:
    for spelling in ("--ep-size 8", "--expert-parallel-size 8", "--ep 8"):
        report = lint_command(GLM52_SGLANG + " " + spelling, GLM5, lookup_gpu("B300"), 8)
        assert report.codes == (), (spelling, report.codes)


# --- flag spelling --------------------------------------------------------------------------


def test_unknown_flag_names_the_closest_real_one() -> None:
    report = lint_command("vllm serve m --tensor-paralel-size 2")
    assert "--tensor-parallel-size" in finding(report, "unknown-flag")


def test_mem_fraction_static_on_vllm_is_the_wrong_engines_flag() -> None:
    report = lint_command("vllm serve m --mem-fraction-static 0.8")
    assert "--gpu-memory-utilization" in finding(report, "wrong-engine-flag")


def test_gpu_memory_utilization_on_sglang_is_the_wrong_engines_flag() -> None:
    report = lint_command(
        "python -m sglang.launch_server --model-path m --gpu-memory-utilization 0.9"
    )
    assert "--mem-fraction-static" in finding(report, "wrong-engine-flag")


def test_every_cross_engine_replacement_is_a_real_flag() -> None:
    for engine, mapping in EQUIVALENT_FLAGS.items():
        other: Engine = "sglang" if engine == "vllm" else "vllm"
        for written, replacement in mapping.items():
            assert replacement in flag_table(engine), (engine, replacement)
            other_spellings = flag_table(other)
            if written == "--enable-moe-ep":  # the playbook's flag: in neither engine
                assert written not in other_spellings
                continue
            # SGLang's argparse also takes unique prefixes: --tp is --tp-size there
            prefixed = [k for k in other_spellings if k.startswith(written)]
            assert written in other_spellings or len(prefixed) == 1, written


def test_sglang_tp_shorthand_on_vllm_is_the_wrong_engines_flag() -> None:
    report = lint_command("vllm serve m --tp 2")
    assert "--tensor-parallel-size" in finding(report, "wrong-engine-flag")


def test_sglang_accepts_unique_prefixes_like_argparse_and_says_so() -> None:
    report = lint_command("python -m sglang.launch_server --model-path m --tp 2")
    assert report.codes == ("abbreviated-flag",)
    assert report.explanations[-1].canonical == "--tp-size"


def test_sglang_ambiguous_prefix_is_an_error() -> None:
    report = lint_command("python -m sglang.launch_server --model-path m --enable-dp")
    assert "--enable-dp-attention" in finding(report, "ambiguous-flag")


def test_vllm_underscore_and_dotted_spellings_are_real_flags() -> None:
    report = lint_command(
        "vllm serve m --max_model_len 8192 --speculative-config.method mtp "
        "--speculative-config.num_speculative_tokens 1"
    )
    assert report.codes == ()


def test_deprecated_sglang_dp_attention_points_to_attn_dp_size() -> None:
    report = lint_command(
        "python -m sglang.launch_server --model-path m --tp 8 --dp 8 --enable-dp-attention"
    )
    assert "--attn-dp-size" in finding(report, "deprecated-flag")


# --- values ---------------------------------------------------------------------------------


def test_bad_choice_where_argparse_enforces_choices() -> None:
    report = lint_command("python -m sglang.launch_server --model-path m --kv-cache-dtype fp8")
    text = finding(report, "bad-choice")
    assert "fp8_e4m3" in text


def test_playbook_vllm_dtype_fp8_is_not_a_vllm_dtype() -> None:
    # ../shared/seeds/004, 'DeepSeek V3 서빙': `vllm serve ... --dtype fp8 --kv-cache-dtype fp8`
    report = lint_command(
        "vllm serve deepseek-ai/DeepSeek-V3 --tensor-parallel-size 8 --dtype fp8 "
        "--kv-cache-dtype fp8 --max-model-len 131072 --gpu-memory-utilization 0.92"
    )
    assert "bad-choice" in codes(report)
    assert "--dtype" in [f.flag for f in report.findings if f.code == "bad-choice"]
    assert "--quantization fp8" in finding(report, "bad-choice")


def test_choice_rule_stays_quiet_on_flags_without_choices() -> None:
    report = lint_command("vllm serve m --max-model-len 32k --max-num-batched-tokens 8192")
    assert report.codes == ()


def test_duplicate_flag_keeps_the_last_value() -> None:
    report = lint_command("vllm serve m -tp 8 --tensor-parallel-size 4")
    text = finding(report, "duplicate-flag")
    assert "--tensor-parallel-size 4" in text


def test_missing_value_at_the_end() -> None:
    report = lint_command("python -m sglang.launch_server --model-path m --tp-size")
    assert "missing-value" in codes(report)


def test_value_given_to_an_on_off_switch_is_a_stray_argument() -> None:
    report = lint_command("python -m sglang.launch_server --model-path m --trust-remote-code true")
    assert "unexpected-argument" in codes(report)


def test_sglang_without_model_path_is_an_error() -> None:
    report = lint_command("python -m sglang.launch_server --tp-size 2")
    assert [f.severity for f in report.findings if f.code == "missing-model"] == ["error"]


# --- flags the engine should choose ---------------------------------------------------------


def test_kv_cache_dtype_on_dsa_model_overrides_the_engines_choice() -> None:
    report = lint_command(
        "vllm serve deepseek-ai/DeepSeek-V3.2 -tp 8 --enable-expert-parallel --kv-cache-dtype fp8",
        DSV32,
        lookup_gpu("H200"),
        8,
    )
    assert report.codes == ("engine-should-choose",)
    assert "656" in finding(report, "engine-should-choose")


def test_attention_backend_on_dsa_model_overrides_the_per_phase_choice() -> None:
    report = lint_command(
        GLM52_SGLANG + " --ep-size 8 --attention-backend flashmla", GLM5, lookup_gpu("B300"), 8
    )
    assert report.codes == ("engine-should-choose",)
    assert "prefill" in finding(report, "engine-should-choose")
    assert [e.flag for e in report.left_to_engine] == ["--kv-cache-dtype"]


def test_dsa_kv_dtype_equal_to_the_engines_pick_is_only_info() -> None:
    cmd = GLM52_SGLANG + " --ep-size 8 --kv-cache-dtype fp8_e4m3"
    on_b300 = lint_command(cmd, GLM5, lookup_gpu("B300"), 8)
    on_h200 = lint_command(cmd, GLM5, lookup_gpu("H200"), 8)
    assert [f.severity for f in on_b300.findings] == ["info"]
    assert [(f.severity, f.code) for f in on_h200.findings if f.code == "engine-should-choose"] == [
        ("warning", "engine-should-choose")
    ]


def test_kv_cache_dtype_on_a_gqa_model_is_the_users_call() -> None:
    report = lint_command(
        "vllm serve Qwen/Qwen3-32B -tp 2 --kv-cache-dtype fp8", QWEN3_32B, lookup_gpu("H200"), 2
    )
    assert report.codes == ()


def test_block_size_on_a_hybrid_model_is_left_to_vllm() -> None:
    report = lint_command(
        "vllm serve Qwen/Qwen3-Next-80B-A3B-Thinking -tp 4 -ep --block-size 16",
        QWEN3_NEXT,
        lookup_gpu("H200"),
        4,
    )
    assert report.codes == ("engine-should-choose",)


# --- MoE without expert parallelism ---------------------------------------------------------


def test_vllm_data_parallel_moe_without_ep_copies_experts_on_every_rank() -> None:
    report = lint_command("vllm serve Qwen/Qwen3-30B-A3B -dp 8", QWEN3_30B_A3B, None, 8)
    assert "8×" in finding(report, "moe-without-ep")


def test_vllm_tensor_parallel_moe_without_ep_slices_every_expert() -> None:
    report = lint_command("vllm serve Qwen/Qwen3-30B-A3B -tp 4", QWEN3_30B_A3B, None, 4)
    assert "--enable-expert-parallel" in finding(report, "moe-without-ep")


def test_disable_expert_parallel_spelling_counts_as_off() -> None:
    report = lint_command(
        "vllm serve Qwen/Qwen3-30B-A3B -tp 4 --disable-expert-parallel", QWEN3_30B_A3B
    )
    assert "moe-without-ep" in codes(report)


def test_moe_on_one_gpu_needs_no_expert_parallelism() -> None:
    report = lint_command("vllm serve Qwen/Qwen3-30B-A3B", QWEN3_30B_A3B, lookup_gpu("H200"), 1)
    assert report.codes == ()


# --- parsers --------------------------------------------------------------------------------


def test_missing_tool_and_reasoning_parsers_name_the_familys_parsers() -> None:
    report = lint_command("vllm serve zai-org/GLM-5 -tp 8 -ep", GLM5, lookup_gpu("B200"), 8)
    assert "--tool-call-parser glm47 --enable-auto-tool-choice" in finding(
        report, "missing-tool-parser"
    )
    assert "--reasoning-parser glm45" in finding(report, "missing-reasoning-parser")


def test_glm45_tool_parser_on_glm5_is_the_wrong_family() -> None:
    report = lint_command(
        GLM52_SGLANG.replace("glm47", "glm45") + " --ep-size 8", GLM5, lookup_gpu("B300"), 8
    )
    assert report.codes == ("tool-parser-mismatch",)


def test_vllm_tool_parser_without_auto_tool_choice() -> None:
    report = lint_command("vllm serve m --tool-call-parser hermes")
    assert "parser-without-auto-tool-choice" in codes(report)


def test_vllm_auto_tool_choice_without_parser_does_not_start() -> None:
    report = lint_command("vllm serve m --enable-auto-tool-choice")
    assert [f.severity for f in report.findings] == ["error"]


# --- hardware -------------------------------------------------------------------------------


def test_fp8_kv_on_ampere_is_storage_only() -> None:
    cmd = "vllm serve Qwen/Qwen3-32B -tp 2 --kv-cache-dtype fp8"
    assert "fp8-kv-storage-only" in codes(lint_command(cmd, QWEN3_32B, lookup_gpu("A100 80GB"), 2))
    assert lint_command(cmd, QWEN3_32B, lookup_gpu("H100 SXM"), 2).codes == ()


def test_fp8_kv_with_flash_attn_backend_needs_hopper() -> None:
    cmd = "vllm serve Qwen/Qwen3-32B -tp 2 --kv-cache-dtype fp8 --attention-backend FLASH_ATTN"
    assert "fp8-kv-backend" in codes(lint_command(cmd, QWEN3_32B, lookup_gpu("L40S"), 2))
    assert lint_command(cmd, QWEN3_32B, lookup_gpu("H200"), 2).codes == ()


def test_nvfp4_kv_cache_needs_blackwell() -> None:
    cmd = "vllm serve Qwen/Qwen3-32B --kv-cache-dtype nvfp4"
    assert "nvfp4-without-fp4" in codes(lint_command(cmd, QWEN3_32B, lookup_gpu("H100 SXM"), 1))
    assert lint_command(cmd, QWEN3_32B, lookup_gpu("B200"), 1).codes == ()


def test_dsa_model_on_rtx_4090_has_no_kernels() -> None:
    report = lint_command(GLM52_SGLANG, GLM5, lookup_gpu("RTX 4090"), 8)
    assert "dsa-kernel-missing" in codes(report)


def test_dsa_model_on_rtx_5090_is_a_separate_sm120_path() -> None:
    report = lint_command(GLM52_SGLANG, GLM5, lookup_gpu("RTX 5090"), 8)
    assert "dsa-kernel-sm120" in codes(report)
    assert "dsa-kernel-missing" not in codes(report)


# --- parallel sizes, memory, context --------------------------------------------------------


def test_tp_must_divide_the_attention_heads() -> None:
    report = lint_command("vllm serve Qwen/Qwen3.5-27B -tp 16", QWEN35_27B, None, 16)
    assert "24" in finding(report, "tp-heads")


def test_tp_must_split_or_replicate_kv_heads_evenly() -> None:
    facts = ModelFacts("X", "GQA", False, num_attention_heads=48, num_kv_heads=8)
    assert "tp-kv-heads" in codes(lint_command("vllm serve m -tp 6", facts))
    assert lint_command("vllm serve m -tp 16", facts).codes == ()  # 8 KV heads, each twice
    assert lint_command("vllm serve m -tp 32", facts).codes == ("tp-heads",)
    assert lint_command("vllm serve m -tp 8", facts).codes == ()


def test_old_no_spelling_points_to_this_versions_off_switch() -> None:
    report = lint_command("vllm serve m --no-enable-prefix-caching")
    assert "--disable-prefix-caching" in finding(report, "unknown-flag")


def test_tp_larger_than_the_gpu_count() -> None:
    report = lint_command("vllm serve Qwen/Qwen3-32B -tp 8", QWEN3_32B, lookup_gpu("H100 SXM"), 4)
    assert "tp-exceeds-gpus" in codes(report)


def test_tp_times_dp_beyond_the_gpu_count() -> None:
    report = lint_command("vllm serve Qwen/Qwen3-32B -tp 4 -dp 4", QWEN3_32B, None, 8)
    assert "parallel-exceeds-gpus" in codes(report)


def test_memory_fraction_above_0_95_warns_and_above_1_is_an_error() -> None:
    assert "memory-fraction-high" in codes(
        lint_command("vllm serve m --gpu-memory-utilization 0.97")
    )
    assert lint_command("vllm serve m --gpu-memory-utilization 0.95").codes == ()
    sg = "python -m sglang.launch_server --model-path m --mem-fraction-static 1.2"
    assert "memory-fraction-range" in codes(lint_command(sg))


def test_max_model_len_beyond_the_models_context() -> None:
    report = lint_command("vllm serve Qwen/Qwen3-32B --max-model-len 64k", QWEN3_32B)
    assert "40,960" in finding(report, "context-beyond-model")


def test_context_length_within_the_model_is_quiet() -> None:
    cmd = "python -m sglang.launch_server --model-path Qwen/Qwen3-32B --context-length 32K"
    assert lint_command(cmd, QWEN3_32B).codes == ()


# --- clean commands: no rule may fire -------------------------------------------------------


def test_playbook_qwen_gqa_command_is_clean() -> None:
    # ../shared/seeds/004, 'GQA': the TP2 SGLang command for a 27B GQA dense model
    cmd = """python -m sglang.launch_server \\
      --model-path Qwen/Qwen3.6-27B \\
      --tp-size 2 \\
      --quantization fp8 --kv-cache-dtype fp8_e5m2 \\
      --chunked-prefill-size 4096 \\
      --enable-metrics"""
    report = lint_command(cmd, QWEN35_27B, lookup_gpu("H200"), 2)
    assert report.codes == ()
    assert report.left_to_engine == ()


def test_deepseek_v3_tp_ep_vllm_command_is_clean() -> None:
    cmd = (
        "vllm serve deepseek-ai/DeepSeek-V3 --tensor-parallel-size 8 --enable-expert-parallel "
        "--max-model-len 131072 --gpu-memory-utilization 0.92"
    )
    report = lint_command(cmd, DSV3, lookup_gpu("H200"), 8)
    assert report.codes == ()
    assert [e.flag for e in report.left_to_engine] == ["--attention-backend"]


def test_glm52_with_ep_size_on_b300_is_clean() -> None:
    report = lint_command(GLM52_SGLANG + " --ep-size 8", GLM5, lookup_gpu("B300"), 8)
    assert report.findings == ()


# --- input forms ----------------------------------------------------------------------------


def test_openai_api_server_module_is_vllm() -> None:
    report = lint_command("python -m vllm.entrypoints.openai.api_server --model m -tp 2")
    assert report.engine == "vllm" and report.model == "m"


def test_env_prefix_comments_and_pipes_are_shell_not_flags() -> None:
    cmd = (
        "# launch\nCUDA_VISIBLE_DEVICES=0,1 VLLM_USE_DEEP_GEMM=0 vllm serve m \\\n"
        "  -tp 2 \\\n  --max-model-len 8192  # short first\n 2>&1 | tee serve.log"
    )
    report = lint_command(cmd)
    assert report.codes == ()
    assert [e.flag for e in report.explanations] == ["m", "-tp", "--max-model-len"]


def test_kubernetes_command_and_args_lists() -> None:
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
        - zai-org/GLM-5
        - --tp
        - "8"
        - --mem-fraction-static
        - 0.88
"""
    report = lint_command(manifest, GLM5, lookup_gpu("H200"), 8)
    assert report.parsed_from == "yaml" and report.engine == "sglang"
    assert "moe-without-ep" in codes(report)


def test_args_only_manifest_infers_the_engine_from_the_flags() -> None:
    manifest = "args:\n  - --model\n  - m\n  - --gpu-memory-utilization\n  - '0.9'\n"
    report = lint_command(manifest)
    assert report.engine == "vllm"
    assert "engine-inferred" in codes(report)


def test_shell_dash_c_inside_a_manifest() -> None:
    manifest = 'command: ["/bin/sh", "-c"]\nargs: ["vllm serve m --tensor-parallel-size 2"]\n'
    assert lint_command(manifest).engine == "vllm"


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
def test_bad_input_raises_input_error_naming_command(text: str) -> None:
    with pytest.raises(InputError) as err:
        lint_command(text)
    assert err.value.field == "command"


def test_bad_gpu_count_raises_input_error_naming_gpus() -> None:
    with pytest.raises(InputError) as err:
        lint_command("vllm serve m", gpus=0)
    assert err.value.field == "gpus"


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300))
def test_any_text_gives_a_report_or_an_input_error(text: str) -> None:
    for candidate in (text, "vllm serve " + text, "python -m sglang.launch_server " + text):
        try:
            report = lint_command(candidate)
        except InputError as err:
            assert err.field == "command"
        else:
            assert isinstance(format_report(report), str)
            json.dumps(report.to_dict())


# --- CLI ------------------------------------------------------------------------------------


def _facts_loader(source: str) -> ModelFacts:
    if source == "zai-org/GLM-5":
        return GLM5
    raise InputError("model", "a known model")


def test_cli_json_report_exits_0_even_with_findings(capsys: pytest.CaptureFixture[str]) -> None:
    rc = cli_main(
        [GLM52_SGLANG, "--model", "zai-org/GLM-5", "--gpu", "B300", "--gpus", "8", "--json"],
        _facts_loader,
    )
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    assert [f["code"] for f in out["findings"]] == ["moe-without-ep"]
    assert {e["flag"] for e in out["left_to_engine"]} == {"--kv-cache-dtype", "--attention-backend"}


def test_cli_help_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["--help"], _facts_loader) == 0
    assert capsys.readouterr().out.startswith("lint ")


def test_cli_text_report(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main([GLM52_SGLANG], _facts_loader) == 0
    out = capsys.readouterr().out
    assert out.startswith("engine: SGLang 0.5.23")


@pytest.mark.parametrize(
    ("argv", "field"),
    [
        (["ls -la"], "command"),
        (["vllm serve m", "--gpus", "two"], "gpus"),
        (["vllm serve m", "--gpu", "Voodoo 5"], "gpu"),
        (["vllm serve m", "--model", "nope/nope"], "model"),
        ([], "argv"),
        (["vllm serve m", "--frobnicate"], "argv"),
    ],
)
def test_cli_bad_input_exits_2_with_one_line_naming_the_field(
    argv: list[str], field: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli_main(argv, _facts_loader) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {field}:")
