"""The reader's language: ``?lang=ko`` in a link, the sidebar's switch, English by default.

Every text a page shows comes from ``T(key, **params)``: the message of ``key`` in the
session's language (``data/i18n/<lang>.yaml``), filled with named parameters.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import streamlit as st

from engine.i18n import DEFAULT_LANG, LANGS, Lang, t
from engine.text.safe import Markdown, inert

LANG = "pb.lang"
NAMES: dict[str, str] = {"en": "English", "ko": "한국어"}


def parse(value: object) -> Lang | None:
    text = str(value or "").strip().lower()
    for lang in LANGS:
        if text == lang:
            return lang
    return None


def init() -> None:
    """First run of a session: the link's ``lang``, else English."""
    if LANG not in st.session_state:
        st.session_state[LANG] = parse(st.query_params.get("lang")) or DEFAULT_LANG


def current() -> Lang:
    return parse(st.session_state.get(LANG)) or DEFAULT_LANG


def T(key: str, /, **params: Any) -> Markdown:
    """The message ``key`` in the session's language, as trusted Markdown. Text parameters
    (model names, config strings, engine reasons, a link's values) are made inert
    (``engine.text.safe.inert``) and kept on one line: nothing in them renders as a link, an
    image, HTML, a directive or a block of its own; a ``Markdown`` parameter (another message,
    the app's own marks) is kept."""
    safe = {k: inert(v, one_line=True) if isinstance(v, str) else v for k, v in params.items()}
    return Markdown(t(key, current(), **safe))


def labels(prefix: str, options: Iterable[str]) -> dict[str, str]:
    """Each option's message ``<prefix>.<option>``, looked up now: a widget's ``format_func``
    may be called outside the script run (AppTest does), where the session's language is not
    at hand."""
    return {o: T(f"{prefix}.{o}") for o in options}


def _on_switch() -> None:
    st.session_state[LANG] = parse(st.session_state.get("w.lang")) or DEFAULT_LANG


def switch() -> None:
    """The language switch (the sidebar's first widget)."""
    st.session_state["w.lang"] = current()
    st.radio(
        T("sidebar.language"),
        list(LANGS),
        format_func=NAMES.__getitem__,
        key="w.lang",
        on_change=_on_switch,
        horizontal=True,
    )
