"""What every ``python -m engine ...`` sub-command shares: bad input is one stderr line, exit 2."""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable, Sequence
from typing import NoReturn

from engine.errors import InputError

_ARGUMENT_ERROR = re.compile(r"argument ([^:]+): (.*)")


class InputErrorParser(argparse.ArgumentParser):
    """argparse that raises ``InputError`` naming the argument instead of printing usage."""

    def error(self, message: str) -> NoReturn:
        match = _ARGUMENT_ERROR.match(message)
        if match:
            raise InputError(match.group(1).split("/")[0], match.group(2))
        raise InputError("arguments", message)


def run_cli(
    parser: argparse.ArgumentParser,
    argv: Sequence[str] | None,
    body: Callable[[argparse.Namespace], int],
) -> int:
    """Parse ``argv`` and run ``body``; ``--help`` exits 0, an ``InputError`` anywhere is one
    ``error: <field>: <expected>`` line on stderr and exit code 2."""
    try:
        try:
            args = parser.parse_args(argv)
        except SystemExit as done:  # --help printed its text
            return done.code if isinstance(done.code, int) else 0
        return body(args)
    except InputError as err:
        print(f"error: {err}".replace("\n", " "), file=sys.stderr)
        return 2
