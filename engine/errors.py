"""The one error type bad input raises: it names the field and what was expected."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from engine.decision import Decision


class InputError(ValueError):
    """Bad user input. ``str(err)`` is one line: ``<field>: <what was expected>``. ``why``: the
    engine's decision behind it (a layout the model's shapes refuse), which the CLI and the
    pages word in the reader's language after the expectation."""

    def __init__(self, field: str, expected: str, why: Decision | None = None) -> None:
        self.field = field
        self.expected = expected
        self.why = why
        super().__init__(f"{field}: {expected}")


class JsonError(InputError):
    """Text that is not JSON: where it stops being JSON (so a page can say it in its language)."""

    def __init__(self, field: str, msg: str, line: int, column: int) -> None:
        self.msg = msg
        self.line = line
        self.column = column
        super().__init__(field, f"valid JSON ({msg} at line {line}, column {column})")
