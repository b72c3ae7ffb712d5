"""A measured figure is a physical quantity before it is a number: finite, positive, and within
``FACTOR`` of what the catalog says that hardware does. A calibration (``make gpu-check``) or a
benchmark's result that says 10^-300 bytes per second, or 10^309, would turn every speed the
model derives from it into NaN or infinity; such a figure is refused by name, with the catalog's
figure it was held against.

``FACTOR``: a misconfigured clock, a throttled or shared card, a small kernel measures a few
times below its data sheet; nothing measures ten times above it, nor ten times below and still
serves a model.
"""

from __future__ import annotations

import math

from engine import errors as E
from engine.decision import Name
from engine.errors import InputError

FACTOR = 10.0


def measured(field: str, value: float, catalog: float, unit: str, factor: float = FACTOR) -> float:
    """``value`` when it is finite, positive and within ``factor`` of ``catalog`` (the catalog's
    figure for the same quantity on that GPU) either way; else ``InputError`` naming ``field``,
    the value, the catalog's figure and the range allowed (``unit``: how the figures are
    counted, e.g. "B/s")."""
    low, high = catalog / factor, catalog * factor
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InputError(field, E.NUMBER_OF(unit=Name(unit), got=E.got(value)))
    if not math.isfinite(value) or not low <= value <= high:
        raise InputError(
            field,
            E.MEASURED(
                got=Name(f"{value:.4g}"),  # 5e-324 and 1e300 as written: no decimals to round
                low=Name(f"{low:.4g}"),
                high=Name(f"{high:.4g}"),
                catalog=Name(f"{catalog:.4g}"),
                unit=Name(unit),
                factor=Name(f"{factor:g}"),
            ),
        )
    return float(value)
