"""Capacity and cost for a traffic: hand calculations of the GPUs a rate needs (Little's law
through the speed model), of what a million tokens costs, and the rules a capacity keeps."""

from __future__ import annotations

import json
import math

import pytest

from engine.alternatives import alternatives
from engine.capacity import capacity, given, listed_prices
from engine.capacity.fleet import _copy_scenario
from engine.capacity.replica import missed, speed_at
from engine.cli import main
from engine.errors import InputError
from engine.perf import estimate
from engine.scenario import make_scenario
from engine.study import study

QWEN = "Qwen/Qwen3-8B"


def _traffic(rate: float, **more: object) -> object:
    return make_scenario(model=QWEN, gpu="H100", gpus_per_node=1, request_rate=rate, **more)


def test_a_replica_holds_its_ceiling_in_requests_per_second_by_littles_law() -> None:
    """r = C / E2E(C): the pick's copy at its ceiling finishes C requests per end-to-end time,
    which is the speed model's output tokens/s of the copy over one request's output tokens."""
    s = _traffic(10.0)
    cap = capacity(s)
    assert cap is not None
    pick = cap.primary.pick
    assert pick is not None
    st = study(_copy_scenario(s, "H100 SXM", pick.copy_gpus))
    c = next(c for c in st.search.candidates if c.layout == pick.layout)
    inp = st.search_inputs
    assert inp is not None
    isl, osl = s.workload(c.context)
    by_hand = estimate(inp, c.layout.split, 1, pick.top.concurrency, isl, osl, inp.speculative,
                       gpus_per_node=1)  # fmt: skip
    e2e = isl and (by_hand.ttft_ms + (osl - 1) * by_hand.tpot_ms) / 1000
    assert pick.requests_per_s_per_replica == pytest.approx(by_hand.output_tokens_per_s / osl)
    # Little's law: the requests in flight are the rate times the time each spends in the engine
    assert pick.top.concurrency == pytest.approx(pick.requests_per_s_per_replica * e2e, rel=0.02)
    # the ceiling is the largest concurrency within the balanced bound (or all the pool holds)
    above = speed_at(inp, s, c, pick.top.concurrency + 1)
    assert pick.top.concurrency == c.running or (above is not None and missed(s, above))


def test_the_replicas_are_the_rate_over_one_replicas_ceiling_rounded_up() -> None:
    s = _traffic(10.0)
    cap = capacity(s)
    assert cap is not None
    pick = cap.primary.pick
    assert pick is not None
    replicas = math.ceil(10.0 / pick.requests_per_s_per_replica)
    assert pick.replicas == replicas
    assert pick.gpus == replicas * pick.copy_gpus
    assert pick.nodes == pick.gpus  # one GPU per node
    assert pick.utilization == pytest.approx(10.0 / (replicas * pick.requests_per_s_per_replica))
    # each replica's share runs at or under its ceiling: Little's law at the operating point
    load = pick.load
    assert load.concurrency == pytest.approx(10.0 / replicas * load.e2e_s)
    assert load.running <= pick.top.concurrency


def test_cost_per_million_tokens_is_the_hours_price_over_the_tokens_of_an_hour() -> None:
    s = _traffic(10.0)
    cap = capacity(s)
    assert cap is not None
    pick = cap.primary.pick
    assert pick is not None
    price = listed_prices()["H100 SXM"].usd_per_hour
    hourly = pick.gpus * price
    isl, osl = pick.isl, pick.osl
    assert pick.cost_per_hour == pytest.approx(hourly)
    assert pick.cost_per_million_output_tokens == pytest.approx(hourly / (10.0 * osl * 3600) * 1e6)
    assert pick.cost_per_million_tokens == pytest.approx(hourly / (10.0 * (isl + osl) * 3600) * 1e6)


@pytest.mark.parametrize("rate", [0.5, 3.0, 12.0])
def test_doubling_the_rate_never_more_than_doubles_the_gpus_plus_one_replica(rate: float) -> None:
    one, two = capacity(_traffic(rate)), capacity(_traffic(2 * rate))
    assert one is not None and two is not None
    a, b = one.primary.pick, two.primary.pick
    assert a is not None and b is not None
    assert b.gpus <= 2 * a.gpus + a.copy_gpus
    assert b.gpus >= a.gpus  # and more traffic never needs fewer


def test_a_price_override_changes_the_cost_and_not_the_layout() -> None:
    listed, own = capacity(_traffic(6.0)), capacity(_traffic(6.0, gpu_price=1.0))
    assert listed is not None and own is not None
    a, b = listed.primary.pick, own.primary.pick
    assert a is not None and b is not None
    assert (a.layout, a.replicas, a.gpus) == (b.layout, b.replicas, b.gpus)
    assert b.cost_per_hour == pytest.approx(b.gpus * 1.0)
    assert a.cost_per_hour != b.cost_per_hour


def test_across_gpus_the_cheapest_per_million_tokens_is_the_best() -> None:
    cap = capacity(_traffic(6.0, compare_gpus="B200,MI300X"))
    assert cap is not None
    assert [f.gpu for f in cap.fleets] == ["H100 SXM", "B200", "MI300X"]
    costs = {f.gpu: f.pick.cost_per_million_tokens for f in cap.fleets if f.pick}
    assert cap.best is not None
    assert costs[cap.best.gpu] == min(c for c in costs.values() if c is not None)
    # a low enough own price for the scenario's GPU makes it the best
    cheap = capacity(_traffic(6.0, compare_gpus="B200,MI300X", gpu_price=0.05))
    assert cheap is not None and cheap.best is not None and cheap.best.gpu == "H100 SXM"


def test_a_rate_no_gpu_count_serves_is_refused_naming_the_request_rate() -> None:
    with pytest.raises(InputError) as err:
        capacity(_traffic(5.0, ttft_ms=1.0))
    assert err.value.field == "request_rate"


def test_study_json_carries_capacity_for_every_gpu_compared(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["study", QWEN, "--gpu", "H100", "--gpus", "1", "--request-rate", "4",
            "--compare-gpus", "B200", "--json"]  # fmt: skip
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)["capacity"]
    for key in ("gpus", "nodes", "replicas", "layout", "requests_per_s_per_replica",
                "utilization", "cost_per_hour", "cost_per_million_output_tokens",
                "cost_per_million_tokens", "formula"):  # fmt: skip
        assert key in out, key
    assert [g["gpu"] for g in out["by_gpu"]] == ["H100 SXM", "B200"]
    assert all(g["serves"] and g["gpus"] >= 1 for g in out["by_gpu"])


@pytest.mark.parametrize(
    ("flag", "value", "field"),
    [
        ("--request-rate", "-3", "request_rate"),
        ("--request-rate", "1e9", "request_rate"),
        ("--gpu-price", "0", "gpu_price"),
        ("--gpu-price", "99999", "gpu_price"),
        ("--prefix-overlap", "120", "prefix_overlap"),
        ("--kv-offload-gb", "-1", "kv_offload_gb"),
        ("--compare-gpus", "H100,NoSuchGPU", "compare_gpus"),
    ],
)
def test_bad_traffic_input_is_one_line_naming_the_field(
    flag: str, value: str, field: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["study", QWEN, flag, value]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and f"error: {field}:" in err, err


def test_an_unserved_rate_on_the_command_line_is_one_line_naming_the_request_rate(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["study", QWEN, "--gpu", "H100", "--request-rate", "3", "--ttft-ms", "1"]) == 2
    assert capsys.readouterr().err.startswith("error: request_rate:")


def test_online_fp8_halves_a_16_bit_checkpoints_weights_and_the_plan_sets_the_flag() -> None:
    base = study(make_scenario(model="google/gemma-3-27b-it", gpu="RTX 4090", gpus_per_node=2))
    fp8 = study(base.scenario.replace(quantization="fp8"))
    assert fp8.weights.weight_bytes < 0.6 * base.weights.weight_bytes
    assert not base.verdict.runs and fp8.verdict.runs
    assert fp8.plan is not None
    assert ("--quantization", "fp8") in {(f.flag, f.value) for f in fp8.plan.flags}
    assert fp8.plan.model_id == "google/gemma-3-27b-it"  # the 16-bit repo, quantized at load


def test_online_fp8_is_a_rechecked_alternative_where_it_meets_the_ask() -> None:
    st = study(make_scenario(model="google/gemma-3-27b-it", gpu="RTX 4090", gpus_per_node=2,
                             users=4))  # fmt: skip
    found = [a for a in alternatives(st) if dict(a.change).get("quantization") == "fp8"]
    assert found and found[0].users >= 4


def test_online_fp8_refuses_a_quantized_checkpoint_or_a_gpu_without_fp8() -> None:
    with pytest.raises(InputError) as err:
        study(make_scenario(model="deepseek-ai/DeepSeek-V3", quantization="fp8"))
    assert err.value.field == "quantization"
    with pytest.raises(InputError) as err:
        study(make_scenario(model="Qwen/Qwen3-8B", gpu="A100 80GB", quantization="fp8"))
    assert err.value.field == "quantization"


def test_the_scenarios_own_gpus_say_what_share_of_their_ceiling_the_rate_uses() -> None:
    st = study(make_scenario(model=QWEN, gpu="H100", gpus_per_node=8))
    low, high = given(st, 2.0), given(st, 200.0)
    assert low is not None and high is not None
    held = low.replicas * low.requests_per_s_per_replica
    assert low.utilization == pytest.approx(2.0 / held) and low.utilization < 1
    assert high.utilization == pytest.approx(200.0 / held) and high.utilization > 1
    # Little's law at the load: requests in flight = the rate × each request's time
    assert low.load.concurrency * low.replicas == pytest.approx(2.0 * low.load.e2e_s)


def test_without_a_rate_study_json_prices_every_layout_at_the_asked_load(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["study", QWEN, "--gpu", "H100", "--gpu-price", "2", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    cost, speed = out["cost"], out["speed"]
    assert out["capacity"] is None and cost["gpu_price"] == 2 and cost["price_source"] == "user"
    pick = next(c for c in cost["layouts"] if c["pick"])
    assert pick["cost_per_hour"] == pytest.approx(pick["gpus"] * 2)
    per_output = pick["cost_per_hour"] / (speed["output_tokens_per_s"] * 3600) * 1e6
    assert pick["cost_per_million_output_tokens"] == pytest.approx(per_output)
