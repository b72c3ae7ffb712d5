"""Refused input is explained in the reader's language (issues 17, 28): every refusal carries a
code with typed parameters, worded in data/i18n/<lang>/errors.yaml, and no English of its own;
the CLI's one line is the English catalog's wording of the same decision."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from engine.errors import InputError
from engine.model.loader import CONFIG, MAX_CONFIG_BYTES, MODELS_DIR, load_pasted, parse_json_bytes
from engine.scenario import from_query, make_scenario
from engine.study import study
from engine.text.words import say
from tests.study_util import english
from tools.lang_check import check, hangul
from tools.lang_names import catalog_words

ENGINE = Path(__file__).resolve().parent.parent / "engine"
LLAMA = json.loads((MODELS_DIR / "meta-llama__Meta-Llama-3.1-8B.json").read_text())


def _is_text(node: ast.expr) -> bool:
    """A string built in place: a literal, an f-string, a concatenation or a ``%`` of them."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str)
    if isinstance(node, ast.JoinedStr):
        return True
    if isinstance(node, ast.BinOp):
        return _is_text(node.left) or _is_text(node.right)
    return False


def uncoded_raises(tree: ast.AST) -> list[int]:
    """The lines of ``InputError(...)`` calls whose expectation is text, not a decision."""
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        if getattr(node.func, "id", getattr(node.func, "attr", "")) != "InputError":
            continue
        expects = node.args[1] if len(node.args) > 1 else None
        keywords = {k.arg: k.value for k in node.keywords}
        expects = expects or keywords.get("expects")
        if expects is None or _is_text(expects) or "expected" in keywords:
            found.append(node.lineno)
    return found


def test_every_refusal_in_the_engine_is_a_code() -> None:
    found = [
        f"{path.relative_to(ENGINE.parent)}:{line}"
        for path in sorted(ENGINE.rglob("*.py"))
        for line in uncoded_raises(ast.parse(path.read_text(encoding="utf-8")))
    ]
    assert found == []


def test_the_refusal_check_sees_english_in_a_raise() -> None:
    planted = ast.parse(
        'InputError("tp", "a whole number")\n'
        'InputError("tp", f"at most {n}")\n'
        'InputError("tp", "a " + kind)\n'
        'InputError("tp", E.RANGE(low=1, high=2, got=g))\n'
        'InputError("tp", expected, why=shape)\n'
    )
    assert uncoded_raises(planted) == [1, 2, 3]


def _korean_english(text: str) -> list[str]:
    return [f.words for f in check([text], "ko", catalog_words())]


def _refusal(call: object, *args: object, **kwargs: object) -> InputError:
    with pytest.raises(InputError) as caught:
        call(*args, **kwargs)  # type: ignore[operator]
    return caught.value


# --- the CLI line is what it was ---------------------------------------------------------------


def test_the_cli_line_of_a_refusal_is_the_english_catalogs_wording() -> None:
    err = _refusal(make_scenario, gpu="H300")
    assert str(err) == "gpu: a known GPU name; closest: H100 SXM, H200, B300"
    assert str(err) == say(err.decision, markdown=False)


def test_a_json_syntax_error_keeps_its_cli_line_and_names_line_and_column_in_korean() -> None:
    err = _refusal(load_pasted, '{\n  "hidden_size": 4096,\n  oops: 1\n}')
    assert str(err) == (
        "config.json: Invalid JSON at line 3, column 3: a key in double quotes was expected."
    )
    ko = say(err.decision, "ko")
    assert "3번째 줄, 3번째 칸" in ko and "큰따옴표로 감싼 키" in ko
    assert _korean_english(ko) == []


# --- the common refusals, in Korean --------------------------------------------------------------


def test_a_korean_link_with_bad_values_is_explained_in_korean() -> None:
    parsed = from_query(
        {"tp": "x", "gpu": "H300", "kv": "zz", "ctx": "0", "zzz": "1", "lang": "ko"}
    )
    assert len(parsed.notes) == 5
    for note in parsed.notes:
        ko = say(note, "ko")
        assert _korean_english(ko) == [], ko
    assert english(parsed.notes)[0] == (
        "Link parameter tp='x' is not valid (a whole number); leaving it to the engine."
    )


def test_a_pinned_layout_larger_than_the_gpus_is_dropped_with_a_korean_note() -> None:
    parsed = from_query({"tp": "16", "gpus": "8"})
    assert parsed.scenario.tp is None
    ko = say(parsed.notes[0], "ko")
    assert "16" in ko and _korean_english(ko) == []


def test_a_refused_pinned_tp_says_why_in_korean() -> None:
    err = _refusal(study, make_scenario(model="Qwen/Qwen3-8B", tp=3))
    assert err.field == "tp" and err.why is not None
    ko = say(err.decision, "ko")
    assert "TP 3" in ko and _korean_english(ko) == [], ko


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        ({"num_attention_heads": 8}, "hidden_size"),
        ({**LLAMA, "num_key_value_heads": 5}, "num_key_value_heads"),
        ({**LLAMA, "num_experts_per_tok": 9, "num_local_experts": 8}, "num_experts_per_tok"),
        ({**LLAMA, "hidden_size": "wide"}, "hidden_size"),
        ({**LLAMA, "num_hidden_layers": 0}, "num_hidden_layers"),
        ({**LLAMA, "tie_word_embeddings": "yes"}, "tie_word_embeddings"),
        ({**LLAMA, "layer_types": ["full_attention"] * 3}, "layer_types"),
    ],
)
def test_a_bad_config_field_is_named_and_explained_in_korean(raw: dict, field: str) -> None:
    err = _refusal(load_pasted, json.dumps(raw))
    assert err.field == field and err.expects is not None, str(err)
    ko = say(err.decision, "ko")
    assert ko.startswith(field) and _korean_english(ko) == [], ko


def test_a_file_over_the_cap_states_the_cap_in_korean() -> None:
    err = _refusal(parse_json_bytes, b" " * (MAX_CONFIG_BYTES + 1), CONFIG)
    ko = say(err.decision, "ko")
    assert f"{MAX_CONFIG_BYTES:,}" in ko and _korean_english(ko) == [], ko


def test_a_refusal_the_engine_decided_says_why_in_both_languages() -> None:
    err = _refusal(study, make_scenario(model="Qwen/Qwen3-8B", tp=3))
    assert str(err).startswith("tp: ") and "(" in str(err)
    assert hangul(str(err)) == []
    assert _korean_english(say(err.decision, "ko")) == []


# --- the pages, in Korean ------------------------------------------------------------------------


def test_the_korean_page_says_a_link_s_bad_values_in_korean() -> None:
    from tests.apptest_util import open_app

    at = open_app(None, {"tp": "x", "gpu": "H300", "lang": "ko"})
    shown = [w.value for w in at.warning]
    assert len(shown) == 2 and all("링크 매개변수" in w for w in shown), shown
    assert [_korean_english(w) for w in shown] == [[], []]


def test_a_korean_paste_of_broken_json_is_refused_in_korean() -> None:
    from tests.apptest_util import assert_clean, open_app

    at = open_app(None, {"lang": "ko"})
    at.radio(key="w.mode").set_value("paste").run()
    at.text_area(key="w.paste").input('{\n  "hidden_size": 4096,\n  oops: 1\n}')
    at.button(key="w.paste_go").click().run()
    assert_clean(at)
    errors = [e.value for e in at.error]
    assert len(errors) == 1 and "3번째 줄, 3번째 칸" in errors[0], errors
    assert _korean_english(errors[0]) == []


def test_a_bad_kubernetes_name_is_refused_in_korean_with_no_english_citation() -> None:
    from tests.apptest_util import assert_clean, open_app

    at = open_app("flags", {"lang": "ko"})
    at.text_input(key="flags.kube.vllm.claim").input("Bad_Name").run()
    assert_clean(at)
    errors = [e.value for e in at.error]
    assert any("model_cache_claim" in e and "DNS 레이블" in e for e in errors), errors
    assert all(_korean_english(e) == [] for e in errors)
    assert not any("a DNS label" in c.value for c in at.caption)
