"""How Streamlit 1.67's Markdown finds live text, modelled for fast tests (the browser test
checks the real renderer).

Streamlit renders Markdown with react-markdown, remark-gfm and its own plugins. Links come from
two passes:

1. The parser (micromark) reads the *source*: ``[…](…)`` links and images, reference links and
   ``[r]: url`` definitions, ``<scheme:…>`` autolinks, HTML, entities, math and directives. A
   backslash before ASCII punctuation makes that character text: ``source_constructs`` looks
   at the source with every escaped character masked.
2. Transforms then run regular expressions over each *text node*, whose value is the text
   after escapes are resolved, so an escape does not stop them: remark-gfm's autolink literals
   (mdast-util-gfm-autolink-literal's ``findUrl`` and ``findEmail``, read from the bundled
   ``StreamlitMarkdown`` chunk), Streamlit's ``:streamlit:`` logo image and remark-emoji's
   ``:shortcode:``; cmark-gfm (a wiki showing the Markdown report) also links ``ftp://`` and
   ``mailto:`` / ``xmpp:`` addresses. ``text_links`` runs those rules on the unescaped text.

JavaScript's ``\\w`` is ASCII; ``[A-Za-z0-9_]`` is written out here because Python's is Unicode.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterator

ESCAPED = re.compile(r"\\([!-/:-@\[-`{-~])")  # CommonMark: a backslash escapes ASCII punctuation

# mdast-util-gfm-autolink-literal, as bundled: /(https?:\/\/|www(?=\.))([-.\w]+)([^ \t\r\n]*)/gi
URL = re.compile(r"(https?://|www(?=\.))([-.A-Za-z0-9_]+)([^ \t\r\n]*)", re.IGNORECASE)
# /(?<=^|\s|\p{P}|\p{S})([-.\w+]+)@([-\w]+(?:\.[-\w]+)+)/gu (the look-behind is ``_previous``)
EMAIL = re.compile(r"([-.A-Za-z0-9_+]+)@([-A-Za-z0-9_]+(?:\.[-A-Za-z0-9_]+)+)")
# cmark-gfm's extended autolinks beyond remark's (GFM spec 0.29: ftp://, mailto:, xmpp:)
CMARK = re.compile(
    r"(?i)(?:ftp://[-.A-Za-z0-9_]+\.[-.A-Za-z0-9_]+|(?:mailto|xmpp):[-.A-Za-z0-9_+]+@[-.A-Za-z0-9_]+)"
)
# Streamlit's plugin turns :streamlit: into an <img>; remark-emoji turns :name: into an emoji.
SHORTCODE = re.compile(r":(?:streamlit|[-+A-Za-z0-9_]+):")
_TRAILING = re.compile(r"[!\"&'),.:;<>?\]}]+$")


def unescape(markdown: str) -> str:
    """The text a text node holds: every backslash escape resolved."""
    return ESCAPED.sub(r"\1", markdown)


def _previous(text: str, index: int, email: bool = False) -> bool:
    """remark's ``previous``: a literal starts the text or follows whitespace, punctuation or a
    symbol (Unicode P* or S*); an e-mail address not a "/"."""
    if index == 0:
        return True
    ch = text[index - 1]
    ok = ch.isspace() or unicodedata.category(ch)[0] in "PS"
    return ok and not (email and ch == "/")


def _correct_domain(domain: str) -> bool:
    parts = domain.split(".")
    if len(parts) < 2:
        return False
    for part in parts[-2:]:
        if part and ("_" in part or not re.search(r"[A-Za-z0-9]", part)):
            return False
    return True


def _scan(
    pattern: re.Pattern[str], text: str, accept: Callable[[re.Match[str]], str | None]
) -> Iterator[str]:
    """``find-and-replace``'s loop: a match the rule refuses is retried one character on."""
    pos = 0
    while (m := pattern.search(text, pos)) is not None:
        link = accept(m)
        if link is None:
            pos = m.start() + 1
        else:
            yield link
            pos = max(m.end(), m.start() + 1)


def _url(m: re.Match[str]) -> str | None:
    protocol, domain, path = m.groups()
    if not _previous(m.string, m.start()):
        return None
    prefix = ""
    if protocol.lower().startswith("w"):
        domain, protocol, prefix = protocol + domain, "", "http://"
    if not _correct_domain(domain):
        return None
    url = _TRAILING.sub("", domain + path)
    return prefix + protocol + url if url else None


def _email(m: re.Match[str]) -> str | None:
    if not _previous(m.string, m.start(), email=True) or re.search(r"[-\d_]$", m.group(2)):
        return None
    return "mailto:" + m.group(0)


def text_links(markdown: str) -> list[str]:
    """The links the text-node transforms make from ``markdown`` (any domain)."""
    text = unescape(markdown)
    links = [*_scan(URL, text, _url), *_scan(EMAIL, text, _email)]
    links += [m.group(0) for m in CMARK.finditer(text)]
    links += [m.group(0) for m in SHORTCODE.finditer(text)]
    return links


def masked(markdown: str) -> str:
    """The source with each escaped character replaced by a character no construct reads."""
    return ESCAPED.sub("\x00", markdown)


# What the parser opens from the source (escaped characters masked).
SOURCE = {
    "link, image or reference": re.compile(r"\[[^\]]*\][(\[:]"),
    "link definition": re.compile(r"(?m)^ {0,3}\[[^\]\n]*\]:"),
    "autolink or HTML": re.compile(r"<[A-Za-z/!?]"),
    "entity": re.compile(r"&(?:#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});"),
    "directive": re.compile(r"(?<!:):[A-Za-z][-A-Za-z0-9_]*[\[{]"),
    "math": re.compile(r"\$[^$\s][^$]*\$"),
}


def source_constructs(markdown: str) -> list[str]:
    """The live constructs the parser would open from ``markdown``."""
    text = masked(markdown)
    return [name for name, pattern in SOURCE.items() if pattern.search(text)]
