"""Engine release strings ("0.6.6", "0.5.3.post1", "0.5.0rc2") as sortable keys: the one ordering
every reader uses (the engine tables, the software rows, the speed model's release bands).

vLLM and SGLang tag releases with PEP 440 versions; only the forms they use are accepted: a
dotted release, an optional pre-release (a development build, a, b, rc) and an optional .postN.
A pre-release sorts before its release (0.5.10rc0 < 0.5.10 < 0.5.10.post1). A measured run's
free-form note ("~0.4.6 (May 2025)", ">=0.11.0 (V1)", "1.1.0-dev.2") is read by
``loose_version_key``: the first release it names, in the same ordering.
"""

from __future__ import annotations

import re

from engine import errors as E
from engine.errors import InputError

_RELEASE = r"v?(\d+(?:\.\d+)*)(?:[-.]?(dev|a|b|rc)[-.]?(\d+))?(?:[-.]pre\d+)?(?:\.post(\d+))?"
_VERSION = re.compile(rf"^{_RELEASE}$")
_IN_TEXT = re.compile(rf"(?<![\w.]){_RELEASE}(?![\w.])")
_PRE_RANK = {"dev": 0, "a": 1, "b": 2, "rc": 3}
_FINAL = 4  # a final release sorts after its dev/a/b/rc pre-releases

VersionKey = tuple[tuple[int, ...], int, int, int]


def _key(m: re.Match[str]) -> VersionKey:
    release = [int(p) for p in m.group(1).split(".")]
    while len(release) > 1 and release[-1] == 0:
        release.pop()
    pre = _PRE_RANK[m.group(2)] if m.group(2) else _FINAL
    return tuple(release), pre, int(m.group(3) or 0), int(m.group(4) or 0)


def version_key(version: str) -> VersionKey:
    """Sort key: release numbers (trailing zeros dropped), pre-release rank and number, post."""
    m = _VERSION.match(version.strip())
    if m is None:
        raise InputError("version", E.RELEASE(got=E.got(version)))
    return _key(m)


def loose_version_key(text: str) -> VersionKey | None:
    """The key of the first release ``text`` names (None: it names none)."""
    m = _IN_TEXT.search(text)
    return _key(m) if m is not None else None


def at_least(version: str, minimum: str) -> bool:
    """True when ``version`` is the same release as ``minimum`` or later."""
    return version_key(version) >= version_key(minimum)


def latest(versions: list[str]) -> str:
    """The newest of several release strings."""
    if not versions:
        raise InputError("version", E.RELEASE(got=E.got("")))
    return max(versions, key=version_key)
