"""Launch plans: every flag and choice exists in the pinned engine tables, and the playbook's
must-sets and must-not-sets hold."""

from __future__ import annotations

import json
import shlex
from functools import cache

import pytest

from engine.diagnose import Options, diagnose
from engine.errors import InputError
from engine.hardware.gpus import Gpu, lookup_gpu
from engine.launch.plan import ENGINES, LaunchPlan, PlanError, checked, cli_main, plan
from engine.model.config import ModelConfig
from engine.model.loader import catalog_names, load_model
from engine.software.tables import lookup_flag, reasoning_parsers, tool_call_parsers

HARDWARE = [("H200", 8), ("B200", 8), ("RTX 4090", 2), ("MI300X", 8)]


@cache
def cfg(name: str) -> ModelConfig:
    return load_model(name).config


@cache
def gpu(name: str) -> Gpu:
    return lookup_gpu(name)


def make(name: str, engine: str, g: str = "H200", n: int = 8, **kw: object) -> LaunchPlan:
    return plan(cfg(name), engine, gpu(g), n, model_id=name, **kw)  # type: ignore[arg-type]


def flag_value(p: LaunchPlan, flag: str) -> str | None:
    for f in p.flags:
        if f.flag == flag:
            return f.value
    raise AssertionError(f"{flag} not in {p.argv}")


def has(p: LaunchPlan, flag: str) -> bool:
    return any(f.flag == flag for f in p.flags)


def assert_in_tables(p: LaunchPlan) -> None:
    for f in p.flags:
        info = lookup_flag(p.engine, f.flag)
        assert info is not None and info.flag == f.flag, f.flag
        assert not info.deprecated, f.flag
        assert info.takes_value == (f.value is not None), f.flag
        if f.value is not None and info.choices_enforced and info.choices is not None:
            assert f.value in info.choices, (f.flag, f.value)
        assert f.reason.strip(), f.flag
    for x in p.left_to_engine:
        assert x.reason.strip(), x.flag
    # The argv round-trips through the shell text.
    flat = p.shell().replace("\\\n", " ")
    assert shlex.split(flat) == p.argv


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("hw", HARDWARE, ids=[f"{g}x{n}" for g, n in HARDWARE])
def test_every_catalog_model_gets_a_command_in_the_real_tables(
    engine: str, hw: tuple[str, int]
) -> None:
    g, n = hw
    for name in catalog_names():
        p = make(name, engine, g, n, context=32_768)
        assert_in_tables(p)
        assert p.runnable == (not p.blocked_by), name
        if not p.runnable:
            assert all(":" in b for b in p.blocked_by)
        argv = p.argv
        assert argv[:2] == (["vllm", "serve"] if engine == "vllm" else ["python3", "-m"])
        assert flag_value(p, "--port") == "8000"


def test_deepseek_v32_on_h200_leaves_kv_dtype_and_backend_to_the_engine() -> None:
    for engine in ENGINES:
        p = make("deepseek-ai/DeepSeek-V3.2", engine)
        left = {x.flag: x.reason for x in p.left_to_engine}
        assert "--kv-cache-dtype" in left and "per layer" in left["--kv-cache-dtype"]
        assert "--attention-backend" in left and "per phase" in left["--attention-backend"]
        assert not has(p, "--kv-cache-dtype") and not has(p, "--attention-backend")


def test_sglang_dsa_on_h200_names_what_the_engine_picks() -> None:
    p = make("deepseek-ai/DeepSeek-V3.2", "sglang")
    left = {x.flag: x.reason for x in p.left_to_engine}
    assert "bf16" in left["--kv-cache-dtype"]
    assert "flashmla_sparse prefill + fa3 decode" in left["--attention-backend"]


def test_moe_model_gets_expert_parallel() -> None:
    assert has(make("Qwen/Qwen3-30B-A3B", "vllm"), "--enable-expert-parallel")
    assert flag_value(make("Qwen/Qwen3-30B-A3B", "sglang"), "--ep-size") == "8"
    assert not has(make("Qwen/Qwen3-32B", "vllm"), "--enable-expert-parallel")


def test_deepseek_v31_tool_parser_per_engine() -> None:
    v = make("deepseek-ai/DeepSeek-V3.1", "vllm")
    s = make("deepseek-ai/DeepSeek-V3.1", "sglang")
    assert flag_value(v, "--tool-call-parser") == "deepseek_v31"
    assert flag_value(s, "--tool-call-parser") == "deepseekv31"
    assert has(v, "--enable-auto-tool-choice")
    assert "deepseek_v31" in tool_call_parsers("vllm")
    assert flag_value(v, "--reasoning-parser") in reasoning_parsers("vllm")


def test_qwen3_next_vllm_batched_tokens_is_a_multiple_of_544() -> None:
    p = make("Qwen/Qwen3-Next-80B-A3B-Thinking", "vllm", "H200", 2, context=32_768)
    tokens = int(flag_value(p, "--max-num-batched-tokens") or 0)
    assert tokens % 544 == 0 and tokens >= 8192
    assert any(x.flag == "--block-size" and "544" in x.reason for x in p.left_to_engine)
    assert any("LMCache" in n and "544" in n for n in p.notes)


def test_hybrid_batched_tokens_follow_the_diagnosed_block_at_the_plan_tp() -> None:
    name = "Qwen/Qwen3-Next-80B-A3B-Thinking"
    p = make(name, "vllm", "H200", 8)
    d = diagnose(cfg(name), Options(tp=p.layout.tp, gpu_arch="sm_90"))
    assert d.kv.hybrid is not None
    assert int(flag_value(p, "--max-num-batched-tokens") or 0) % d.kv.hybrid.block_size == 0


def test_dp_attention_for_mla_at_high_concurrency() -> None:
    v = make("deepseek-ai/DeepSeek-V3", "vllm", users=512)
    assert flag_value(v, "--tensor-parallel-size") == "1"
    assert flag_value(v, "--data-parallel-size") == "8"
    s = make("deepseek-ai/DeepSeek-V3", "sglang", users=512)
    assert flag_value(s, "--tp-size") == "8" and flag_value(s, "--attn-dp-size") == "8"
    assert not has(make("deepseek-ai/DeepSeek-V3", "sglang", users=4), "--attn-dp-size")


def test_mtp_only_for_few_users() -> None:
    few = make("deepseek-ai/DeepSeek-V3", "vllm", users=4)
    spec = json.loads(flag_value(few, "--speculative-config") or "{}")
    assert spec == {"method": "mtp", "num_speculative_tokens": 1}
    assert (
        flag_value(make("deepseek-ai/DeepSeek-V3", "sglang", users=4), "--speculative-algorithm")
        == "EAGLE"
    )
    many = make("deepseek-ai/DeepSeek-V3", "vllm", users=64)
    assert not has(many, "--speculative-config")
    assert any(x.flag == "--speculative-config" for x in many.left_to_engine)


def test_multimodal_text_only_and_images() -> None:
    text = make("Qwen/Qwen3-VL-32B-Instruct", "vllm")
    assert has(text, "--language-model-only")
    img = make("Qwen/Qwen3-VL-32B-Instruct", "vllm", serve_images=True)
    assert not has(img, "--language-model-only")
    assert flag_value(img, "--mm-encoder-tp-mode") == "data"
    assert flag_value(img, "--mm-processor-cache-type") == "shm"
    with pytest.raises(InputError):
        make("Qwen/Qwen3-32B", "vllm", serve_images=True)


def test_failed_gate_blocks_but_still_plans() -> None:
    p = make("deepseek-ai/DeepSeek-V3.2", "vllm", "RTX 4090", 2)
    assert not p.runnable
    assert any("DSA" in b for b in p.blocked_by)
    assert p.argv[:3] == ["vllm", "serve", "deepseek-ai/DeepSeek-V3.2"]


def test_bad_input_raises_input_error() -> None:
    for kw in ({"users": 0}, {"prefix_overlap": 1.5}, {"latency_priority": "fast"}):
        with pytest.raises(InputError):
            make("Qwen/Qwen3-8B", "vllm", **kw)
    with pytest.raises(InputError):
        make("Qwen/Qwen3-8B", "trt")
    with pytest.raises(InputError):
        make("Qwen/Qwen3-8B", "vllm", "H200", 0)


def test_checked_rejects_flags_and_choices_not_in_the_tables() -> None:
    with pytest.raises(PlanError):
        checked("sglang", "--enable-expert-parallel", None, "x")
    with pytest.raises(PlanError):
        checked("vllm", "--mm-encoder-tp-mode", "tensor", "x")
    with pytest.raises(PlanError):
        checked("sglang", "--enable-dp-attention", None, "deprecated in 0.5.23")


def test_docker_and_json() -> None:
    p = make("Qwen/Qwen3-8B", "sglang", "H200", 1)
    d = p.docker()
    assert "--gpus all" in d and "--ipc=host" in d and "-p 8000:8000" in d
    assert "lmsysorg/sglang" in d
    v = make("Qwen/Qwen3-8B", "vllm", "H200", 1).docker()
    assert "vllm/vllm-openai" in v and "vllm serve" not in v
    j = p.to_json()
    assert {"argv", "flags", "left_to_engine", "kubernetes_yaml", "runnable", "blocked_by"} <= set(
        j
    )
    json.dumps(j)


def test_cli_json_and_text(capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        cli_main(["Qwen/Qwen3-8B", "--engine", "vllm", "--gpu", "H200", "--gpus", "1", "--json"])
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert out["argv"][:3] == ["vllm", "serve", "Qwen/Qwen3-8B"]
    assert cli_main(["Qwen/Qwen3-8B", "--engine", "sglang", "--gpu", "H200", "--gpus", "1"]) == 0
    text = capsys.readouterr().out
    assert "# --tp-size 1:" in text and "python3 -m sglang.launch_server" in text
    with pytest.raises(InputError):
        cli_main(["Qwen/Qwen3-8B", "--engine", "vllm", "--gpu", "H200"])


def test_launch_facts_are_read_once_from_data_with_sources() -> None:
    from engine.launch.plan import launch_facts

    facts = launch_facts()
    assert facts is launch_facts()
    assert facts.mtp.max_users == 8 and facts.mtp.max_users_source
    assert {"vllm", "sglang"} <= set(facts.routers)
    assert all(r.source for r in facts.routers.values())
