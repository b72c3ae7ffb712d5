"""How much the property tests run. ``make test`` runs a quarter of each slow property test's
examples (at least 10), within the suite's time budget on the 2-core development machine;
``make test-all`` (``PLAYBOOK_FULL_TESTS=1``) runs every one of them, and the exhaustive
browser matrices marked ``full``. Hypothesis draws the same examples each run (``derandomize``),
so the default runs are the first quarter of the full ones."""

from __future__ import annotations

import os

FULL = os.environ.get("PLAYBOOK_FULL_TESTS") == "1"
SHARE = 4
LEAST = 10


def examples(n: int) -> int:
    """``n`` examples in a full run, a quarter of them (at least ``LEAST``) by default."""
    return n if FULL else min(n, max(LEAST, n // SHARE))
