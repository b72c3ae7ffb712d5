"""Work bounded per request and fair across sessions (issue 32): a Study's work is known from
the config's shape before it starts and refused past the bound, the per-layer work is done once
per distinct shape (not per layer per candidate per alternative), heavy work runs one piece at
a time per process, and every source of a config counts against the session's loads."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import pytest

from engine import study as study_mod
from engine.alternatives import alternatives
from engine.errors import InputError
from engine.kv import pipeline as pipeline_mod
from engine.model import store
from engine.model.loader import MODELS_DIR, LoadedModel, load_model
from engine.scenario import make_scenario
from tests.apptest_util import assert_clean, open_app, texts

WORST = {"num_hidden_layers": 4096, "n_routed_experts": 65_536, "num_experts_per_tok": 65_536}


def worst_model(tag: int) -> LoadedModel:
    """DeepSeek-V3 with 4,096 layers and 65,536 experts, all per token (``tag``: its own)."""
    cfg = json.loads((MODELS_DIR / "deepseek-ai__DeepSeek-V3.json").read_text())
    return load_model(json.dumps(cfg | WORST | {"test_tag": tag}).encode(), name="worst.json")


def worst(tag: int, **fields: Any) -> study_mod.Scenario:
    digest = store.put(worst_model(tag))
    return make_scenario(source="file", model="worst.json", digest=digest, **fields)


def test_a_study_past_the_work_bound_is_refused_naming_layers_layouts_and_the_figure() -> None:
    with pytest.raises(InputError) as refused:
        study_mod.study(worst(1, gpus_per_node=64, nodes=128))
    err = refused.value
    assert err.field == "gpus" and err.expects is not None
    assert err.expects.code == "error.study_work"
    params = dict(err.expects.params)
    assert params["layers"] == 4096 and params["layouts"] == 307
    assert params["got"] == 4096 * 307 > params["most"] == study_mod.MAX_WORK


def test_the_worst_shape_in_bounds_builds_its_layers_once_for_the_study_and_its_alternatives(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    built: list[int] = []
    sized: list[tuple[int, str, str]] = []
    real_build, real_size = pipeline_mod.build_architecture, pipeline_mod.size_kv

    def build(cfg: Any) -> Any:
        built.append(cfg.num_hidden_layers)
        return real_build(cfg)

    def size(arch: Any, cfg: Any, kvd: Any, tp: int, engine: str, block: Any = None) -> Any:
        sized.append((tp, engine, repr(kvd)))
        return real_size(arch, cfg, kvd, tp, engine, block)

    monkeypatch.setattr(pipeline_mod, "build_architecture", build)
    monkeypatch.setattr(pipeline_mod, "size_kv", size)
    s = worst(2)
    assert study_mod.work(s, 4096, moe=True) <= study_mod.MAX_WORK
    st = study_mod.study(s)
    assert st.verdict.status == "does_not_fit"  # so the alternatives study 16 more GPU counts
    alternatives(st)
    assert built == [4096]  # one architecture for 17 Studies
    assert len(sized) == len(set(sized))  # each KV sizing once per TP, engine and KV dtype


def test_the_work_of_a_catalog_model_on_the_largest_cluster_is_within_the_bound() -> None:
    s = make_scenario(model="moonshotai/Kimi-K2-Instruct", gpus_per_node=60, nodes=120)
    assert study_mod.work(s, 61, moe=True) < study_mod.HEAVY_WORK * 5 < study_mod.MAX_WORK


def test_a_cached_catalog_study_is_light_and_a_hub_or_the_worst_shape_is_heavy() -> None:
    s = make_scenario(model="Qwen/Qwen3-8B", users=7_351)
    study_mod.study(s)
    assert not study_mod.is_heavy(s)
    assert study_mod.is_heavy(make_scenario(source="hub", model="acme/not-cached"))
    assert study_mod.is_heavy(worst(3))


def test_heavy_work_runs_one_piece_at_a_time_whatever_the_sessions() -> None:
    from ui import busy

    running, most = [0], [0]
    lock = threading.Lock()

    def session() -> None:
        with busy.heavy():
            with lock:
                running[0] += 1
                most[0] = max(most[0], running[0])
            time.sleep(0.02)
            with busy.heavy():  # nested heavy work in the same session takes no second slot
                pass
            with lock:
                running[0] -= 1

    threads = [threading.Thread(target=session) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert most[0] == busy.MAX_HEAVY == 1 and running[0] == 0


def test_light_work_never_waits_for_the_heavy_slot() -> None:
    from ui import busy

    with busy.heavy():  # another session's heavy work holds the slot
        done = threading.Event()

        def session() -> None:
            with busy.heavy(needed=False):
                done.set()

        t = threading.Thread(target=session)
        t.start()
        assert done.wait(5)
        t.join()


# --- every source of a config counts against the session's loads ------------------------------


def test_a_hub_fetch_counts_against_the_sessions_loads(monkeypatch: pytest.MonkeyPatch) -> None:
    from ui.state import LOADS, MAX_LOADS_PER_SESSION

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    at = open_app()
    at.session_state[LOADS] = MAX_LOADS_PER_SESSION - 1
    at.radio(key="w.mode").set_value("hub").run()
    at.text_input(key="w.hub").input("Qwen/Qwen3-8B").run()
    at.button(key="w.hub_go").click().run()
    assert_clean(at)
    assert at.session_state["pb.scenario"].source == "hub"  # the last allowed load
    at.text_input(key="w.hub").input("Qwen/Qwen3-32B").run()
    at.button(key="w.hub_go").click().run()
    assert at.session_state["pb.scenario"].model == "Qwen/Qwen3-8B"  # the 31st is refused
    assert "configs" in texts(at) and at.session_state[LOADS] == MAX_LOADS_PER_SESSION


def test_the_linters_hub_fetch_asks_before_each_fetch_and_fetches_nothing_when_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from engine.lint import lint_command
    from engine.lint import model as lint_model

    fetched: list[str] = []
    monkeypatch.setattr(lint_model, "_hub", lambda repo: fetched.append(repo))
    asked: list[int] = []

    def allowance() -> bool:
        asked.append(1)
        return False

    cmd = "vllm serve acme/some-model --tensor-parallel-size 8"
    lint_command(cmd, "Qwen/Qwen3-8B", "H200", 8, hub=allowance)
    assert asked and fetched == []
    lint_command(cmd, "Qwen/Qwen3-8B", "H200", 8, hub=lambda: True)
    assert fetched and set(fetched) == {"acme/some-model"}
