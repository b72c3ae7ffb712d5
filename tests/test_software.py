"""Step 4, software: versions, parsers, checkpoint formats and flags for every bundled config."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from engine.engines import adapter
from engine.errors import InputError
from engine.model.checkpoint import detect_checkpoint_format
from engine.software.software_report import (
    data_problems,
    known_architectures,
    software_report,
)

MODELS = Path(__file__).resolve().parent.parent / "data" / "models"
CONFIGS = sorted(MODELS.glob("*.json"))
ENGINES = ("vllm", "sglang")


def load(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((MODELS / f"{name}.json").read_text())
    return data


def test_software_yaml_only_names_what_the_pinned_engines_know() -> None:
    assert data_problems() == []


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.stem)
def test_every_bundled_config_gets_a_report(path: Path, engine: str) -> None:
    config = json.loads(path.read_text())
    report = software_report(config, engine)  # type: ignore[arg-type]
    assert report.architecture == config["architectures"][0]
    assert report.sources, "every report says where its facts came from"
    assert report.quantization is None  # both engines read quant_method from config.json
    json.dumps(report.to_json())


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.stem)
def test_every_emitted_name_exists_in_the_engine_registries(path: Path, engine: str) -> None:
    report = software_report(json.loads(path.read_text()), engine)  # type: ignore[arg-type]
    if report.tool_call_parser is not None:
        assert report.tool_call_parser in adapter(engine).registries.tool_call_parsers  # type: ignore[arg-type]
    if report.reasoning_parser is not None:
        assert report.reasoning_parser in adapter(engine).registries.reasoning_parsers  # type: ignore[arg-type]
    for flag in report.extra_flags:
        assert adapter(engine).lookup(flag) is not None, flag  # type: ignore[arg-type]
        assert flag in report.flag_reasons


def test_every_bundled_architecture_has_a_software_row() -> None:
    archs = {json.loads(p.read_text())["architectures"][0] for p in CONFIGS}
    assert archs <= known_architectures()


@pytest.mark.parametrize(
    ("model", "vllm_tool", "vllm_reasoning", "sglang_tool", "sglang_reasoning"),
    [
        ("deepseek-ai__DeepSeek-V3.1", "deepseek_v31", "deepseek_v3", "deepseekv31", "deepseek-v3"),
        ("deepseek-ai__DeepSeek-V3", "deepseek_v3", None, "deepseekv3", None),
        ("deepseek-ai__DeepSeek-V3.2", "deepseek_v32", "deepseek_v3", "deepseekv32", "deepseek-v3"),
        (
            "deepseek-ai__DeepSeek-V4-Flash",
            "deepseek_v4",
            "deepseek_v4",
            "deepseekv4",
            "deepseek-v4",
        ),
        ("moonshotai__Kimi-K2-Instruct", "kimi_k2", None, "kimi_k2", None),
        ("openai__gpt-oss-120b", "openai", "openai_gptoss", "gpt-oss", "gpt-oss"),
        ("zai-org__GLM-5", "glm47", "glm45", "glm47", "glm45"),
        ("zai-org__GLM-4.7", "glm47", "glm45", "glm47", "glm45"),
        ("Qwen__Qwen3-32B", "hermes", "qwen3", "qwen", "qwen3"),
        ("Qwen__Qwen3.5-27B", "qwen3_coder", "qwen3", "qwen3_coder", "qwen3"),
        ("Qwen__Qwen3-Next-80B-A3B-Thinking", "hermes", "qwen3", "qwen", "qwen3"),
        ("Qwen__Qwen2.5-72B", "hermes", None, "qwen25", None),
        ("meta-llama__Llama-3.1-70B-Instruct", "llama3_json", None, "llama3", None),
        ("meta-llama__Llama-4-Scout-17B-16E-Instruct", "llama4_pythonic", None, "pythonic", None),
        ("google__gemma-4-26B-A4B", "gemma4", "gemma4", "gemma4", "gemma4"),
        (
            "nvidia__NVIDIA-Nemotron-3-Nano-30B-A3B-BF16",
            "qwen3_coder",
            "nemotron_v3",
            "qwen3_coder",
            "nemotron_3",
        ),
    ],
)
def test_parser_names_per_engine(
    model: str,
    vllm_tool: str | None,
    vllm_reasoning: str | None,
    sglang_tool: str | None,
    sglang_reasoning: str | None,
) -> None:
    config = load(model)
    v = software_report(config, "vllm")
    s = software_report(config, "sglang")
    assert (v.tool_call_parser, v.reasoning_parser) == (vllm_tool, vllm_reasoning)
    assert (s.tool_call_parser, s.reasoning_parser) == (sglang_tool, sglang_reasoning)


def test_deepseek_v31_is_told_apart_from_v3_by_its_ue8m0_scale_format() -> None:
    v31 = load("deepseek-ai__DeepSeek-V3.1")
    assert software_report(v31, "vllm").family == "DeepSeek-V3.1 / V3.1-Terminus"
    del v31["quantization_config"]["scale_fmt"]
    assert software_report(v31, "vllm").tool_call_parser == "deepseek_v3"


@pytest.mark.parametrize(
    "model",
    [
        "meta-llama__Llama-2-7b-hf",
        "mistralai__Mistral-7B-v0.1",
        "nvidia__Nemotron-H-56B-Base-8K",
        "tiiuae__falcon-7b-instruct",
    ],
)
def test_models_without_a_tool_format_get_no_parser(model: str) -> None:
    report = software_report(load(model), "vllm")
    assert report.tool_call_parser is None
    assert report.reasoning_parser is None
    assert "--enable-auto-tool-choice" not in report.extra_flags


def test_mistral_with_the_v3_vocabulary_gets_the_mistral_parser() -> None:
    config = load("mistralai__Mistral-7B-v0.1") | {"vocab_size": 32768}
    assert software_report(config, "vllm").tool_call_parser == "mistral"
    assert software_report(config, "sglang").tool_call_parser == "mistral"


def test_vllm_tool_parser_comes_with_enable_auto_tool_choice() -> None:
    report = software_report(load("Qwen__Qwen3-32B"), "vllm")
    assert "--enable-auto-tool-choice" in report.extra_flags
    assert (
        "--enable-auto-tool-choice"
        not in software_report(load("Qwen__Qwen3-32B"), "sglang").extra_flags
    )


def test_deepseek_v32_on_vllm_needs_its_tokenizer_mode_and_0_18_0() -> None:
    report = software_report(load("deepseek-ai__DeepSeek-V3.2"), "vllm")
    assert "--tokenizer-mode=deepseek_v32" in report.extra_flags
    assert report.min_version == "0.18.0"


@pytest.mark.parametrize(
    ("model", "engine", "minimum"),
    [
        ("deepseek-ai__DeepSeek-V3", "vllm", "0.6.6"),
        ("deepseek-ai__DeepSeek-V3", "sglang", "0.4.1"),
        ("openai__gpt-oss-120b", "vllm", "0.10.1"),
        ("openai__gpt-oss-120b", "sglang", "0.5.0rc2"),
        ("Qwen__Qwen3-Next-80B-A3B-Thinking", "vllm", "0.11.0"),
        ("meta-llama__Llama-4-Scout-17B-16E-Instruct", "vllm", "0.8.3"),
        ("meta-llama__Llama-3.1-70B-Instruct", "vllm", "0.5.3.post1"),
        ("zai-org__GLM-5", "vllm", "0.16.0"),
    ],
)
def test_minimum_versions(model: str, engine: str, minimum: str) -> None:
    assert software_report(load(model), engine).min_version == minimum  # type: ignore[arg-type]


def test_unknown_architecture_has_no_minimum_no_parsers_and_a_risk_note() -> None:
    report = software_report({"architectures": ["BrandNewForCausalLM"]}, "vllm")
    assert report.min_version is None
    assert report.tool_call_parser is None and report.reasoning_parser is None
    assert not report.natively_supported
    assert any(n.startswith("Risk: parser names") for n in report.notes)
    assert any("not in data/software.yaml" in n for n in report.notes)


def test_auto_map_on_an_unknown_architecture_needs_trust_remote_code() -> None:
    config = {"architectures": ["BrandNewForCausalLM"], "auto_map": {"AutoConfig": "c.C"}}
    for engine in ENGINES:
        report = software_report(config, engine)  # type: ignore[arg-type]
        assert report.extra_flags == ["--trust-remote-code"]
        assert "auto_map" in report.flag_reasons["--trust-remote-code"]


def test_auto_map_on_a_native_architecture_does_not_add_trust_remote_code() -> None:
    report = software_report(load("deepseek-ai__DeepSeek-V3"), "vllm")
    assert report.natively_supported
    assert "--trust-remote-code" not in report.extra_flags


def test_kimi_k2_needs_remote_code_for_its_tokenizer() -> None:
    for engine in ENGINES:
        report = software_report(load("moonshotai__Kimi-K2-Instruct"), engine)  # type: ignore[arg-type]
        assert "--trust-remote-code" in report.extra_flags
        assert "tokenizer" in report.flag_reasons["--trust-remote-code"]


@pytest.mark.parametrize(
    "model", ["Qwen__Qwen3.5-27B", "meta-llama__Llama-4-Scout-17B-16E-Instruct"]
)
def test_early_fusion_vlm_served_text_only_gets_language_model_only(model: str) -> None:
    for engine in ENGINES:
        report = software_report(load(model), engine, text_only=True)  # type: ignore[arg-type]
        assert report.multimodal == "early-fusion"
        assert "--language-model-only" in report.extra_flags
        plain = software_report(load(model), engine)  # type: ignore[arg-type]
        assert "--language-model-only" not in plain.extra_flags
        assert any("early-fusion" in n for n in plain.notes)


def test_text_only_on_a_text_model_adds_nothing() -> None:
    report = software_report(load("Qwen__Qwen3-32B"), "vllm", text_only=True)
    assert report.multimodal is None
    assert "--language-model-only" not in report.extra_flags


def test_late_fusion_vlm_is_multimodal_without_the_early_fusion_note() -> None:
    report = software_report(load("Qwen__Qwen2.5-VL-7B-Instruct"), "vllm")
    assert report.multimodal == "multimodal"


# ---- checkpoint formats -------------------------------------------------------------------


def test_gpt_oss_120b_checkpoint_is_mxfp4() -> None:
    fmt = detect_checkpoint_format(load("openai__gpt-oss-120b"))
    assert fmt.name == "mxfp4"
    assert fmt.weight_dtype == "mxfp4"
    assert software_report(load("openai__gpt-oss-120b"), "vllm").checkpoint_format == "mxfp4"


def test_deepseek_v3_checkpoint_is_fp8_with_128x128_blocks() -> None:
    fmt = detect_checkpoint_format(load("deepseek-ai__DeepSeek-V3"))
    assert fmt.name == "fp8-block"
    assert fmt.weight_dtype == "fp8"
    assert "block 128x128" in fmt.detail


@pytest.mark.parametrize(
    ("model", "name"),
    [
        ("meta-llama__Llama-2-7b-hf", "fp16"),
        ("Qwen__Qwen3-32B", "bf16"),
        ("Qwen__Qwen3.5-27B", "bf16"),  # torch_dtype sits in text_config
        ("google__gemma-4-26B-A4B", "bf16"),  # transformers 5 spells it "dtype"
    ],
)
def test_unquantized_checkpoints_take_the_config_dtype(model: str, name: str) -> None:
    assert detect_checkpoint_format(load(model)).name == name


def test_nvfp4_modelopt_config() -> None:
    config = {
        "architectures": ["LlamaForCausalLM"],
        "quantization_config": {
            "quant_method": "modelopt",
            "quantization": {"quant_algo": "NVFP4", "kv_cache_quant_algo": "FP8", "group_size": 16},
        },
    }
    fmt = detect_checkpoint_format(config)
    assert (fmt.name, fmt.weight_dtype) == ("nvfp4", "nvfp4")
    report = software_report(config, "sglang")
    assert report.quantization is None
    assert any("'modelopt_fp4'" in n for n in report.notes)


def test_awq_and_gptq_record_bits_and_group_size() -> None:
    awq = detect_checkpoint_format(
        {
            "architectures": ["Qwen3ForCausalLM"],
            "quantization_config": {"quant_method": "awq", "bits": 4, "group_size": 128},
        }
    )
    assert (awq.name, awq.weight_dtype, awq.bits, awq.group_size) == ("awq", "int4", 4, 128)
    gptq = detect_checkpoint_format(
        {
            "architectures": ["Qwen3ForCausalLM"],
            "quantization_config": {"quant_method": "gptq", "bits": 8, "group_size": 64},
        }
    )
    assert (gptq.name, gptq.weight_dtype, gptq.bits, gptq.group_size) == ("gptq", "int8", 8, 64)


def test_compressed_tensors_fp8_and_nvfp4_schemes() -> None:
    def ct(weights: dict[str, Any], fmt: str) -> dict[str, Any]:
        group = {"weights": weights, "input_activations": {"num_bits": 8, "type": "float"}}
        return {
            "architectures": ["LlamaForCausalLM"],
            "quantization_config": {
                "quant_method": "compressed-tensors",
                "format": fmt,
                "config_groups": {"group_0": group},
            },
        }

    fp8 = detect_checkpoint_format(
        ct({"num_bits": 8, "type": "float", "strategy": "channel"}, "float-quantized")
    )
    assert (fp8.name, fp8.weight_dtype) == ("compressed-tensors", "fp8")
    nvfp4 = detect_checkpoint_format(
        ct({"num_bits": 4, "type": "float", "group_size": 16}, "nvfp4-pack-quantized")
    )
    assert nvfp4.weight_dtype == "nvfp4"
    w4a16 = detect_checkpoint_format(
        ct({"num_bits": 4, "type": "int", "group_size": 128}, "pack-quantized")
    )
    assert (w4a16.weight_dtype, w4a16.bits, w4a16.group_size) == ("int4", 4, 128)


@pytest.mark.parametrize(
    ("model_id", "name", "weight_dtype"),
    [
        ("nvidia/Llama-3.3-70B-Instruct-FP8", "fp8", "fp8"),
        ("nvidia/Llama-3.3-70B-Instruct-NVFP4", "nvfp4", "nvfp4"),
        ("nvidia/DeepSeek-R1-FP4", "nvfp4", "nvfp4"),
        ("Qwen/Qwen3-32B-AWQ", "awq", "unknown"),
        ("hugging-quants/Meta-Llama-3.1-70B-Instruct-AWQ-INT4", "awq", "int4"),
        ("Qwen/Qwen3.5-27B-GPTQ-Int4", "gptq", "int4"),
        ("RedHatAI/Meta-Llama-3.1-8B-Instruct-quantized.w8a8", "compressed-tensors", "int8"),
    ],
)
def test_model_id_suffix_names_the_format_when_the_config_does_not(
    model_id: str, name: str, weight_dtype: str
) -> None:
    fmt = detect_checkpoint_format(load("meta-llama__Llama-3.3-70B-Instruct"), model_id)
    assert (fmt.name, fmt.weight_dtype, fmt.from_model_id) == (name, weight_dtype, True)


def test_config_wins_over_the_model_id() -> None:
    fmt = detect_checkpoint_format(load("openai__gpt-oss-120b"), "someone/gpt-oss-120b-AWQ")
    assert fmt.name == "mxfp4"
    assert not fmt.from_model_id
    assert any("config wins" in n for n in fmt.notes)


def test_every_format_resolves_to_a_registered_quantization_method() -> None:
    for engine in ENGINES:
        for path in CONFIGS:
            report = software_report(json.loads(path.read_text()), engine)  # type: ignore[arg-type]
            for note in report.notes:
                if "uses its '" in note:
                    method = note.split("uses its '")[1].split("'")[0]
                    assert method in adapter(engine).registries.quantization_methods  # type: ignore[arg-type]


def test_bitsandbytes_is_not_a_vllm_0_33_0_method() -> None:
    config = {
        "architectures": ["LlamaForCausalLM"],
        "quantization_config": {"quant_method": "bitsandbytes", "load_in_4bit": True},
    }
    fmt = detect_checkpoint_format(config)
    assert (fmt.name, fmt.bits) == ("bitsandbytes", 4)
    assert any("not in vLLM 0.33.0" in n for n in software_report(config, "vllm").notes)


# ---- bad input ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "config",
    [
        {"model_type": "llama"},
        {"architectures": []},
        {"architectures": None},
        {"architectures": [""]},
        {"architectures": "LlamaForCausalLM"},
    ],
)
def test_config_without_architectures_is_an_input_error(config: dict[str, Any]) -> None:
    with pytest.raises(InputError) as err:
        software_report(config, "vllm")
    assert err.value.field == "architectures"
    assert err.value.expected == 'a non-empty list of model class names, e.g. ["LlamaForCausalLM"]'


def test_non_hf_reference_config_is_an_input_error() -> None:
    config = json.loads(
        (MODELS / "non_hf" / "deepseek-ai__DeepSeek-V2__inference_config_236B.json").read_text()
    )
    with pytest.raises(InputError) as err:
        software_report(config, "sglang")
    assert err.value.field == "architectures"


def test_unknown_engine_is_an_input_error() -> None:
    with pytest.raises(InputError) as err:
        software_report(load("Qwen__Qwen3-8B"), "tgi")  # type: ignore[arg-type]
    assert err.value.field == "engine"


def test_malformed_quantization_config_names_the_field() -> None:
    with pytest.raises(InputError) as err:
        software_report({"architectures": ["X"], "quantization_config": "fp8"}, "vllm")
    assert err.value.field == "quantization_config"
