"""Rerun only what changed: a page's own control reruns its fragment (AppTest's tree then holds
only what that rerun drew), a sidebar change reruns the whole page."""

from __future__ import annotations

from apptest_util import assert_clean, metric_starting, open_app, state

from engine.i18n import t


def _titles(at: object) -> list[str]:
    return [e.value for e in at.title]  # type: ignore[attr-defined]


def test_the_context_slider_reruns_the_kv_views_and_the_sidebar_not_the_page() -> None:
    at = open_app("kv_cache")
    assert _titles(at) == ["2 KV cache"]
    at.select_slider(key="kv.context").set_value(131_072).run()
    assert_clean(at)
    assert _titles(at) == []  # the page's title was not drawn again: a fragment ran
    assert metric_starting(at, "KV per request at 128K") == "8.58 GiB"
    assert at.number_input(key="w.context").value == 131_072  # the sidebar shows it too
    assert at.query_params["ctx"] == "131072"


def test_the_memory_slider_reruns_the_kv_views_and_only_the_sidebars_share_link() -> None:
    at = open_app("kv_cache")
    at.select_slider(key="kv.mem").set_value(0.8).run()
    assert_clean(at)
    assert _titles(at) == [] and state(at).memory_fraction == 0.8
    assert not [w for w in at.sidebar.number_input]  # the sidebar's widgets were not redrawn
    assert any("mem=0.8" in c.value for c in at.sidebar.code)  # its share link was
    assert at.query_params["mem"] == "0.8"


def test_a_sidebar_change_reruns_the_whole_page() -> None:
    at = open_app("kv_cache")
    at.number_input(key="w.users").set_value(64).run()
    assert_clean(at)
    assert _titles(at) == ["2 KV cache"] and state(at).users == 64
    assert at.select_slider(key="kv.users").value == 64  # the page's slider follows


def test_the_language_switch_reruns_the_whole_page() -> None:
    at = open_app("kv_cache")
    at.radio(key="w.lang").set_value("ko").run()
    assert_clean(at)
    assert _titles(at) == [t("nav.kv_cache", "ko")]
