"""Words only at the edge: no module of the engine below ``engine/present/`` builds an English
sentence a reader sees. Every such sentence is a decision worded in ``data/i18n`` (issue 28).

The check reads each module's string literals and f-strings (AST) and finds the English
sentences in them as the Korean-page check does (``tools.lang_check``: three English words in a
row that are no name, unit, flag or identifier). It leaves out what never reaches a reader as the
engine's own words:

- docstrings and comments (the code's documentation);
- the message of an exception other than ``InputError`` (a broken data file or a bug, for the
  developer; an ``InputError`` takes a decision, tests/test_errors.py);
- the CLI's help (``help=`` of argparse, and the scenario table's ``Spec`` rows that generate it):
  the CLI speaks English, and the pages word the same fields from the catalogs;
- a data check's findings (a function named ``*_problems``: what is wrong in a data file, for
  the developer, as an exception's message is).

What is left must be empty, but for the few literals in ``ALLOWED``, each with why.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tools.lang_check import english_sentences
from tools.lang_names import catalog_words

ENGINE = Path(__file__).resolve().parent.parent / "engine"
# the edge: the layer that words decisions, the low text layer, and the entry points
EDGE = ("engine/present/", "engine/text/", "engine/cli.py", "engine/__main__.py")

# (file, the name a literal is assigned to): words that are not the engine's own, and why
ALLOWED: dict[tuple[str, str], str] = {
    ("engine/errors.py", "_JSON_PROBLEMS"): "Python's JSON parser's messages, matched to find "
    "which problem it reports (each is worded by its own code)",
    ("engine/measure/kernels/calibrate.py", "how"): "the calibration file's record of how it was "
    "measured (sizes, dtypes, torch and CUDA versions): a file for the speed model, never shown",
    ("engine/measure/bench_compare.py", "how"): "the benchmark calibration file's record of how "
    "it was fitted (runs, tools, factors): a file for the speed model, never shown",
}


def _docstrings(tree: ast.AST) -> set[int]:
    found: set[int] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if not isinstance(body, list):
            continue
        for i, st in enumerate(body):
            # a module's, class's or function's docstring, and an attribute's after its line
            is_doc = i == 0 or isinstance(body[i - 1], ast.Assign | ast.AnnAssign)
            if is_doc and isinstance(st, ast.Expr) and isinstance(st.value, ast.Constant):
                found.add(id(st.value))
    return found


def _skipped(tree: ast.AST, allowed: set[str]) -> set[int]:
    """The literals the check leaves out: docstrings, a developer's exception message or data
    finding, the CLI's help, and the values of the names ``allowed``."""
    skip = _docstrings(tree)
    for node in ast.walk(tree):
        inside: list[ast.AST] = []
        if isinstance(node, ast.FunctionDef) and node.name.endswith("problems"):
            inside.append(node)
        if isinstance(node, ast.Call):  # a keyword argument named as allowed
            inside += [k.value for k in node.keywords if k.arg in allowed]
        targets = node.targets if isinstance(node, ast.Assign) else []
        if isinstance(node, ast.AnnAssign):
            targets = [node.target]
        if any(getattr(t, "id", None) in allowed for t in targets):
            inside.append(node)
        if isinstance(node, ast.Raise) and node.exc is not None:
            call = node.exc
            name = getattr(getattr(call, "func", None), "id", "")
            if name != "InputError":
                inside.append(call)
        elif isinstance(node, ast.Call):
            func = node.func
            name = getattr(func, "id", getattr(func, "attr", ""))
            if name == "Spec":
                inside += node.args
            inside += [k.value for k in node.keywords if k.arg == "help"]
        for part in inside:
            skip |= {id(n) for n in ast.walk(part)}
    return skip


def _text(node: ast.AST) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):  # a value stands in as a number: neutral
        return "".join(v.value if isinstance(v, ast.Constant) else " 1 " for v in node.values)
    return None


def english_literals(source: str, allowed: set[str] | None = None) -> list[tuple[int, str]]:
    """``(line, text)`` of each literal in ``source`` that holds an English sentence (the
    values assigned to the names ``allowed`` left out)."""
    tree = ast.parse(source)
    skip = _skipped(tree, allowed or set())
    parts = {id(v) for n in ast.walk(tree) if isinstance(n, ast.JoinedStr) for v in n.values}
    names = catalog_words()
    found = []
    for node in ast.walk(tree):
        if id(node) in skip or id(node) in parts:
            continue
        text = _text(node)
        if text is not None and english_sentences(text, names):
            found.append((getattr(node, "lineno", 0), text))
    return sorted(found)


def _below_present() -> list[Path]:
    root = ENGINE.parent
    return [
        p for p in sorted(ENGINE.rglob("*.py")) if not str(p.relative_to(root)).startswith(EDGE)
    ]


def test_no_module_below_present_builds_an_english_sentence() -> None:
    root = ENGINE.parent
    found = []
    for path in _below_present():
        rel = str(path.relative_to(root))
        allowed = {name for file, name in ALLOWED if file == rel}
        for line, text in english_literals(path.read_text(encoding="utf-8"), allowed):
            found.append(f"{rel}:{line}: {text[:80]!r}")
    assert found == []


def test_the_check_sees_a_planted_sentence_and_leaves_the_rest() -> None:
    planted = '''
"""A module's docstring says what it does in English."""
WHY = f"{n} layers do not fit on the GPU"
FLAG = "--max-model-len"
HELP = parser.add_argument("--tp", help="the tensor-parallel size of the copy")
raise ValueError(f"data/gpus.yaml: {key} has no entry in generations")
raise InputError("tp", f"a whole number from one to {n}")
def data_problems(): return [f"{name}: the source field is missing"]
NOTE = "the engine's own words for it"
'''
    assert [line for line, _ in english_literals(planted)] == [3, 7, 9]
    assert [line for line, _ in english_literals(planted, {"NOTE"})] == [3, 7]


# modules below present/ that may word a decision themselves, and why
WORDING_ALLOWED = {
    "engine/errors.py": "str(err) is the CLI's one line: the English catalog's wording of the "
    "refusal's decision, so a traceback and the CLI say the same",
    "engine/troubleshoot/__init__.py": "the troubleshooter's causes are whole catalog texts "
    "looked up in the reader's language (troubleshoot.*), no English built here",
    # arrived with capacity and bench-compare (merged after issue 28's conversion): their --json
    # keeps English text beside each decision's code, built in their own to_json; to move to
    # present/ as study_report's JSON builders did
    "engine/capacity/compare.py": "capacity's --json (English text beside the codes)",
    "engine/capacity/fleet.py": "capacity's --json (English text beside the codes)",
    "engine/capacity/shortlist.py": "the shortlist's --json (English text beside the codes)",
    "engine/measure/bench_compare.py": "bench-compare's calibration record names the layout",
}
WORDING = {"say", "say_all", "as_json", "t"}


def wording_imports(source: str) -> list[str]:
    """The wording functions ``source`` imports from the text layer or the catalogs."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module in ("engine.text.words", "engine.i18n"):
            found += [a.name for a in node.names if a.name in WORDING]
    return found


def test_no_module_below_present_words_a_decision() -> None:
    root = ENGINE.parent
    found = {
        str(p.relative_to(root)): names
        for p in _below_present()
        if (names := wording_imports(p.read_text(encoding="utf-8")))
    }
    assert set(found) <= set(WORDING_ALLOWED), found
    assert wording_imports("from engine.text.words import sources, say\n") == ["say"]
