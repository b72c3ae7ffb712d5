"""Every decision code the engine can emit is worded in both catalogs with every parameter."""

from __future__ import annotations

import importlib
import pkgutil
import re

import pytest

import engine
from engine.decision import CODES, Bytes, Code, Decision, Name, Percent, Source, Tokens
from engine.i18n import LANGS, catalog
from engine.text.words import as_json, say, sources

PARAM = re.compile(r"\{(\w+)\}")
# torch-backed kernels load on demand; every other module declares its codes on import
_SKIP = ("engine.measure.kernels",)


def _import_engine() -> None:
    for mod in pkgutil.walk_packages(engine.__path__, "engine."):
        if not mod.name.startswith(_SKIP):
            importlib.import_module(mod.name)


def _template_params(code: Code) -> set[str]:
    return set(code.params)


def test_every_code_is_worded_in_every_language_with_every_parameter() -> None:
    _import_engine()
    for lang in LANGS:
        words = catalog(lang)
        for name, code in CODES.items():
            key = "code." + name
            assert key in words, (lang, key)
            used = set(PARAM.findall(words[key]))
            assert used <= code.params, (lang, key, used - code.params)
            # a citation may stand in the Sources list instead of the sentence
            assert code.params - used <= _source_params(name), (lang, key, code.params - used)


def _source_params(name: str) -> set[str]:
    return {p for p in CODES[name].params if p == "source" or p.endswith("_source")}


def test_no_catalog_words_a_code_the_engine_does_not_declare() -> None:
    _import_engine()
    for lang in LANGS:
        stray = [k for k in catalog(lang) if k.startswith("code.") and k[5:] not in CODES]
        assert stray == [], (lang, stray)


def test_a_code_checks_its_parameters() -> None:
    demo = Code("test.demo", "weights", "gpu")
    with pytest.raises(TypeError):
        demo(weights=Bytes(1))
    with pytest.raises(TypeError):
        demo(weights=Bytes(1), gpu="H200")  # text must say whether it is a name or a source
    d = demo(weights=Bytes(3 << 30), gpu=Name("H200"))
    assert d == demo(gpu=Name("H200"), weights=Bytes(3 << 30))
    assert hash(d) == hash(demo(gpu=Name("H200"), weights=Bytes(3 << 30)))
    assert d.to_json() == {"code": "test.demo", "params": {"gpu": "H200", "weights": 3 << 30}}
    del CODES["test.demo"]


def test_parameters_are_worded_the_same_in_both_languages_where_they_are_numbers() -> None:
    demo = Decision(
        "x",
        (("n", 12_345), ("b", Bytes(1.5 * 2**30)), ("t", Tokens(32_768)), ("p", Percent(0.56))),
    )
    from engine.text.words import _value

    for lang in LANGS:
        assert [_value(v, lang) for _, v in demo.params] == [
            "12,345",
            "1.50 GiB",
            "32,768",
            "56 %",
        ]


def test_names_in_a_decision_are_shown_inert_and_sources_are_collected() -> None:
    demo = Code("test.inert", "model", "source")
    d = demo(model=Name("[x](https://evil.example)"), source=Source("vLLM recipe"))
    from engine.text.words import _value
    from tests.test_text_safety import live

    assert live(_value(d["model"], "en")) == []  # shown as written, never a link
    assert sources([d]) == ["vLLM recipe"]
    del CODES["test.inert"]


def test_json_carries_the_code_the_parameters_and_the_english_sentence() -> None:
    _import_engine()
    for name, code in list(CODES.items())[:1]:
        d = Decision(name, tuple(sorted((p, 1) for p in code.params)))
        out = as_json(d)
        assert out["code"] == name and out["text"] == say(d)
