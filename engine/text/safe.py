"""Text from a config, a link, an upload or a command, made safe for where it is shown.

One layer for every surface:

* ``inert(text)``: for Streamlit's Markdown (and any Markdown renderer: the report on a wiki
  page). Nothing in the text can become a link, an autolink or a bare URL, an image, HTML, an
  entity, math, a directive, a shortcode or a block (heading, list, quote, table, fence); with
  ``strict`` no emphasis, code span or strikethrough either. How, and why that holds against
  GFM's grammar, is said at ``inert``.
* ``plain(text)``: for a terminal, a script comment, a JSON string read in a terminal, or an
  element that never renders Markdown (``st.text``, ``st.code``, dataframe cells; a metric's
  value is Markdown in Streamlit 1.67, like labels, captions and tooltips): C0 and C1
  control characters (ESC, BEL, CSI, OSC …), DEL, bidi and zero-width format characters (all
  but U+2060, the word joiner ``inert`` places) and line / paragraph separators are written as
  visible ``\\x1b``-style escapes; newlines and tabs stay. ``one_line(text)``: the same for a
  name or a value shown on one line, with its newlines, carriage returns and tabs shown as
  ``\\n``, ``\\r``, ``\\t``: a config string cannot fake a line of output.
* ``Markdown``: a ``str`` that is trusted markup (a catalog message, the app's own ``:green[…]``
  marks); ``inert`` leaves it as it is.
"""

from __future__ import annotations

import json
import re
import unicodedata
from typing import Any

_UNSAFE_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
# U+2060 WORD JOINER is the mark ``inert`` breaks autolinks with. It is zero-width, moves no text,
# breaks no line and joins nothing visible, so every surface keeps it: escaping it would re-arm
# an inert text shown in a terminal, in the Markdown report or passed through ``inert`` twice.
WORD_JOINER = "\u2060"
_KEEP = frozenset("\n\t" + WORD_JOINER)
_KEEP_ONE_LINE = frozenset(WORD_JOINER)
_SHORT = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


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
    separators, lone surrogates); newline, tab and the word joiner are ordinary."""
    return ch not in _KEEP and unicodedata.category(ch) in _UNSAFE_CATEGORIES


def _shown(text: str, keep: frozenset[str]) -> str:
    if text.isprintable():  # the common case: no control, format or separator character
        return text
    return "".join(
        ch
        if ch in keep or unicodedata.category(ch) not in _UNSAFE_CATEGORIES
        else _SHORT.get(ch) or _escape_char(ch)
        for ch in text
    )


def plain(text: str) -> str:
    """``text`` with every unsafe character written as a visible escape (``\\x1b``, ``\\u202e``)."""
    return _shown(text, _KEEP)


def one_line(text: str) -> str:
    """``plain(text)`` for a name or a value on one line: newlines, carriage returns and tabs
    are shown as ``\\n``, ``\\r``, ``\\t`` too (line and paragraph separators, NEL and the bidi
    controls U+202A–U+202E, U+2066–U+2069 are escapes already), so nothing in it starts a line."""
    return _shown(text, _KEEP_ONE_LINE)


def has_unsafe(text: str) -> bool:
    return any(unsafe_char(ch) for ch in text)


_PUNCT = r"!-/:-@\[-`{-~"  # ASCII punctuation: what a CommonMark backslash escapes
# What opens a live construct anywhere in a line: [ ] links, images, reference links and
# definitions, footnotes, task boxes, Streamlit's ``:color[…]`` directives (and a ] that would
# close the app's own link text); < autolinks and HTML; & entities and numeric references
# (``&#x202e;`` is a bidi override once parsed); $ math. ``strict`` adds what only formats.
_LIVE = r"\[\]<&$"
_STRICT = _LIVE + r"`*_{}~#|>"
# One pass, left to right, as CommonMark reads escapes: a backslash before ASCII punctuation is
# an escape already and is kept (so ``inert`` is idempotent); a live character, or a backslash
# that ends a line or the text (it would escape what follows it in the message), gets one.
_ESCAPE = re.compile(rf"\\[{_PUNCT}]|\\(?=\n|\Z)|[{_LIVE}]")
_ESCAPE_STRICT = re.compile(rf"\\[{_PUNCT}]|\\(?=\n|\Z)|[{_STRICT}]")
# What opens a block where a line (or the text: it may follow a catalog's "- ") starts: a quote;
# a heading, bullet or numbered item (its marker then a space or the end); a line of only
# - = _ * ` ~ : | (a setext underline, a thematic break, a table's delimiter row, a fence); a
# fence with an info string. A number such as "2.14 GiB" opens nothing and is left as it is.
_BLOCK = re.compile(
    r"(?m)^([ \t]*)(?:(>)|(#{1,6}|[-+*])(?=[ \t]|$)|(\d{1,9})(?=[.)](?:[ \t]|$))"
    r"|([-=_*`~:|])(?=[-=_*`~:| \t]*$)|(`{3}|~{3}))"
)
# Where a word joiner goes: after every ":" that is not followed by a space (a scheme's
# ``https:``, ``mailto:``; ``:emoji:``, ``:streamlit:`` and ``:material/…:`` shortcodes;
# directives), after every "www", and on both sides of every "@" (an e-mail address).
_BREAK = re.compile(r"(?i)(?:(?<=:)(?!\s)|(?<=www)|(?<=@))(?!\u2060)|(?<!\u2060)(?=@)")


def _escape(match: re.Match[str]) -> str:
    s = match.group(0)
    return s if len(s) == 2 else "\\" + s


def _block(match: re.Match[str]) -> str:
    indent, quote, marker, number, line, fence = match.groups()
    if number is not None:
        return f"{indent}{number}\\"  # 1\. : the delimiter escaped
    return f"{indent}\\{quote or marker or line or fence}"


def inert(text: str, *, strict: bool = False, one_line: bool = False) -> Markdown:
    """``text`` shown literally by a Markdown renderer; ``inert(inert(x)) == inert(x)`` and a
    ``Markdown`` string is trusted and kept. ``one_line``: a name or a value (line breaks shown
    as ``\\n``); ``strict``: no emphasis, code span or strikethrough either (the report).

    Renderers find links in two passes, so there are two mechanisms:

    * The parser reads constructs from the source, where a backslash escape stops them: every
      ``[ ] < & $`` gets one, and so does a block marker where a line starts. No link, image,
      reference link or definition, footnote, ``<…>`` autolink, HTML, entity, math, directive,
      heading, quote, list, table or fence can open.
    * Escapes are gone by the second pass. remark-gfm (Streamlit 1.67's Markdown) finds autolink
      literals with regular expressions over each text node *after* escapes are resolved
      (``https?://`` or ``www.`` then a domain; ``[-.\\w+]+@[-\\w]+(\\.[-\\w]+)+``), and Streamlit
      turns ``:streamlit:`` (an ``<img>``), ``:emoji:`` and ``:material/…:`` in text into
      images and icons the same way; cmark-gfm (a wiki) also links ``ftp://`` and
      ``mailto:``/``xmpp:``. Every one of those needs two characters side by side: ":" and the
      "/" or name that follows it, "www" and ".", the local part, "@" and the domain. A U+2060
      WORD JOINER goes after every ":" not followed by a space (or ending the text), after
      every "www" and on both sides of every "@". None of those grammars
      counts it as a letter, digit, whitespace or punctuation, so no literal can start, run or
      end across it, and no parser removes it; it is invisible, so the text reads as written
      and copies with only that character added.

    Control, format and separator characters become visible escapes first (``plain``), so a
    bidi override cannot reorder the text; a word joiner the text brings only breaks more.
    """
    if isinstance(text, Markdown):
        return text
    out = _shown(str(text), _KEEP_ONE_LINE if one_line else _KEEP)
    out = (_ESCAPE_STRICT if strict else _ESCAPE).sub(_escape, out)
    out = _BLOCK.sub(_block, out)
    return Markdown(_BREAK.sub(WORD_JOINER, out))


def json_text(data: Any, indent: int | None = 2) -> str:
    """JSON for a terminal: ``json.dumps`` escapes C0 controls; this escapes DEL, C1, format
    characters and separators too (valid JSON: they only occur inside strings). Strict JSON: a
    NaN or an infinity is refused (``ValueError``), never printed as JSON no parser accepts."""
    text = json.dumps(data, indent=indent, ensure_ascii=False, allow_nan=False)
    if not any(unsafe_char(ch) for ch in text if not ch.isprintable()):
        return text
    return "".join(_json_escape(ch) if unsafe_char(ch) else ch for ch in text)


def _json_escape(ch: str) -> str:
    code = ord(ch)
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    high, low = divmod(code - 0x10000, 0x400)
    return f"\\u{0xD800 + high:04x}\\u{0xDC00 + low:04x}"
