"""The frame: the default view, the shared sidebar, state <-> URL, and bad model input."""

from __future__ import annotations

import huggingface_hub.constants
import pytest
from apptest_util import assert_clean, metric_starting, open_app, state, texts

from engine.model.loader import MODELS_DIR

LLAMA = "meta-llama/Meta-Llama-3.1-8B"
LLAMA_BYTES = (MODELS_DIR / "meta-llama__Meta-Llama-3.1-8B.json").read_bytes()


def test_default_view_is_deepseek_v3_on_8_h200_with_real_numbers() -> None:
    at = open_app()
    s = state(at)
    assert (s.model, s.gpu, s.gpus_per_node, s.engine) == (
        "deepseek-ai/DeepSeek-V3",
        "H200",
        8,
        "vllm",
    )
    assert metric_starting(at, "KV per token (one GPU") == "70,272 B"
    assert metric_starting(at, "Users that fit") == "20"
    assert at.query_params["model"] == "deepseek-ai/DeepSeek-V3"
    assert at.query_params["gpu"] == "H200"
    assert not at.warning


def test_a_link_restores_model_hardware_engine_and_sliders() -> None:
    query = {
        "model": LLAMA,
        "gpu": "B200",
        "gpus": "2",
        "nodes": "1",
        "tp": "2",
        "ctx": "8192",
        "users": "4",
        "engine": "sglang",
        "kv": "fp8",
        "prefix": "40",
        "latency": "latency",
        "mem": "0.85",
    }
    at = open_app("kv_cache", query)
    s = state(at)
    assert (s.model, s.gpu, s.gpus_per_node, s.tp, s.dp, s.context) == (
        LLAMA,
        "B200",
        2,
        2,
        None,
        8192,
    )
    assert (s.users, s.engine, s.kv_dtype, s.prefix_overlap, s.latency) == (
        4,
        "sglang",
        "fp8",
        40,
        "latency",
    )
    assert s.memory_fraction == pytest.approx(0.85)
    assert at.selectbox(key="w.gpu").value == "B200"
    assert at.number_input(key="w.context").value == 8192
    assert at.radio(key="w.engine").value == "sglang"
    assert at.select_slider(key="kv.context").value == 8192
    assert at.selectbox(key="kv.dtype").value == "fp8"
    assert metric_starting(at, "KV per token (one GPU") == "32,768 B"  # fp8 at TP 2
    for key, value in query.items():
        assert at.query_params[key] == value
    assert not at.warning


def test_tampered_link_values_fall_back_to_defaults_with_a_warning() -> None:
    at = open_app(
        None,
        {
            "tp": "abc",
            "gpu": "NOPE-9000",
            "ctx": "-5",
            "model": "evil/../../etc",
            "kv": "int3",
            "zz": "1",
        },
    )
    s = state(at)
    assert (s.tp, s.gpu, s.context, s.model, s.kv_dtype) == (
        None,
        "H200",
        32_768,
        "deepseek-ai/DeepSeek-V3",
        "auto",
    )
    warned = " ".join(w.value for w in at.warning)
    for key in ("tp=", "gpu=", "ctx=", "model=", "kv=", "'zz'"):
        assert key in warned
    assert metric_starting(at, "KV per token (one GPU") == "70,272 B"
    assert "tp" not in at.query_params  # the URL is rewritten with the values in use


def test_a_pinned_tp_larger_than_the_gpus_is_dropped_with_a_warning() -> None:
    at = open_app(None, {"gpus": "2", "tp": "8"})
    assert state(at).tp is None
    assert any("pinned layout" in w.value for w in at.warning)


def test_a_sidebar_change_is_written_to_the_url_and_kept_across_pages() -> None:
    at = open_app()
    at.selectbox(key="w.gpu").set_value("B200").run()
    at.number_input(key="w.users").set_value(40).run()
    assert at.query_params["gpu"] == "B200"
    assert at.query_params["users"] == "40"
    at.switch_page("app_pages/kv_cache.py").run()
    assert_clean(at)
    assert at.select_slider(key="kv.users").value == 40
    assert at.selectbox(key="w.gpu").value == "B200"
    assert "B200" in texts(at)


def test_choosing_a_catalog_model_in_the_sidebar() -> None:
    at = open_app()
    at.selectbox(key="w.model").set_value(LLAMA).run()
    assert_clean(at)
    assert state(at).model == LLAMA
    assert metric_starting(at, "KV per token (one GPU") == "131,072 B"  # 8 replicas of TP 1
    assert at.query_params["model"] == LLAMA


def test_uploading_a_bad_config_says_where_and_shows_nothing_stale() -> None:
    at = open_app()
    at.radio(key="w.mode").set_value("upload").run()
    at.file_uploader(key="w.upload").upload("config.json", b"{not json", "application/json").run()
    assert_clean(at)
    errors = [e.value for e in at.error]
    assert any("Invalid JSON at line 1, column 2" in e for e in errors), errors
    assert len([e for e in errors if "Invalid JSON" in e]) == 1  # said once, on the page
    assert state(at).model == "deepseek-ai/DeepSeek-V3"
    assert not at.metric  # the previous model's numbers are not shown as if they were the answer
    at.radio(key="w.mode").set_value("catalog").run()
    assert metric_starting(at, "KV per token (one GPU") == "70,272 B"


def test_uploading_a_config_without_hidden_size_names_the_field() -> None:
    at = open_app()
    at.radio(key="w.mode").set_value("upload").run()
    at.file_uploader(key="w.upload").upload("config.json", b'{"num_attention_heads": 8}').run()
    assert_clean(at)
    assert any("hidden_size" in e.value for e in at.error)


def test_uploading_a_good_config_diagnoses_it() -> None:
    at = open_app(None, {"gpus": "1", "tp": "1"})
    at.radio(key="w.mode").set_value("upload").run()
    at.file_uploader(key="w.upload").upload("llama.json", LLAMA_BYTES, "application/json").run()
    assert_clean(at)
    assert not at.error
    assert state(at).source == "file"
    assert metric_starting(at, "KV per token (one GPU") == "131,072 B"
    assert at.query_params["src"] == "file"
    assert "cannot travel in a link" in texts(at)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"hidden_size": 4096, "num_hidden_layers": 32}', "num_attention_heads"),
        ('{"hidden_size": 4096,', "Invalid JSON at line 1, column 22"),
        ('{\n  "hidden_size": 4096,\n  oops: 1\n}', "Invalid JSON at line 3, column 3"),
        ("", "JSON"),
        ('{"hidden_size": -1, "num_attention_heads": 8, "num_hidden_layers": 2}', "hidden_size"),
    ],
)
def test_pasting_a_bad_config_shows_an_error(text: str, expected: str) -> None:
    at = open_app()
    at.radio(key="w.mode").set_value("paste").run()
    at.text_area(key="w.paste").input(text)
    at.button(key="w.paste_go").click().run()
    assert_clean(at)
    assert any(expected in e.value for e in at.error), [e.value for e in at.error]
    assert state(at).model == "deepseek-ai/DeepSeek-V3"
    assert not at.metric


def test_pasting_a_good_config() -> None:
    at = open_app(None, {"gpus": "1", "tp": "1", "kv": "fp8"})
    at.radio(key="w.mode").set_value("paste").run()
    at.text_area(key="w.paste").input(LLAMA_BYTES.decode())
    at.button(key="w.paste_go").click().run()
    assert_clean(at)
    assert state(at).source == "file"
    assert metric_starting(at, "KV per token (one GPU") == "65,536 B"


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)


@pytest.mark.usefixtures("offline")
def test_hub_fetch_offline_shows_a_clear_error() -> None:
    at = open_app()
    at.radio(key="w.mode").set_value("hub").run()
    at.text_input(key="w.hub").input("nobody-x/none-y")
    at.button(key="w.hub_go").click().run()
    assert_clean(at)
    assert any("offline or not found" in e.value for e in at.error)
    assert not at.metric  # nothing stale from the previous model
    at.radio(key="w.mode").set_value("catalog").run()
    at.selectbox(key="w.model").set_value(LLAMA).run()
    assert_clean(at)
    assert state(at).source == "catalog" and not at.error  # another source recovers


@pytest.mark.usefixtures("offline")
def test_a_hub_link_offline_says_so_and_shows_no_stale_numbers() -> None:
    at = open_app(None, {"src": "hub", "hub": "nobody-x/none-y"})
    assert any("offline or not found" in e.value for e in at.error)
    assert not at.metric


def test_a_link_from_an_upload_warns_and_shows_the_catalog_model() -> None:
    at = open_app(None, {"src": "upload", "model": LLAMA})
    assert state(at).source == "catalog"
    assert any("cannot" in w.value for w in at.warning)
