"""The layout search says why, with its own figures: every number a reason quotes is a figure
of the Study's candidates, and no reason quotes a threshold whose condition does not hold."""

from __future__ import annotations

from typing import Any

import pytest

from engine.decision import Bytes, Decision, Name, Tokens
from engine.errors import InputError
from engine.launch.layout import Candidate
from engine.launch.ranking import layout_rules
from engine.present.words import say
from engine.scenario import make_scenario
from engine.study import Study, study
from tests.test_consistency import SCENARIOS

EXTRA: dict[str, dict[str, Any]] = {
    "DeepSeek-V3, 8 x H200, 64 users at 32K": {"model": "deepseek-ai/DeepSeek-V3", "users": 64},
    "DeepSeek-V3, 8 x H200, 16 users at 8K": {
        "model": "deepseek-ai/DeepSeek-V3",
        "users": 16,
        "context": 8192,
    },
    "DeepSeek-V3, 8 x H200, 512 users": {"model": "deepseek-ai/DeepSeek-V3", "users": 512},
    "Llama-3.1-70B, 8 x H100, 8 users": {
        "model": "meta-llama/Llama-3.1-70B-Instruct",
        "gpu": "H100",
        "users": 8,
    },
}
CASES = SCENARIOS | EXTRA


def _study(fields: dict[str, Any]) -> Study:
    try:
        return study(make_scenario(**fields))
    except InputError:
        pytest.skip("a scenario that cannot be studied has no reasons")


def _figures(c: Candidate) -> dict[str, set[object]]:
    return {
        "users": {c.users},
        "context": {c.context},
        "weights": {c.weights_per_gpu},
        "usable": {c.usable_per_gpu},
        "gpus": {c.layout.split.gpus},
        "tp": {c.layout.tp},
    }


def _name(c: Candidate) -> Decision:
    return c.layout.name()


@pytest.mark.parametrize("case", list(CASES))
def test_every_number_in_a_layout_reason_is_the_studys_own(case: str) -> None:
    st = _study(dict(CASES[case]))
    by_name = {_name(c): c for c in st.search.candidates}
    for r in st.search.reasons:
        if not r.code.startswith("layout.vs."):
            continue
        pick, rival = by_name[r["pick"]], by_name[r["rival"]]
        assert pick is st.fit  # the reason is about the pick
        for key, value in r.params:
            n = value.n if isinstance(value, Bytes | Tokens) else value
            if key.startswith("rival_") or (
                key in ("weights", "usable") and r.code.endswith("weights_fit")
            ):
                figure = key.removeprefix("rival_")
                if figure in _figures(rival):
                    assert n in _figures(rival)[figure], (case, r.code, key)
            elif key.startswith("pick_"):
                assert n in _figures(pick)[key.removeprefix("pick_")], (case, r.code, key)
            elif key == "asked":
                assert n in (st.scenario.users, st.context_asked), (case, r.code)
            elif key == "users":
                assert n == st.scenario.users
            elif key == "threshold":
                assert n == layout_rules().dp_attention_min_users


@pytest.mark.parametrize("case", list(CASES))
def test_no_reason_quotes_a_threshold_whose_condition_does_not_hold(case: str) -> None:
    st = _study(dict(CASES[case]))
    users = st.scenario.users
    limit = layout_rules().dp_attention_min_users
    for r in st.search.reasons:
        if r.code == "layout.vs.style.dp_attention":
            assert users > limit, (case, say(r))
        if r.code == "layout.vs.style.tp_ep":
            assert users <= limit, (case, say(r))


def test_deepseek_v3_at_64_users_says_how_many_users_each_shape_fits() -> None:
    st = _study(EXTRA["DeepSeek-V3, 8 x H200, 64 users at 32K"])
    assert (st.layout.tp, st.layout.dp, st.layout.ep) == (1, 8, True)
    said = next(r for r in st.search.reasons if r.code == "layout.vs.users_fit")
    tp8 = next(c for c in st.search.candidates if c.layout.split.tp == 8 and c.layout.ep)
    assert said["rival"] == tp8.layout.name() and said["rival_users"] == tp8.users < 64
    assert said["pick_users"] == st.fit.users >= 64
    # the 128-user threshold is not quoted at 64 users
    assert all("style.dp_attention" not in r.code for r in st.search.reasons)
    assert isinstance(said["pick"], Decision) and not isinstance(said["pick"], Name)
