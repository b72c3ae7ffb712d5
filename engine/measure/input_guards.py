"""Hostile-input guards for step 6: bounded reads of regular files and pasted text, and every
number read from them checked finite and in range before anything uses it.

A log is text a user names or pastes. ``/dev/zero``, a FIFO or a socket never ends, a 5,000-digit
integer makes ``int()`` raise, ``1e400`` is infinite: each becomes one ``InputError`` naming what
was wrong, within milliseconds, never a traceback or a hang.
"""

from __future__ import annotations

import math
import os
import re
import stat
from typing import Final

from engine import errors as E
from engine.decision import Code, Decision, Name
from engine.errors import InputError
from engine.measure.measure_data import ValueKind, measure_facts

GIB: Final = 1024**3
_CHUNK = 1 << 20
# A plain decimal float: no underscores, no exponent-only forms, no non-ASCII digits.
_FLOAT = re.compile(r"[+-]?+(?:\d++(?:\.\d*+)?+|\.\d++)(?:[eE][+-]?+\d++)?+")
_DTYPE = re.compile(r"(?:torch\.)?+([A-Za-z][A-Za-z0-9_]{0,47}+)")


# what a log value must be, and how a value failed it (data/i18n/<lang>/errors.yaml)
VALUE = {
    kind: Code(f"error.value.{kind}", *params)
    for kind, params in (
        ("count", ("most",)),
        ("gib", ("most",)),
        ("bytes", ("most",)),
        ("factor", ("most",)),
        ("fraction", ()),
        ("ratio", ()),
        ("parallel", ("most",)),
        ("block", ("most",)),
        ("dtype", ()),
    )
}
GOT = Code("error.value_got.as_is", "expected", "got")
NOT_FINITE = Code("error.value_got.not_finite", "expected", "got")
OVER_DIGITS = Code("error.value_got.over_digits", "expected", "got", "most")
NOT_WHOLE = Code("error.value_got.not_whole", "expected", "got")
NEGATIVE_POOL = Code("error.value_got.negative_pool", "expected", "got")
# a file or text too large to read, and a file that is no regular file
TOO_BIG = Code("error.file.too_big", "what", "mib")
TOO_BIG_FILE = Code("error.file.too_big_what.file_given", "got")
TOO_BIG_FILE_READ = Code("error.file.too_big_what.file")
TOO_BIG_TEXT = Code("error.file.too_big_what.text")
REGULAR = Code("error.file.regular", "path", "kind")
FILE_KIND = {
    kind: Code(f"error.file.kind.{kind}")
    for kind in ("directory", "fifo", "character", "block", "socket", "special")
}


class BadValue(ValueError):
    """A value that is not what its kind allows: ``expects`` says what would be and how the
    value failed it, ``raw`` is the value as an error quotes it."""

    def __init__(self, expects: Decision, raw: str = "") -> None:
        self.expects = expects
        self.raw = raw
        super().__init__(expects)


def _file_kind(mode: int) -> Decision:
    for test, kind in (
        (stat.S_ISDIR, "directory"),
        (stat.S_ISFIFO, "fifo"),
        (stat.S_ISCHR, "character"),
        (stat.S_ISBLK, "block"),
        (stat.S_ISSOCK, "socket"),
    ):
        if test(mode):
            return FILE_KIND[kind]()
    return FILE_KIND["special"]()


def _too_big(field: str, limit: int, what: Decision) -> InputError:
    return InputError(field, TOO_BIG(what=what, mib=limit // 2**20))


def read_bytes(path: str, field: str, limit: int) -> bytes:
    """The bytes of a regular file of at most ``limit`` bytes.

    The file is opened non-blocking (a FIFO without a writer does not hang the open), checked
    with ``fstat`` on the open descriptor (no race with a swapped path), refused unless it is a
    regular file, and read up to ``limit + 1`` bytes (a file that grows, or a /proc file that
    reports size 0, is still bounded).
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(path, flags)
    except OSError as err:
        raise InputError(field, E.readable(err, path)) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise InputError(field, REGULAR(path=Name(path), kind=_file_kind(info.st_mode)))
        if info.st_size > limit:
            raise _too_big(field, limit, TOO_BIG_FILE(got=info.st_size))
        chunks: list[bytes] = []
        total = 0
        while total <= limit:
            chunk = os.read(fd, min(_CHUNK, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
    except OSError as err:
        raise InputError(field, E.readable(err, path)) from None
    finally:
        os.close(fd)
    if total > limit:
        raise _too_big(field, limit, TOO_BIG_FILE_READ())
    return b"".join(chunks)


def read_text(path: str, field: str, limit: int | None = None) -> str:
    """A log or /metrics file as text (undecodable bytes replaced: logs carry odd bytes)."""
    cap = measure_facts().limits.text_bytes if limit is None else limit
    return read_bytes(path, field, cap).decode("utf-8", errors="replace")


def read_utf8(path: str, field: str, limit: int) -> str:
    """A file that must be UTF-8 (a JSON spec): anything else is refused, not replaced."""
    data = read_bytes(path, field, limit)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise InputError(field, E.FILE_UTF8(at=err.start)) from None


def check_text_size(text: str, field: str, limit: int | None = None) -> None:
    """Refuse pasted text over the byte limit (the app passes text, not files)."""
    cap = measure_facts().limits.text_bytes if limit is None else limit
    if len(text) > cap or (
        len(text) * 4 > cap and len(text.encode("utf-8", "surrogatepass")) > cap
    ):
        raise _too_big(field, cap, TOO_BIG_TEXT())


def shown(raw: str, limit: int = 24) -> Name:
    """A value as an error message quotes it: cut short."""
    return Name(repr(raw) if len(raw) <= limit else f"{raw[:limit]!r}…")


def _float(raw: str, expected: Decision) -> float:
    text = raw.strip()
    if len(text) > measure_facts().limits.number_chars or not _FLOAT.fullmatch(text):
        raise BadValue(GOT(expected=expected, got=shown(raw)), raw)
    value = float(text)
    if not math.isfinite(value):
        raise BadValue(NOT_FINITE(expected=expected, got=shown(raw)), raw)
    return value


def _int(raw: str, expected: Decision, commas: bool) -> int:
    text = raw.strip()
    digits = text.replace(",", "") if commas else text
    limit = measure_facts().limits.int_digits
    if digits.isascii() and digits.isdigit():
        if len(digits) > limit:
            raise BadValue(OVER_DIGITS(expected=expected, got=shown(raw), most=limit), raw)
        return int(digits)
    value = _float(text, expected)  # metrics print counts as floats: "92500.0"
    if value != math.floor(value):
        raise BadValue(NOT_WHOLE(expected=expected, got=shown(raw)), raw)
    return int(value)


def _in_range(value: float, low: float, high: float, expected: Decision, raw: str) -> None:
    if not low <= value <= high:
        raise BadValue(GOT(expected=expected, got=shown(raw)), raw)


def _whole(raw: str, kind: ValueKind, low: int, most: int, commas: bool) -> int:
    """A whole number from ``low`` to ``most`` (``kind``'s words say what was expected)."""
    expected = VALUE[kind](most=most)
    value = _int(raw, expected, commas=commas)
    _in_range(value, low, most, expected, raw)
    return value


def read_value(raw: str, kind: ValueKind) -> int | float | str:
    """``raw`` as ``kind`` says, or ``BadValue`` saying what was expected.

    count: tokens or blocks (commas allowed); gib: a GiB size -> bytes; bytes: a byte count;
    factor: a non-negative float (a concurrency); fraction: (0, 1]; ratio: [0, 1]; parallel: a
    TP/CP size; block: a block size in tokens; dtype: a dtype name (``torch.`` dropped).
    """
    limits = measure_facts().limits
    if kind == "count":
        return _whole(raw, kind, 0, limits.max_tokens, commas=True)
    if kind == "gib":
        expected = VALUE["gib"](most=limits.max_gib)
        gib = _float(raw, expected)
        if gib < 0:
            raise BadValue(NEGATIVE_POOL(expected=expected, got=shown(raw)), raw)
        _in_range(gib, 0, limits.max_gib, expected, raw)
        return round(gib * GIB)
    if kind == "bytes":
        return _whole(raw, kind, 0, limits.max_gib * GIB, commas=False)
    if kind == "factor":
        expected = VALUE["factor"](most=limits.max_tokens)
        factor = _float(raw, expected)
        _in_range(factor, 0, limits.max_tokens, expected, raw)
        return factor
    if kind == "fraction":
        expected = VALUE["fraction"]()
        fraction = _float(raw, expected)
        if not 0 < fraction <= 1:
            raise BadValue(GOT(expected=expected, got=shown(raw)), raw)
        return fraction
    if kind == "ratio":
        expected = VALUE["ratio"]()
        ratio = _float(raw, expected)
        _in_range(ratio, 0, 1, expected, raw)
        return ratio
    if kind == "parallel":
        return _whole(raw, kind, 1, limits.max_parallel, commas=False)
    if kind == "block":
        return _whole(raw, kind, 1, limits.max_block_tokens, commas=True)
    match = _DTYPE.fullmatch(raw.strip().strip("'\""))
    if match is None:
        raise BadValue(GOT(expected=VALUE["dtype"](), got=shown(raw)), raw)
    return match.group(1)
