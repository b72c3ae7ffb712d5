"""The scheduler apart from the op model: prefix reuse (GPU hits not prefilled, host-tier hits
copied back over the GPU's host link), and prefill-only / decode-only pools asked apart."""

from __future__ import annotations

import math

import pytest

from engine.engines.memory import Split
from engine.errors import InputError
from engine.perf import estimate
from engine.perf.attention import mean_attended
from engine.perf.estimate import copy_model
from engine.perf.scheduler import PrefixReuse, Scheduler
from tests.test_perf_estimate import LLAMA8_KV_PER_TOKEN, inputs, round_factors

F = round_factors()


def test_gpu_prefix_hits_are_not_prefilled() -> None:
    inp = inputs("meta-llama/Meta-Llama-3.1-8B", "H100")
    cold = copy_model(inp, Split(1), 8192, 256, factors=F)
    warm = copy_model(inp, Split(1), 8192, 256, factors=F, reuse=PrefixReuse(6144))
    assert warm.prompt_tokens == 2048 and warm.cached_tokens == 6144
    # the 2,048 new tokens still attend to the 6,144 cached ones: their mean span is
    # 6,144 + 2,049 / 2, not the 1,024.5 of a 2,048-token prompt alone
    assert mean_attended(2048, None, 6144) == pytest.approx(6144 + 2049 / 2)
    assert warm.prompt_seconds() < cold.prompt_seconds() / 3
    a = estimate(inp, Split(1), 1, 32, 8192, 256, factors=F)
    b = estimate(inp, Split(1), 1, 32, 8192, 256, factors=F, reuse=PrefixReuse(6144))
    assert b.ttft_ms < a.ttft_ms
    assert b.output_tokens_per_s_per_gpu > a.output_tokens_per_s_per_gpu


def test_host_tier_hits_are_copied_back_over_the_host_link_before_the_prefill() -> None:
    # Llama-3.1-8B at TP 1: 131,072 B of KV per token; 4,096 tokens = 512 MiB over the H100's
    # PCIe 5.0 x16 (63 GB/s one direction) = 8.52 ms, added to the first token only
    inp = inputs("meta-llama/Meta-Llama-3.1-8B", "H100")
    host = copy_model(inp, Split(1), 8192, 256, factors=F, reuse=PrefixReuse(0, 4096))
    assert host.reload_seconds() == pytest.approx(4096 * LLAMA8_KV_PER_TOKEN / 63e9)
    gpu = estimate(inp, Split(1), 1, 1, 8192, 256, factors=F, reuse=PrefixReuse(4096))
    cpu = estimate(inp, Split(1), 1, 1, 8192, 256, factors=F, reuse=PrefixReuse(0, 4096))
    assert cpu.ttft_ms - gpu.ttft_ms == pytest.approx(host.reload_seconds() * 1e3, rel=1e-6)


def test_a_whole_prompt_found_in_the_cache_still_computes_its_last_token() -> None:
    assert PrefixReuse(10_000).prefilled(8192) == 1
    assert PrefixReuse(100.7, 50).prefilled(1000) == 850


@pytest.mark.parametrize("bad", [-1.0, math.nan, math.inf])
def test_a_reuse_that_is_not_a_count_of_tokens_is_refused_naming_the_field(bad: float) -> None:
    with pytest.raises(InputError) as err:
        PrefixReuse(bad)
    assert err.value.field == "reuse.gpu_tokens"


def test_a_prefill_pool_waits_longer_as_its_rate_nears_what_it_drains() -> None:
    # M/D/1: the wait is rho / (2 (1 - rho)) prompts' service; at rho >= 1 it never drains
    inp = inputs("meta-llama/Meta-Llama-3.1-8B", "H100")
    costs = copy_model(inp, Split(1), 8192, 256, factors=F).costs()
    pool = Scheduler()
    service = costs.prompt(1.0)
    assert pool.prefill_pool(costs, 0.5 / service) == pytest.approx(service * (1 + 0.5))
    assert pool.prefill_pool(costs, 0.9 / service) == pytest.approx(service * (1 + 4.5))
    assert pool.prefill_pool(costs, 1.0 / service) == math.inf
    # two attention ranks drain twice the rate
    assert Scheduler(dp=2).prefill_pool(costs, 1.0 / service) == pytest.approx(service * 1.5)


def test_a_decode_pool_runs_its_step_with_no_prefill_between() -> None:
    inp = inputs("meta-llama/Meta-Llama-3.1-8B", "H100")
    model = copy_model(inp, Split(1), 8192, 256, factors=F)
    tpot = Scheduler().decode_pool(model.costs(), 64)
    assert tpot == pytest.approx(model.decode_pass(64, 64).seconds)
    mixed = estimate(inp, Split(1), 1, 64, 8192, 256, factors=F)
    assert mixed.tpot_ms > tpot * 1e3  # aggregated, the decodes pay for the prefills between
