"""The model shortlist for the sidebar's GPUs and the models × GPUs comparison for one traffic."""

from __future__ import annotations

import json

import pytest

from engine.budget import BUDGET
from engine.capacity import shortlist as shortlist_mod
from engine.capacity.compare import compare
from engine.capacity.shortlist import shortlist, shortlist_base
from engine.cli import main
from engine.model.family import AttentionFamily
from engine.scenario import make_scenario
from engine.study import footprint


@pytest.fixture(scope="module")
def ada_pair():  # type: ignore[no-untyped-def]
    return shortlist(make_scenario(gpu="RTX 4090", gpus_per_node=2))


def test_two_rtx_4090s_run_a_dense_27_to_32b_model_quantized(ada_pair) -> None:  # type: ignore[no-untyped-def]
    """A dense 20-30 B model runs on 2 × 24 GB only as FP8 or 4-bit (AWQ / GPTQ), with users."""
    picks = {e.model: e.pick for e in ada_pair.running}
    dense = [
        (m, v)
        for m, v in picks.items()
        if v is not None and v.study is not None and not v.study.family.moe
        and 20e9 <= v.study.weights.params_total <= 34e9
    ]  # fmt: skip
    assert dense, "no dense 20-30 B model runs on 2 × RTX 4090"
    for model, v in dense:
        assert v.kind in ("fp8", "online_fp8", "awq", "gptq_int4"), (model, v.kind)
        assert v.users >= 1
    assert {"awq", "gptq_int4"} & {v.kind for _, v in dense}


def test_two_rtx_4090s_run_small_moe_and_hybrid_models(ada_pair) -> None:  # type: ignore[no-untyped-def]
    runs = [e.pick.study for e in ada_pair.running if e.pick and e.pick.study]
    assert any(st.family.moe and st.weights.params_active < 5e9 for st in runs)
    assert any(st.family.attention_family == AttentionFamily.HYBRID for st in runs)


def test_two_rtx_4090s_list_no_dsa_model_and_say_why(ada_pair) -> None:  # type: ignore[no-untyped-def]
    for e in ada_pair.running:
        assert (
            e.pick and e.pick.study and e.pick.study.family.attention_family != AttentionFamily.DSA
        )
    dsa = [e for e in ada_pair.gated if e.model == "deepseek-ai/DeepSeek-V3.2"]
    assert dsa and dsa[0].problem is not None
    why = dsa[0].problem
    assert why.code == "verdict.blocked"
    assert {d.code for d in why.walk()} >= {"gate.failed.dsa", "gate.kernels.dsa.sm_89.reason"}


def test_a_shortlist_counts_every_study_it_keeps_against_the_memory_budget() -> None:
    # a shortlist keeps one Study per model and checkpoint after the Study cache lets them go:
    # its bytes are the process budget's, so 32 of them no longer hold a gigabyte past it
    s = make_scenario(gpu="RTX 4090", gpus_per_node=2)
    kept = shortlist(s)
    held = sum(footprint(v.study) for e in kept.entries for v in e.variants if v.study is not None)
    assert held > 1_000_000
    assert shortlist_mod._cache.get(shortlist_base(s)) is kept  # the newest entry stays
    assert BUDGET.held()["shortlists"][1] >= held


def test_eight_b300s_prefer_the_published_nvfp4_checkpoint() -> None:
    sl = shortlist(make_scenario(gpu="B300", gpus_per_node=8))
    picks = {e.model: e.pick for e in sl.running}
    with_nvfp4 = [
        e.model for e in sl.entries if any(v.kind == "nvfp4" and v.runs for v in e.variants)
    ]
    assert len(with_nvfp4) >= 3
    for model in with_nvfp4:
        pick = picks[model]
        assert pick is not None and pick.kind == "nvfp4", (model, pick and pick.kind)


def test_nvfp4_off_blackwell_is_gated_with_its_reason() -> None:
    sl = shortlist(make_scenario(gpu="H200", gpus_per_node=8))
    llama = next(e for e in sl.entries if e.model == "meta-llama/Llama-3.3-70B-Instruct")
    fp4 = [v for v in llama.variants if v.kind == "nvfp4"]
    assert fp4 and not fp4[0].runs and fp4[0].problem is not None


def test_shortlist_prints_a_table_and_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["shortlist", "--gpu", "RTX 4090", "--gpus", "2", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["runs"] and out["gated"]
    assert all(r["pick"]["users"] >= 1 for r in out["runs"])
    assert main(["shortlist", "--gpu", "RTX 4090", "--gpus", "2"]) == 0
    assert "Qwen/Qwen3-32B-AWQ" in capsys.readouterr().out


def test_the_same_traffic_on_a_small_active_moe_needs_fewer_gpus() -> None:
    """The playbook's cost case: a MoE with few active parameters carries the traffic on fewer
    GPUs than a dense model of the same size."""
    base = make_scenario(gpu="H100", request_rate=5.0)
    dense = base.replace(model="Qwen/Qwen3-32B")
    moe = base.replace(model="Qwen/Qwen3-30B-A3B")
    cols = compare([dense, moe], 5.0)
    gpus = {
        c.model: c.capacity.primary.pick.gpus
        for c in cols
        if c.capacity and c.capacity.primary.pick
    }
    assert gpus["Qwen/Qwen3-30B-A3B"] < gpus["Qwen/Qwen3-32B"]


def test_compare_prints_the_table_and_json(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["compare", "Qwen/Qwen3-32B", "Qwen/Qwen3-30B-A3B", "--gpu", "H100", "--gpu", "B200",
            "--request-rate", "5"]  # fmt: skip
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert text.count("Qwen/Qwen3-30B-A3B") == 2 and "B200" in text
    assert main([*argv, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [m["model"] for m in out["models"]] == ["Qwen/Qwen3-32B", "Qwen/Qwen3-30B-A3B"]
    for m in out["models"]:
        assert [g["gpu"] for g in m["by_gpu"]] == ["H100 SXM", "B200"]
        for g in m["by_gpu"]:
            assert g["gpus"] >= 1 and g["cost_per_million_tokens"] > 0 and g["context"] > 0


def test_compare_without_a_rate_is_one_line_naming_it(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", "Qwen/Qwen3-8B", "--gpu", "H100"]) == 2
    assert capsys.readouterr().err.startswith("error: request_rate:")
