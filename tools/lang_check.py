"""The language check over a page's text: an English sentence on a Korean page, Hangul on an
English page.

Pure functions over lines of text (``tools.page_text`` reads them from a real browser); no
browser, no Streamlit. Definitions, so that a check can neither pass by accident nor trip on
the names a page must show as written:

- A **token** is a run of non-space characters, stripped of the punctuation around it
  (brackets, quotes, ``, ; : . ! ?``, emphasis marks).
- An **English word** is a token made only of ASCII letters (an apostrophe or a hyphen may join
  letters: ``model's``, ``per-rank``) that is *not* a name. A token is a **name** when it has a
  capital letter after its first letter (``vLLM``, ``SGLang``, ``GiB``, ``MLA``, ``DeepSeek``),
  is a unit (``ms``, ``x``), a program as typed (``vllm``, ``docker``), a file extension
  (``.sh``), is a word of a catalogued name (a GPU, its architecture and
  generation, a bundled model, an engine, a parser; see ``tools.lang_names``) or is in
  ``PRODUCTS`` (a few product names written in letters only, e.g. ``Kubernetes``).
- Every other token is **neutral**: numbers (``32,768``), identifiers and flags (``sm_90``,
  ``--max-model-len``, ``deepseek-ai/DeepSeek-V3``, ``config.json``, ``fp8``), operators and
  symbols. Neutral tokens neither count nor interrupt.
- A token with a Hangul letter in it (``GPU당``, ``토큰``) interrupts; so does the end of a line
  (a paragraph, a list item, a table cell, a label).
- An **English sentence** is 3 or more English words with no interruption between them
  (``MIN_WORDS``). Two words (``prefix cache``, ``vLLM and SGLang``) are a term, not a sentence.
- On an English page, **Korean** is any Hangul letter.

Lines the page does not word are not given to the check: code (commands, YAML, code spans),
and citations (a Sources list, a link to another site); ``tools.page_text`` tags them.
A table cell is plain text and shows no Markdown, so a page marks code there as Markdown
writes it, between backticks (`` `No valid attention backend found` ``): such a **code span**
in a line is code too, neither counted nor part of a sentence, and it interrupts, as a code
element inside a paragraph does where ``tools.page_text`` reads it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

MIN_WORDS = 3
HANGUL = re.compile(r"[\u1100-\u11ff\u3130-\u318f\ua960-\ua97f\uac00-\ud7af\ud7b0-\ud7ff]")
_WORD = re.compile(r"[A-Za-z]+(?:['’-][A-Za-z]+)*")
_EDGE = "()[]{}<>\"'“”‘’«»,;:.!?…*~`|"
# Latin abbreviations that are English, though a dot joins them.
_ABBREVIATIONS = frozenset({"e.g", "i.e", "etc", "cf", "vs"})
# Units in letters only: bytes and the thousands of a token count (``B``, ``K``), and the
# lower-case ones; every other unit has a capital after its first letter (GiB, TFLOPS) or a
# slash (TB/s, tok/s), which makes it a name or neutral. ``x`` is a multiplication sign.
UNITS = frozenset({"B", "K", "M", "G", "T", "ms", "us", "ns", "s", "x", "px"})
# Product names written in letters only, shown as written in every language.
PRODUCTS = frozenset(
    {"Docker", "Kubernetes", "Hugging", "Face", "Streamlit", "Python", "Markdown", "Linux"}
)
# Programs as a command line types them (``vllm serve``, ``docker run``).
PROGRAMS = frozenset({"vllm", "sglang", "python", "docker", "kubectl", "curl", "bash", "grep"})
_BRACKETS = "()[]{}<>\"'“”‘’«»"
_CODE_SPAN = re.compile(r"`[^`\n]+`")
_EXTENSION = re.compile(r"\.[A-Za-z]{1,5}")

Kind = Literal["english", "hangul"]


@dataclass(frozen=True)
class Finding:
    """A sentence in the wrong language: what it is, the words, and the whole line."""

    kind: Kind
    words: str
    line: str


def _strip(token: str) -> str:
    return token.strip(_EDGE)


def is_english_word(token: str, names: frozenset[str] = frozenset()) -> bool:
    """``token`` (already stripped) is an English word, not a name, unit or identifier."""
    if token.lower() in _ABBREVIATIONS:
        return True
    if not _WORD.fullmatch(token):
        return False
    if any(c.isupper() for c in token[1:]):
        return False  # vLLM, GiB, MLA, DeepSeek, FlashAttention-MLA
    return not (token in UNITS or token in PRODUCTS or token in PROGRAMS or token in names)


def english_sentences(line: str, names: frozenset[str] = frozenset()) -> list[str]:
    """Every English sentence in ``line``, as the words that make it (joined by spaces)."""
    found: list[str] = []
    run: list[str] = []

    def close() -> None:
        if len(run) >= MIN_WORDS:
            found.append(" ".join(run))
        run.clear()

    for piece in _CODE_SPAN.split(line):
        close()  # a code span ends a run
        for raw in piece.split():
            if HANGUL.search(raw):
                close()
                continue
            if _EXTENSION.fullmatch(raw.strip(_BRACKETS).rstrip(",;:")):
                continue  # a file extension: (.sh)
            token = _strip(raw)
            if is_english_word(token, names):
                run.append(token)
    close()
    return found


def hangul(line: str) -> list[str]:
    """Every run of Korean in ``line`` (Hangul words and what lies between them)."""
    words = line.split()
    found: list[str] = []
    run: list[str] = []
    for word in [*words, ""]:
        if word and HANGUL.search(word):
            run.append(word)
        elif run:
            found.append(" ".join(run))
            run = []
    return found


def check(
    lines: Iterable[str],
    lang: str,
    names: frozenset[str] = frozenset(),
    allowed: frozenset[str] = frozenset(),
) -> list[Finding]:
    """What in ``lines`` is not in ``lang``: English sentences when ``lang`` is ``ko``, Korean
    when it is ``en``. ``allowed``: whole lines that are meant for readers of both languages
    (the language switch names each language in its own script)."""
    out: list[Finding] = []
    for line in lines:
        if line in allowed:
            continue
        if lang == "ko":
            out += [Finding("english", s, line) for s in english_sentences(line, names)]
        else:
            out += [Finding("hangul", s, line) for s in hangul(line)]
    return out
