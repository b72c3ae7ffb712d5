"""Tables: a pandas DataFrame drawn with ``st.dataframe`` and a column config per column.

Column ids stay the same in every language (tests and CSV readers rely on them); the header a
reader sees is the column config's label, with its unit. Numbers keep their type (the table
sorts them as numbers) and get a format; shares draw as progress bars; sources as links. The
dataframe's own toolbar searches, sorts and exports CSV. No cell is cut: long text columns wrap
(Streamlit wraps when rows are taller than 4 rem) and the table is as tall as its rows.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd  # type: ignore[import-untyped]
import streamlit as st

ColumnConfig = Any  # streamlit.column_config.* returns typed dicts Streamlit does not export
ROW = 35  # Streamlit's default row height in px
HEADER = 38
CHARS_PER_LINE = {"small": 14, "medium": 30, "large": 60}
LINE = 21
MAX_HEIGHT = 4000


def text(label: str, help: str | None = None, width: str = "medium") -> ColumnConfig:
    return st.column_config.TextColumn(label, help=help, width=width)  # type: ignore[arg-type]


def count(label: str, help: str | None = None, width: str = "small") -> ColumnConfig:
    """A whole number with thousands separators (``287,834,112``)."""
    return st.column_config.NumberColumn(label, help=help, format="localized", width=width)  # type: ignore[arg-type]


def decimal(label: str, digits: int = 2, help: str | None = None) -> ColumnConfig:
    """A number with ``digits`` decimals (GiB, ratios)."""
    return st.column_config.NumberColumn(label, help=help, format=f"%.{digits}f", width="small")


def share(label: str, help: str | None = None) -> ColumnConfig:
    """A fraction 0..1 as a progress bar with its percentage."""
    return st.column_config.ProgressColumn(
        label, help=help, format="percent", min_value=0.0, max_value=1.0, width="small"
    )


def link(label: str, help: str | None = None) -> ColumnConfig:
    return st.column_config.LinkColumn(label, help=help, width="medium")


def _row_height(frame: pd.DataFrame, config: Mapping[str, ColumnConfig]) -> int | None:
    """Tall enough that the longest text of a wrapping column shows whole."""
    lines = 1
    for name, col in config.items():
        if name not in frame.columns or not isinstance(col, Mapping):
            continue
        if col.get("type_config", {}).get("type") != "text":
            continue
        width = str(col.get("width") or "medium")
        longest = max((len(str(v)) for v in frame[name].tolist()), default=0)
        lines = max(lines, math.ceil(longest / CHARS_PER_LINE.get(width, 30)))
    if lines <= 1:
        return None
    return max(70, LINE * lines + 14)  # over 4 rem, so Streamlit wraps the text


def show(
    frame: pd.DataFrame,
    config: Mapping[str, ColumnConfig],
    *,
    key: str | None = None,
    rows: int | None = None,
) -> None:
    """Draw ``frame`` with ``config`` (column id -> column config). ``rows``: how many rows to
    show before scrolling (default: all of them)."""
    row = _row_height(frame, config)
    shown = len(frame) if rows is None else min(rows, len(frame))
    height = min(HEADER + (row or ROW) * max(shown, 1) + 2, MAX_HEIGHT)
    st.dataframe(
        frame,
        hide_index=True,
        width="stretch",
        height=height,
        column_config=dict(config),
        column_order=[c for c in config if c in frame.columns],
        row_height=row,
        placeholder="—",
        key=key,
    )


def frame(rows: Sequence[Mapping[str, Any]], columns: Sequence[str]) -> pd.DataFrame:
    """A DataFrame with exactly ``columns`` (an empty table keeps its headers)."""
    return pd.DataFrame(list(rows), columns=list(columns))
