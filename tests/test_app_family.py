"""Step 1 page: the verdict card, the evidence table and the layer strip."""

from __future__ import annotations

from apptest_util import metrics, open_app, texts


def test_deepseek_v3_is_mla_moe_with_mtp_and_its_evidence() -> None:
    at = open_app("family")
    m = metrics(at)
    assert m["Attention"] == "MLA"
    assert m["MoE"] == "8/256"
    assert m["MTP heads"] == "1"
    assert m["Multimodal"] == "no (text)"
    evidence = at.dataframe[0].value
    assert "kv_lora_rank" in " ".join(evidence["field"])
    assert {"field", "value", "rule"} <= set(evidence.columns)
    assert len(at.get("plotly_chart")) == 1
    assert "61 layers: 61 MLA; FFN: 3 dense FFN, 58 MoE" in texts(at)


def test_a_hybrid_shows_its_linear_layers() -> None:
    at = open_app("family", {"model": "Qwen/Qwen3-Next-80B-A3B-Thinking", "tp": "4", "gpus": "4"})
    assert metrics(at)["Attention"] == "HYBRID"
    assert "36 linear: Gated DeltaNet" in texts(at)


def test_gemma_3_has_a_sliding_window_and_late_fusion() -> None:
    at = open_app("family", {"model": "google/gemma-3-27b-it", "tp": "2", "gpus": "2"})
    m = metrics(at)
    assert m["Attention"] == "GQA"
    assert m["Sliding / local window"] == "sliding"
    assert m["Multimodal"] == "late fusion"


def test_dsa_layers_are_drawn_as_dsa() -> None:
    at = open_app("family", {"model": "deepseek-ai/DeepSeek-V3.2"})
    assert metrics(at)["Attention"] == "DSA"
    assert "DSA (MLA + indexer)" in texts(at)
