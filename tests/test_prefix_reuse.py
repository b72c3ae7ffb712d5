"""The prefix-cache hit model by hand: where a hit lands for each engine's cache unit, how much of
the repeated prefixes the KV pool and a CPU tier keep, and a session's chance of finding its
instance."""

from __future__ import annotations

import pytest

from engine.capacity import capacity
from engine.reuse.hits import Room, hit_unit, prefix_reuse
from engine.scenario import make_scenario
from engine.study import study

LLAMA = "meta-llama/Llama-3.1-70B-Instruct"
HYBRID = "Qwen/Qwen3.5-35B-A3B"


def _kv(model: str, engine: str):  # type: ignore[no-untyped-def]
    st = study(make_scenario(model=model, gpu="H200"))
    return st.engines[engine].kv  # type: ignore[index]


def test_vllm_hits_whole_blocks_and_sglang_any_page_of_one_token() -> None:
    s = make_scenario(model=LLAMA, prefix_overlap=25)  # 25 % of 4,000 = 1,000 tokens
    room = Room(pool_tokens=1e6, running=1)
    v = prefix_reuse("vllm", _kv(LLAMA, "vllm"), s, 4000, 500, room, 1, 1)
    g = prefix_reuse("sglang", _kv(LLAMA, "sglang"), s, 4000, 500, room, 1, 1)
    assert (v.unit, v.cacheable) == (16, 992)  # 62 blocks of 16
    assert (g.unit, g.cacheable) == (1, 1000)
    assert v.gpu_tokens == 992 and g.gpu_tokens == 1000  # the pool holds the one system prompt


def test_a_hybrid_model_hits_only_where_its_linear_state_is_cached() -> None:
    s = make_scenario(model=HYBRID, prefix_overlap=50)  # 2,000 of 4,000 tokens
    room = Room(pool_tokens=1e6, running=1)
    kv_v, kv_g = _kv(HYBRID, "vllm"), _kv(HYBRID, "sglang")
    assert hit_unit("vllm", kv_v) == kv_v.block_size == 528  # the aligned hybrid block
    v = prefix_reuse("vllm", kv_v, s, 4000, 500, room, 1, 1)
    g = prefix_reuse("sglang", kv_g, s, 4000, 500, room, 1, 1)
    assert v.cacheable == 3 * 528  # 1,584: 2,000 rounded down to whole blocks
    assert g.cacheable == 7 * 256  # 1,792: SGLang's tracked states every 256 tokens


def test_a_whole_prompt_found_cached_still_recomputes_its_last_token() -> None:
    s = make_scenario(model=LLAMA, prefix_overlap=100)
    r = prefix_reuse("sglang", _kv(LLAMA, "sglang"), s, 4000, 500, Room(1e6, 1), 1, 1)
    assert r.cacheable == 3999


def test_sessions_beyond_the_free_pool_are_kept_in_proportion_and_a_cpu_tier_adds_more() -> None:
    """200 sessions of 2,000 repeated tokens on one instance running 10 requests of 4,000 + 250:
    the pool of 240,000 tokens keeps (240,000 - 42,500) / (190 × 2,000) = 52 % of the idle
    histories; a tier of 100,000 host tokens keeps 26 % more."""
    s = make_scenario(model=LLAMA, prefix_overlap=50, prefix_kind="session", sessions=200)
    kv = _kv(LLAMA, "sglang")
    r = prefix_reuse("sglang", kv, s, 4000, 500, Room(240_000, 10), 1, 1)
    assert r.resident == pytest.approx((240_000 - 10 * 4250) / (190 * 2000))
    assert r.in_host == 0.0
    t = prefix_reuse("sglang", kv, s, 4000, 500, Room(240_000, 10, 100_000), 1, 1)
    assert t.in_host == pytest.approx(100_000 / (190 * 2000))
    assert t.host_tokens == pytest.approx(t.in_host * 2000)
    assert t.hit_rate > r.hit_rate


def test_a_returning_session_finds_its_dp_rank_one_time_in_dp() -> None:
    s = make_scenario(model=LLAMA, prefix_overlap=50, prefix_kind="session")
    r = prefix_reuse("sglang", _kv(LLAMA, "sglang"), s, 4000, 500, Room(1e6, 4), 8, 4)
    assert r.affinity == pytest.approx(0.25)
    assert r.gpu_tokens == pytest.approx(0.25 * 2000)
    system = s.replace(prefix_kind="system")
    q = prefix_reuse("sglang", _kv(LLAMA, "sglang"), system, 4000, 500, Room(1e6, 4), 8, 4)
    assert q.affinity == 1.0  # every rank keeps its own copy of a system prompt


def test_no_repeated_share_no_hit() -> None:
    s = make_scenario(model=LLAMA)
    r = prefix_reuse("vllm", _kv(LLAMA, "vllm"), s, 4000, 500, Room(1e6, 1), 1, 1)
    assert r.prefill_saved == 0 and r.hit_rate == 0


def test_a_repeated_share_of_80_percent_lowers_ttft_and_raises_the_rate_a_replica_holds() -> None:
    base = make_scenario(model=LLAMA, gpu="H100", request_rate=4.0)
    none, most = study(base), study(base.replace(prefix_overlap=80))
    assert none.fit.speed is not None and most.fit.speed is not None
    assert most.fit.reuse is not None and most.fit.reuse.hit_rate > 0.75
    assert most.fit.speed.ttft_ms < 0.5 * none.fit.speed.ttft_ms
    assert most.fit.speed.output_tokens_per_s_per_gpu > none.fit.speed.output_tokens_per_s_per_gpu
    a, b = capacity(base), capacity(base.replace(prefix_overlap=80))
    assert a is not None and b is not None and a.primary.pick and b.primary.pick
    assert b.primary.pick.requests_per_s_per_replica > a.primary.pick.requests_per_s_per_replica
    assert b.primary.pick.gpus <= a.primary.pick.gpus


def test_a_cpu_tier_finds_the_sessions_the_gpu_pool_evicted() -> None:
    """2,000 live sessions of 80 % repeated history overflow the GPU pool; 2 TiB of host memory
    per node holds many of them: more of each prompt is found, TTFT falls."""
    s = make_scenario(model=LLAMA, gpu="H100", prefix_overlap=80, prefix_kind="session",
                      sessions=2000, users=50)  # fmt: skip
    pool, tier = study(s), study(s.replace(kv_offload_gb=2048.0))
    assert pool.fit.reuse is not None and tier.fit.reuse is not None
    assert pool.fit.reuse.host_tokens == 0 and tier.fit.reuse.host_tokens > 0
    assert tier.fit.reuse.hit_rate > pool.fit.reuse.hit_rate
    assert pool.fit.speed is not None and tier.fit.speed is not None
    assert tier.fit.speed.ttft_ms < pool.fit.speed.ttft_ms


def test_sglangs_radix_pages_find_at_least_as_much_as_vllms_blocks() -> None:
    """The one difference the engines' code gives the hit model: vLLM hits whole blocks (64
    tokens for DeepSeek's MLA on Hopper), SGLang's radix tree any page of one token."""
    for share in (35, 60, 80):
        s = make_scenario(model="deepseek-ai/DeepSeek-V3", users=50, prefix_overlap=share)
        v, g = study(s), study(s.replace(engine="sglang"))
        assert v.fit.reuse is not None and g.fit.reuse is not None
        assert g.fit.reuse.gpu_tokens >= v.fit.reuse.gpu_tokens


@pytest.mark.xfail(
    strict=True,
    reason="not reproduced: the hit model gives both engines the same hits up to their cache "
    "unit and the speed model has no stack cost that puts vLLM ahead at 0 % (seed 000's 3.1 "
    "table: vLLM 60.0 vs SGLang 52.7 tok/s at 0 %, SGLang 31.2 vs 22.4 above 60 %)",
)
def test_the_reference_engine_choice_by_overlap_is_reproduced_in_direction() -> None:
    def per_user(engine: str, share: int) -> float:
        s = make_scenario(model="deepseek-ai/DeepSeek-V3", users=50, prefix_overlap=share,
                          prefix_kind="session", engine=engine)  # fmt: skip
        sp = study(s).fit.speed
        assert sp is not None
        return sp.output_tokens_per_s_per_user

    assert per_user("vllm", 0) > 1.05 * per_user("sglang", 0)
    assert per_user("sglang", 80) > 1.05 * per_user("vllm", 80)
