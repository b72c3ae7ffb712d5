"""A ModelOpt NVFP4 checkpoint from a local hub cache: config.json without a
quantization_config, hf_quant_config.json beside it (ModelOpt 0.29 and before), and the
safetensors index. Never touches the network (HF_HUB_OFFLINE, a temporary HF_HUB_CACHE)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import huggingface_hub.constants as hf_constants
import pytest

from engine.diagnose import Options, diagnose
from engine.errors import InputError
from engine.model.loader import MODELS_DIR, load_files, load_hub, load_model
from engine.model.weights import compare_checkpoint
from engine.scenario import make_scenario
from engine.study import study
from engine.text.words import say

REPO = "nvidia/Llama-3.3-70B-Instruct-FP4"
CONFIG = json.loads((MODELS_DIR / "meta-llama__Llama-3.3-70B-Instruct.json").read_text())
# hf_quant_config.json published with nvidia/Llama-3.3-70B-Instruct-FP4 (see
# fixtures/configs_wild/SOURCES.md)
HF_QUANT = {
    "producer": {"name": "modelopt", "version": "0.23.0"},
    "quantization": {
        "quant_algo": "NVFP4",
        "kv_cache_quant_algo": "FP8",
        "group_size": 16,
        "exclude_modules": ["lm_head"],
    },
}
H, INTER, LAYERS, VOCAB, KV = 8192, 28672, 80, 128256, 8 * 128
LINEARS = {  # (out, in) of every linear of one decoder layer
    "self_attn.q_proj": (H, H),
    "self_attn.k_proj": (KV, H),
    "self_attn.v_proj": (KV, H),
    "self_attn.o_proj": (H, H),
    "mlp.gate_proj": (INTER, H),
    "mlp.up_proj": (INTER, H),
    "mlp.down_proj": (H, INTER),
}


def nvfp4_index() -> tuple[dict[str, Any], int]:
    """The index a ModelOpt NVFP4 export writes for this architecture, with total_size summed
    tensor by tensor: each linear stores packed E2M1 weights (U8 [out, in/2]), FP8 scales per
    16 ([out, in/16]) and two FP32 scalars (weight_scale_2, input_scale); FP8 KV adds k_scale
    and v_scale per layer; embeddings, lm_head (excluded) and norms stay BF16."""
    sizes: dict[str, int] = {"model.embed_tokens.weight": VOCAB * H * 2}
    for i in range(LAYERS):
        p = f"model.layers.{i}"
        for name, (out, inp) in LINEARS.items():
            sizes[f"{p}.{name}.weight"] = out * inp // 2
            sizes[f"{p}.{name}.weight_scale"] = out * inp // 16
            sizes[f"{p}.{name}.weight_scale_2"] = 4
            sizes[f"{p}.{name}.input_scale"] = 4
        sizes[f"{p}.self_attn.k_scale"] = 4
        sizes[f"{p}.self_attn.v_scale"] = 4
        sizes[f"{p}.input_layernorm.weight"] = H * 2
        sizes[f"{p}.post_attention_layernorm.weight"] = H * 2
    sizes["model.norm.weight"] = H * 2
    sizes["lm_head.weight"] = VOCAB * H * 2
    total = sum(sizes.values())
    index = {
        "metadata": {"total_size": total},
        "weight_map": {
            k: f"model-0000{1 + n % 4}-of-00004.safetensors" for n, k in enumerate(sizes)
        },
    }
    return index, total


def hub_cache(tmp: Path, repo: str, files: dict[str, Any]) -> Path:
    """The layout huggingface_hub reads offline: refs/main -> snapshots/<sha>/<files>."""
    sha = "0123456789abcdef0123456789abcdef01234567"
    base = tmp / f"models--{repo.replace('/', '--')}"
    (base / "refs").mkdir(parents=True)
    (base / "refs" / "main").write_text(sha)
    snap = base / "snapshots" / sha
    snap.mkdir(parents=True)
    for name, doc in files.items():
        (snap / name).write_text(json.dumps(doc))
    return tmp


@pytest.fixture
def offline_hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    monkeypatch.setattr(hf_constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(hf_constants, "HF_HUB_CACHE", str(tmp_path))
    return tmp_path


def test_modelopt_nvfp4_checkpoint_from_the_hub_cache(offline_hub: Path) -> None:
    index, total = nvfp4_index()
    hub_cache(
        offline_hub,
        REPO,
        {
            "config.json": CONFIG,
            "hf_quant_config.json": HF_QUANT,
            "model.safetensors.index.json": index,
        },
    )
    loaded = load_hub(REPO)
    assert loaded.source == "hub"
    assert loaded.files == ("config.json", "hf_quant_config.json", "model.safetensors.index.json")
    qc = loaded.config.quantization_config
    assert qc is not None and qc["quant_method"] == "modelopt"  # vLLM: producer modelopt

    d = diagnose(loaded.config, Options(kv_dtype="auto"))
    assert d.weights.format == "nvfp4" and d.weights.weight_dtype == "nvfp4"
    # kv_cache_quant_algo FP8 -> vLLM resolves auto to fp8_e4m3: 80 x 8 x (128 + 128) x 1 B
    assert d.kv_dtype.stored == "fp8_e4m3"
    assert d.kv.kv_bytes_per_token == 80 * 8 * 256 == 163_840

    # measured (index) beside computed: the difference is the FP32 scalars alone
    ckpt = loaded.checkpoint
    assert ckpt is not None and ckpt.total_size == total and ckpt.source == f"hub {REPO}"
    cmp = compare_checkpoint(d.weights, ckpt)
    scalars = LAYERS * (len(LINEARS) * 2 * 4 + 2 * 4)
    assert cmp.measured_bytes - cmp.computed_bytes == scalars
    assert abs(cmp.relative_difference) < 1e-6
    assert "computed" in say(cmp.formula()) and "measured" in say(cmp.formula())
    assert say(cmp.formula(), "ko") != say(cmp.formula())


@pytest.mark.parametrize(("gpu", "status"), [("H100", "fail"), ("H200", "fail"), ("B200", "pass")])
def test_nvfp4_gate_reads_the_hf_quant_config(offline_hub: Path, gpu: str, status: str) -> None:
    index, _ = nvfp4_index()
    hub_cache(
        offline_hub,
        REPO,
        {
            "config.json": CONFIG,
            "hf_quant_config.json": HF_QUANT,
            "model.safetensors.index.json": index,
        },
    )
    st = study(make_scenario(source="hub", model=REPO, gpu=gpu, gpus_per_node=4))
    gate = next(g for g in st.gates.gates if g.kind == "nvfp4_weights")
    assert gate.status == status
    assert st.weights.weight_dtype == "nvfp4"
    assert (st.verdict.status == "blocked") == (status == "fail")


def test_config_json_quantization_config_wins_over_hf_quant_config(offline_hub: Path) -> None:
    inline = CONFIG | {
        "quantization_config": {"quant_method": "fp8", "weight_block_size": [128, 128]}
    }
    hub_cache(offline_hub, REPO, {"config.json": inline, "hf_quant_config.json": HF_QUANT})
    loaded = load_hub(REPO)
    d = diagnose(loaded.config)
    assert d.weights.weight_dtype == "fp8"
    assert d.kv_dtype.stored == "bfloat16"  # no ModelOpt KV declaration is read
    assert loaded.checkpoint is None


def test_a_repo_without_companions_reads_config_json_alone(offline_hub: Path) -> None:
    hub_cache(offline_hub, "acme/plain", {"config.json": CONFIG})
    loaded = load_hub("acme/plain")
    assert loaded.files == ("config.json",)
    assert diagnose(loaded.config).weights.weight_dtype == "bf16"


def test_catalog_model_answers_an_offline_hub_miss_and_says_so(offline_hub: Path) -> None:
    loaded = load_hub("Qwen/Qwen3-8B")
    assert loaded.source == "catalog" and loaded.name == "Qwen/Qwen3-8B"
    assert "bundled" in say(loaded.note) and "HF_HUB_OFFLINE" in say(loaded.note)
    assert loaded.config.hidden_size == 4096


def test_an_official_fp8_sibling_answers_an_offline_miss_from_its_bundled_base(
    offline_hub: Path,
) -> None:
    """data/recipes.yaml names nvidia/Llama-3.1-70B-Instruct-FP8 as the FP8 sibling of the
    bundled Llama-3.1-70B-Instruct: offline, it is that config in FP8, under its own id."""
    loaded = load_hub("nvidia/Llama-3.1-70B-Instruct-FP8")
    base = load_hub("meta-llama/Llama-3.1-70B-Instruct")
    assert loaded.source == "hub" and loaded.name == "nvidia/Llama-3.1-70B-Instruct-FP8"
    assert "HF_HUB_OFFLINE" in say(loaded.note)
    assert diagnose(loaded.config).weights.weight_dtype == "fp8"
    assert diagnose(base.config).weights.weight_dtype == "bf16"
    # the same shapes: 1 byte per weight where the base has 2 (norms, embeddings aside)
    w, b = diagnose(loaded.config).weights, diagnose(base.config).weights
    assert w.params_total == b.params_total
    assert 0.5 < w.weight_bytes / b.weight_bytes < 0.52


def test_an_id_the_recipes_do_not_name_still_fails_offline(offline_hub: Path) -> None:
    with pytest.raises(InputError) as err:
        load_hub("nvidia/Not-A-Listed-Checkpoint-FP8")
    assert err.value.field == "model"


def test_upload_of_the_three_files_matches_the_hub(offline_hub: Path) -> None:
    index, total = nvfp4_index()
    files = {
        "config.json": json.dumps(CONFIG).encode(),
        "hf_quant_config.json": json.dumps(HF_QUANT).encode(),
        "model.safetensors.index.json": json.dumps(index).encode(),
    }
    up = load_files(files)
    assert up.source == "upload" and up.checkpoint is not None
    assert up.checkpoint.total_size == total
    assert diagnose(up.config).weights.weight_dtype == "nvfp4"


def test_local_folder_reads_the_companions_beside_config_json(tmp_path: Path) -> None:
    index, total = nvfp4_index()
    for name, doc in (
        ("config.json", CONFIG),
        ("hf_quant_config.json", HF_QUANT),
        ("model.safetensors.index.json", index),
    ):
        (tmp_path / name).write_text(json.dumps(doc))
    loaded = load_model(str(tmp_path))
    assert loaded.source == "file" and loaded.checkpoint is not None
    assert loaded.checkpoint.total_size == total
    assert diagnose(loaded.config).weights.format == "nvfp4"


def test_paste_accepts_the_companion_texts_too() -> None:
    from engine.model.loader import load_pasted

    index, total = nvfp4_index()
    pasted = load_pasted(
        json.dumps(CONFIG), quant_config=json.dumps(HF_QUANT), index=json.dumps(index)
    )
    assert pasted.source == "json" and pasted.checkpoint is not None
    assert pasted.checkpoint.total_size == total
    assert diagnose(pasted.config).weights.weight_dtype == "nvfp4"
