"""Every decision the linter words: what a finding says is wrong, its fix, and each flag's
explanation, as codes with typed parameters (``engine.decision``), worded in
``data/i18n/<lang>/lint.yaml``.

A value read from the command (a flag, its value, a model id, a variable) is a ``Name``: it
stays as written in every language and is shown inert. A finding's message and fix are two
codes, ``lint.<finding>[.<variant>]`` and its ``….fix[.<variant>]``; clauses several findings
share (where a layout runs, the memory figures, what the engine then does) are nested codes.
"""

from __future__ import annotations

from engine.decision import Code
from engine.engines import ENGINES
from engine.launch.known_issues import known_issues
from engine.lint.rule_data import lint_rules

# --- clauses shared by several findings ---------------------------------------------------------

THIS_GPU = Code("lint.clause.this_gpu")
COMMAND_LAYOUT = Code("lint.clause.command_layout")
WHERE = Code("lint.clause.where", "layout", "gpus", "gpu")
SHARE = Code("lint.clause.share", "usable", "engine", "fraction", "memory")
KV_NUMBERS = Code("lint.clause.kv_numbers", "context", "need", "room", "usable", "weights")
REFUSES = Code("lint.clause.refuses", "engine")
CAPS = Code("lint.clause.caps", "engine", "context")
BEYOND = Code("lint.clause.beyond", "flag", "value", "context", "limit", "formula")

# --- fixes several findings share ---------------------------------------------------------------

WRITE = Code("lint.fix.write", "words")
USE = Code("lint.fix.use", "words")
DROP = Code("lint.fix.drop", "words")
DID_YOU_MEAN = Code("lint.fix.did_you_mean", "words")
PICK = Code("lint.fix.pick")
GATE_FIX = Code("lint.fix.gate", "fix")
KV_AUTO = Code("lint.fix.kv_auto")
FIX_STUDY_LAYOUT = Code("lint.fix.study_layout", "words", "layout", "gpus")
FIX_STUDY_CHANGE = Code("lint.fix.study_change", "words", "change")

# --- the shell around the command ---------------------------------------------------------------

REPEATED = Code("lint.repeated_subcommand", "launcher")
REPEATED_FIX = Code("lint.repeated_subcommand.fix", "launcher")
DETACHED = Code("lint.detached_flag", "line", "previous", "words", "first")
DETACHED_FIX = Code("lint.detached_flag.fix", "previous")
DANGLING = Code("lint.dangling_backslash", "line")
DANGLING_FIX = Code("lint.dangling_backslash.fix", "line")
UNSET = Code("lint.shell_variable.unset", "names")
UNSET_MODEL = Code("lint.shell_variable.unset_model", "names", "model")
UNSET_FIX = Code("lint.shell_variable.unset.fix")
BRANCH_OPTION = Code("lint.shell_variable.option", "name", "values")
BRANCH_VALUE = Code("lint.shell_variable.value", "name", "value")
BRANCHES = Code("lint.shell_variable.branches", "options", "picked")
BRANCHES_GPU = Code("lint.shell_variable.branches_gpu", "options", "picked", "gpu")
BRANCHES_FIX = Code("lint.shell_variable.branches.fix")
CONFIG_FILE = Code("lint.config_file", "flag", "value")
CONFIG_FILE_FIX = Code("lint.config_file.fix")
INFERRED = Code("lint.engine_inferred", "engine")
INFERRED_FIX = Code("lint.engine_inferred.fix")
NO_HARDWARE = Code("lint.no_hardware")
NO_HARDWARE_FIX = Code("lint.no_hardware.fix")
NOT_REWRITABLE = Code("lint.not_rewritable")
NOT_REWRITABLE_FIX = Code("lint.not_rewritable.fix")
NOT_RUN = Code("lint.not_run", "why")
NOT_RUN_FIX = Code("lint.not_run.fix")
# why the script never runs the linted command, or why the linter cannot know what it runs
IN_HEREDOC = Code("lint.not_run.heredoc", "line")
IN_FUNCTION = Code("lint.not_run.function", "name")
IN_DEAD_BRANCH = Code("lint.not_run.branch", "line")
AFTER_EXIT = Code("lint.not_run.exit", "line")
EXPANDED_HEREDOC = Code("lint.not_run.expanded", "line")
MORE = Code("lint.more", "n", "code")
MORE_FIX = Code("lint.more.fix", "cap")

# --- flags and values ---------------------------------------------------------------------------

AMBIGUOUS = Code("lint.ambiguous_flag", "flag", "engine", "candidates")
ABBREVIATED = Code("lint.abbreviated_flag", "flag", "full", "engine")
RENAMED = Code("lint.unknown_flag.renamed", "flag", "engine", "source")
REMOVED = Code("lint.unknown_flag.removed", "flag", "engine", "source")
UNKNOWN = Code("lint.unknown_flag", "flag", "engine")
UNKNOWN_EITHER = Code("lint.unknown_flag.either", "flag", "engine", "owner")
WRONG_ENGINE = Code("lint.wrong_engine_flag", "flag", "engine", "owner")
SPELLED = Code("lint.wrong_engine_flag.fix", "engine", "words")
SPELLED_DROP = Code("lint.wrong_engine_flag.fix.set_already", "engine", "words")
SPELLED_NONE = Code("lint.wrong_engine_flag.fix.none", "engine")
MISSING_VALUE = Code("lint.missing_value", "flag")
MISSING_VALUE_FIX = Code("lint.missing_value.fix", "flag")
VALUE_ON_SWITCH = Code("lint.value_on_switch", "flag", "value")
VALUE_ON_SWITCH_FIX = Code("lint.value_on_switch.fix", "flag")
DEPRECATED = Code("lint.deprecated_flag", "flag", "engine", "help_source")
DEPRECATED_FIX = Code("lint.deprecated_flag.fix")
BAD_CHOICE = Code("lint.bad_choice", "flag", "value", "engine", "choices")
PLUGIN_NAME = Code("lint.parser_plugin_name", "flag", "value", "engine", "plugin", "path")
PLUGIN_NAME_FIX = Code("lint.parser_plugin_name.fix", "value")
BAD_CHOICE_MORE = Code("lint.bad_choice.more", "flag", "value", "engine", "choices", "total")
UNKNOWN_CHOICE = Code("lint.unknown_choice", "flag", "value", "engine", "choices")
UNKNOWN_CHOICE_MORE = Code(
    "lint.unknown_choice.more", "flag", "value", "engine", "choices", "total"
)
CHOICE_DTYPE = Code("lint.bad_choice.fix.dtype")
CHOICE_FP4 = Code("lint.bad_choice.fix.fp4", "value", "words")
CHOICE_FP4_NONE = Code("lint.bad_choice.fix.fp4_none", "value")
UNEXPECTED = Code("lint.unexpected_argument", "token")
UNEXPECTED_AFTER = Code("lint.unexpected_argument.after", "token", "after")
UNEXPECTED_FIX = Code("lint.unexpected_argument.fix", "token")
BAD_VALUE = Code("lint.bad_value", "flag", "value", "engine", "expected")
BAD_VALUE_FIX = Code("lint.bad_value.fix", "expected")
EXPECT_WHOLE = Code("lint.expect.whole", "most")
EXPECT_TOKENS = Code("lint.expect.tokens", "most")
EXPECT_FRACTION = Code("lint.expect.fraction")
EXPECT_REQUESTS = Code("lint.expect.requests")
EXPECT_JSON = Code("lint.expect.json")
DUPLICATE = Code("lint.duplicate_flag", "flag", "n", "spellings", "kept")
DUPLICATE_FIX = Code("lint.duplicate_flag.fix")
MISSING_MODEL_INSTEAD = Code("lint.missing_model.default_instead", "engine", "model")
MISSING_MODEL_DEFAULT = Code("lint.missing_model.default", "engine")
MISSING_MODEL_REFUSED = Code("lint.missing_model.refused", "engine")
MISSING_MODEL_FIX = Code("lint.missing_model.fix", "flag")
MISSING_MODEL_FIX_POSITIONAL = Code("lint.missing_model.fix.positional", "program", "flag")
FRACTION_RANGE = Code("lint.memory_fraction_range", "flag", "value")
FRACTION_RANGE_FIX = Code("lint.memory_fraction_range.fix", "words")
FRACTION_HIGH_STATIC = Code("lint.memory_fraction_high.static", "flag", "value", "share")
FRACTION_HIGH_ALL = Code("lint.memory_fraction_high.all", "flag", "value", "share")
FRACTION_HIGH_FIX = Code("lint.memory_fraction_high.fix", "words")

# --- the model, the layout and memory -----------------------------------------------------------

NOT_LOADED_LONG = Code("lint.model_not_loaded.long", "chars")
NOT_LOADED_LONG_FIX = Code("lint.model_not_loaded.long.fix")
NOT_LOADED = Code("lint.model_not_loaded", "model")
NOT_LOADED_SELECTED = Code("lint.model_not_loaded.selected", "model", "selected")
NOT_LOADED_FIX = Code("lint.model_not_loaded.fix", "model")
DIFFERS = Code("lint.model_differs", "model", "selected")
DIFFERS_SIBLING = Code("lint.model_differs.sibling", "model", "selected", "format", "bundled")
DIFFERS_FIX = Code("lint.model_differs.fix", "model")
STAND_IN = Code("lint.model_stand_in", "model", "config")
STAND_IN_FORMAT = Code("lint.model_stand_in.format", "model", "config", "format")
STAND_IN_SELECTED = Code("lint.model_stand_in.selected", "model", "config", "selected")
STAND_IN_SELECTED_FORMAT = Code(
    "lint.model_stand_in.selected_format", "model", "config", "selected", "format"
)
STAND_IN_FIX = Code("lint.model_stand_in.fix", "model")
EXCEEDS = Code("lint.parallel_exceeds_gpus", "world", "tp", "pp", "dp", "gpus")
EXCEEDS_REPLICAS = Code("lint.parallel_exceeds_gpus.replicas", "world", "tp", "pp", "dp", "gpus")
EXCEEDS_FIX = Code("lint.parallel_exceeds_gpus.fix", "gpus")
TP_HEADS = Code("lint.tp_heads", "tp", "heads")
TP_HEADS_FIX = Code("lint.tp_heads.fix", "heads", "divisors")
TP_HEADS_FIX_PICK = Code("lint.tp_heads.fix.pick", "words", "heads", "divisors")
TP_HEADS_FIX_LAYOUT = Code(
    "lint.tp_heads.fix.layout", "words", "layout", "gpus", "heads", "divisors"
)
LAYOUT_INVALID = Code("lint.layout_invalid", "problem")
LAYOUT_INVALID_FIX = Code("lint.layout_invalid.fix")
NOT_FIT = Code("lint.does_not_fit", "where", "weights", "share")
NOT_FIT_FIX = Code("lint.does_not_fit.fix", "options")
NOT_FIT_FIX_NONE = Code("lint.does_not_fit.fix.none")
NOT_FIT_FIX_TP = Code("lint.does_not_fit.fix.tp", "words", "options")
OPTION_GPUS = Code("lint.option.gpus", "n", "gpu", "context")
OPTION_CHECKPOINTS = Code("lint.option.checkpoints", "repos")
OPTION_CHECKPOINT = Code("lint.option.checkpoint", "repo", "format")
TIGHT_WEIGHTS = Code("lint.memory_tight.weights", "where", "weights", "left", "share", "overhead")
TIGHT_WEIGHTS_FIX = Code("lint.memory_tight.weights.fix")
TIGHT_CONTEXT = Code("lint.memory_tight.context", "where", "numbers", "overhead")
TIGHT_CONTEXT_FIX = Code("lint.memory_tight.context.fix", "words")
CONTEXT_NOT_FIT = Code(
    "lint.context_does_not_fit", "flag", "value", "context", "where", "numbers", "effect"
)
CONTEXT_NOT_FIT_FIX = Code("lint.context_does_not_fit.fix", "words")
DEFAULT_NOT_FIT = Code(
    "lint.context_default_does_not_fit", "flag", "context", "formula", "where", "numbers", "effect"
)
DEFAULT_NOT_FIT_STAND_IN = Code(
    "lint.context_default_does_not_fit.stand_in",
    "flag",
    "context",
    "formula",
    "where",
    "numbers",
    "model",
)
DEFAULT_NOT_FIT_FIX = Code("lint.context_default_does_not_fit.fix", "words")
BEYOND_FORCED = Code("lint.context_beyond_model_forced", "beyond", "override")
BEYOND_FORCED_FIX = Code("lint.context_beyond_model_forced.fix", "words")
BEYOND_FORCED_FIX_FITS = Code("lint.context_beyond_model_forced.fix.fits", "words", "fits")
BEYOND_MODEL = Code("lint.context_beyond_model", "beyond")
BEYOND_MODEL_STAND_IN = Code("lint.context_beyond_model.stand_in", "beyond", "model")
BEYOND_MODEL_FIX = Code("lint.context_beyond_model.fix", "words")
BEYOND_MODEL_FIX_FITS = Code("lint.context_beyond_model.fix.fits", "words", "fits")
SLICED = Code("lint.moe_experts_sliced", "gpus", "experts")
SLICED_FIX = Code("lint.moe_experts_sliced.fix", "words")
AUTO_WITHOUT_PARSER = Code("lint.auto_tool_choice_without_parser")
AUTO_WITHOUT_PARSER_FIX = Code("lint.auto_tool_choice_without_parser.fix", "words")
PARSER_WITHOUT_AUTO = Code("lint.parser_without_auto_tool_choice")
PARSER_WITHOUT_AUTO_FIX = Code("lint.parser_without_auto_tool_choice.fix")
MISSING_PARSER = {
    kind: Code(f"lint.missing_{kind}_parser", "flag", "family", "parser", "engine")
    for kind in ("tool", "reasoning")
}
MISSING_PARSER_STAND_IN = {
    kind: Code(
        f"lint.missing_{kind}_parser.stand_in", "flag", "family", "parser", "engine", "model"
    )
    for kind in ("tool", "reasoning")
}
MISSING_PARSER_FIX = {
    kind: Code(f"lint.missing_{kind}_parser.fix", "words") for kind in ("tool", "reasoning")
}
UNNEEDED = Code("lint.reasoning_parser_unneeded", "flag", "value", "family")
UNNEEDED_STAND_IN = Code(
    "lint.reasoning_parser_unneeded.stand_in", "flag", "value", "family", "model"
)
UNNEEDED_FIX = Code("lint.reasoning_parser_unneeded.fix", "flag")
MISMATCH = {
    kind: Code(f"lint.{kind}_parser_mismatch", "flag", "value", "family", "engine", "expected")
    for kind in ("tool", "reasoning")
}
MISMATCH_STAND_IN = {
    kind: Code(
        f"lint.{kind}_parser_mismatch.stand_in",
        "flag",
        "value",
        "family",
        "engine",
        "expected",
        "model",
    )
    for kind in ("tool", "reasoning")
}
RESTATED = Code("lint.engine_choice_restated", "flag", "value", "engine", "gpu", "stored")
RESTATED_FIX = Code("lint.engine_choice_restated.fix")
CAPACITY = Code(
    "lint.kv_dtype_capacity", "flag", "value", "engine", "stored", "bytes", "auto", "gpu"
)
CAPACITY_FIX = Code("lint.kv_dtype_capacity.fix")
REQUIRED_MISSING = Code("lint.recipe_required.missing", "words", "reason", "source")
REQUIRED_VALUE = Code("lint.recipe_required.value", "flag", "value", "wanted", "reason", "source")
SHOULD_CHOOSE = Code("lint.engine_should_choose", "flag", "value", "reason")
SHOULD_CHOOSE_FIX = Code("lint.engine_should_choose.fix", "flag")
DSA_PHASES = Code("lint.engine_should_choose.dsa_phases")
BLOCK = Code("lint.engine_should_choose.block", "flag", "value", "family", "reason")
BLOCK_HYBRID = Code("lint.engine_should_choose.hybrid")
BLOCK_DSA = Code("lint.engine_should_choose.dsa_pages", "version", "block")
KNOWN_AVOID = Code("lint.known_issue.avoid", "engine", "symptom", "source", "quote_source")
KNOWN_AVOID_FIX = Code("lint.known_issue.avoid.fix")
KNOWN_FIX = Code("lint.known_issue.fix", "gpu", "symptom", "source", "quote_source")
KNOWN_FIX_FIX = Code("lint.known_issue.fix.add", "settings")
KNOWN_LIMIT = Code(
    "lint.known_issue.limit", "flag", "fraction", "symptom", "source", "quote_source"
)
KNOWN_LIMIT_FIX = Code("lint.known_issue.limit.fix", "limit")
# each known issue's symptom (data/known_issues.yaml), worded in the catalogs as the data states it
SYMPTOM = {
    issue.id: Code(f"lint.known_issue.symptom.{issue.id}") for issue in known_issues() if issue.lint
}

# --- kernels per GPU ----------------------------------------------------------------------------

DSA_MISSING = Code("lint.dsa_kernel_missing", "reason")
DSA_MISSING_FIX = Code("lint.dsa_kernel_missing.fix")
DSA_SM120 = Code("lint.dsa_kernel_sm120", "reason")
DSA_SM120_FIX = Code("lint.dsa_kernel_sm120.fix")
FALLBACK_DSA = Code("lint.kernel_fallback.dsa", "reason")
FALLBACK_DSA_FIX = Code("lint.kernel_fallback.dsa.fix")
FALLBACK = Code("lint.kernel_fallback", "name", "reason")
FALLBACK_FIX_FAIL = Code("lint.kernel_fallback.fix.fail")
FALLBACK_FIX_WARN = Code("lint.kernel_fallback.fix.warn")
NVFP4_WEIGHTS = Code("lint.nvfp4_without_fp4.weights", "reason")
NVFP4_WEIGHTS_FIX = Code("lint.nvfp4_without_fp4.weights.fix")
NVFP4_NAMED = Code("lint.nvfp4_without_fp4.named", "gpu", "arch")
NVFP4_NAMED_FIX = Code("lint.nvfp4_without_fp4.named.fix")
NVFP4_KV = Code("lint.nvfp4_without_fp4.kv", "flag", "value", "gpu", "arch")
NVFP4_KV_FIX = Code("lint.nvfp4_without_fp4.kv.fix")
NVFP4_KV_BLACKWELL = Code(
    "lint.nvfp4_without_fp4.kv_blackwell", "flag", "value", "gpu", "generation"
)
FP8_STORAGE = Code("lint.fp8_kv_storage_only", "reason")
FP8_STORAGE_FIX = Code("lint.fp8_kv_storage_only.fix")
FP8_BACKEND = Code("lint.fp8_kv_backend", "backend", "gpu", "generation", "reason")
FP8_BACKEND_MLA = Code("lint.fp8_kv_backend.mla", "gpu", "arch", "reason")
FP8_BACKEND_MLA_FIX = Code("lint.fp8_kv_backend.mla.fix")

# --- each flag explained ------------------------------------------------------------------------

POSITIONAL = Code("lint.explain.positional")
NOT_A_FLAG = Code("lint.explain.not_a_flag", "engine")
SEE_FINDINGS = Code("lint.explain.see_findings")
ALIAS = Code("lint.explain.alias", "canonical")
TP_REASON = Code("lint.explain.tp", "value")
TP_REASON_LATENT = Code("lint.explain.tp_latent", "value")
STATIC_REASON = Code("lint.explain.mem_fraction_static", "value")
STATIC_REASON_LEFT = Code("lint.explain.mem_fraction_static_left", "value", "free")
# Why a flag is typically in a command, by the engine's own spelling (``True``: the wording
# names the flag's value).
_TYPICAL = {
    "--model": True,
    "--model-path": True,
    "--quantization": True,
    "--tool-call-parser": True,
    "--reasoning-parser": True,
    "--trust-remote-code": False,
    "--chunked-prefill-size": True,
    "--max-num-batched-tokens": True,
    "--gpu-memory-utilization": True,
    "--max-model-len": True,
    "--context-length": True,
    "--kv-cache-dtype": True,
    "--enable-expert-parallel": False,
    "--ep-size": True,
    "--data-parallel-size": True,
    "--dp-size": True,
    "--attn-dp-size": True,
    "--enable-auto-tool-choice": False,
    "--enable-prefix-caching": False,
    "--disable-radix-cache": False,
    "--enable-metrics": False,
}
TYPICAL: dict[str, tuple[Code, bool]] = {
    flag: (Code("lint.explain.flag." + flag[2:].replace("-", "_"), *(["value"] * v)), v)
    for flag, v in _TYPICAL.items()
}

# Attention backends that cannot read an FP8 KV cache (data/lint.yaml fp8_kv_backends): why, and
# the fix, one code each per engine and backend.
FP8_BACKEND_ROW: dict[tuple[str, str], tuple[Code, Code]] = {
    (engine, row.backend): (
        Code(f"lint.fp8_kv_backend.{engine}.{row.backend.lower()}"),
        Code(f"lint.fp8_kv_backend.{engine}.{row.backend.lower()}.fix"),
    )
    for engine in ENGINES
    for row in lint_rules().fp8_kv_backends.for_engine(engine)
}
