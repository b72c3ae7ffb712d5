"""The micro-kernels run at a real model's dimensions (python -m engine.measure.kernels --model),
presets are bundled catalog configs, and the byte checks expect the engine's own sizing."""

from __future__ import annotations

import pytest

from engine.diagnose import Options, diagnose
from engine.measure.kernels import PRESETS, preset_dims
from engine.measure.kernels.__main__ import main
from engine.measure.kernels.from_model import kernel_dims, kernel_layer_groups
from engine.measure.kernels.runner import run_all
from engine.measure.measure_data import measure_facts
from engine.model.loader import catalog_names, load_catalog, load_model


def test_deepseek_v3_dims_come_from_its_config() -> None:
    d = kernel_dims(load_model("deepseek-ai/DeepSeek-V3").config)
    assert (d.num_layers, d.num_heads, d.kv_lora_rank, d.qk_rope_head_dim) == (61, 128, 512, 64)
    assert d.num_kv_heads == 0  # MLA: one latent per token, no per-head K/V
    assert d.kv is not None and d.kv.groups == (("mla", 61, 1152, 64),)


def test_qwen3_next_dims_count_its_gated_deltanet_layers() -> None:
    d = kernel_dims(load_model("Qwen/Qwen3-Next-80B-A3B-Thinking").config)
    assert d.num_linear_layers == 36 and d.linear_num_value_heads == 32
    assert d.kv is not None and (d.kv.hybrid_block, d.kv.state_bytes) == (544, 1_097_728)


@pytest.mark.parametrize(
    "model", ["meta-llama/Meta-Llama-3.1-8B", "zai-org/GLM-5", "openai/gpt-oss-20b"]
)
def test_all_checks_pass_on_cpu_at_model_dims(
    model: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--model", model, "--json"]) == 0
    assert '"passed": false' not in capsys.readouterr().out


@pytest.mark.parametrize("model", ["Qwen/Qwen3.5-27B", "models123/Jamba-v0.1"])
def test_paged_check_passes_for_other_hybrids(model: str) -> None:
    rows = run_all("cpu", kernel_dims(load_catalog(model).config), only=["paged_kv_layout"])
    assert all(r.passed for r in rows), [r for r in rows if not r.passed]


def test_paged_check_allocates_the_engines_groups_and_hybrid_block() -> None:
    cfg = load_model("Qwen/Qwen3-Next-80B-A3B-Thinking").config
    groups, block = kernel_layer_groups(cfg)
    assert block == 544
    rows = {
        r.name: r
        for r in run_all(
            "cpu",
            kernel_dims(cfg),
            only=["paged_kv_layout"],
            layer_groups=groups,
            hybrid_block=block,
        )
    }
    assert rows["paged_bytes_per_token"].expected == diagnose(cfg).kv.kv_bytes_per_token == 24_576
    assert rows["hybrid_block_matches_engine"].passed
    assert all(r.passed for r in rows.values())


def test_every_preset_is_a_bundled_config_built_through_the_engine() -> None:
    names = set(catalog_names())
    for alias, model in measure_facts().kernel_presets.items():
        assert model in names, alias
        assert preset_dims(alias) == kernel_dims(load_catalog(model).config, model)
    assert list(PRESETS) == list(measure_facts().kernel_presets)
    assert PRESETS["llama-3.1-8b"]().num_layers == 32


def test_a_catalog_name_is_a_preset_too(capsys: pytest.CaptureFixture[str]) -> None:
    assert preset_dims("zai-org/GLM-5").num_layers == 78
    assert preset_dims("GLM-5") == preset_dims("zai-org/GLM-5")
    code = main(["--preset", "Qwen/Qwen3-30B-A3B", "--only", "moe_routing", "--json"])
    assert code == 0 and "moe_tokens_conserved" in capsys.readouterr().out


@pytest.mark.parametrize("model", catalog_names())
def test_engine_kv_per_token_is_the_sizing_steps_for_every_catalog_model(model: str) -> None:
    cfg = load_catalog(model).config
    dims = kernel_dims(cfg, model)
    sizing = diagnose(cfg, Options(kv_dtype="bf16")).kv
    assert dims.kv is not None
    # Compressed groups store one entry per several tokens: not token-paged, left out.
    paged = sum(
        int(g.spec.bytes_per_token) * g.num_layers
        for g in sizing.groups
        if g.kind not in ("mamba", "compressed")
    )
    assert dims.kv.bytes_per_token == paged
    assert dims.kv.hybrid_block == (sizing.hybrid.block_size if sizing.hybrid else None)


def test_changing_a_shape_drops_the_engines_numbers_but_a_run_setting_keeps_them() -> None:
    dims = preset_dims("deepseek-v3.2")
    assert dims.with_fields(ep_size=8).kv == dims.kv
    assert dims.with_fields(num_layers=40).kv is None
    (row,) = run_all("cpu", dims.with_fields(num_layers=40), only=["paged_kv_layout"])
    assert row.name == "paged_skipped" and row.passed
