"""Correction by construction: the linter writes each word back from its parsed parts, so what
was literal stays literal and what was an expansion stays that expansion.

The property runs real bash with the launchers stubbed on PATH (tests/shell_stub.py): a
generated word, and the word the linter writes back, give the launcher the same argv, and no
payload runs. Words mix bare text, globs, braces, a leading ``~``, backslash escapes, single and
double quotes, ``$'…'``, ``$X``, ``${X:-…}``, ``$(…)``, ``$((…))`` and backquotes, and carry
payloads (``$(touch …)``, backquoted ``touch``) only where the shell reads them as text. Many
words go into one command line, so 2,000 words take 40 bash runs per side.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.lint.shell import Var, Word, quote_literal, requote, shape, tokenize
from tests import shell_stub
from tests.budget import examples

MARK = "@MARK@"  # the payload's target, replaced by the sandbox's marks folder
SEP = "::sep::"

_bare = st.text(alphabet="abcXYZ019_-./=:,@%+", min_size=1, max_size=4)
_glob = st.sampled_from(["*", "?", "[ab]", "*.json", "x[!y]"])
_brace = st.sampled_from(["{a,b}", "{1..2}", "{x,}"])
_escaped = st.sampled_from(list(" $\"'\\*?[]{}~#;&|()<>`!")).map(lambda c: "\\" + c)
_sq_text = st.text(
    alphabet=st.characters(blacklist_characters="'\x00", codec="utf-8", max_codepoint=0x2FFF),
    max_size=6,
)
_payload_literal = st.sampled_from(
    [
        f"'$(touch {MARK}/sq)'",
        f"'`touch {MARK}/sqb`'",
        f"\\$\\(touch\\ {MARK}/esc\\)",
        f'"\\$(touch {MARK}/dq)"',
        f'"\\`touch {MARK}/dqb\\`"',
        f"'\"$(touch {MARK}/mix)\"'",
        f"$'$(touch {MARK}/ansi)'",
    ]
)
_dq_inner = st.one_of(
    st.text(alphabet="ab c*?~{},=-'#;&|<>()", min_size=1, max_size=4),
    st.sampled_from(
        [
            "\\$",
            '\\"',
            "\\\\",
            "\\`",
            "\\a",
            f"\\$(touch {MARK}/dqi)",
            "$X",
            "${X}",
            "${X:-d e}",
            "${U:-'q'}",
            "${Q}",
            "$(printf %s 'a  b')",
            '$(printf %s "c)d")',
            "`printf cd`",
            "$((1+2))",
            "$Y",
            "${#X}",
        ]
    ),
)
_dq = st.lists(_dq_inner, max_size=4).map(lambda xs: '"' + "".join(xs) + '"')
_bare_expansion = st.sampled_from(
    [
        "$X",
        "${X}",
        "${Z:-a b}",
        "${U:-'q r'}",
        '${U:-"s t"}',
        "$(printf %s ab)",
        "$(printf '%s' ')')",
        "`printf cd`",
        "$Y",
        "$((2*3))",
        '${X:+"$X"}',
        "${U:-{a}}",
        "$(printf %s $(printf n))",
        '$(printf "%s" "$(printf "a)")")',
        "$(printf x # a comment )\n)",
        '$"lo cale"',
    ]
)
_ansi = st.sampled_from(["$'a\\tb'", "$'\\x41'", "$'it\\'s'", "$'\\e[31m'", "$'\\u00e9'", "$'\\n'"])
_segment = st.one_of(
    _bare,
    _glob,
    _brace,
    _escaped,
    _sq_text.map(lambda s: "'" + s + "'"),
    _dq,
    _bare_expansion,
    _ansi,
    _payload_literal,
)
_tilde = st.sampled_from(["", "", "", "~", "~/m"])  # a tilde prefix only at the start
word_text = st.builds(
    lambda head, segs: head + "".join(segs), _tilde, st.lists(_segment, min_size=1, max_size=5)
)


@pytest.fixture(scope="module")
def box(tmp_path_factory: pytest.TempPathFactory) -> shell_stub.Sandbox:
    return shell_stub.sandbox(tmp_path_factory.mktemp("requote"))


def _split(argv: list[str]) -> list[list[str]]:
    groups: list[list[str]] = [[]]
    for a in argv[2:]:  # the launcher's name and "serve"
        if a == SEP:
            groups.append([])
        else:
            groups[-1].append(a)
    return groups


def _rebuilt(line: str) -> str:
    words = [t for t in tokenize(line).tokens if isinstance(t, Word)]
    return " ".join(requote(w.parts) for w in words)


@settings(
    max_examples=examples(40),
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(st.lists(word_text, min_size=50, max_size=50))
def test_words_written_back_give_the_same_argv_and_run_no_payload(
    box: shell_stub.Sandbox, words: list[str]
) -> None:
    words = [w.replace(MARK, str(box.marks)) for w in words]
    line = "vllm serve " + f" {SEP} ".join(words)
    rebuilt = _rebuilt(line)
    before = shell_stub.run(box, line)
    assert shell_stub.payload_ran(box) == [], line  # the generator's payloads are text
    after = shell_stub.run(box, rebuilt)
    assert shell_stub.payload_ran(box) == [], rebuilt
    assert len(before) == len(after) == 1, (line, rebuilt)
    for word, b, a in zip(words, _split(before[0]), _split(after[0]), strict=True):
        assert a == b, (word, rebuilt)


def test_a_word_written_back_reads_back_as_the_same_parts() -> None:
    for text in ['"$NAME\\$(touch x)"', "$HOME'$(cmd)'", "\"${X:-a}\"'$(cmd)'", "--f=\"$X\"'$(c)'"]:
        (word,) = [t for t in tokenize(text).tokens if isinstance(t, Word)]
        (again,) = [t for t in tokenize(requote(word.parts)).tokens if isinstance(t, Word)]
        assert shape(again) == shape(word)


def test_literal_values_are_one_inert_word() -> None:
    for value in ["$(touch x)", "`id`", "a b", "it's", "\x1b]8;;https://x\x07", "~", "*", ""]:
        (word,) = [t for t in tokenize(quote_literal(value)).tokens if isinstance(t, Word)]
        assert word.text == value and not any(isinstance(p, Var) for p in word.parts)
        assert all(ch >= " " and ch != "\x7f" for ch in quote_literal(value))


def test_the_sandbox_sees_a_payload_that_runs(tmp_path: Path) -> None:
    box = shell_stub.sandbox(tmp_path)
    calls = shell_stub.run(box, f'vllm serve "$(touch {box.marks}/p)x"')
    assert calls == [["vllm", "serve", "x"]] and shell_stub.payload_ran(box) == ["p"]
