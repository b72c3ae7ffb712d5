"""The one error type bad input raises: it names the field and what was expected, as a decision
worded once per language (``data/i18n/<lang>/errors.yaml``), and, where the engine decided the
refusal, why.

``InputError("tp", RANGE(low=1, high=n, got=got(v)))``. ``err.decision`` is the whole refusal:
the field (a name, as written), the expectation and the reason; a page words it in the reader's
language, and ``str(err)`` is the CLI's one line, ``<field>: <expected>``, worded by the English
catalog. No refusal carries English of its own (tests/test_errors.py).
"""

from __future__ import annotations

import errno
from typing import Any

from engine.decision import Code, Decision, Name
from engine.i18n import DEFAULT_LANG
from engine.text.words import say

# --- the refusal as a whole: what a page shows -------------------------------------------------

REFUSED = Code("error.refused", "field", "expected")
REFUSED_BECAUSE = Code("error.refused.because", "field", "expected", "why")

# --- what was expected: the common shapes ------------------------------------------------------

# numbers and choices (scenario fields, link values, CLI flags, config fields)
WHOLE_NUMBER = Code("error.whole_number")
DECIMAL = Code("error.decimal")
NUMBER_OF = Code("error.number_of", "unit", "got")
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
HUB_PREFIX = Code("error.hub_prefix", "prefix", "got")
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
        "linear_state",
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
LAYER_TYPE_LIST = Code("error.config.layer_type_list")
BLOCK_KIND_LIST = Code("error.config.block_kind_list")
BLOCK_CONFIGS = Code("error.config.block_configs")
POSITIVE_USED_BY = Code("error.config.positive_used_by", "by")
BLOCK_OBJECT = Code("error.config.block_object")
FFN_MULT = Code("error.config.ffn_mult", "got")
MODEL_CLASSES = Code("error.config.model_classes")
VALID = Code("error.config.valid", "kind", "got")
HEAD_SIZE = Code("error.config.head_size", "hidden", "heads")
MAMBA_HEAD_DIM = Code("error.config.mamba_head_dim", "width")
LAYER_DIVISOR = Code("error.config.layer_divisor", "layer", "heads", "got")
PATTERN_PER_LAYER = Code("error.config.pattern_per_layer", "layers", "got")
LINEAR_STATE = Code("error.config.linear_state", "layer", "kind")
KNOWN_LAYER_KIND = Code("error.config.known_layer_kind", "layer", "got")
NOT_THIS_KIND = Code("error.config.not_this_kind", "layer", "kind")
WINDOW_FOR = Code("error.config.window_for", "kind")
WINDOW_COMPRESSED = Code("error.config.window.compressed")
WINDOW_LAYER = Code("error.config.window.layer", "layer")
# a file or a pasted text
FILE_SIZE = Code("error.file.size", "most", "got")
HELD_SIZE = Code("error.file.held", "most", "got")
REGULAR_FILE = Code("error.file.regular_calibration")
FILE_EMPTY = Code("error.file.empty")
FILE_UTF8 = Code("error.file.utf8", "at")
FILE_UTF8_CHAR = Code("error.file.utf8_char", "at")
FILE_OBJECT = Code("error.file.object")
FILE_NOT_JSON_TEXT = Code("error.file.not_json_text")
FILE_DEPTH = Code("error.file.depth")
FILE_DIGITS = Code("error.file.digits", "most")
CONFIG_SIZE = Code("error.file.config_size", "mib", "most", "got")
INDEX_METADATA = Code("error.file.index_metadata")
FILE_BYTES = Code("error.file.bytes")
ONE_CONFIG = Code("error.file.one_config", "companions", "got")
FILE_UTF8_TEXT = Code("error.file.utf8_text")
READABLE = Code("error.file.readable", "reason")
READABLE_AT = Code("error.file.readable_at", "path", "reason")
JSON = Code("error.json", "line", "column", "problem")
POSITIVE_BYTES = Code("error.positive_bytes")
POSITIVE_NUMBER = Code("error.positive_number", "got")
POSITIVE_OR_NONE = Code("error.positive_or_none", "got")
PARSER = Code("error.parser", "message")  # argparse's own words, for the CLI
RUNS_LAYOUT = Code("error.runs_layout", "layout")
RELEASE = Code("error.release", "got")
MODEL_SOURCE = Code("error.model_source", "got")
KV_DSA_ONLY = Code("error.kv_dsa_only", "dtype")
MULTIMODAL = Code("error.multimodal", "architecture")
PERCENTAGE = Code("error.percentage", "got")
RUNNABLE_LAYOUT = Code("error.runnable_layout")

# why a file could not be read, by the operating system's error number
_OS_REASONS = {
    errno.ENOENT: Code("error.os.not_found"),
    errno.EACCES: Code("error.os.denied"),
    errno.EPERM: Code("error.os.denied"),
    errno.EISDIR: Code("error.os.directory"),
    errno.ENOTDIR: Code("error.os.not_directory"),
}
OS_OTHER = Code("error.os.other", "msg")


def readable(err: OSError, path: str | None = None) -> Decision:
    """A readable file was expected (at ``path``, where the user named one); the operating
    system's reason it is not."""
    code = _OS_REASONS.get(err.errno or 0)
    reason = code() if code is not None else OS_OTHER(msg=Name(str(err.strerror or err)[:100]))
    if path is None:
        return READABLE(reason=reason)
    return READABLE_AT(path=Name(path), reason=reason)


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
    """Bad user input: the field, what it expects (``expects``) and, where the engine decided
    the refusal (a layout the model's shapes refuse), why (``why``). ``str(err)`` is the CLI's
    one line in English; ``err.decision`` the refusal a page words in the reader's language."""

    def __init__(self, field: str, expects: Decision, *, why: Decision | None = None) -> None:
        self.field = field
        self.expects = expects
        self.why = why
        super().__init__(field, expects, why)

    @property
    def decision(self) -> Decision:
        """The refusal as one decision: the field and what it expects (and why)."""
        field = Name(self.field)
        if self.why is not None:
            return REFUSED_BECAUSE(field=field, expected=self.expects, why=self.why)
        return REFUSED(field=field, expected=self.expects)

    def __str__(self) -> str:
        return say(self.decision, DEFAULT_LANG, markdown=False)


class JsonError(InputError):
    """Text that is not JSON: where it stops being JSON (so a page can say it in its language)."""

    def __init__(self, field: str, msg: str, line: int, column: int) -> None:
        self.msg = msg
        self.line = line
        self.column = column
        super().__init__(field, JSON(line=line, column=column, problem=json_problem(msg)))
