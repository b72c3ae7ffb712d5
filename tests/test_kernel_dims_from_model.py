"""The micro-kernels run at a real model's dimensions (python -m engine.measure.kernels --model)."""

from __future__ import annotations

import pytest

from engine.facts import kernel_dims
from engine.measure.kernels.__main__ import main
from engine.model.loader import load_model


def test_deepseek_v3_dims_come_from_its_config() -> None:
    d = kernel_dims(load_model("deepseek-ai/DeepSeek-V3").config)
    assert (d.num_layers, d.num_heads, d.kv_lora_rank, d.qk_rope_head_dim) == (61, 128, 512, 64)
    assert d.mla_bytes_per_token_per_layer == 1152


def test_qwen3_next_dims_count_its_gated_deltanet_layers() -> None:
    d = kernel_dims(load_model("Qwen/Qwen3-Next-80B-A3B-Thinking").config)
    assert d.num_linear_layers == 36 and d.linear_num_value_heads == 32


@pytest.mark.parametrize(
    "model", ["meta-llama/Meta-Llama-3.1-8B", "zai-org/GLM-5", "openai/gpt-oss-20b"]
)
def test_all_checks_pass_on_cpu_at_model_dims(
    model: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--model", model, "--json"]) == 0
    assert '"passed": false' not in capsys.readouterr().out


def test_paged_check_allocates_the_engines_groups_and_hybrid_block() -> None:
    from engine.diagnose import diagnose
    from engine.facts import kernel_layer_groups
    from engine.measure.kernels.runner import run_all

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
