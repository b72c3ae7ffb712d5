"""The details a reviewer sees first: one heading per section, parameters in a unit that cannot be
read as bytes, a failed paste said once, plurals, one way of writing percentages, a first-launch
command that wraps, Markdown headings without trailing spaces."""

from __future__ import annotations

import re

import pytest
from apptest_util import assert_clean, open_app, texts

from engine.i18n import LANGS, catalog, t
from engine.present.study_report import study_markdown
from engine.scenario import make_scenario
from engine.study import study
from engine.text.units import PERCENT_FORMAT, percent


def test_the_family_page_says_layer_pattern_once() -> None:
    at = open_app("family")
    shown = [h.value for h in at.subheader] + [m.value for m in at.markdown]
    assert sum(1 for v in shown if "Layer pattern" in v) == 1, shown


@pytest.mark.parametrize(
    ("query", "expected"),
    [({}, r"^684\.5 bn / 37\.\d bn$"), ({"lang": "ko"}, r"^6,845억 / 37\d억$")],
)
def test_parameters_are_counted_in_a_unit_that_is_not_bytes(
    query: dict[str, str], expected: str
) -> None:
    at = open_app(None, query)
    label = t("shown.params", "ko" if query else "en")
    values = [m.value for m in at.metric if m.label == label]
    assert values and re.match(expected, values[0]), values
    assert not values[0].endswith("B")  # "684.5B" beside "70,272 B" reads as bytes


def test_a_failed_paste_is_said_once_and_the_sidebar_shows_nothing_stale() -> None:
    at = open_app()
    at.radio(key="w.mode").set_value("paste").run()
    at.text_area(key="w.paste").input('{\n  "hidden_size": 4096,\n  oops: 1\n}')
    at.button(key="w.paste_go").click().run()
    assert_clean(at)
    errors = [e.value for e in at.error]
    assert len([e for e in errors if "Invalid JSON at line 3, column 3" in e]) == 1, errors
    captions = [c.value for c in at.sidebar.caption]
    assert t("sidebar.nothing_shown") in captions
    assert not any("Showing" in c for c in captions), captions  # not the previous model
    assert not at.metric


@pytest.mark.parametrize("lang", LANGS)
def test_no_message_writes_a_plural_as_s_in_brackets(lang: str) -> None:
    bad = {k: v for k, v in catalog(lang).items() if "(s)" in v}  # type: ignore[arg-type]
    assert not bad, bad


def test_counts_take_the_plural_their_language_writes() -> None:
    one = t("hardware.caption", "en", model="m", per_node=8, gpu="H200", nodes=1, layout="TP 8")
    two = t("hardware.caption", "en", model="m", per_node=8, gpu="H200", nodes=2, layout="TP 8")
    assert "× 1 node," in one and "× 2 nodes," in two
    assert t("lint_page.errors", "en", n=1).startswith("1 error:")
    assert t("lint_page.warnings", "en", n="1,024").startswith("1,024 warnings:")
    ko = t("hardware.caption", "ko", model="m", per_node=8, gpu="H200", nodes=1, layout="TP 8")
    assert "1개 노드" in ko  # Korean counts with a counter word, no plural


def test_percentages_are_written_one_way() -> None:
    assert percent(0.5648) == "56 %" and percent(0.08) == "8 %"
    assert percent(0.004) == "0.4 %" and percent(0.08, signed=True) == "+8 %"
    assert PERCENT_FORMAT % 56.48 == "56 %"  # the tables' progress bars, the same way
    at = open_app("troubleshoot")
    assert_clean(at)
    body = texts(at) + " ".join(e.label for e in at.expander)
    assert re.search(r"\d %", body) and not re.search(r"\d%", body), body[:500]


def test_the_first_launch_command_wraps_instead_of_scrolling() -> None:
    at = open_app("measure")
    assert_clean(at)
    first = at.code[0]
    assert first.value.startswith(("vllm serve", "python")) and first.proto.wrap_lines


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize(
    "model", ["deepseek-ai/DeepSeek-V3", "meta-llama/Meta-Llama-3.1-8B", "Qwen/Qwen3-8B"]
)
def test_no_markdown_heading_ends_in_a_space(model: str, lang: str) -> None:
    md = study_markdown(study(make_scenario(model=model)), lang, "http://localhost:8501/")  # type: ignore[arg-type]
    headings = [line for line in md.splitlines() if line.startswith("#")]
    assert headings and all(h == h.rstrip() for h in headings), [
        h for h in headings if h != h.rstrip()
    ]
