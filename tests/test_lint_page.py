"""The lint page: paste a command, get the findings as a table (severity, code, fix, message) and
the corrected command with copy and download."""

from __future__ import annotations

import re

import pytest

from tests.apptest_util import assert_clean, open_app, texts


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def test_lint_page_shows_findings_as_a_table_and_the_corrected_command() -> None:
    at = open_app("lint")
    at.text_area(key="lint.text").input(
        "vllm serve deepseek-ai/DeepSeek-V3 --tensor-parallel-size 8 --no-enable-prefix-caching"
    )
    at.button(key="lint.go").click().run()
    assert_clean(at)
    columns = ["severity", "code", "fix", "message"]  # the fix in view, the long message last
    table = next(t.value for t in at.dataframe if list(t.value.columns) == columns)
    assert "unknown-flag" in set(table["code"])
    assert "moe-experts-sliced" in set(table["code"])
    code = [c.value for c in at.code if c.value.startswith("vllm serve")]
    assert code and "--disable-prefix-caching" in code[0]
    assert re.search(r"\b\d+ errors?:", texts(at))  # "1 error:", "2 errors:"


def test_values_from_the_command_show_as_plain_text_not_as_links_or_images() -> None:
    at = open_app("lint")
    at.text_area(key="lint.text").input(
        "vllm serve deepseek-ai/DeepSeek-V3 --tensor-parallel-size 8 "
        "--tool-call-parser '![x](https://evil.example/i.png)[y](https://evil.example)'"
    )
    at.button(key="lint.go").click().run()
    assert_clean(at)
    columns = ["severity", "code", "fix", "message"]
    table = next(t.value for t in at.dataframe if list(t.value.columns) == columns)
    assert any("![x](https://evil" in m for m in table["message"])  # the finding quotes it
    assert all("evil" not in str(t.value) for t in at.table)
    drawn = [m.value for m in at.markdown] + [c.value for c in at.caption]
    assert not any("](https://evil" in m for m in drawn)


def test_lint_page_offers_the_corrected_command_for_download() -> None:
    at = open_app("lint")
    at.text_area(key="lint.text").input("vllm serve deepseek-ai/DeepSeek-V3 -tp 8 -ep")
    at.button(key="lint.go").click().run()
    assert_clean(at)
    assert any(b.label == "Download the corrected command" for b in at.get("download_button"))
    assert "No errors and no warnings." in texts(at)


def test_lint_page_rejects_text_that_is_not_a_command() -> None:
    at = open_app("lint")
    at.text_area(key="lint.text").input("hello world")
    at.button(key="lint.go").click().run()
    assert_clean(at)
    assert any("command" in e.value for e in at.error)


def test_a_command_with_no_clean_correction_offers_no_download_and_names_what_remains() -> None:
    at = open_app("lint", query={"gpus": "1"})
    at.text_area(key="lint.text").input("vllm serve deepseek-ai/DeepSeek-V3")
    at.button(key="lint.go").click().run()
    assert_clean(at)
    assert not at.get("download_button")
    assert at.error  # "no clean correction", with the remaining errors in a table below
    remaining = [t.value for t in at.dataframe if "code" in t.value.columns]
    assert any("does-not-fit" in set(t["code"]) for t in remaining)
    assert not [c.value for c in at.code if c.value.startswith("vllm serve")]


def test_the_page_says_each_fix_was_linted_again_only_when_the_result_is_clean() -> None:
    at = open_app("lint")
    at.text_area(key="lint.text").input("vllm serve Qwen/Qwen3-8B --tensor-parallel-size 3")
    at.button(key="lint.go").click().run()
    assert_clean(at)
    assert any(b.label == "Download the corrected command" for b in at.get("download_button"))
    code = [c.value for c in at.code if c.value.startswith("vllm serve")]
    assert code and "--tensor-parallel-size 3" not in code[0]
