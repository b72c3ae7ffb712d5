"""Overview, Choose a model, Troubleshoot and Learn."""

from __future__ import annotations

from apptest_util import assert_clean, metric_starting, open_app, state, texts


def test_overview_summarises_the_default_model() -> None:
    at = open_app("overview")
    assert "MLA · MoE 8/256 · MTP ×1" in texts(at)
    assert metric_starting(at, "Checkpoint weights") == "637.74 GiB"
    assert any(e.label == "Formula" for e in at.expander)


def test_choose_a_model_lists_the_catalog_and_switches() -> None:
    at = open_app("choose_model")
    table = at.dataframe[0].value
    assert len(table) >= 30
    row = table[table["model"] == "meta-llama/Meta-Llama-3.1-8B"].iloc[0]
    assert row["kv_bytes_per_token"] == 131_072
    at.selectbox(key="choose.pick").set_value("meta-llama/Meta-Llama-3.1-8B")
    at.button(key="choose.go").click().run()
    assert_clean(at)
    assert state(at).model == "meta-llama/Meta-Llama-3.1-8B"


def test_troubleshoot_ranks_causes_for_a_symptom() -> None:
    at = open_app("troubleshoot")
    at.radio(key="trouble.symptom").set_value("memory-fills-fast").run()
    assert_clean(at)
    assert len(at.expander) >= 2
    assert "Why:" in texts(at)


def test_learn_draws_six_designs_intensity_and_absorption() -> None:
    at = open_app("learn")
    table = at.dataframe[0].value
    assert table["design"].tolist() == ["MHA", "GQA", "MQA", "MLA", "DSA", "Hybrid (GDN 3:1)"]
    assert table[table["design"] == "MLA"]["kv_per_token"].iloc[0] == 70_272
    assert len(at.get("plotly_chart")) == 2
    assert "ridge (H200, BF16 dense): 989 TFLOP/s" in texts(at)
    assert "4. Absorb W_UK into the query" in texts(at)


def test_learn_for_a_dense_gqa_model_uses_deepseek_dims_for_mla() -> None:
    at = open_app("learn", {"model": "meta-llama/Meta-Llama-3.1-8B", "gpus": "1", "tp": "1"})
    table = at.dataframe[0].value
    assert table[table["design"] == "GQA"]["kv_per_token"].iloc[0] == 131_072
    assert "has no MLA" in texts(at)
