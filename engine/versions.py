"""Engine release strings ("0.6.6", "0.5.3.post1", "0.5.0rc2") as sortable keys.

vLLM and SGLang tag releases with PEP 440 versions; only the forms they use are accepted:
a dotted release, an optional pre-release (a, b, rc) and an optional .postN.
"""

from __future__ import annotations

import re

from engine.errors import InputError

_VERSION = re.compile(r"^v?(\d+(?:\.\d+)*)(?:(a|b|rc)(\d+))?(?:\.post(\d+))?$")
_PRE_RANK = {"a": 0, "b": 1, "rc": 2}
_FINAL = 3  # a final release sorts after its a/b/rc pre-releases


def version_key(version: str) -> tuple[tuple[int, ...], int, int, int]:
    """Sort key: release numbers (trailing zeros dropped), pre-release rank and number, post."""
    m = _VERSION.match(version.strip())
    if m is None:
        raise InputError(
            "version", f"a release like 0.11.0, 0.5.3.post1 or 0.5.0rc2, not {version!r}"
        )
    release = [int(p) for p in m.group(1).split(".")]
    while len(release) > 1 and release[-1] == 0:
        release.pop()
    pre = _PRE_RANK[m.group(2)] if m.group(2) else _FINAL
    return tuple(release), pre, int(m.group(3) or 0), int(m.group(4) or 0)


def at_least(version: str, minimum: str) -> bool:
    """True when ``version`` is the same release as ``minimum`` or later."""
    return version_key(version) >= version_key(minimum)


def latest(versions: list[str]) -> str:
    """The newest of several release strings."""
    if not versions:
        raise InputError("version", "at least one release string")
    return max(versions, key=version_key)
