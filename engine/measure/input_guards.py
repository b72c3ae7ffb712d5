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

from engine.errors import InputError
from engine.measure.measure_data import ValueKind, measure_facts

GIB: Final = 1024**3
_CHUNK = 1 << 20
# A plain decimal float: no underscores, no exponent-only forms, no non-ASCII digits.
_FLOAT = re.compile(r"[+-]?+(?:\d++(?:\.\d*+)?+|\.\d++)(?:[eE][+-]?+\d++)?+")
_DTYPE = re.compile(r"(?:torch\.)?+([A-Za-z][A-Za-z0-9_]{0,47}+)")


class BadValue(ValueError):
    """A value that is not what its kind allows; ``expected`` says what would be, ``raw`` is
    the value as an error quotes it."""

    def __init__(self, expected: str, raw: str = "") -> None:
        self.expected = expected
        self.raw = raw
        super().__init__(expected)


def _mib(nbytes: int) -> str:
    return f"{nbytes / 2**20:g} MiB"


def _file_kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "directory"
    if stat.S_ISFIFO(mode):
        return "FIFO (named pipe)"
    if stat.S_ISCHR(mode):
        return "character device"
    if stat.S_ISBLK(mode):
        return "block device"
    if stat.S_ISSOCK(mode):
        return "socket"
    return "special file"


def _too_big(field: str, limit: int, what: str) -> InputError:
    return InputError(
        field,
        f"{what} of at most {_mib(limit)}; the startup lines come first, so keep the head "
        f"(e.g. head -c {limit // 2**20}M server.log > head.log)",
    )


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
        raise InputError(field, f"a readable file; {path}: {err.strerror}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise InputError(
                field,
                f"a regular file; {path} is a {_file_kind(info.st_mode)}, which can stream "
                "without end: save the text to a file first",
            )
        if info.st_size > limit:
            raise _too_big(field, limit, f"a file ({info.st_size:,} bytes given)")
        chunks: list[bytes] = []
        total = 0
        while total <= limit:
            chunk = os.read(fd, min(_CHUNK, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
    except OSError as err:
        raise InputError(field, f"a readable file; {path}: {err.strerror}") from None
    finally:
        os.close(fd)
    if total > limit:
        raise _too_big(field, limit, "a file")
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
        raise InputError(field, f"UTF-8 text (byte {err.start} is not valid UTF-8)") from None


def check_text_size(text: str, field: str, limit: int | None = None) -> None:
    """Refuse pasted text over the byte limit (the app passes text, not files)."""
    cap = measure_facts().limits.text_bytes if limit is None else limit
    if len(text) > cap or (
        len(text) * 4 > cap and len(text.encode("utf-8", "surrogatepass")) > cap
    ):
        raise _too_big(field, cap, "text")


def shown(raw: str, limit: int = 24) -> str:
    """A value as an error message quotes it: cut short, with its length when cut."""
    if len(raw) <= limit:
        return repr(raw)
    return f"{raw[:limit]!r}... ({len(raw):,} characters)"


def _float(raw: str, expected: str) -> float:
    text = raw.strip()
    if len(text) > measure_facts().limits.number_chars or not _FLOAT.fullmatch(text):
        raise BadValue(f"{expected}; got {shown(raw)}", shown(raw))
    value = float(text)
    if not math.isfinite(value):
        raise BadValue(f"{expected}; got {shown(raw)}, which is not finite", shown(raw))
    return value


def _int(raw: str, expected: str, commas: bool) -> int:
    text = raw.strip()
    digits = text.replace(",", "") if commas else text
    limit = measure_facts().limits.int_digits
    if digits.isascii() and digits.isdigit():
        if len(digits) > limit:
            raise BadValue(f"{expected}; got {shown(raw)}, over {limit} digits", shown(raw))
        return int(digits)
    value = _float(text, expected)  # metrics print counts as floats: "92500.0"
    if value != math.floor(value):
        raise BadValue(f"{expected}; got {shown(raw)}, not a whole number", shown(raw))
    return int(value)


def _in_range(value: float, low: float, high: float, expected: str, raw: str) -> None:
    if not low <= value <= high:
        raise BadValue(f"{expected}; got {shown(raw)}", shown(raw))


def read_value(raw: str, kind: ValueKind) -> int | float | str:
    """``raw`` as ``kind`` says, or ``BadValue`` saying what was expected.

    count: tokens or blocks (commas allowed); gib: a GiB size -> bytes; bytes: a byte count;
    factor: a non-negative float (a concurrency); fraction: (0, 1]; ratio: [0, 1]; parallel: a
    TP/CP size; block: a block size in tokens; dtype: a dtype name (``torch.`` dropped).
    """
    limits = measure_facts().limits
    if kind == "count":
        expected = f"a whole number of tokens from 0 to {limits.max_tokens:,}"
        count = _int(raw, expected, commas=True)
        _in_range(count, 0, limits.max_tokens, expected, raw)
        return count
    if kind == "gib":
        expected = f"a size from 0 to {limits.max_gib:,} GiB"
        gib = _float(raw, expected)
        if gib < 0:
            raise BadValue(
                f"{expected}; got {shown(raw)}: a negative pool means the engine found no "
                "memory for the KV cache (weights and activations exceed the memory fraction) "
                "and did not start",
                shown(raw),
            )
        _in_range(gib, 0, limits.max_gib, expected, raw)
        return round(gib * GIB)
    if kind == "bytes":
        expected = f"a byte count from 0 to {limits.max_gib * GIB:,}"
        nbytes = _int(raw, expected, commas=False)
        _in_range(nbytes, 0, limits.max_gib * GIB, expected, raw)
        return nbytes
    if kind == "factor":
        expected = f"a number from 0 to {limits.max_tokens:,}"
        factor = _float(raw, expected)
        _in_range(factor, 0, limits.max_tokens, expected, raw)
        return factor
    if kind == "fraction":
        expected = "a memory fraction above 0 and at most 1"
        fraction = _float(raw, expected)
        if not 0 < fraction <= 1:
            raise BadValue(f"{expected}; got {shown(raw)}", shown(raw))
        return fraction
    if kind == "ratio":
        expected = "a usage ratio from 0 to 1"
        ratio = _float(raw, expected)
        _in_range(ratio, 0, 1, expected, raw)
        return ratio
    if kind == "parallel":
        expected = f"a parallel size from 1 to {limits.max_parallel:,}"
        size = _int(raw, expected, commas=False)
        _in_range(size, 1, limits.max_parallel, expected, raw)
        return size
    if kind == "block":
        expected = f"a block size from 1 to {limits.max_block_tokens:,} tokens"
        block = _int(raw, expected, commas=True)
        _in_range(block, 1, limits.max_block_tokens, expected, raw)
        return block
    match = _DTYPE.fullmatch(raw.strip().strip("'\""))
    if match is None:
        expected = "a dtype name such as bfloat16 or fp8_e4m3"
        raise BadValue(f"{expected}; got {shown(raw)}", shown(raw))
    return match.group(1)
