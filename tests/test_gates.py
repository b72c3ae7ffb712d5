"""Hardware gates: the family's kernels per GPU generation, weight formats, FP8 KV, and fit at the
Study's layout."""

from __future__ import annotations

import json

import pytest

from engine.errors import InputError
from engine.gates import TP_SPLIT, family_gate, kernel_gates, weight_gates
from engine.hardware.gpus import lookup_gpu
from engine.launch.layout import REJECT_HEADS
from engine.model.architecture import build_architecture
from engine.model.family import classify
from engine.model.loader import MODELS_DIR, catalog_names, load_model
from engine.scenario import make_scenario
from engine.study import study
from engine.text.words import say
from tests.study_util import run

GENERATIONS = {
    "A100 80GB": "sm_80",
    "RTX 4090": "sm_89",
    "H200": "sm_90",
    "B200": "sm_100",
    "RTX PRO 6000": "sm_120",
    "MI300X": "gfx942",
}
FAMILY_GATE = {"DSA": "dsa", "MLA": "mla"}


@pytest.mark.parametrize("gpu_name", list(GENERATIONS))
@pytest.mark.parametrize("model", catalog_names())
def test_family_gate_follows_the_kernel_table(model: str, gpu_name: str) -> None:
    cfg = load_model(model).config
    gpu = lookup_gpu(gpu_name)
    assert gpu.arch == GENERATIONS[gpu_name]
    fam = classify(cfg, build_architecture(cfg))
    gate = family_gate(fam, gpu)
    if fam.attention_family in FAMILY_GATE:
        rules = getattr(kernel_gates(), fam.attention_family.lower())
        assert gate.kind == FAMILY_GATE[fam.attention_family]
        assert gate.status == rules.archs[gpu.arch].status
        assert gate.status != "fail" or gate.fix
    else:
        assert gate.status == "pass"
    assert gate.reason


def test_deepseek_v32_on_rtx_4090_is_blocked_by_the_dsa_kernels() -> None:
    st = run("deepseek-ai/DeepSeek-V3.2", gpu="RTX 4090", gpus_per_node=2)
    dsa = next(g for g in st.gates.gates if g.kind == "dsa")
    assert dsa.status == "fail" and "No valid attention backend" in say(dsa.reason)
    assert st.verdict.reason["gate"] == dsa.failure
    assert st.verdict.status == "blocked" and not st.gates.runs


def test_gpt_oss_120b_mxfp4_on_one_h200_passes_and_fits() -> None:
    st = run("openai/gpt-oss-120b", gpus_per_node=1)
    assert all(g.status == "pass" for g in st.gates.gates)
    assert st.gates.fits and st.verdict.runs


def test_nvfp4_checkpoint_on_h200_fails_and_passes_on_b200() -> None:
    raw = json.loads((MODELS_DIR / "meta-llama__Meta-Llama-3.1-8B.json").read_text())
    raw["quantization_config"] = {"quant_method": "modelopt", "quant_algo": "NVFP4"}
    weights = run(raw).weights
    h200 = weight_gates(weights.weight_dtype, lookup_gpu("H200"))
    b200 = weight_gates(weights.weight_dtype, lookup_gpu("B200"))
    assert next(g for g in h200 if g.kind == "nvfp4_weights").status == "fail"
    assert next(g for g in b200 if g.kind == "nvfp4_weights").status == "pass"
    assert run(raw, gpu="H200").verdict.status == "blocked"


def test_fp8_and_bf16_checkpoints_on_b200_raise_no_warning() -> None:
    for model in ("deepseek-ai/DeepSeek-V3", "meta-llama/Meta-Llama-3.1-8B", "openai/gpt-oss-120b"):
        st = run(model, gpu="B200")
        assert [g.kind for g in st.gates.gates if g.status != "pass"] == [], model


def test_fp8_checkpoint_on_ampere_is_weight_only_marlin() -> None:
    st = run("deepseek-ai/DeepSeek-V3", gpu="A100 80GB", nodes=2)
    g = next(g for g in st.gates.gates if g.kind == "fp8_weights")
    assert g.status == "warn" and "Marlin" in say(g.reason)


def test_deepseek_v3_needs_eight_h200_and_does_not_fit_on_four() -> None:
    assert run("deepseek-ai/DeepSeek-V3", gpus_per_node=4, context=8192).verdict.status == (
        "does_not_fit"
    )
    eight = run("deepseek-ai/DeepSeek-V3", gpus_per_node=8, context=8192)
    assert eight.gates.fits and eight.verdict.runs
    assert run("deepseek-ai/DeepSeek-V3", gpus_per_node=1, context=8192).min_gpus == 8


def test_a_pinned_tp_that_does_not_divide_the_heads_is_refused_naming_tp() -> None:
    with pytest.raises(InputError, match=r"^tp: ") as err:
        run("tiiuae/falcon-7b-instruct", gpu="L40S", gpus_per_node=2, tp=2)
    assert err.value.why == REJECT_HEADS(tp=2, heads=71)


def test_the_tp_gate_checks_the_layouts_tp() -> None:
    st = run("tiiuae/falcon-7b-instruct", gpu="L40S", gpus_per_node=2)
    g = next(g for g in st.gates.gates if g.kind == "tp")
    assert st.layout.tp == 1 and g.status == "pass"
    assert g.reason == TP_SPLIT(heads=71, tp=1, per=71)


def test_zero_gpus_and_missing_architectures_name_the_field() -> None:
    with pytest.raises(InputError, match=r"^gpus_per_node: "):
        run("meta-llama/Meta-Llama-3.1-8B", gpus_per_node=0)
    bare = {"hidden_size": 64, "num_attention_heads": 4, "num_hidden_layers": 2}
    with pytest.raises(InputError, match=r"^architectures: "):
        run(bare)


def test_weights_13x_one_h100_fix_names_the_fewest_gpus_not_a_shorter_context() -> None:
    """Kimi-K2 on one H100: 958.5 GiB of weights against 73.3 GiB usable. A shorter context
    cannot help; the fix is the layout search's fewest GPUs, with the overflow."""
    st = study(
        make_scenario(model="moonshotai/Kimi-K2-Instruct", gpu="H100", gpus_per_node=1, users=16)
    )
    fit = next(g for g in st.gates.gates if g.kind == "fit")
    assert fit.status == "fail" and fit.fix is not None
    assert fit.fix.code == "gate.fit.fix_weights"
    params = dict(fit.fix.params)
    assert params["n"] == st.min_gpus == 16
    assert round(params["times"].value, 1) == 13.1


def test_a_shortened_context_fix_names_the_gpus_that_hold_the_full_one() -> None:
    st = study(
        make_scenario(
            model="meta-llama/Llama-3.1-70B-Instruct", gpu="H100", gpus_per_node=2, context=131072
        )
    )
    fit = next(g for g in st.gates.gates if g.kind == "fit")
    assert fit.status == "warn"
    assert fit.fix is not None and fit.fix.code == "gate.fit.fix_gpus"
    assert dict(fit.fix.params)["n"] == st.min_gpus == 4
