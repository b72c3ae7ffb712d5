"""The message catalogs: English and Korean hold the same keys and the same parameters."""

from __future__ import annotations

import re

from engine.i18n import LANGS, catalog, missing_keys, t

# a parameter's name, with a format (``{total:bn}``) or plural forms (``{nodes|node|nodes}``)
PARAM = re.compile(r"\{(\w+)(?:[:|][^{}]*)?\}")


def test_every_language_has_every_english_key() -> None:
    for lang in LANGS:
        assert missing_keys(lang) == []


def test_translations_use_the_same_parameters_as_english() -> None:
    en = catalog("en")
    for lang in LANGS:
        for key, text in catalog(lang).items():
            assert set(PARAM.findall(text)) == set(PARAM.findall(en[key])), (lang, key)


def test_messages_fill_named_parameters_and_fall_back_to_english() -> None:
    assert t("app.title", "ko") == "서빙 플레이북"
    assert t("app.title") == "Serving Playbook"
