"""Hardware gates: every bundled model on one GPU of each generation."""

from __future__ import annotations

import json

import pytest

from engine.diagnose import diagnose
from engine.hardware.gates import evaluate_gates, kernel_gates
from engine.hardware.gpus import lookup_gpu
from engine.model.config import normalize
from engine.model.loader import MODELS_DIR, catalog_names, load_model

GENERATIONS = {
    "A100 80GB": "sm_80",
    "RTX 4090": "sm_89",
    "H200": "sm_90",
    "B200": "sm_100",
    "RTX PRO 6000": "sm_120",
    "MI300X": "gfx942",
}
FAMILY_GATE = {"DSA": "DSA sparse-attention kernels", "MLA": "MLA attention backend"}


@pytest.mark.parametrize("gpu_name", list(GENERATIONS))
@pytest.mark.parametrize("model", catalog_names())
def test_family_gate_follows_the_kernel_table(model: str, gpu_name: str) -> None:
    cfg = load_model(model).config
    gpu = lookup_gpu(gpu_name)
    assert gpu.arch == GENERATIONS[gpu_name]
    report = evaluate_gates(cfg, gpu, 8, context=8192)
    fam = diagnose(cfg).family.attention_family
    gate = report.gates[0]
    if fam in FAMILY_GATE:
        rules = getattr(kernel_gates(), fam.lower())
        assert gate.name == FAMILY_GATE[fam]
        assert gate.status == rules.archs[gpu.arch].status
    else:
        assert gate.status == "pass"
    statuses = {g.status for g in report.gates}
    assert statuses <= {"pass", "warn", "fail"}
    assert all(g.reason for g in report.gates)
    assert all(g.fix for g in report.gates if g.status == "fail")


def test_deepseek_v32_on_rtx_4090_fails_with_the_dsa_reason() -> None:
    r = evaluate_gates(load_model("deepseek-ai/DeepSeek-V3.2").config, lookup_gpu("RTX 4090"), 2)
    dsa = next(g for g in r.gates if g.name.startswith("DSA"))
    assert dsa.status == "fail"
    assert "No valid attention backend" in dsa.reason
    assert not r.runs


def test_gpt_oss_120b_mxfp4_on_one_h200_passes_and_fits() -> None:
    r = evaluate_gates(load_model("openai/gpt-oss-120b").config, lookup_gpu("H200"), 1)
    assert all(g.status == "pass" for g in r.gates)
    assert r.fits and r.min_gpus == 1


def test_nvfp4_checkpoint_on_h200_fails_and_passes_on_b200() -> None:
    raw = json.loads((MODELS_DIR / "meta-llama__Meta-Llama-3.1-8B.json").read_text())
    raw["quantization_config"] = {"quant_method": "modelopt", "quant_algo": "NVFP4"}
    cfg = normalize(raw)
    h200 = evaluate_gates(cfg, lookup_gpu("H200"), 1)
    b200 = evaluate_gates(cfg, lookup_gpu("B200"), 1)
    assert next(g for g in h200.gates if g.name == "NVFP4 weights").status == "fail"
    assert next(g for g in b200.gates if g.name == "NVFP4 weights").status == "pass"


def test_blackwell_without_nvfp4_checkpoint_warns_hopper_speed() -> None:
    r = evaluate_gates(load_model("deepseek-ai/DeepSeek-V3").config, lookup_gpu("B200"), 8)
    g = next(g for g in r.gates if g.name == "Blackwell at Hopper speed")
    assert g.status == "warn" and "NVFP4" in g.fix


def test_fp8_checkpoint_on_ampere_is_weight_only_marlin() -> None:
    r = evaluate_gates(load_model("deepseek-ai/DeepSeek-V3").config, lookup_gpu("A100 80GB"), 8)
    g = next(g for g in r.gates if g.name == "FP8 weights")
    assert g.status == "warn" and "Marlin" in g.reason


def test_deepseek_v3_needs_eight_h200_and_does_not_fit_on_four() -> None:
    cfg = load_model("deepseek-ai/DeepSeek-V3").config
    assert not evaluate_gates(cfg, lookup_gpu("H200"), 4, context=8192).fits
    assert evaluate_gates(cfg, lookup_gpu("H200"), 8, context=8192).fits
    assert evaluate_gates(cfg, lookup_gpu("H200"), 1, context=8192).min_gpus == 8


def test_tp_that_does_not_divide_heads_fails() -> None:
    r = evaluate_gates(load_model("tiiuae/falcon-7b-instruct").config, lookup_gpu("L40S"), 2)
    g = next(g for g in r.gates if g.name == "tensor-parallel split")
    assert g.status == "fail" and "71" in g.reason


def test_zero_gpus_and_missing_architectures_name_the_field() -> None:
    from engine.errors import InputError

    cfg = load_model("meta-llama/Meta-Llama-3.1-8B").config
    with pytest.raises(InputError, match=r"^gpus: "):
        evaluate_gates(cfg, lookup_gpu("H200"), 0)
    bare = normalize({"hidden_size": 64, "num_attention_heads": 4, "num_hidden_layers": 2})
    with pytest.raises(InputError, match=r"^architectures: "):
        evaluate_gates(bare, lookup_gpu("H200"), 1)


def test_tp_split_gate_checks_the_tp_asked_for_not_all_gpus() -> None:
    cfg = load_model("tiiuae/falcon-7b-instruct").config
    r = evaluate_gates(cfg, lookup_gpu("L40S"), 2, tp=1)
    g = next(g for g in r.gates if g.name == "tensor-parallel split")
    assert g.status == "pass" and "71 heads / TP 1 = 71" in g.reason
