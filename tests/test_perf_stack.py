"""Fixed costs belong to the software stack: one row per engine and vendor stack, each cost
scaled by what it depends on (kernels per layer and op, requests per step), an AMD row derived
from its CUDA like by sourced scales, and the execution mode a launch's flags choose."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from engine.engines.memory import Split
from engine.perf import estimate
from engine.perf.estimate import copy_model
from engine.perf.factors import perf_facts
from engine.perf.stack import STACK_COSTS, Factor
from tests.test_perf_estimate import inputs, round_factors, term
from tools import fit_perf


def test_a_decode_steps_kernel_floor_counts_each_layers_kernels() -> None:
    # Llama-3.1-8B: 32 layers of 2 norms + 5 attention + 3 dense-FFN kernels = 320 kernels
    f = round_factors(kernel_seconds=2e-6)
    s = estimate(inputs("meta-llama/Meta-Llama-3.1-8B", "H100"), Split(1), 1, 1, 128, 8, factors=f)
    assert term(s.decode.terms, "decode.overhead.layers").seconds == pytest.approx(320 * 2e-6)
    # DeepSeek-V3: 61 MLA layers (2 + 11), 3 dense FFNs (3), 58 MoE layers with a shared expert
    # (7 + 3): 793 + 9 kernels in the layers, 580 in the MoE layers
    ds = estimate(inputs("deepseek-ai/DeepSeek-V3", "H200"), Split(8), 1, 1, 128, 8, factors=f)
    assert term(ds.decode.terms, "decode.overhead.layers").seconds == pytest.approx(802 * 2e-6)
    assert term(ds.decode.terms, "decode.overhead.moe_layers").seconds == pytest.approx(580 * 2e-6)


def test_a_launch_without_cuda_graphs_pays_the_hosts_launch_for_every_kernel() -> None:
    f = round_factors(kernel_seconds=2e-6, eager_kernel_seconds=3e-5)
    inp = inputs("meta-llama/Meta-Llama-3.1-8B", "H100")
    graph = estimate(inp, Split(1), 1, 1, 128, 8, factors=f)
    eager = estimate(inp, Split(1), 1, 1, 128, 8, factors=f, eager=True)
    assert term(eager.decode.terms, "decode.overhead.layers").seconds == pytest.approx(320 * 3e-5)
    assert eager.tpot_ms - graph.tpot_ms == pytest.approx(320 * (3e-5 - 2e-6) * 1e3, rel=0.02)


def test_each_engine_and_vendor_stack_has_its_own_row() -> None:
    f = perf_facts().factors
    assert {s.key for s in f.stacks} == {"vllm/nvidia", "sglang/nvidia", "vllm/amd", "sglang/amd"}
    assert f.stack("sglang", "amd").key == "sglang/amd"
    with pytest.raises(KeyError):
        f.stack("trtllm", "nvidia")


def test_an_amd_row_is_its_cuda_like_times_its_sourced_scales() -> None:
    f = perf_facts().factors
    for stack in f.stacks:
        if stack.like is None:
            continue
        like = f.stack(stack.engine, "nvidia")
        assert stack.like == like.key
        for cost in STACK_COSTS:
            scale = stack.scales[cost]
            assert scale.source
            assert stack.cost(cost) == pytest.approx(like.cost(cost) * scale.value, rel=5e-3)
    # the kernel floor and the collectives cost more on ROCm; the host's Python does not
    amd = f.stack("vllm", "amd")
    assert amd.scales["kernel_seconds"].value > 1 and amd.scales["step_seconds"].value == 1


def test_amd_gpus_run_on_their_own_stacks_costs() -> None:
    f = perf_facts().factors
    model = copy_model(inputs("meta-llama/Meta-Llama-3.1-70B", "MI300X"), Split(8), 1024, 256)
    assert model.stack == f.stack("vllm", "amd")
    assert model.rates.collective_latency_s == f.stack("vllm", "amd").cost(
        "collective_latency_seconds"
    )


def test_a_stack_can_be_replaced_by_a_refit_of_its_own() -> None:
    # the one public way to run the model on other factors: factors=, a stack replaced whole
    f = perf_facts().factors
    stack = f.stack("vllm", "nvidia")
    slower = stack.model_copy(
        update={"step_seconds": Factor(value=0.01, unit="s", fitted=True, source="a user's bench")}
    )
    mine = f.with_stack(slower)
    inp = inputs("meta-llama/Meta-Llama-3.1-8B", "H100")
    base = estimate(inp, Split(1), 1, 8, 1024, 256)
    refit = estimate(inp, Split(1), 1, 8, 1024, 256, factors=mine)
    assert refit.tpot_ms > base.tpot_ms + 9
    with pytest.raises(KeyError):
        f.with_stack(stack.model_copy(update={"key": "vllm/tpu"}))
    with pytest.raises(ValidationError):
        f.model_validate({**f.model_dump(), "stacks": [f.stacks[0].model_dump()] * 2})


def test_the_fit_fits_only_the_costs_its_rows_exercise() -> None:
    names = fit_perf.fit_names(fit_perf.fit_rows())
    assert "hbm_fraction" in names and "vllm/nvidia.kernel_seconds" in names
    # no vLLM row prefills eagerly, and no row runs on an AMD stack
    assert "vllm/nvidia.eager_kernel_seconds" not in names
    assert not [n for n in names if "/amd." in n]
