"""The security issue's app findings through Streamlit's AppTest: the paste box reads no server
files, a crafted link cannot crash the app or put live Markdown on the page, a broken Hub config
is left behind by choosing another source, and config strings do not render as Markdown."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.apptest_util import assert_clean, open_app, state, texts

ROOT = Path(__file__).resolve().parent.parent
QWEN_JSON = (ROOT / "data/models/Qwen__Qwen3-8B.json").read_text()
LINK = "[click me](https://evil.example/x)"
IMAGE = "![](https://evil.example/i.png)"
# What a live link or remote image looks like in the Markdown an element carries.
LIVE = ("](https://evil.example",)


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def paste(at: AppTest, text: str) -> AppTest:
    at.radio(key="w.mode").set_value("paste").run()
    at.text_area(key="w.paste").input(text).run()
    at.button(key="w.paste_go").click().run()
    assert_clean(at)
    return at


def live_markdown(at: AppTest) -> list[str]:
    """Every drawn text that would render a link or an image to evil.example."""
    return [t for t in texts(at).splitlines() if any(x in t for x in LIVE)]


# --- the paste box -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text", ["/etc/passwd", "/etc/hostname", "data/models/Qwen__Qwen3-8B.json", "Qwen/Qwen3-8B"]
)
def test_pasting_a_path_or_a_name_reads_nothing_and_says_json_only(text: str) -> None:
    at = paste(open_app(), text)
    assert at.error and all("JSON" in e.value for e in at.error)  # it reads JSON text only
    assert state(at).source == "catalog" and state(at).model == "deepseek-ai/DeepSeek-V3"
    assert "root:" not in texts(at)


def test_pasting_json_text_shows_that_config() -> None:
    at = paste(open_app(), QWEN_JSON)
    assert state(at).source == "file" and state(at).digest is not None


# --- a broken Hub config affects only its own view -----------------------------------------------


def test_a_hub_config_that_cannot_be_read_is_left_by_choosing_another_source() -> None:
    at = open_app()
    at.radio(key="w.mode").set_value("hub").run()
    at.text_input(key="w.hub").input("nobody/nothing-here").run()
    at.button(key="w.hub_go").click().run()
    assert_clean(at)
    assert "could not be read" in texts(at)
    paste(at, QWEN_JSON)
    assert "could not be read" not in texts(at)
    at.radio(key="w.mode").set_value("catalog").run()
    at.selectbox(key="w.model").set_value("Qwen/Qwen3-8B").run()
    assert_clean(at)
    assert "could not be read" not in texts(at) and state(at).model == "Qwen/Qwen3-8B"
    for page in ("kv_cache", "flags"):
        at.switch_page(f"app_pages/{page}.py").run()
        assert_clean(at)
        assert "could not be read" not in texts(at)


# --- crafted links -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "query",
    [
        {LINK: "1"},
        {IMAGE: "1"},
        {"tp": LINK},
        {"gpu": IMAGE},
        {"src": "hub", "model": LINK},
        {"src": "file", "model": "a" * 252},
        {"src": "file", "model": "../../../../etc/passwd"},
        {"model": "a" * 300},
        {"gpu": "H" * 60_000},
    ],
)
def test_a_crafted_link_warns_without_live_markdown_or_a_traceback(query: dict[str, str]) -> None:
    at = open_app(query=query)  # AppTest's own timeout fails a hang
    assert at.warning, "a crafted link says what it ignored"
    assert live_markdown(at) == []
    assert str(ROOT) not in texts(at)


# --- config strings as Markdown --------------------------------

CONFIG_WITH_LINKS = json.dumps(json.loads(QWEN_JSON) | {"architectures": [LINK + IMAGE]})


def test_config_architectures_do_not_render_as_links_on_software() -> None:
    at = paste(open_app(), CONFIG_WITH_LINKS)
    at.switch_page("app_pages/software.py").run()
    assert_clean(at)
    assert live_markdown(at) == []


def test_config_architectures_do_not_render_as_links_on_flags() -> None:
    at = paste(open_app(), CONFIG_WITH_LINKS)
    at.switch_page("app_pages/flags.py").run()
    assert_clean(at)
    assert live_markdown(at) == []


def test_config_architectures_do_not_render_as_links_on_family() -> None:
    at = paste(open_app(), CONFIG_WITH_LINKS)
    at.switch_page("app_pages/family.py").run()
    assert_clean(at)
    assert live_markdown(at) == []


def test_an_error_that_quotes_a_config_value_shows_it_without_live_markdown() -> None:
    bad = json.loads(QWEN_JSON) | {"model_type": LINK + IMAGE, "num_attention_heads": LINK}
    at = paste(open_app(), json.dumps(bad))
    assert at.error  # the config is refused, naming its field
    assert live_markdown(at) == []


# --- parser boundaries: the paste box and the upload's callback ------------------------------

# tests/test_fuzz.py BOUNDARY cases, each a class of what Python's parsers raise or read
APP_CASES = [
    "an integer of 5,000 digits",
    "hidden_size of 5,000 digits",
    "100,000 levels of nesting",
    "hidden_size 1e400 (inf)",
    "rope_theta NaN",
    "head_dim 0",
    "a raw NUL inside a string",
    "a \\u0000 escape in model_type",
    "a surrogate written as UTF-8",
    "a lone surrogate escape",
    "a UTF-8 byte-order mark",
    "duplicate keys, the last 0",
    "a string of 70,000 characters",
]


def _names(message: str, case: str, field: str) -> bool:
    """The error names the field, or, for a JSON syntax error, its line and column."""
    if "NUL" in case:
        return "Invalid JSON at line 1, column" in message
    return f"{field}:" in message


@pytest.mark.parametrize("case", APP_CASES)
def test_an_upload_at_a_parser_boundary_says_which_field_and_raises_nothing(case: str) -> None:
    from tests.test_fuzz import BOUNDARY

    data, field = BOUNDARY[case]
    at = open_app()
    at.radio(key="w.mode").set_value("upload").run()
    at.file_uploader(key="w.upload").upload("config.json", data, "application/json").run()
    assert_clean(at)
    if field is None:
        assert not at.error and state(at).source == "file"  # it loaded
    else:
        assert any(_names(e.value, case, field) for e in at.error), [e.value for e in at.error]


# a browser sends text, never the bytes of a lone surrogate
PASTE_CASES = [c for c in APP_CASES if c != "a surrogate written as UTF-8"]


@pytest.mark.parametrize("case", PASTE_CASES)
def test_a_paste_at_a_parser_boundary_shows_an_error_naming_the_field(case: str) -> None:
    from tests.test_fuzz import BOUNDARY

    data, field = BOUNDARY[case]
    at = paste(open_app(), data.decode("utf-8"))
    if field is None:
        assert not at.error
    else:
        assert any(_names(e.value, case, field) for e in at.error), [e.value for e in at.error]
