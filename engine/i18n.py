"""Messages in English and Korean: one catalog file per language under ``data/i18n/``.

Text a user reads (page titles, labels, verdicts, gate and finding messages, troubleshooting
causes) is looked up by key and filled with named parameters; nothing is assembled from pieces
in code, so a translator sees whole sentences. A key missing from a language falls back to
English; a test keeps the catalogs complete.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any, Literal, get_args

import yaml

from engine.rules import DATA_DIR

Lang = Literal["en", "ko"]
LANGS: tuple[Lang, ...] = get_args(Lang)
DEFAULT_LANG: Lang = "en"
I18N_DIR = DATA_DIR / "i18n"


def _flatten(node: Mapping[str, Any], prefix: str = "") -> dict[str, str]:
    out: dict[str, str] = {}
    for key, value in node.items():
        # "_" words the group itself: a code that is also the prefix of longer codes
        name = prefix.rstrip(".") if key == "_" else f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(_flatten(value, name + "."))
        elif isinstance(value, str):
            out[name] = value
        else:
            raise ValueError(f"{name}: a message must be a string, got {type(value).__name__}")
    return out


class _UniqueKeys(yaml.SafeLoader):
    """YAML that refuses a key given twice in one mapping: PyYAML keeps the last one silently,
    and a message written as a string and again as a group would lose one of them."""


def _mapping(loader: _UniqueKeys, node: yaml.MappingNode, deep: bool = False) -> Any:
    seen: set[object] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)  # type: ignore[no-untyped-call]
        if key in seen:
            raise ValueError(f"{key!r} given twice ({key_node.start_mark})")
        seen.add(key)
    return loader.construct_mapping(node, deep=deep)


_UniqueKeys.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping)


def catalog_files(lang: Lang) -> list[Path]:
    """``data/i18n/<lang>.yaml`` (the pages' messages) and ``data/i18n/<lang>/*.yaml`` (the
    wording of the engine's decision codes, one file per concern)."""
    return [I18N_DIR / f"{lang}.yaml", *sorted((I18N_DIR / lang).glob("*.yaml"))]


@cache
def catalog(lang: Lang) -> Mapping[str, str]:
    """Every message of ``lang`` by dotted key, read once; a key given in two files is an
    error, as a key given twice in one file is."""
    out: dict[str, str] = {}
    for path in catalog_files(lang):
        raw = yaml.load(path.read_text(encoding="utf-8"), Loader=_UniqueKeys) or {}
        for key, text in _flatten(raw).items():
            if key in out:
                raise ValueError(f"{key!r} given twice in data/i18n ({path.name})")
            out[key] = text
    return out


class _Params(dict[str, Any]):
    """Named parameters; a name the text uses but the caller did not give stays visible.

    Plurals are the catalog's own: ``{nodes|node|nodes}`` in a message is "node" when the
    parameter ``nodes`` is 1 and "nodes" otherwise (a language without plural forms, such as
    Korean, writes its counter word and needs none)."""

    def __missing__(self, key: str) -> str:
        name, _, forms = key.partition("|")
        one, _, other = forms.partition("|")
        if forms and name in self:
            return one if count_of(self[name]) == 1 else other
        return "{" + key + "}"


def count_of(value: object) -> float | None:
    """A parameter as a number: an int or float, or text such as "1,024"."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return value
    try:
        return float(str(value).replace(",", ""))
    except ValueError:
        return None


def t(key: str, lang: Lang = DEFAULT_LANG, /, **params: Any) -> str:
    """The message ``key`` in ``lang`` (English when that language lacks it), filled in."""
    text = catalog(lang).get(key)
    if text is None:
        text = catalog(DEFAULT_LANG).get(key)
    if text is None:
        raise KeyError(f"no message {key!r} in data/i18n/{DEFAULT_LANG}.yaml")
    return text.format_map(_Params(params))


def missing_keys(lang: Lang) -> list[str]:
    """Keys English has and ``lang`` lacks (a complete catalog returns [])."""
    have = catalog(lang)
    return sorted(k for k in catalog(DEFAULT_LANG) if k not in have)
