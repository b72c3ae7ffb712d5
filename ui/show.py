"""Draw engine results: every number with an expander holding its formula."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, ParamSpec, TypeVar

import streamlit as st

from engine.errors import InputError
from engine.present.charts_data import Shown
from engine.study import Study

P = ParamSpec("P")
T = TypeVar("T")


def number(s: Shown) -> None:
    """A metric and, under it, the formula with the config's values plugged in."""
    st.metric(s.label, s.value, help=s.help or None)
    with st.expander("Formula"):
        st.code(s.formula, language=None, wrap_lines=True)


def numbers(items: Sequence[Shown], per_row: int = 3) -> None:
    for start in range(0, len(items), per_row):
        row = items[start : start + per_row]
        for col, item in zip(st.columns(per_row), row, strict=False):
            with col:
                number(item)


def or_error(call: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T | None:
    """Call an engine function; on input it rejects, show its message and return None."""
    try:
        return call(*args, **kwargs)
    except InputError as err:
        st.error(str(err))
        return None


def table(rows: Sequence[Mapping[str, Any]], height: int | None = None) -> None:
    """A table whose numbers show thousands separators (70,272 rather than 70272)."""
    numeric = {
        k
        for row in rows
        for k, val in row.items()
        if isinstance(val, int | float) and not isinstance(val, bool)
    }
    config = {k: st.column_config.NumberColumn(format="localized") for k in numeric}
    kwargs: dict[str, Any] = {"hide_index": True, "width": "stretch", "column_config": config}
    if height is not None:
        kwargs["height"] = height
    st.dataframe(list(rows), **kwargs)


VERDICT_BOX = {
    "runs": st.success,
    "fewer_users": st.warning,
    "shorter_context": st.warning,
    "does_not_fit": st.error,
    "blocked": st.error,
}
VERDICT_TITLE = {
    "runs": "Runs",
    "fewer_users": "Runs, fewer users than asked",
    "shorter_context": "Runs with a shorter context",
    "does_not_fit": "Does not fit",
    "blocked": "Does not run",
}


def verdict(study: Study) -> None:
    """The answer first: runs / runs with a shorter context / does not fit, and the reason."""
    v = study.verdict
    text = f"**{VERDICT_TITLE[v.status]}** — {v.reason}"
    if v.suggestions:
        text += "\n\n" + "\n".join(f"- {tip}" for tip in v.suggestions)
    VERDICT_BOX[v.status](text)
