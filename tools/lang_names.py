"""The names a page shows as written in every language, read from the app's own catalogs: the
language check (tools.lang_check) does not count them as English words.

Only letter-only words need to be here: a token with a digit, an underscore, a slash, a dot or
a capital after its first letter is a name or an identifier already. What is left are words
such as ``Hopper`` (a GPU generation), ``hermes`` (a tool-call parser), ``gemma`` (a model) or
``auto`` (a KV dtype value). Function words of English are never names, whatever a catalog
holds (``it`` is a part of ``gemma-3-27b-it``, not a name), so a sentence cannot pass because a
catalog happens to hold one of its words.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from functools import cache
from typing import Any

from engine.hardware.gpus import all_gpus
from engine.model.loader import catalog_names
from engine.rules import DATA_DIR
from engine.scenario import ENGINE_LABELS

# English words that carry a sentence: never a name, even when a catalog spells one.
_FUNCTION_WORDS = """
a an the and or but not no nor if then than so as at by for from in into of off on onto out over
to up with without is are was were be been being has have had do does did can could may might must
shall should will would this that these those it its there here which who whom whose what when
where why how all any each every some more most less few per via only also just very too one two
three
"""
FUNCTION_WORDS = frozenset(_FUNCTION_WORDS.split())
_LETTERS = re.compile(r"[A-Za-z]+(?:-[A-Za-z]+)*")


def _words(texts: Iterable[str], capitalized: bool = False) -> Iterator[str]:
    """The letter-only words of ``texts`` as written, a word being what spaces and slashes
    part (``blackwell-consumer`` is one; ``compressed`` alone is not a name) (``capitalized``:
    also with a capital, as a generation starts a bracket: ``hopper`` -> ``Hopper``)."""
    for text in texts:
        for word in re.split(r"[\s/]+", text):
            if _LETTERS.fullmatch(word) and len(word) > 1 and word.lower() not in FUNCTION_WORDS:
                yield word
                if capitalized:
                    yield word.capitalize()


def _registry_values(node: Any) -> Iterator[str]:
    """Every listed value of an engine's registry file (parser names, dtypes, quantization
    methods, a flag's choices); not the file's own keys (``attention_backends``)."""
    if isinstance(node, str):
        yield node
    elif isinstance(node, dict):
        for value in node.values():
            yield from _registry_values(value)
    elif isinstance(node, list):
        for value in node:
            yield from _registry_values(value)


@cache
def catalog_words() -> frozenset[str]:
    """Letter-only words of every GPU (its name, vendor, architecture and generation), bundled
    model and engine name as written, and every registry value that is one word (``hermes``,
    ``pythonic``, ``auto``): the parts of a longer value (``round_robin``) are not names."""
    gpus = [t for g in all_gpus() for t in (g.key, g.name)]
    kinds = [t for g in all_gpus() for t in (g.vendor, g.arch, g.generation)]
    registry: list[str] = []
    for path in sorted((DATA_DIR / "engines").glob("*-registries.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        data.pop("choices_module", None)  # SGLang's every other flag choice, not names
        registry += _registry_values(data)
    return frozenset(
        [
            *_words(gpus),
            *_words(kinds, capitalized=True),
            *_words(catalog_names()),
            *_words(ENGINE_LABELS.values()),
            *_words(registry),
        ]
    )
