"""Text from a config, a link, an upload or a command, made safe for where it is shown.

One layer for every surface:

* ``inert(text)``: for Streamlit's Markdown (and any Markdown renderer: the report on a wiki
  page). Nothing in the text can become a link, an image, HTML, math or a directive: every
  ``[`` (inline, reference-style and image links, link definitions ``[r]: url``, footnotes,
  Streamlit's ``:color[…]`` directives), ``<`` (autolinks, HTML), ``$`` (math) and ``\\`` is
  backslash-escaped; a URL scheme (``https:``, ``data:``, ``javascript:`` …), ``www.`` and an
  ``@`` are broken so GFM's bare-URL and e-mail autolinks do not fire; control characters are
  shown as escapes. Backslash escapes are CommonMark's own, so the text reads as written.
* ``plain(text)``: for a terminal, a script comment, a JSON string read in a terminal, or an
  element that never renders Markdown (``st.text``, ``st.code``, dataframe cells): C0 and C1
  control characters (ESC, BEL, CSI, OSC …), DEL, bidi and zero-width format characters, and
  line / paragraph separators are written as visible ``\\x1b``-style escapes; newlines and tabs
  stay.
* ``Markdown``: a ``str`` that is trusted markup (a catalog message, the app's own ``:green[…]``
  marks); ``inert`` leaves it as it is.
"""

from __future__ import annotations

import json
import re
import unicodedata
from typing import Any

_UNSAFE_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
_KEEP = frozenset("\n\t")


class Markdown(str):
    """Trusted Markdown: the app's own catalog text and markup, never a user's string."""

    __slots__ = ()


def _escape_char(ch: str) -> str:
    code = ord(ch)
    if code <= 0xFF:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def unsafe_char(ch: str) -> bool:
    """A character a terminal or a renderer acts on or hides (controls, format characters,
    separators, lone surrogates); newline and tab are ordinary."""
    return ch not in _KEEP and unicodedata.category(ch) in _UNSAFE_CATEGORIES


def plain(text: str) -> str:
    """``text`` with every unsafe character written as a visible escape (``\\x1b``, ``\\u202e``)."""
    if text.isprintable():  # the common case: no control, format or separator character
        return text
    return "".join(_escape_char(ch) if unsafe_char(ch) else ch for ch in text)


def has_unsafe(text: str) -> bool:
    return any(unsafe_char(ch) for ch in text)


# Markdown's live syntax: [ links, images, definitions, footnotes, directives; < autolinks and
# HTML; $ math; \ so that the text cannot escape the escapes.
_LIVE = re.compile(r"([\\\[<$])")
# URL schemes GFM or a renderer links (and data: / javascript: targets), "www.", e-mail "@".
_SCHEME = re.compile(
    r"(?i)\b(https?|ftps?|mailto|xmpp|irc|ssh|file|data|javascript|vbscript|tel|sms)(:)"
)
_WWW = re.compile(r"(?i)\b(www)(\.)")
_STRICT = re.compile(r"([`*_{}\]#|~>])")


def inert(text: str, *, strict: bool = False) -> Markdown:
    """``text`` shown literally by a Markdown renderer: no link, image, autolink, bare URL,
    HTML, math or directive can form from it (``strict``: no emphasis, code span, heading or
    table either, for the Markdown report). A ``Markdown`` string is trusted and kept."""
    if isinstance(text, Markdown):
        return text
    out = _LIVE.sub(r"\\\1", plain(str(text)))
    if strict:
        out = _STRICT.sub(r"\\\1", out)
    out = _SCHEME.sub(r"\1\\\2", out)
    out = _WWW.sub(r"\1\\\2", out)
    return Markdown(out.replace("@", "\\@"))


def json_text(data: Any, indent: int | None = 2) -> str:
    """JSON for a terminal: ``json.dumps`` escapes C0 controls; this escapes DEL, C1, format
    characters and separators too (valid JSON: they only occur inside strings)."""
    text = json.dumps(data, indent=indent, ensure_ascii=False)
    if not any(unsafe_char(ch) for ch in text if not ch.isprintable()):
        return text
    return "".join(_json_escape(ch) if unsafe_char(ch) else ch for ch in text)


def _json_escape(ch: str) -> str:
    code = ord(ch)
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    high, low = divmod(code - 0x10000, 0x400)
    return f"\\u{0xD800 + high:04x}\\u{0xDC00 + low:04x}"
