"""Step 6, the minimal first launch and the /metrics lines: the playbook's numbers
(seeds/004 '최소 구성으로 띄우고 실측': --max-model-len 8192 --mem-fraction-static 0.7), a
layout's parallel flags, every flag spelled as the pinned engine tables spell it."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from engine.engines import ENGINES, Engine, adapter
from engine.errors import InputError
from engine.measure.backcalc import default_port, metrics_commands, minimal_launch
from engine.measure.first_launch import FirstLayout, first_launch


def _not_spelled_as_in_the_table(engine: Engine, flags: set[str]) -> set[str]:
    """Flags the pinned table does not know by exactly this spelling (no SGLang prefixes)."""
    return {
        f for f in flags if (info := adapter(engine).lookup(f)) is None or f not in info.spellings
    }


@pytest.mark.parametrize("engine", ENGINES)
def test_minimal_launch_uses_only_real_flags(engine: Engine) -> None:
    argv = minimal_launch(engine, "deepseek-ai/DeepSeek-V3", tp=8, max_model_len=8192)
    flags = {a for a in argv if a.startswith("--")}
    unknown = _not_spelled_as_in_the_table(engine, flags)
    assert not unknown, unknown
    assert "0.7" in argv and "8192" in argv and "8" in argv
    assert "deepseek-ai/DeepSeek-V3" in argv


@pytest.mark.parametrize("engine", ENGINES)
def test_every_layout_flag_is_in_the_pinned_table(engine: Engine) -> None:
    for layout in (FirstLayout(8, 1, 8, True), FirstLayout(2, 4, 1, False)):
        argv = first_launch(engine, "deepseek-ai/DeepSeek-V3", layout)
        unknown = _not_spelled_as_in_the_table(engine, {a for a in argv if a.startswith("--")})
        assert not unknown, unknown


def test_minimal_launch_vllm_is_a_plain_serve_command() -> None:
    assert minimal_launch("vllm", "meta-llama/Llama-3.1-8B", 1, 8192) == [
        "vllm",
        "serve",
        "meta-llama/Llama-3.1-8B",
        "--tensor-parallel-size",
        "1",
        "--max-model-len",
        "8192",
        "--gpu-memory-utilization",
        "0.7",
    ]


def test_first_launch_defaults_to_the_playbooks_8192_tokens_at_fraction_0_7() -> None:
    argv = minimal_launch("sglang", "Qwen/Qwen3-8B")
    assert argv == [
        "python3",
        "-m",
        "sglang.launch_server",
        "--model-path",
        "Qwen/Qwen3-8B",
        "--tp-size",
        "1",
        "--context-length",
        "8192",
        "--mem-fraction-static",
        "0.7",
        "--enable-metrics",
    ]


def test_vllm_dp_with_expert_parallel_is_data_parallel_size_and_enable_expert_parallel() -> None:
    argv = minimal_launch("vllm", "deepseek-ai/DeepSeek-V3", 1, dp=8, expert_parallel=True)
    assert argv[argv.index("--data-parallel-size") + 1] == "8"
    assert "--enable-expert-parallel" in argv


def test_sglang_attention_dp_is_attn_dp_size_and_ep_spans_the_tp_group() -> None:
    argv = minimal_launch("sglang", "deepseek-ai/DeepSeek-V3", 8, attn_dp=8, expert_parallel=True)
    assert argv[argv.index("--attn-dp-size") + 1] == "8"
    assert argv[argv.index("--ep-size") + 1] == "8"
    assert "--dp-size" not in argv


def test_first_launch_takes_the_planners_layout_object() -> None:
    @dataclass(frozen=True)
    class PlannedLayout:  # the shape of engine.launch.plan.Layout
        tp: int
        dp: int
        attn_dp: int
        ep: bool
        reason: str

    argv = first_launch("sglang", "m/x", PlannedLayout(4, 2, 1, False, "two replicas"))
    assert argv[argv.index("--tp-size") + 1] == "4"
    assert argv[argv.index("--dp-size") + 1] == "2"


def test_minimal_launch_refuses_bad_input() -> None:
    with pytest.raises(InputError, match="engine"):
        minimal_launch("trtllm", "m", 1, 8192)
    with pytest.raises(InputError, match="tp"):
        minimal_launch("vllm", "m", 0, 8192)
    with pytest.raises(InputError, match="max_model_len"):
        minimal_launch("vllm", "m", 1, 0)
    with pytest.raises(InputError, match="model_id"):
        minimal_launch("vllm", "a b", 1, 8192)
    with pytest.raises(InputError, match="dp"):
        minimal_launch("vllm", "m", 1, dp=0)


def test_default_ports_come_from_the_pinned_flag_tables() -> None:
    for engine in ENGINES:
        info = adapter(engine).lookup("--port")
        assert info is not None and default_port(engine) == info.default
    assert (default_port("vllm"), default_port("sglang")) == (8000, 30000)


def test_metrics_commands_are_curl_grep_lines_on_the_port() -> None:
    vllm = metrics_commands("vllm", 8000)
    assert vllm[0] == "curl -s localhost:8000/metrics | grep -E '^vllm:cache_config_info'"
    assert all(c.startswith("curl -s localhost:8000/metrics | grep ") for c in vllm)
    sglang = metrics_commands("sglang")
    assert any("token_usage" in c for c in sglang)
    assert all(c.startswith("curl -s localhost:30000/metrics | grep ") for c in sglang)
    with pytest.raises(InputError, match="port"):
        metrics_commands("vllm", 0)
