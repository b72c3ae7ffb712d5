"""One unit convention for every page: memory in GiB (2^30 bytes, as engine logs print it) with
the exact byte count beside it or on hover; GB (10^9 bytes) only where a vendor states a
figure, and then labelled as the vendor's. Bandwidths keep their datasheet units (GB/s, TB/s).
Percentages are whole numbers with a space before the sign (``56 %``; one decimal under 1 %),
in text and in tables alike.

``unit_problems`` is the rule as a check: the app-wide test feeds it every page's text.
"""

from __future__ import annotations

import re

GIB = 1 << 30
GB = 1_000_000_000
TERA = 1e12


def gib(n: float, digits: int = 2) -> str:
    """Bytes as GiB (2^30): ``140.40 GiB``."""
    return f"{n / GIB:,.{digits}f} GiB"


def in_gib(n: float) -> float:
    """Bytes as a number of GiB, for chart axes and table cells."""
    return n / GIB


def nbytes(n: float) -> str:
    """Exact bytes with thousands separators (fractions kept for compressed layers)."""
    return f"{n:,.0f} B" if float(n).is_integer() else f"{n:,.2f} B"


class Count(float):
    """A large count (parameters) that each language's message writes in its own unit, never a
    bare "B" that reads as bytes: ``{n:bn}`` is billions (``684.5``, for "684.5 bn"), ``{n:eok}``
    is 억, 10^8 (``6,845``, for "6,845억")."""

    def __format__(self, spec: str) -> str:
        if spec == "bn":
            return f"{self / 1e9:,.1f}"
        if spec == "eok":
            return f"{self / 1e8:,.0f}"
        return super().__format__(spec)


def percent(share: float, signed: bool = False) -> str:
    """A share (0.5648) as the app writes percentages: ``56 %`` (``0.4 %`` under 1 %);
    ``signed``: ``+8 %`` / ``-3 %``."""
    pct = share * 100
    sign = "+" if signed else ""
    return f"{pct:{sign}.1f} %" if 0 < abs(pct) < 1 else f"{pct:{sign},.0f} %"


PERCENT_FORMAT = "%.0f %%"  # the same, for a table column of percentages (st.column_config)


def vendor_gb(value: float, unit: str) -> str:
    """A capacity as the vendor states it (``141 GB``); callers label it as the vendor's."""
    return f"{value:g} {unit}"


def tb_per_s(bytes_per_s: float) -> str:
    """A bandwidth in TB/s (10^12 B/s), as datasheets give it."""
    return f"{bytes_per_s / TERA:,.2f} TB/s"


def tokens(n: int) -> str:
    """A token count the way people say it: 32K, 1M, else with separators."""
    if n >= 1 << 20 and n % (1 << 20) == 0:
        return f"{n >> 20}M"
    if n >= 1024 and n % 1024 == 0:
        return f"{n >> 10}K"
    return f"{n:,}"


# --- the rule as a check --------------------------------------------------------------------

# A memory figure: a number and a byte unit, not a rate (GB/s) and not a name (A100 80GB has no
# space and is a product name, which the lookbehind on a digit-space pair skips).
_FIGURE = re.compile(r"\d[\d,.]*\s(?P<unit>GiB|MiB|TiB|KiB|GB|MB|TB)\b(?!/s)")
_BINARY = frozenset({"GiB", "MiB", "TiB", "KiB"})
# Words that label a decimal figure as the vendor's (English and Korean).
VENDOR_WORDS = ("vendor", "datasheet", "제조사")
_PIECES = re.compile(r"\n|(?<=[.;])\s")


def unit_problems(text: str) -> list[str]:
    """Figures in ``text`` that break the convention: a decimal GB/MB/TB figure not labelled
    as the vendor's, or a sentence that mixes decimal and binary units without that label.
    Returns the offending pieces (empty when the text keeps the rule)."""
    out = []
    for piece in _PIECES.split(text):
        units = {m.group("unit") for m in _FIGURE.finditer(piece)}
        decimal = units - _BINARY
        if not decimal:
            continue
        if not any(w in piece.lower() for w in VENDOR_WORDS):
            out.append(piece.strip())
    return out
