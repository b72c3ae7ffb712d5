"""The one error type bad input raises: it names the field and what was expected, in English
for the CLI's one line and, where the refusal has a code, as a decision the pages word in the
reader's language (``data/i18n/<lang>/errors.yaml``).

A raise gives both: ``InputError("tp", f"a whole number from 1 to {n}, got {v}",
expects=RANGE(low=1, high=n, got=got(v)))``. ``str(err)`` stays the CLI's line, ``<field>:
<expected>``; ``err.decision`` is the whole refusal for a page: the field (a name, as written)
and the expectation worded by its code, or, where no code exists yet, a generic "the value for
<field> was refused" with the English ``expected`` left for the page to cite beside it
(``err.cited``). tests/test_errors.py counts the raises that still have no code.
"""

from __future__ import annotations

from typing import Any

from engine.decision import Code, Decision, Name

# --- the refusal as a whole: what a page shows -------------------------------------------------

REFUSED = Code("error.refused", "field", "expected")
REFUSED_BECAUSE = Code("error.refused.because", "field", "expected", "why")
REFUSED_WHY = Code("error.refused.why", "field", "why")
REFUSED_CITED = Code("error.refused.cited", "field")

# --- what was expected: the common shapes ------------------------------------------------------

# numbers and choices (scenario fields, link values, CLI flags, config fields)
WHOLE_NUMBER = Code("error.whole_number")
DECIMAL = Code("error.decimal")
FINITE = Code("error.finite")
AT_LEAST = Code("error.at_least", "low")
AT_MOST = Code("error.at_most", "high")
RANGE = Code("error.range", "low", "high", "got")
POSITIVE = Code("error.positive", "got")
ONE_OF = Code("error.one_of", "choices")
ONE_OF_GOT = Code("error.one_of_got", "choices", "got")
TRUE_FALSE = Code("error.true_false")
TRUE_FALSE_GOT = Code("error.true_false_got", "got")
ONE_OR_ZERO = Code("error.one_or_zero")
TOO_LONG = Code("error.too_long", "most")
NOT_EMPTY = Code("error.not_empty")
KNOWN_FIELD = Code("error.known_field")
# a model named by the user
HUB_ID = Code("error.hub_id", "got")
CATALOG_NAME = Code("error.catalog_name", "got")
DIGEST = Code("error.digest")
SHA256 = Code("error.sha256")
PRINTABLE_NAME = Code("error.printable_name")
KNOWN_GPU = Code("error.known_gpu", "closest")
GPU_NAME = Code("error.gpu_name", "most")
UPLOAD_DROPPED = Code("error.upload_dropped")
HUB_UNREADABLE = Code("error.hub_unreadable", "repo", "reason")
# the scenario's cross-field rules
WITHIN_CONTEXT = Code("error.within_context", "total", "context")
LAYOUT_FITS = Code("error.layout_fits", "used", "gpus", "per_node", "nodes")
MEASURED = Code("error.measured", "got", "low", "high", "catalog", "unit", "factor")
STUDY_WORK = Code("error.study_work", "most", "got", "layers", "layouts", "gpus")
# a config.json field
MISSING = Code("error.config.missing", "what")
KIND = {
    key: Code(f"error.config.kind.{key}")
    for key in (
        "integer",
        "string",
        "list",
        "boolean",
        "object",
        "positive_integer",
        "positive_integer_model_width",
        "positive_integer_or_list",
    )
}
INTEGER = Code("error.config.integer", "got")
INTEGER_AT_LEAST = Code("error.config.integer_at_least", "low", "got")
AT_MOST_REAL = Code("error.config.at_most_real", "high", "got")
OF_TYPE = Code("error.config.of_type", "kind", "got")
PER_LAYER = Code("error.config.per_layer", "layers", "got")
MAX_ENTRIES = Code("error.config.max_entries", "most", "got")
PER_LAYER_INTEGER = Code("error.config.per_layer_integer", "got")
POSITIVE_OR_PER_LAYER = Code("error.config.positive_or_per_layer")
DIVISOR = Code("error.config.divisor", "of", "total", "got")
AT_MOST_FIELD = Code("error.config.at_most_field", "of", "total", "got")
NEEDED_WITH = Code("error.config.needed_with", "other")
NESTING = Code("error.config.nesting", "most")
NOT_NAN = Code("error.config.not_nan")
LONG_TEXT = Code("error.config.long_text", "most", "got")
LONG_KEY = Code("error.config.long_key", "most", "got")
SURROGATE_TEXT = Code("error.config.surrogate_text")
SURROGATE_KEY = Code("error.config.surrogate_key")
TP_DIVIDES = Code("error.config.tp_divides", "what", "n", "got")
# a file or a pasted text
FILE_SIZE = Code("error.file.size", "most", "got")
HELD_SIZE = Code("error.file.held", "most", "got")
REGULAR_FILE = Code("error.file.regular")
FILE_EMPTY = Code("error.file.empty")
FILE_UTF8 = Code("error.file.utf8", "at")
FILE_UTF8_CHAR = Code("error.file.utf8_char", "at")
FILE_OBJECT = Code("error.file.object")
FILE_NOT_JSON_TEXT = Code("error.file.not_json_text")
FILE_DEPTH = Code("error.file.depth")
FILE_DIGITS = Code("error.file.digits", "most")
JSON = Code("error.json", "line", "column", "problem")

# Python's JSON parser says what stops it in one of these phrases (CPython json/decoder.py and
# Modules/_json.c); any other is quoted as written.
_JSON_PROBLEMS = {
    "Expecting value": "value",
    "Expecting ',' delimiter": "comma",
    "Expecting ':' delimiter": "colon",
    "Expecting property name enclosed in double quotes": "property",
    "Unterminated string starting at": "unterminated",
    "Invalid control character at": "control",
    "Invalid \\escape": "escape",
    "Invalid \\uXXXX escape": "unicode_escape",
    "Extra data": "extra",
}
JSON_PROBLEM = {key: Code(f"error.json_problem.{key}") for key in _JSON_PROBLEMS.values()}
JSON_PROBLEM_OTHER = Code("error.json_problem.other", "msg")


def json_problem(msg: str) -> Decision:
    """What stops a JSON text, as Python's parser says it, as a decision."""
    key = _JSON_PROBLEMS.get(msg)
    return JSON_PROBLEM[key]() if key else JSON_PROBLEM_OTHER(msg=Name(msg[:100]))


def got(value: Any, limit: int = 80) -> Name:
    """A value the user gave, as an expectation quotes it: ``repr`` (text in quotes, a number as
    it is), at most ``limit`` characters."""
    shown = repr(value)
    return Name(shown if len(shown) <= limit else shown[: limit - 1] + "…")


class InputError(ValueError):
    """Bad user input. ``str(err)`` is one line: ``<field>: <what was expected>``. ``why``: the
    engine's decision behind it (a layout the model's shapes refuse), which the CLI and the
    pages word in the reader's language after the expectation. ``expects``: the expectation as
    a decision (None where no code exists yet)."""

    def __init__(
        self,
        field: str,
        expected: str,
        why: Decision | None = None,
        *,
        expects: Decision | None = None,
    ) -> None:
        self.field = field
        self.expected = expected
        self.why = why
        self.expects = expects
        super().__init__(f"{field}: {expected}")

    @property
    def decision(self) -> Decision:
        """The refusal as one decision: the field and what it expects (and why), in words
        every catalog has; without a code, "the value for <field> was refused" (``cited``)."""
        field = Name(self.field)
        if self.expects is not None and self.why is not None:
            return REFUSED_BECAUSE(field=field, expected=self.expects, why=self.why)
        if self.expects is not None:
            return REFUSED(field=field, expected=self.expects)
        if self.why is not None:
            return REFUSED_WHY(field=field, why=self.why)
        return REFUSED_CITED(field=field)

    @property
    def cited(self) -> str | None:
        """The English expectation a page quotes as a citation, where the refusal has no code
        to word it (None when ``decision`` says it all)."""
        return self.expected if self.expects is None and self.why is None else None


class JsonError(InputError):
    """Text that is not JSON: where it stops being JSON (so a page can say it in its language)."""

    def __init__(self, field: str, msg: str, line: int, column: int) -> None:
        self.msg = msg
        self.line = line
        self.column = column
        super().__init__(
            field,
            f"valid JSON ({msg} at line {line}, column {column})",
            expects=JSON(line=line, column=column, problem=json_problem(msg)),
        )
