"""The Study cache: one computation per distinct scenario, shared by every caller (the CLI, each
app session, the linter), including callers that ask for it at the same moment."""

from __future__ import annotations

import threading

import pytest

from engine import study as study_mod
from engine.budget import Memo
from engine.errors import InputError
from engine.scenario import make_scenario


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    real = study_mod._compute

    def counted(s: study_mod.Scenario) -> study_mod.Study:
        calls.append(1)
        return real(s)

    monkeypatch.setattr(study_mod, "_compute", counted)
    return calls


def test_the_same_scenario_is_computed_once_and_returned_as_the_same_object(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls = _counting(monkeypatch)
    s = make_scenario(model="Qwen/Qwen3-8B", users=7_331)  # a scenario no other test asks for
    first = study_mod.study(s)
    assert study_mod.study(make_scenario(model="Qwen/Qwen3-8B", users=7_331)) is first
    assert len(calls) == 1


def test_sessions_asking_for_one_scenario_at_once_share_one_computation(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls = _counting(monkeypatch)
    s = make_scenario(model="Qwen/Qwen3-32B", users=7_333, gpus_per_node=4)
    start = threading.Barrier(8)
    results: list[object] = []

    def session() -> None:
        start.wait()
        results.append(study_mod.study(s))

    threads = [threading.Thread(target=session) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1
    assert len(results) == 8 and all(r is results[0] for r in results)


def test_a_scenario_that_fails_is_not_cached_and_fails_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls = _counting(monkeypatch)
    s = make_scenario(model="Qwen/Qwen3-32B", tp=3)  # 3 does not divide 64 heads
    for _ in range(2):
        with pytest.raises(InputError):
            study_mod.study(s)
    assert len(calls) == 2
    assert s not in study_mod._inflight


def test_a_memo_keeps_the_last_results_put_and_the_oldest_leaves_first() -> None:
    memo: Memo[str, int] = Memo(2)
    assert memo.put("a", 1) == 1
    memo.put("b", 2)
    assert memo.get("a") == 1  # reading does not renew an entry
    memo.put("c", 3)
    assert "a" not in memo and memo.get("a") is None
    assert (memo.get("b"), memo.get("c")) == (2, 3)
    memo.put("b", 4)  # a later put of a key replaces its value
    assert memo.get("b") == 4
