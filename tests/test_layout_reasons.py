"""The layout search says why, with its own figures: every parameter of every layout reason is
a figure of the Study's candidates or of its scenario (no reason and no parameter skipped), no
reason quotes a threshold whose condition does not hold, and no flag reason claims what the
Study says is false."""

from __future__ import annotations

from typing import Any

import pytest

from engine.decision import Bytes, Decimal, Decision, Name, Param, Source, Tokens
from engine.launch.candidate import Candidate
from engine.launch.ranking import layout_rules
from engine.perf import Speed
from engine.scenario import make_scenario
from engine.study import Study, study
from engine.text.words import say
from tests.test_consistency import SCENARIOS

EXTRA: dict[str, dict[str, Any]] = {
    "DeepSeek-V3, 8 x H200, 64 users at 32K": {"model": "deepseek-ai/DeepSeek-V3", "users": 64},
    "DeepSeek-V3, 8 x H200, 16 users at 8K": {
        "model": "deepseek-ai/DeepSeek-V3",
        "users": 16,
        "context": 8192,
    },
    "DeepSeek-V3, 8 x H200, 512 users": {"model": "deepseek-ai/DeepSeek-V3", "users": 512},
    "DeepSeek-V3, 8 x H200, 64 users, throughput first": {
        "model": "deepseek-ai/DeepSeek-V3",
        "users": 64,
        "latency": "throughput",
    },
    "Llama-3.1-70B, 8 x H100, 8 users": {
        "model": "meta-llama/Llama-3.1-70B-Instruct",
        "gpu": "H100",
        "users": 8,
    },
    "Llama-3.1-70B, 8 x H100, latency first": {
        "model": "meta-llama/Llama-3.1-70B-Instruct",
        "gpu": "H100",
        "latency": "latency",
    },
    # a candidate fits only a shorter context
    "Llama-3.1-70B, SGLang, 4 x A100 80GB, 32 users": {
        "model": "meta-llama/Llama-3.1-70B-Instruct",
        "gpu": "A100 80GB",
        "gpus_per_node": 4,
        "users": 32,
        "engine": "sglang",
    },
    # even at the smallest prefill chunk SGLang's fraction holds 27K of the 128K asked
    "Llama-3.1-8B, SGLang, 1 x L4, 128K": {
        "model": "meta-llama/Meta-Llama-3.1-8B",
        "gpu": "L4",
        "gpus_per_node": 1,
        "engine": "sglang",
        "context": 131072,
    },
    "Llama-3.1-70B, 2 x H100, 32 users": {
        "model": "meta-llama/Llama-3.1-70B-Instruct",
        "gpu": "H100",
        "gpus_per_node": 2,
        "users": 32,
    },
    # nothing holds the weights: the closest layout, and how far each is from fitting
    "Kimi-K2, 8 x H100": {"model": "moonshotai/Kimi-K2-Instruct", "gpu": "H100"},
    "Kimi-K2, 1 x H100, 16 users": {
        "model": "moonshotai/Kimi-K2-Instruct",
        "gpu": "H100",
        "gpus_per_node": 1,
        "users": 16,
    },
}
CASES = SCENARIOS | EXTRA
# reasons these cases must reach, so that a change of the cases cannot leave one unchecked
REACHED = {
    "layout.reason.no_fit",
    "layout.vs.deficit",
    "layout.vs.weights_fit",
    "layout.vs.context_fits",
    "layout.vs.users_fit",
    "layout.vs.users",
    "layout.vs.speed.throughput",
    "layout.vs.speed.latency",
    "layout.vs.speed.peak",
    "layout.vs.style.tp_ep",
    "layout.reason.context",
}


def _study(case: str) -> Study:
    return study(make_scenario(**CASES[case]))


def _ms(value: float, digits: int) -> Decimal:
    return Decimal(value, digits, "ms")


def _tps(sp: Speed) -> Decimal:
    return Decimal(sp.output_tokens_per_s_per_gpu, 0, "tok/s")


def _speeds(prefix: str, sp: Speed | None) -> dict[str, Param]:
    assert sp is not None, f"a {prefix} speed is quoted but the layout has none"
    return {
        f"{prefix}_tpot": _ms(sp.tpot_ms, 1),
        f"{prefix}_ttft": _ms(sp.ttft_ms, 0),
        f"{prefix}_tps": _tps(sp),
    }


def expected(st: Study, r: Decision, rival: Candidate | None) -> dict[str, Param]:
    """What each parameter of ``r`` must be, from the Study: the pick's and the rival's figures,
    the scenario's asks and the rules' thresholds (a citation is checked for presence only)."""
    s, pick, rules = st.scenario, st.fit, layout_rules()
    out: dict[str, Param] = {"pick": pick.layout.name()}
    if rival is not None:
        out["rival"] = rival.layout.name()
        out |= {
            "pick_users": pick.users,
            "rival_users": rival.users,
            "pick_context": Tokens(pick.context),
            "rival_context": Tokens(rival.context),
            "pick_over": Bytes(pick.shortfall),
            "rival_over": Bytes(rival.shortfall),
            "tp": pick.layout.tp,
            "rival_tp": rival.layout.tp,
            "gpus": pick.layout.split.gpus,
            "rival_gpus": rival.layout.split.gpus,
            "per_node": s.gpus_per_node,
            "weights": Bytes(rival.weights_per_gpu),  # the rival that does not hold them
            "usable": Bytes(rival.usable_per_gpu),
            "context": Tokens(rival.context),
            "asked": s.users,
            "users": s.users,
            "threshold": rules.dp_attention_min_users,
            "bound": Decimal(rules.balanced_tpot_ms, 0, "ms"),
            "ttft_target": _ms(s.ttft_ms, 0) if s.ttft_ms is not None else _NO_TARGET,
            "tpot_target": _ms(s.tpot_ms, 1) if s.tpot_ms is not None else _NO_TARGET,
        }
        if r.code == "layout.vs.context_fits":
            out["asked"] = Tokens(st.context_asked)
        if r.code == "layout.vs.speed.peak":  # throughput first: the speed at full load
            out |= _speeds("pick", pick.throughput) | _speeds("rival", rival.throughput)
        elif any(k.endswith(("_tpot", "_tps", "_ttft")) for k in r.values):
            out |= _speeds("pick", pick.speed) | _speeds("rival", rival.speed)
    elif r.code == "layout.reason.no_fit":
        out |= {
            "layout": pick.layout.name(),
            "weights": Bytes(pick.weights_per_gpu),
            "usable": Bytes(pick.usable_per_gpu),
        }
    elif r.code == "layout.reason.ep":
        out |= {"experts": st.family.num_experts, "ranks": pick.layout.split.moe_group}
    elif r.code == "layout.reason.sliced":
        out |= {"ranks": pick.layout.split.moe_group}
    elif r.code == "layout.reason.context":
        out |= {"context": Tokens(pick.context)}
    return out


_NO_TARGET = Decision("layout.reason.no_target")


def _rival(st: Study, r: Decision) -> Candidate | None:
    if "rival" not in r.values:
        return None
    named = [c for c in st.search.candidates if c.layout.name() == r["rival"]]
    assert len(named) == 1, (r.code, say(r))  # the rival is one of the Study's candidates
    return named[0]


@pytest.mark.parametrize("case", list(CASES))
def test_every_number_in_a_layout_reason_is_the_studys_own(case: str) -> None:
    st = _study(case)
    for r in st.search.reasons:
        rival = _rival(st, r)
        want = expected(st, r, rival)
        for key, value in r.params:
            if isinstance(value, Source):
                assert value.text, (case, r.code, key)
                continue
            assert key in want, (case, r.code, key, "a parameter the test does not know")
            assert value == want[key], (case, r.code, key, value, want[key])
        if "pick" in r.values:
            assert r["pick"] == st.fit.layout.name()  # every comparison is about the pick


def test_the_cases_reach_every_kind_of_reason_the_test_checks() -> None:
    seen = {r.code for case in CASES for r in _study(case).search.reasons}
    assert seen >= REACHED, REACHED - seen


@pytest.mark.parametrize("case", list(CASES))
def test_no_reason_quotes_a_threshold_whose_condition_does_not_hold(case: str) -> None:
    st = _study(case)
    users = st.scenario.users
    limit = layout_rules().dp_attention_min_users
    for r in st.search.reasons:
        if r.code == "layout.vs.style.dp_attention":
            assert users > limit, (case, say(r))
        if r.code == "layout.vs.style.tp_ep":
            assert users <= limit, (case, say(r))


@pytest.mark.parametrize("case", list(CASES))
def test_a_candidates_why_not_and_the_reasons_quote_one_context(case: str) -> None:
    st = _study(case)
    for c in st.search.candidates:
        for why in c.why:
            if why.code == "layout.why.context":
                assert why["fits"] == Tokens(c.context) and c.context < st.context_asked
            if why.code == "layout.why.users":
                assert why["users"] == c.users and why["context"] == Tokens(c.context)


@pytest.mark.parametrize("case", list(CASES))
def test_no_flag_reason_claims_what_the_study_says_is_false(case: str) -> None:
    st = _study(case)
    for view in st.engines.values():
        plan, fit = view.plan, view.fit
        if plan is None or fit is None:
            continue
        whys = {f.flag: f.why for f in plan.flags}
        context = next(w for f, w in whys.items() if f in ("--max-model-len", "--context-length"))
        if not fit.weights_fit:
            assert context.code == "flag.context.blocked", (case, say(context))
        elif fit.context_fits:
            assert context.code == "flag.context.fits", (case, say(context))
        else:
            assert context.code == "flag.context.shortened", (case, say(context))
            assert context["context"] == Tokens(fit.context) == Tokens(plan.context)
        layout = next(w for w in whys.values() if w.code.startswith("flag.layout"))
        if fit.weights_fit:
            assert layout["users"] == fit.users and layout["context"] == Tokens(fit.context)
        else:
            assert layout.code == "flag.layout_closest"
            assert layout["weights"] == Bytes(fit.weights_per_gpu)
        assert (plan.runnable and fit.weights_fit) or not plan.runnable


def test_deepseek_v3_at_64_users_says_how_many_users_each_shape_fits() -> None:
    st = study(make_scenario(**EXTRA["DeepSeek-V3, 8 x H200, 64 users at 32K"]))
    assert st.layout.dp > 1  # DP-attention: the latent stored once per request
    said = next(r for r in st.search.reasons if r.code == "layout.vs.users_fit")
    # the rival is TP 8 (with EP or without: the speed model tells them apart, not memory)
    tp8 = next(c for c in st.search.candidates if c.layout.name() == said["rival"])
    assert (tp8.layout.split.tp, tp8.layout.split.dp) == (8, 1)
    assert said["rival_users"] == tp8.users < 64
    assert said["pick_users"] == st.fit.users >= 64
    # the 128-user threshold is not quoted at 64 users
    assert all("style.dp_attention" not in r.code for r in st.search.reasons)
    assert isinstance(said["pick"], Decision) and not isinstance(said["pick"], Name)


def test_a_blocked_plan_sets_no_max_num_seqs_the_memory_cannot_use() -> None:
    # Kimi-K2 on one H100: the weights are 13 × the GPU; fewer sampler rows free nothing useful
    st = study(make_scenario(**EXTRA["Kimi-K2, 1 x H100, 16 users"]))
    assert not st.fit.weights_fit and st.fit.max_num_seqs is None
    assert st.plan is not None and "--max-num-seqs" not in {f.flag for f in st.plan.flags}
