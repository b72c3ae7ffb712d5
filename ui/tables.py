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
from unicodedata import east_asian_width

import pandas as pd  # type: ignore[import-untyped]
import streamlit as st

from engine.text.safe import plain
from engine.text.units import PERCENT_FORMAT

ColumnConfig = Any  # streamlit.column_config.* returns typed dicts Streamlit does not export
ROW = 35  # Streamlit's default row height in px
HEADER = 38
LINE = 21  # px per wrapped line of text
CHAR_PX = 6.5  # the average width of a Latin character of the table font, in px
WIDE_PX = 13.5  # a Hangul (or other wide) character
PADDING_PX = 28
TEXT_MAX_PX = 460  # a text column wider than this wraps instead
# The main column at 1400 px with the sidebar open is about 938 px wide (measured in Chromium);
# the key columns of a table are narrowed to fit inside it
TABLE_PX = 900
MIN_TEXT_PX = 140
NAMED_PX = {"small": 75, "medium": 200, "large": 400}
MAX_HEIGHT = 4000


def text(
    label: str, help: str | None = None, width: str | int | None = None, pinned: bool = False
) -> ColumnConfig:
    """A text column; without ``width`` it is as wide as its longest value (up to a limit,
    past which it wraps). ``pinned``: stays in view when the table scrolls sideways."""
    return st.column_config.TextColumn(label, help=help, width=width, pinned=pinned or None)  # type: ignore[arg-type]


# Number columns get no fixed width: Streamlit sizes each to its header and its widest value,
# so neither a header ("KV space per GPU (GiB)") nor a value (287,834,112) is cut.


def count(label: str, help: str | None = None) -> ColumnConfig:
    """A whole number with thousands separators (``287,834,112``)."""
    return st.column_config.NumberColumn(label, help=help, format="localized")


def decimal(label: str, digits: int = 2, help: str | None = None) -> ColumnConfig:
    """A number with ``digits`` decimals (GiB, ratios)."""
    return st.column_config.NumberColumn(label, help=help, format=f"%.{digits}f")


def share(label: str, help: str | None = None) -> ColumnConfig:
    """A fraction 0..1 as a progress bar with its percentage, written as the app writes every
    percentage (``56 %``): ``show`` draws the column's values as percent."""
    return st.column_config.ProgressColumn(
        label, help=help, format=PERCENT_FORMAT, min_value=0.0, max_value=100.0, width="medium"
    )


def _px(text: str) -> float:
    """About how wide ``text`` draws in the table font: Hangul and other wide characters take
    nearly twice a Latin letter."""
    return sum(WIDE_PX if east_asian_width(c) in "WF" else CHAR_PX for c in text)


def _is_text(col: object) -> bool:
    return _type(col) == "text"


def _type(col: object) -> object:
    return col.get("type_config", {}).get("type") if isinstance(col, Mapping) else None


def _as_percent(frame: pd.DataFrame, config: Mapping[str, ColumnConfig]) -> pd.DataFrame:
    """Share columns (fractions 0..1) as percent, for their progress bars' labels."""
    shares = [c for c, col in config.items() if c in frame.columns and _type(col) == "progress"]
    if not shares:
        return frame
    out = frame.copy()
    for c in shares:
        out[c] = out[c] * 100
    return out


def _named_px(width: object) -> float:
    """A column's width in px, whether given as a number or as Streamlit's size names."""
    if isinstance(width, int | float):
        return float(width)
    return float(NAMED_PX.get(str(width), NAMED_PX["medium"]))


def _estimate_px(frame: pd.DataFrame, name: str, col: ColumnConfig) -> float:
    """About how wide Streamlit draws a column it sizes itself: its header (and sort arrow) or
    its widest value, whichever is wider, plus the cell's padding."""
    width = col.get("width") if isinstance(col, Mapping) else None
    if width is not None:
        return _named_px(width)
    header = _px(str(col.get("label") or name) if isinstance(col, Mapping) else name) + 20
    values = [v for v in frame[name].tolist() if v is not None] if name in frame.columns else []
    longest = max((_px(f"{v:,}" if isinstance(v, int | float) else str(v)) for v in values),
                  default=0.0)  # fmt: skip
    return max(header, longest) + PADDING_PX


def _shrink(widths: dict[str, float], texts: set[str], budget: float) -> dict[str, float]:
    """Text columns narrowed to one common width (the widest first, water-filling) so the
    columns fit ``budget``; none below ``MIN_TEXT_PX`` (their text then wraps)."""
    fixed = sum(w for n, w in widths.items() if n not in texts)
    room = budget - fixed
    sizes = sorted(widths[n] for n in texts)
    if not sizes or sum(sizes) <= room:
        return widths
    level = sizes[-1]
    for i, w in enumerate(sizes):
        rest = len(sizes) - i
        if sum(sizes[:i]) + w * rest >= room:
            level = (room - sum(sizes[:i])) / rest
            break
    level = max(level, MIN_TEXT_PX)
    return {n: min(w, level) if n in texts else w for n, w in widths.items()}


def _fitted(
    frame: pd.DataFrame,
    config: Mapping[str, ColumnConfig],
    wrap_px: int = TEXT_MAX_PX,
    fit: int | None = None,
) -> tuple[dict[str, Any], int]:
    """Text columns sized to their content (up to ``wrap_px``, past which they wrap), then the
    first ``fit`` columns (all by default) narrowed to the page's width at 1400 px, so that no
    key column leaves the screen; and the row height that shows the longest value of every text
    column whole (over 4 rem, Streamlit wraps text inside a cell)."""
    shown = [n for n in config if n in frame.columns]
    widths: dict[str, float] = {}
    texts: set[str] = set()
    for name in shown:
        col = config[name]
        if not _is_text(col):
            widths[name] = _estimate_px(frame, name, col)
            continue
        texts.add(name)
        longest = max((_px(str(v)) for v in frame[name].tolist() if v is not None), default=0.0)
        header = _px(str(col.get("label") or "")) + 20  # the sort arrow
        width = col.get("width")
        if width is None:
            widths[name] = min(max(longest, header) + PADDING_PX, wrap_px)
        else:
            widths[name] = _named_px(width)
    key = shown[: fit if fit is not None else len(shown)]
    narrowed = _shrink({n: widths[n] for n in key}, texts & set(key), TABLE_PX)
    widths |= narrowed
    out: dict[str, Any] = {}
    lines = 1
    for name, col in config.items():
        if name not in frame.columns or name not in texts:
            out[name] = col
            continue
        px = int(widths[name])
        col = {**col, "width": px}
        room = max(px - PADDING_PX, 60)
        longest = max((_px(str(v)) for v in frame[name].tolist() if v is not None), default=0.0)
        if longest > room + 1:  # a sized-to-fit column never wraps
            lines = max(lines, math.ceil(longest / room))
        out[name] = col
    row = ROW if lines <= 1 else max(70, LINE * lines + 16)
    return out, row


def show(
    frame: pd.DataFrame,
    config: Mapping[str, ColumnConfig],
    *,
    key: str | None = None,
    rows: int | None = None,
    wrap_px: int = TEXT_MAX_PX,
    fit: int | None = None,
) -> None:
    """Draw ``frame`` with ``config`` (column id -> column config). ``rows``: how many rows to
    show before scrolling (default: all of them). ``wrap_px``: the widest a text column grows
    before it wraps (narrower for a table in half the page). ``fit``: how many columns, from
    the first, must be in view at 1400 px (default: all); the others may scroll."""
    fitted, row = _fitted(frame, config, wrap_px, fit)
    shown = len(frame) if rows is None else min(rows, len(frame))
    height = min(HEADER + row * max(shown, 1) + 2, MAX_HEIGHT)
    st.dataframe(
        _as_percent(frame, config),
        hide_index=True,
        width="stretch",
        height=height,
        column_config=fitted,
        column_order=[c for c in config if c in frame.columns],
        row_height=row if row != ROW else None,
        placeholder="—",
        key=key,
    )


def frame(rows: Sequence[Mapping[str, Any]], columns: Sequence[str]) -> pd.DataFrame:
    """A DataFrame with exactly ``columns`` (an empty table keeps its headers). Cells are plain
    text (a dataframe never renders Markdown); a control character shows as an escape."""
    clean = [{k: plain(v) if isinstance(v, str) else v for k, v in row.items()} for row in rows]
    return pd.DataFrame(clean, columns=list(columns))


def texts(rows: Sequence[Mapping[str, Any]], labels: Mapping[str, str], *, key: str) -> None:
    """A table of text columns: ``labels`` maps each column id, in order, to its header."""
    show(frame(rows, list(labels)), {c: text(label) for c, label in labels.items()}, key=key)
