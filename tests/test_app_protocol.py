"""Rerun only what changed, on a real server: the app behind `streamlit run`, driven over
Streamlit's websocket protocol (tools/bench_sessions.py's client, no browser). A page's own
control ends in a fragment run; a sidebar change in a whole-page run."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from tools.app_server import app_server
from tools.bench_sessions import Session, Timing


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    with app_server() as base:
        yield base


def _run(base: str, page: str, key: str, value: str | int) -> Timing:
    async def go() -> Timing:
        s = Session(base)
        try:
            await s.open(page)
            return await s.set(key, value)
        finally:
            await s.close()

    return asyncio.run(go())


@pytest.mark.parametrize(
    ("page", "key", "value"),
    [
        ("kv_cache", "kv.context", "64K"),
        ("kv_cache", "kv.mem", "0.8"),
        ("choose_model", "choose.search", "qwen"),
        ("troubleshoot", "trouble.symptom", "The model never calls tools"),
    ],
)
def test_a_pages_own_control_reruns_its_fragment(
    server: str, page: str, key: str, value: str
) -> None:
    assert _run(server, page, key, value).fragment


@pytest.mark.parametrize("page", ["kv_cache", "overview"])
def test_a_sidebar_change_reruns_the_whole_page(server: str, page: str) -> None:
    assert not _run(server, page, "w.users", 48).fragment
