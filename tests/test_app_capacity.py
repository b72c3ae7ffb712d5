"""The Capacity and cost page, the Compare page and the shortlist on Choose a model, in both
languages, through Streamlit's AppTest."""

from __future__ import annotations

import pytest
from apptest_util import assert_clean, open_app, texts

TRAFFIC = {"model": "Qwen/Qwen3-8B", "gpu": "H100", "gpus": "8", "rate": "6", "vs": "B200"}


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_the_capacity_page_sizes_the_rate_on_every_gpu_compared(lang: str) -> None:
    at = open_app("capacity", {**TRAFFIC, "lang": lang})
    assert not at.error
    figures = {m.label: m.value for m in at.metric}
    assert len(figures) == 5 and all(v not in ("", "—") for v in figures.values())
    table = at.dataframe[0].value
    assert list(table["gpu"]) == ["H100 SXM", "B200"]
    assert (table["gpus"] >= 1).all() and (table["per_million"] > 0).all()
    assert len(at.get("plotly_chart")) == 1


def test_without_a_rate_the_page_prices_the_sidebars_gpus_at_the_asked_load() -> None:
    at = open_app("capacity", {"model": "Qwen/Qwen3-8B", "gpu": "H100", "gpus": "8"})
    assert at.info and not at.error
    table = at.dataframe[0].value
    assert (table["cost_per_hour"] > 0).all() and (table["per_million"] > 0).all()


def test_a_rate_no_gpu_serves_is_one_error_and_the_app_keeps_working() -> None:
    at = open_app("capacity", {**TRAFFIC, "ttft": "1"})
    assert len(at.error) == 1 and "request_rate" in at.error[0].value
    at.switch_page("app_pages/overview.py").run()
    assert_clean(at)
    assert not at.error


def test_a_gpu_with_no_listed_price_says_to_give_one() -> None:
    at = open_app("capacity", {"model": "Qwen/Qwen3-8B", "gpu": "GH200", "gpus": "1", "rate": "1"})
    assert any("GH200" in w.value for w in at.warning)
    at = open_app("capacity", {"model": "Qwen/Qwen3-8B", "gpu": "GH200", "gpus": "1", "rate": "1",
                               "price": "2.5"})  # fmt: skip
    assert not at.warning and "2.5" in texts(at)


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_the_compare_page_puts_the_models_side_by_side(lang: str) -> None:
    at = open_app("compare", {**TRAFFIC, "model": "Qwen/Qwen3-32B", "lang": lang})
    at.multiselect(key="compare.models").set_value(["Qwen/Qwen3-32B", "Qwen/Qwen3-30B-A3B"]).run()
    assert_clean(at)
    table = at.dataframe[0].value
    assert len(table) == 4  # two models × two GPUs
    moe = table[table["model"] == "Qwen/Qwen3-30B-A3B"]["gpus"].min()
    dense = table[table["model"] == "Qwen/Qwen3-32B"]["gpus"].min()
    assert moe < dense


def test_choose_a_model_lists_what_runs_on_the_sidebars_gpus() -> None:
    at = open_app("choose_model", {"gpu": "RTX 4090", "gpus": "2", "lang": "ko"})
    at.toggle(key="choose.shortlist.on").set_value(True).run()
    assert_clean(at)
    runs = at.dataframe[0].value
    assert "Qwen/Qwen3-32B" in set(runs["model"]) and (runs["users"] >= 1).all()
    assert "deepseek-ai/DeepSeek-V3.2" not in set(runs["model"])
