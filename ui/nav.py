"""The app's pages, in navigation order, grouped by section: app.py draws the navigation from
this, and the tests and the browser benchmark visit the same list."""

from __future__ import annotations

SECTIONS: dict[str, tuple[str, ...]] = {
    "start": ("overview", "choose_model", "capacity", "compare"),
    "diagnosis": (
        "family",
        "kv_cache",
        "hardware",
        "software",
        "flags",
        "lint",
        "measure",
    ),
    "help": ("troubleshoot", "learn"),
}
PAGES: tuple[str, ...] = tuple(name for names in SECTIONS.values() for name in names)
DEFAULT_PAGE = PAGES[0]
