"""The one error type bad input raises: it names the field and what was expected."""

from __future__ import annotations


class InputError(ValueError):
    """Bad user input. ``str(err)`` is one line: ``<field>: <what was expected>``."""

    def __init__(self, field: str, expected: str) -> None:
        self.field = field
        self.expected = expected
        super().__init__(f"{field}: {expected}")
