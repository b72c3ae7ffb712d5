"""DP-attention and expert parallelism as the engines run them, against hand calculations: each
DP rank prefills only its own prompts, a step waits for the busiest rank, and an MoE layer for
the EP rank the router loads most (with and without EPLB's redundant experts)."""

from __future__ import annotations

import math

import pytest

from engine.engines.memory import Split
from engine.perf import estimate
from engine.perf.balance import (
    busiest_expert_rank,
    busiest_rank,
    copy_loads,
    expert_loads,
    mean_ceil_share,
    poisson_max,
    popularity_sigma,
    rank_skew,
    touched_on_rank,
)
from engine.perf.estimate import copy_model
from engine.perf.factors import perf_facts
from engine.perf.scheduler import Costs, DecodeStep, Load, Scheduler
from tests.test_perf_estimate import inputs, round_factors


def _toy_costs() -> Costs:
    """Pencil costs: a prefill pass is 1 us per token on its rank plus 2 us per token the
    experts see; a decode step 10 ms; 1,000-token prompts, a 4,000-token budget, no latency."""
    return Costs(
        decode=lambda busiest, total: DecodeStep(0.010, 0.010, 1.0),
        chunk=lambda tokens, requests, experts: 1e-6 * tokens + 2e-6 * experts,
        prompt=lambda ratio: 1e-3 + 2e-3 * ratio,
        dispatch_seconds=0.0,
        request_seconds=0.0,
        reload_seconds=0.0,
        budget=4000,
        prompt_tokens=1000,
    )


def test_dp_attention_ranks_prefill_their_first_wave_side_by_side() -> None:
    # 32 clients at once over 4 ranks: 8 per rank, 4 to a step; a step is 4,000 tokens on the
    # rank (4 ms) and 16,000 at the experts (32 ms): 36 ms. Request i of a rank is done after
    # ceil(i / 4) steps: a mean of 1.5 steps, 54 ms. Charged once per rank for every rank (the
    # old model) it would have been 4 x the steps.
    wave = Scheduler(dp=4).first_wave(_toy_costs(), 8)
    assert wave.step_seconds == pytest.approx(0.036)
    assert wave.mean_seconds == pytest.approx(0.054)
    assert wave.per_prompt == pytest.approx(0.009)


def test_dp_attention_prefill_is_charged_once_per_prompt_on_its_own_rank() -> None:
    # 64 running, OSL 1,024: a = 1/16 arrivals per decode step; the busiest of 4 ranks
    # prefills E[ceil(A / 4)] = 0.060587 per step (almost always the one that arrived, on its
    # own rank, holding the others: no other rank's prompt rides along), the experts seeing
    # a / 0.060587 = 1.0316 prompts per such prompt.
    a = 64 / 1024
    share = mean_ceil_share(a, 4)
    assert share == pytest.approx(1 - math.exp(-a), abs=1e-7)
    line = Scheduler(dp=4).closed_loop(_toy_costs(), Load(64, 1024, 1.0))
    each = 1e-3 + 2e-3 * a / share  # the prompt alone on its rank: 3.06 ms
    assert line.each == pytest.approx(each)
    # one prompt per client: the decodes wait for the first wave only (every rank's at once)
    assert line.stall == pytest.approx(16 * line.wave.per_prompt)
    ten = Scheduler(dp=4).closed_loop(_toy_costs(), Load(64, 1024, 10.0))
    steady = 1024 * share * each  # 62.04 prompts' worth, not 64 x 4
    assert ten.stall == pytest.approx(steady + (16 * ten.wave.per_prompt - steady) / 10)


def test_many_arrivals_per_step_are_prefilled_by_every_rank_at_once() -> None:
    # 16 arrivals per step over 4 ranks: the busiest prefills ~4.4 of them, not 16
    assert 4 < mean_ceil_share(16, 4) < 4.6
    assert mean_ceil_share(16, 1) == 16


def test_the_busiest_decode_rank_holds_the_expected_maximum_not_the_mean() -> None:
    # SGLang deals 128 requests out round robin, blind to how many each rank still runs: as
    # balls into 8 bins the fullest holds E[max] = sum_x (1 - F(x - 1)^8) of Poisson(16), between
    # 16 + 4 and the Raab-Steger bound 16 + sqrt(2 * 16 * ln 8) = 24.2
    busiest = busiest_rank(128, 8, "round_robin")
    pmf, cdf, total = math.exp(-16), math.exp(-16), 0.0
    for x in range(1, 80):
        total += 1 - cdf**8
        pmf *= 16 / x
        cdf += pmf
    assert busiest == pytest.approx(total, rel=1e-9)
    assert 20 < busiest < 16 + math.sqrt(2 * 16 * math.log(8))
    # vLLM sends each request to the engine with the fewest waiting x 4 + running
    assert busiest_rank(128, 8, "least_loaded") == 16
    # two balls in two bins: Poissonised 1.524 (exactly 1.5)
    assert poisson_max(1.0, 2) == pytest.approx(1.5238, abs=1e-4)


def test_the_busiest_ranks_decode_step_is_what_the_speed_is_charged() -> None:
    inp = inputs("deepseek-ai/DeepSeek-V3", "H200", "sglang")
    f = round_factors()
    split = Split(1, 8, 1, True)
    model = copy_model(inp, split, 1024, 1024, factors=f)
    s = estimate(inp, split, 1, 128, 1024, 1024, factors=f)
    busiest = math.ceil(busiest_rank(128, 8, "round_robin"))  # 22 of 128 on one rank
    assert busiest == 22
    assert s.decode.seconds == pytest.approx(model.decode_pass(22, 128).seconds)
    assert model.decode_pass(22, 128).seconds > model.decode_pass(16, 128).seconds


def test_the_router_popularity_reproduces_the_playbooks_hottest_expert() -> None:
    routing = perf_facts().routing
    sigma = popularity_sigma(routing.hottest_over_mean, routing.experts)
    loads = expert_loads(256, sigma)
    assert loads[0] == pytest.approx(7.2, rel=0.01)
    assert sum(loads) == pytest.approx(256)


def test_ep_skew_without_redundant_experts_is_the_hottest_experts_rank() -> None:
    # EP 32 over 256 experts: 8 per rank; the rank holding the 7.2x expert carries it plus 7 of
    # the others at their mean (256 - 7.2) / 255: (7.2 + 7 x 0.976) / 8 = 1.75 x the mean rank
    sigma = popularity_sigma(7.2, 256)
    hottest = expert_loads(256, sigma)[0]
    by_hand = (hottest + 7 * (256 - hottest) / 255) / 8
    assert rank_skew(256, 32, 0, sigma) == pytest.approx(by_hand)
    assert 1.7 < by_hand < 1.8
    # EP 8: 32 experts per rank dilute it; one expert per rank is the expert itself
    assert rank_skew(256, 8, 0, sigma) < 1.25
    assert rank_skew(256, 256, 0, sigma) == pytest.approx(hottest)


def test_eplbs_redundant_experts_spread_the_hot_ones() -> None:
    # 32 redundant copies of 256: the hottest copy falls from 7.2 x the mean to about 2 x (the
    # playbook measured 1.9 x), and packed heaviest first the 32 ranks even out
    sigma = popularity_sigma(7.2, 256)
    copies = copy_loads(expert_loads(256, sigma), 32)
    assert len(copies) == 288
    hottest = copies[0] / (sum(copies) / 288)
    assert 1.9 * 0.8 < hottest < 1.9 * 1.25
    assert rank_skew(256, 32, 32, sigma) < 1.05 < rank_skew(256, 32, 0, sigma)


def test_few_tokens_crowd_one_ep_rank_by_chance() -> None:
    # 4 requests x top-8 = 32 picks over 8 EP ranks: 4 on the mean rank, E[max] of 8
    # Poisson(4) = 7.6 on the busiest, which reads 7 of its 32 experts, not 3.9
    picks = busiest_expert_rank(32, 8, 1.21)
    assert picks == pytest.approx(poisson_max(4.0, 8))
    assert 7 < picks < 8
    assert touched_on_rank(picks, 32) == pytest.approx(32 * (1 - (31 / 32) ** picks))
    # many tokens: the popular rank's own share wins over chance
    assert busiest_expert_rank(32_000, 8, 1.21) == pytest.approx(32_000 * 1.21 / 8)


def test_redundant_experts_cut_a_compute_bound_moe_layer_by_the_skew_they_remove() -> None:
    # DP-attention 32 + EP over 256 experts, a prefill pass of 8,192 tokens on every rank: the
    # MoE layer is compute-bound and waits for the busiest rank's picks, 1.75 x the mean
    # without EPLB, ~1.0 x with 32 copies: the layer runs ~1.7 x faster. (A memory-bound decode
    # reads 9 expert slots per rank instead of 8: EPLB's +12.5 % memory is read there too.)
    inp = inputs("deepseek-ai/DeepSeek-V3", "H200", "sglang")
    split = Split(1, 32, 1, True)
    sigma = popularity_sigma(7.2, 256)
    times = []
    for redundant in (0, 32):
        model = copy_model(inp, split, 8192, 256, gpus_per_node=8, redundant_experts=redundant)
        (moe,) = [
            t for t in model.chunk_terms(8192, 1, 8192 * 32) if t.code == "prefill.moe.experts"
        ]
        assert moe.bound == "compute"
        times.append(moe.seconds)
    skews = rank_skew(256, 32, 0, sigma) / rank_skew(256, 32, 32, sigma)
    assert times[0] / times[1] == pytest.approx(skews, rel=1e-6)
    assert 1.6 < skews < 1.8
