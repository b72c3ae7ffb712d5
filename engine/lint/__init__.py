"""Lint an inherited vLLM / SGLang launch command against the pinned flag tables.

The command is parsed the way the engine's own argparse would see it (shell words, line
continuations, ``--flag=value``, SGLang's argparse abbreviations, vLLM's ``_``→``-`` and
``--config.key`` spellings), then checked by rules that know the model and the GPU: flags that
do not exist, values outside the choices, settings the engine should pick itself, MoE without
expert parallelism, missing parsers, precision the GPU cannot do, parallel sizes that cannot
split the model. Each flag present is explained, and so are the flags left out on purpose.
"""

from __future__ import annotations

import argparse
import difflib
import json
import re
import shlex
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Literal, get_args

import yaml

from engine.errors import InputError
from engine.hardware.gates import kernel_gates
from engine.rules import engine_rules
from engine.software.tables import ENGINES, Engine, engine_version, flag_table, lookup_flag

if TYPE_CHECKING:
    from engine.hardware.gpus import Gpu
    from engine.software.tables import FlagInfo

Severity = Literal["error", "warning", "info"]
AttentionFamily = Literal["MHA", "MQA", "GQA", "MLA", "DSA", "HYBRID"]

ATTENTION_FAMILIES: tuple[str, ...] = get_args(AttentionFamily)
ENGINE_LABEL = {"vllm": "vLLM", "sglang": "SGLang"}

# A launch command or a pod manifest is a few KB; anything far larger is not one.
MAX_COMMAND_CHARS = 64 * 1024
MEMORY_FRACTION_WARN = 0.95

PLAYBOOK = "Playbook text (../shared/seeds/004)"
SGLANG_AUTO = "../shared/engine-gt/sglang-auto-notes.md"
VLLM_NOTES = "../shared/engine-gt/vllm-kv-notes.md"
FACTS = "../shared/reference/facts.md"

_SEVERITY_ORDER = {"error": 0, "warning": 1, "info": 2}


# --- what the rules need to know about the model --------------------------------------------


@dataclass(frozen=True)
class ParserNames:
    """A parser's name per engine (the spellings differ: vLLM ``deepseek_v3``, SGLang
    ``deepseekv3``)."""

    vllm: str | None = None
    sglang: str | None = None

    def for_engine(self, engine: str) -> str | None:
        return self.vllm if engine == "vllm" else self.sglang


@dataclass(frozen=True)
class ModelFacts:
    """The few facts about a model that the lint and troubleshooting rules read.

    Built from the diagnosis (family verdict, config, software report); kept small so the rules
    stay readable and tests can write one in a line.
    """

    architecture: str  # HF architectures[0], e.g. "GlmMoeDsaForCausalLM"
    attention_family: str  # MHA | MQA | GQA | MLA | DSA | HYBRID
    moe: bool
    num_attention_heads: int
    num_kv_heads: int
    max_position_embeddings: int | None = None
    model_type: str = ""
    num_experts: int = 0
    has_tool_parser_need: bool = False  # the model is meant to call tools
    has_reasoning_parser_need: bool = False  # the model emits thinking text
    tool_call_parser: ParserNames = field(default_factory=ParserNames)
    reasoning_parser: ParserNames = field(default_factory=ParserNames)
    checkpoint_format: str | None = None  # "nvfp4", "fp8", "mxfp4", "awq", "gptq"; None = 16-bit
    attention_block_tokens: int | None = None  # hybrid: tokens per attention block vLLM aligns to
    name: str = ""  # display name, e.g. "zai-org/GLM-5"

    def __post_init__(self) -> None:
        if self.attention_family not in ATTENTION_FAMILIES:
            raise InputError(
                "attention_family",
                f"one of {', '.join(ATTENTION_FAMILIES)}, got {self.attention_family!r}",
            )
        for name in ("num_attention_heads", "num_kv_heads"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InputError(name, f"a positive whole number, got {value!r}")
        for name in ("max_position_embeddings", "attention_block_tokens"):
            value = getattr(self, name)
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int) or value < 1
            ):
                raise InputError(name, f"a positive whole number or nothing, got {value!r}")

    @property
    def is_dsa(self) -> bool:
        return self.attention_family == "DSA"

    @property
    def is_mla(self) -> bool:
        """MLA latent KV (plain MLA and DSA both store it)."""
        return self.attention_family in ("MLA", "DSA")

    @property
    def is_hybrid(self) -> bool:
        return self.attention_family == "HYBRID"


# --- the report -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Finding:
    severity: Severity
    code: str
    message: str
    fix: str
    flag: str | None = None  # the flag as written, when the finding is about one
    source: str = ""


@dataclass(frozen=True)
class FlagExplanation:
    flag: str  # as written
    canonical: str  # the engine's own spelling
    value: str | None
    meaning: str  # what the engine's help says it does
    reason: str  # why it is (or is not) in this command


@dataclass(frozen=True)
class LintReport:
    engine: Engine
    engine_version: str
    launcher: str  # "vllm serve", "python -m sglang.launch_server", ...
    model: str | None
    parsed_from: Literal["shell", "yaml"]
    findings: tuple[Finding, ...]
    explanations: tuple[FlagExplanation, ...]
    left_to_engine: tuple[FlagExplanation, ...]

    @property
    def codes(self) -> tuple[str, ...]:
        return tuple(f.code for f in self.findings)

    @property
    def errors(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.severity == "error")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# --- extracting the engine invocation -------------------------------------------------------

VLLM_MODULES = frozenset({"vllm.entrypoints.openai.api_server"})
SGLANG_MODULES = frozenset({"sglang.launch_server"})
_SHELL_OPERATORS = re.compile(r"^[;&|<>]+$")
_YAML_HINT = re.compile(r"^\s*(?:-\s+)?(?:command|args)\s*:", re.MULTILINE)
_YAML_LIST = re.compile(r"^\s*-\s+\S")
_NUMBER = re.compile(r"^-?\d+(\.\d+)?([eE]-?\d+)?$")
_ENV_ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")

EXPECTED_COMMAND = (
    "a `vllm serve …`, `python -m vllm.entrypoints.openai.api_server …` or "
    "`python3 -m sglang.launch_server …` command, or a YAML command:/args: list"
)


@dataclass(frozen=True)
class _Invocation:
    engine: Engine
    launcher: str
    args: tuple[str, ...]
    parsed_from: Literal["shell", "yaml"]
    inferred: bool = False  # engine guessed from the flags (args-only manifest)


def _shell_words(text: str) -> list[str]:
    joined = re.sub(r"\\\r?\n", " ", text)
    lexer = shlex.shlex(joined, posix=True, punctuation_chars=";&|<>")
    lexer.whitespace_split = True
    lexer.commenters = "#"
    try:
        return list(lexer)
    except ValueError as err:
        raise InputError("command", f"balanced shell quoting ({err})") from None


def _find_launcher(words: list[str]) -> tuple[Engine, str, list[str]] | None:
    """The engine, how it was launched and the words after the launcher (to the next shell
    operator), or None when no engine launcher appears."""
    for i, word in enumerate(words):
        base = word.rsplit("/", 1)[-1]
        rest: list[str] | None = None
        engine: Engine | None = None
        launcher = ""
        if base == "vllm" and i + 1 < len(words) and words[i + 1] == "serve":
            engine, launcher, rest = "vllm", "vllm serve", words[i + 2 :]
        elif base.startswith("python") or base in ("uv", "uvx"):
            # python [-u -X opt ...] -m MODULE
            for j in range(i + 1, min(i + 5, len(words) - 1)):
                if words[j] == "-m":
                    module = words[j + 1]
                    if module in VLLM_MODULES:
                        engine, rest = "vllm", words[j + 2 :]
                    elif module in SGLANG_MODULES:
                        engine, rest = "sglang", words[j + 2 :]
                    launcher = f"{base} -m {module}"
                    break
        elif word in VLLM_MODULES | SGLANG_MODULES and i > 0 and words[i - 1] == "-m":
            continue
        if engine is not None and rest is not None:
            end = next((k for k, w in enumerate(rest) if _SHELL_OPERATORS.match(w)), len(rest))
            if 0 < end < len(rest) and rest[end][0] in "<>" and re.fullmatch(r"\d", rest[end - 1]):
                end -= 1  # "2>&1": the digit is a file descriptor, not an argument
            return engine, launcher, rest[:end]
    return None


def _yaml_scalar(value: object, where: str) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str | int | float):
        return str(value)
    raise InputError("command", f"{where} items to be strings or numbers, got {value!r}")


def _yaml_words(value: object, where: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [_yaml_scalar(v, where) for v in value]
    raise InputError("command", f"{where} to be a list of strings, got {type(value).__name__}")


def _containers(node: object, depth: int = 0) -> Iterable[Mapping[str, object]]:
    """Every mapping with a ``command`` or ``args`` key (a pod's containers), depth first."""
    if depth > 64:
        raise InputError("command", "YAML of reasonable nesting depth")
    if isinstance(node, Mapping):
        if "command" in node or "args" in node:
            yield node
        for value in node.values():
            yield from _containers(value, depth + 1)
    elif isinstance(node, list):
        for value in node:
            yield from _containers(value, depth + 1)


def _infer_engine(args: list[str]) -> Engine | None:
    counts: dict[Engine, int] = {}
    for engine in ENGINES:
        table = flag_table(engine)
        counts[engine] = sum(1 for a in args if a.startswith("--") and a.split("=")[0] in table)
    best = max(ENGINES, key=lambda e: counts[e])
    other: Engine = "sglang" if best == "vllm" else "vllm"
    if counts[best] == 0 or counts[best] == counts[other]:
        return None
    return best


def _from_words(words: list[str], parsed_from: Literal["shell", "yaml"]) -> _Invocation | None:
    found = _find_launcher(words)
    if found is not None:
        engine, launcher, rest = found
        return _Invocation(engine, launcher, tuple(rest), parsed_from)
    # sh -c "vllm serve ..." inside a manifest
    for i, word in enumerate(words[:-1]):
        if word == "-c" and words[i - 1].rsplit("/", 1)[-1] in ("sh", "bash", "zsh", "dash"):
            return _from_words(_shell_words(" ".join(words[i + 1 :])), parsed_from)
    return None


def _extract(text: str) -> _Invocation:
    if not isinstance(text, str):
        raise InputError("command", f"text, got {type(text).__name__}")
    if len(text) > MAX_COMMAND_CHARS:
        raise InputError(
            "command",
            f"a launch command of at most {MAX_COMMAND_CHARS // 1024} KB, got {len(text):,} "
            "characters",
        )
    if "\x00" in text:
        raise InputError("command", "text without NUL bytes")
    if not text.strip():
        raise InputError("command", f"{EXPECTED_COMMAND}; the input is empty")

    first_line = next(line for line in text.splitlines() if line.strip())
    if _YAML_HINT.search(text) or _YAML_LIST.match(first_line):
        try:
            docs = list(yaml.safe_load_all(text))
        except yaml.YAMLError as err:
            mark = getattr(err, "problem_mark", None)
            where = f" at line {mark.line + 1}" if mark is not None else ""
            raise InputError("command", f"valid YAML{where}") from None
        except RecursionError:
            raise InputError("command", "YAML of reasonable nesting depth") from None
        for doc in docs:
            groups: list[list[str]] = []
            if isinstance(doc, list) and all(not isinstance(v, dict | list) for v in doc):
                groups.append(_yaml_words(doc, "the list"))
            for container in _containers(doc):
                groups.append(
                    _yaml_words(container.get("command"), "command:")
                    + _yaml_words(container.get("args"), "args:")
                )
            for words in groups:
                inv = _from_words(words, "yaml")
                if inv is not None:
                    return inv
                # args-only manifest: the image's entrypoint launches the engine
                engine = _infer_engine(words)
                if engine is not None:
                    launcher = "image entrypoint (engine inferred from the flags)"
                    return _Invocation(engine, launcher, tuple(words), "yaml", inferred=True)
        raise InputError("command", f"{EXPECTED_COMMAND}; the YAML has no engine command")

    inv = _from_words(_shell_words(text), "shell")
    if inv is None:
        raise InputError("command", f"{EXPECTED_COMMAND}; found no engine launcher")
    return inv


# --- parsing the engine's arguments ---------------------------------------------------------


@dataclass(frozen=True)
class _Arg:
    written: str  # the spelling in the command (without =value)
    canonical: str | None  # None: not a flag of this engine
    value: str | None
    info: FlagInfo | None
    negated: bool = False  # --disable-x / --no-x spelling of an on/off flag
    abbreviation_of: str | None = None
    missing_value: bool = False
    inline_value_on_switch: bool = False


@dataclass
class _Parsed:
    args: list[_Arg] = field(default_factory=list)
    positionals: list[str] = field(default_factory=list)
    stray: list[tuple[str, str | None]] = field(default_factory=list)  # (token, after flag)
    ambiguous: list[tuple[str, tuple[str, ...]]] = field(default_factory=list)


def _is_flag(token: str) -> bool:
    return token.startswith("-") and len(token) > 1 and not _NUMBER.match(token)


def _lookup(
    engine: Engine, name: str, table: Mapping[str, FlagInfo]
) -> tuple[FlagInfo | None, str | None, tuple[str, ...]]:
    """The flag info for a spelling, the abbreviation it expands (SGLang's argparse accepts
    unique prefixes), and the candidates when a prefix is ambiguous."""
    if name in table:
        return table[name], None, ()
    if engine == "vllm":
        # vLLM's FlexibleArgumentParser turns --max_model_len into --max-model-len, and
        # --speculative-config.method into a key of the JSON config flag.
        info = lookup_flag("vllm", name)
        if info is not None:
            return info, None, ()
        if re.fullmatch(r"-O\d*", name) or name.startswith("-O."):
            target = (
                "--optimization-level" if not name.startswith("-O.") else "--compilation-config"
            )
            if target in table:
                return table[target], None, ()
        return None, None, ()
    if name.startswith("--"):
        matches = tuple(sorted(k for k in table if k.startswith(name)))
        if len(matches) == 1:
            return table[matches[0]], matches[0], ()
        if len(matches) > 1:
            return None, None, matches
    return None, None, ()


def _parse(engine: Engine, words: tuple[str, ...]) -> _Parsed:
    table = flag_table(engine)
    out = _Parsed()
    i = 0
    last_flag: str | None = None
    while i < len(words):
        token = words[i]
        if token == "--":
            out.positionals.extend(words[i + 1 :])
            break
        if not _is_flag(token):
            if engine == "vllm" and not out.positionals and not out.args:
                out.positionals.append(token)  # vllm serve MODEL
            else:
                out.stray.append((token, last_flag))
            i += 1
            continue
        name, eq, inline = token.partition("=")
        info, abbrev, ambiguous = _lookup(engine, name, table)
        value: str | None = inline if eq else None
        if info is None:
            if ambiguous:
                out.ambiguous.append((name, ambiguous))
            # an unknown flag probably takes the next bare word as its value
            if value is None and i + 1 < len(words) and not _is_flag(words[i + 1]):
                value = words[i + 1]
                i += 1
            out.args.append(_Arg(name, None, value, None))
            last_flag = name
            i += 1
            continue
        canonical = info.flag
        if info.takes_value:
            missing = False
            if value is None:
                if i + 1 < len(words) and not _is_flag(words[i + 1]):
                    value = words[i + 1]
                    i += 1
                elif re.fullmatch(r"-O\d+", name):
                    value = name[2:]
                else:
                    missing = True
            out.args.append(
                _Arg(name, canonical, value, info, abbreviation_of=abbrev, missing_value=missing)
            )
        else:
            out.args.append(
                _Arg(
                    name,
                    canonical,
                    value,
                    info,
                    negated=info.is_negation(name),
                    abbreviation_of=abbrev,
                    inline_value_on_switch=value is not None,
                )
            )
        last_flag = name
        i += 1
    return out


def _parse_number(text: str | None) -> float | None:
    """Numbers as the engines' ``human_readable_int`` reads them: 32k = 32,000, 32K = 32,768."""
    if text is None:
        return None
    m = re.fullmatch(r"\s*(-?\d+(?:\.\d+)?)\s*([kKmMgG]?)\s*", text)
    if not m:
        return None
    number = float(m.group(1))
    suffix = m.group(2)
    scale = {"": 1, "k": 10**3, "m": 10**6, "g": 10**9, "K": 2**10, "M": 2**20, "G": 2**30}
    return number * scale[suffix]


# --- rules ----------------------------------------------------------------------------------

# The other engine's spelling of the same setting: a flag copied from one engine's docs into
# the other engine's command is the commonest inherited mistake.
EQUIVALENT_FLAGS: dict[Engine, dict[str, str]] = {
    # flag written on a vLLM command (SGLang's) -> what vLLM calls it
    "vllm": {
        "--mem-fraction-static": "--gpu-memory-utilization",
        "--context-length": "--max-model-len",
        "--model-path": "--model",
        "--tp-size": "--tensor-parallel-size",
        "--tp": "--tensor-parallel-size",
        "--dp-size": "--data-parallel-size",
        "--dp": "--data-parallel-size",
        "--pp-size": "--pipeline-parallel-size",
        "--ep-size": "--enable-expert-parallel",
        "--expert-parallel-size": "--enable-expert-parallel",
        "--ep": "--enable-expert-parallel",
        "--enable-dp-attention": "--data-parallel-size",
        "--attn-dp-size": "--data-parallel-size",
        "--disable-radix-cache": "--disable-prefix-caching",
        "--chunked-prefill-size": "--max-num-batched-tokens",
        "--max-running-requests": "--max-num-seqs",
        "--moe-a2a-backend": "--all2all-backend",
        "--page-size": "--block-size",
        "--enable-moe-ep": "--enable-expert-parallel",
    },
    # flag written on an SGLang command (vLLM's) -> what SGLang calls it
    "sglang": {
        "--gpu-memory-utilization": "--mem-fraction-static",
        "--max-model-len": "--context-length",
        "--enable-expert-parallel": "--ep-size",
        "--disable-prefix-caching": "--disable-radix-cache",
        "--max-num-batched-tokens": "--chunked-prefill-size",
        "--max-num-seqs": "--max-running-requests",
        "--all2all-backend": "--moe-a2a-backend",
        "--block-size": "--page-size",
        "--enable-moe-ep": "--ep-size",
    },
}
# Deprecated flags whose replacement the help text does not name.
DEPRECATED_REPLACEMENT: dict[Engine, dict[str, str]] = {
    "vllm": {},
    "sglang": {
        "--enable-dp-attention": "--attn-dp-size N (attention data-parallel groups inside the "
        "TP group)",
    },
}

NVFP4_WEIGHTS: dict[Engine, frozenset[str]] = {
    "vllm": frozenset({"modelopt_fp4", "nvfp4_per_token"}),
    "sglang": frozenset({"modelopt_fp4", "nvfp4_online"}),  # petit_nvfp4 is the non-FP4 path
}
NVFP4_KV = frozenset({"nvfp4", "nvfp4_4over6", "nvfp4_ds_mla", "fp4_mx_block16"})
FP8_KV_PREFIXES = ("fp8", "mxfp8")

# Each engine's flag for the settings several rules read.
_SETTING_FLAG: dict[str, dict[Engine, str]] = {
    "tp": {"vllm": "--tensor-parallel-size", "sglang": "--tp-size"},
    "pp": {"vllm": "--pipeline-parallel-size", "sglang": "--pp-size"},
    "dp": {"vllm": "--data-parallel-size", "sglang": "--dp-size"},
    "memory_fraction": {"vllm": "--gpu-memory-utilization", "sglang": "--mem-fraction-static"},
    "context": {"vllm": "--max-model-len", "sglang": "--context-length"},
    "block": {"vllm": "--block-size", "sglang": "--page-size"},
}


class _Ctx:
    """What the rules share: the parsed arguments, in argparse's last-one-wins view."""

    def __init__(
        self,
        engine: Engine,
        parsed: _Parsed,
        model: ModelFacts | None,
        gpu: Gpu | None,
        gpus: int | None,
    ) -> None:
        self.engine = engine
        self.parsed = parsed
        self.facts = model
        self.gpu = gpu
        self.gpus = gpus
        self.findings: list[Finding] = []
        self.last: dict[str, _Arg] = {}
        for arg in parsed.args:
            if arg.canonical is not None:
                self.last[arg.canonical] = arg

    @property
    def label(self) -> str:
        return f"{ENGINE_LABEL[self.engine]} {engine_version(self.engine)}"

    def add(
        self,
        severity: Severity,
        code: str,
        message: str,
        fix: str,
        flag: str | None = None,
        source: str = "",
    ) -> None:
        self.findings.append(Finding(severity, code, message, fix, flag, source))

    def value(self, canonical: str) -> str | None:
        arg = self.last.get(canonical)
        return None if arg is None else arg.value

    def on(self, canonical: str) -> bool:
        arg = self.last.get(canonical)
        return arg is not None and not arg.negated

    def int_value(self, canonical: str, default: int) -> int:
        number = _parse_number(self.value(canonical))
        return default if number is None else int(number)

    def flag(self, setting: str) -> str:
        """This engine's flag for ``setting`` (a key of ``_SETTING_FLAG``)."""
        return _SETTING_FLAG[setting][self.engine]

    @property
    def tp(self) -> int:
        return self.int_value(self.flag("tp"), 1)

    @property
    def pp(self) -> int:
        return self.int_value(self.flag("pp"), 1)

    @property
    def dp(self) -> int:
        return self.int_value(self.flag("dp"), 1)

    @property
    def model_id(self) -> str | None:
        if self.engine == "vllm":
            return self.value("--model") or (
                self.parsed.positionals[0] if self.parsed.positionals else None
            )
        return self.value("--model-path")


def _rule_flag_spelling(ctx: _Ctx) -> None:
    table = flag_table(ctx.engine)
    other: Engine = "sglang" if ctx.engine == "vllm" else "vllm"
    other_table = flag_table(other)
    for name, candidates in ctx.parsed.ambiguous:
        ctx.add(
            "error",
            "ambiguous-flag",
            f"`{name}` is a prefix of several {ctx.label} flags "
            f"({', '.join(candidates[:5])}); argparse refuses to guess.",
            f"Spell the flag out, e.g. `{candidates[0]}`.",
            name,
        )
    ambiguous_names = {name for name, _ in ctx.parsed.ambiguous}
    for arg in ctx.parsed.args:
        if arg.info is not None:
            if arg.abbreviation_of is not None:
                ctx.add(
                    "info",
                    "abbreviated-flag",
                    f"`{arg.written}` works only as argparse's unique-prefix shorthand for "
                    f"`{arg.abbreviation_of}`; a new flag with the same prefix would break it.",
                    f"Write `{arg.abbreviation_of}`.",
                    arg.written,
                )
            continue
        if arg.written in ambiguous_names:
            continue
        name = arg.written
        if name == "--enable-moe-ep":
            if ctx.engine == "sglang":
                ctx.add(
                    "error",
                    "enable-moe-ep",
                    f"`--enable-moe-ep` does not exist in {ctx.label} (the playbook's GLM-5.2 "
                    "command uses it): SGLang stops with 'unrecognized arguments'.",
                    f"Expert parallelism in {ctx.label} is `--ep-size N` (also spelled "
                    "`--expert-parallel-size`, `--ep`), N = the TP size.",
                    name,
                    f"{PLAYBOOK} ('MoE 부분은 별도로 켜야한다'); "
                    "../shared/engine-gt/sglang-0.5.23-flags.json",
                )
            else:
                ctx.add(
                    "error",
                    "enable-moe-ep",
                    f"`--enable-moe-ep` is not a {ctx.label} flag (and not an SGLang "
                    f"{engine_version('sglang')} one either).",
                    "vLLM turns expert parallelism on with `--enable-expert-parallel` (`-ep`).",
                    name,
                )
            continue
        if name in other_table or name in EQUIVALENT_FLAGS[ctx.engine]:
            replacement = EQUIVALENT_FLAGS[ctx.engine].get(name)
            if replacement is not None:
                fix = f"{ENGINE_LABEL[ctx.engine]} spells this `{replacement}`."
            else:
                fix = f"Remove it, or find the {ENGINE_LABEL[ctx.engine]} setting that does this."
            ctx.add(
                "error",
                "wrong-engine-flag",
                f"`{name}` is a flag of {ENGINE_LABEL[other]}; {ctx.label} does not have it "
                "and stops with 'unrecognized arguments'.",
                fix,
                name,
            )
            continue
        positive = "--" + name[5:] if name.startswith("--no-") else ""
        if positive in table and table[positive].negations:
            # older releases spelled "off" as --no-X; a fuzzy match would suggest the opposite
            fix = f"This version turns it off with `{table[positive].negations[0]}`."
        else:
            close = difflib.get_close_matches(name, list(table), n=1, cutoff=0.6)
            fix = f"Did you mean `{close[0]}`?" if close else "Remove it."
        ctx.add(
            "error",
            "unknown-flag",
            f"`{name}` is not a flag of {ctx.label}; the engine stops with 'unrecognized "
            "arguments'.",
            fix,
            name,
        )


def _rule_values(ctx: _Ctx) -> None:
    for arg in ctx.parsed.args:
        info = arg.info
        if info is None:
            continue
        if arg.missing_value:
            ctx.add(
                "error",
                "missing-value",
                f"`{arg.written}` needs a value and none follows.",
                f"Give `{arg.written} VALUE` or remove the flag.",
                arg.written,
            )
            continue
        if arg.inline_value_on_switch:
            ctx.add(
                "warning",
                "value-on-switch",
                f"`{arg.written}` is an on/off switch; `={arg.value}` is not how argparse "
                "reads it (it errors or ignores the value).",
                f"Write `{arg.written}` alone (or its --no-/--disable- form to turn it off).",
                arg.written,
            )
        if info.deprecated:
            replacement = DEPRECATED_REPLACEMENT[ctx.engine].get(info.flag)
            help_text = info.help.strip()
            ctx.add(
                "warning",
                "deprecated-flag",
                f"`{arg.written}` is deprecated in {ctx.label}"
                + (f" ({help_text})" if help_text and help_text != "Deprecated." else "")
                + ".",
                f"Use {replacement}." if replacement else "Drop it or move to its replacement.",
                arg.written,
            )
        if info.choices is None or arg.value is None or "." in arg.written:
            continue
        choices = [str(c) for c in info.choices]
        if arg.value in choices:
            continue
        close = difflib.get_close_matches(arg.value, choices, n=1, cutoff=0.5)
        hint = f"did you mean `{close[0]}`? " if close else ""
        if info.flag == "--dtype" and arg.value.lower().startswith(("fp8", "fp4", "nvfp4")):
            # the playbook's `--dtype fp8`: low-precision weights come from the checkpoint
            hint = (
                "--dtype is the 16/32-bit compute dtype; FP8 weights come from an FP8 "
                "checkpoint or `--quantization fp8`. "
            )
        if info.choices_enforced:
            ctx.add(
                "error",
                "bad-choice",
                f"`{arg.written} {arg.value}`: {ctx.label} accepts only {_short_list(choices)}.",
                f"{hint[:1].upper()}{hint[1:]}Pick one of the listed values.".strip(),
                arg.written,
            )
        else:
            ctx.add(
                "warning",
                "unknown-choice",
                f"`{arg.written} {arg.value}` is not one of {ctx.label}'s known values "
                f"({_short_list(choices)}); it only works if a plugin registers it.",
                f"{hint[:1].upper()}{hint[1:]}Check the spelling.".strip(),
                arg.written,
            )
    for token, after in ctx.parsed.stray:
        where = f" after `{after}`" if after else ""
        ctx.add(
            "error",
            "unexpected-argument",
            f"`{token}`{where} is not a flag and nothing takes it as a value; the engine stops "
            "with 'unrecognized arguments'.",
            "Remove it, or quote it together with the flag it belongs to.",
            after,
        )


def _short_list(values: list[str], limit: int = 12) -> str:
    shown = ", ".join(values[:limit])
    return shown + (f", … ({len(values)} in all)" if len(values) > limit else "")


def _rule_duplicates(ctx: _Ctx) -> None:
    seen: dict[str, list[_Arg]] = {}
    for arg in ctx.parsed.args:
        # vLLM merges --speculative-config.method and --speculative-config.x into one config
        if arg.canonical is not None and "." not in arg.written:
            seen.setdefault(arg.canonical, []).append(arg)
    for canonical, args in seen.items():
        if len(args) < 2:
            continue
        spellings = ", ".join(
            f"`{a.written}{'' if a.value is None else ' ' + a.value}`" for a in args
        )
        last = args[-1]
        kept = canonical if last.value is None else f"{canonical} {last.value}"
        ctx.add(
            "warning",
            "duplicate-flag",
            f"`{canonical}` is given {len(args)} times ({spellings}); argparse silently keeps "
            f"the last one (`{kept}`).",
            "Keep one, with the value you mean.",
            args[0].written,
        )


def _rule_model_present(ctx: _Ctx) -> None:
    if ctx.model_id is None:
        flag = "`--model` (or `vllm serve MODEL`)" if ctx.engine == "vllm" else "`--model-path`"
        ctx.add(
            "error" if ctx.engine == "sglang" else "warning",
            "missing-model",
            f"No model is given; {ctx.label} needs {flag}.",
            f"Add {flag} with the checkpoint id or path.",
        )


def _rule_memory_fraction(ctx: _Ctx) -> None:
    flag = ctx.flag("memory_fraction")
    arg = ctx.last.get(flag)
    if arg is None or arg.value is None:
        return
    try:
        fraction = float(arg.value)
    except ValueError:
        ctx.add(
            "error",
            "bad-value",
            f"`{arg.written} {arg.value}` is not a number.",
            f"Give a fraction such as `{flag} 0.9`.",
            arg.written,
        )
        return
    if not 0 < fraction <= 1:
        ctx.add(
            "error",
            "memory-fraction-range",
            f"`{arg.written} {arg.value}` is outside (0, 1]: it is a fraction of each GPU's "
            "memory.",
            f"Use a value such as `{flag} 0.9`.",
            arg.written,
        )
    elif fraction > MEMORY_FRACTION_WARN:
        what = (
            "weights + KV cache (the rest holds activations, CUDA graphs, NCCL buffers)"
            if ctx.engine == "sglang"
            else "everything vLLM allocates, KV cache included (CUDA graphs, NCCL buffers "
            "and other processes need the rest)"
        )
        ctx.add(
            "warning",
            "memory-fraction-high",
            f"`{arg.written} {arg.value}` leaves under {1 - MEMORY_FRACTION_WARN:.0%} of each "
            f"GPU for what sits outside {what}: long prefills and CUDA-graph capture are "
            "where it runs out of memory.",
            f"Start at `{flag} 0.9` or lower and raise it while watching peak memory.",
            arg.written,
        )


def _rule_context(ctx: _Ctx) -> None:
    facts = ctx.facts
    flag = ctx.flag("context")
    arg = ctx.last.get(flag)
    if arg is None or arg.value is None:
        return
    if arg.value.strip().lower() in ("auto", "-1"):
        return
    number = _parse_number(arg.value)
    if number is None or number < 1:
        ctx.add(
            "error",
            "bad-value",
            f"`{arg.written} {arg.value}` is not a token count.",
            f"Give a count such as `{flag} 32768` (or 32k).",
            arg.written,
        )
        return
    if facts is None or facts.max_position_embeddings is None:
        return
    limit = facts.max_position_embeddings
    if number > limit:
        env = (
            "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1"
            if ctx.engine == "vllm"
            else "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1"
        )
        ctx.add(
            "error",
            "context-beyond-model",
            f"`{arg.written} {arg.value}` ({int(number):,} tokens) is beyond the model's "
            f"max_position_embeddings ({limit:,}); the engine refuses to start, and forcing "
            f"it ({env}) produces positions the model never trained on.",
            f"Use `{flag} {limit}` or less, or a checkpoint (or RoPE scaling) made for the "
            "longer context.",
            arg.written,
        )


def _rule_parallel_sizes(ctx: _Ctx) -> None:
    tp, pp, dp = ctx.tp, ctx.pp, ctx.dp
    for name, size in (("TP", tp), ("PP", pp), ("DP", dp)):
        if size < 1:
            ctx.add(
                "error",
                "bad-value",
                f"{name} size {size} is not a positive number.",
                "Use 1 or more.",
            )
            return
    facts = ctx.facts
    tp_flag = ctx.flag("tp")
    tp_written = ctx.last[tp_flag].written if tp_flag in ctx.last else tp_flag
    if facts is not None and tp > 1:
        attention_tp = tp
        if ctx.engine == "sglang":
            attn_dp = ctx.int_value("--attn-dp-size", 1)
            if ctx.on("--enable-dp-attention"):
                attn_dp = max(attn_dp, dp)
            if attn_dp > 1 and tp % attn_dp == 0:
                attention_tp = tp // attn_dp
        heads = facts.num_attention_heads
        if heads % attention_tp:
            ctx.add(
                "error",
                "tp-heads",
                f"Attention TP {attention_tp} does not divide the model's {heads} attention "
                "heads; the engine splits heads evenly across TP ranks and refuses to start.",
                f"Use a TP size that divides {heads}: "
                f"{', '.join(str(d) for d in _divisors_upto(heads, 64))}.",
                tp_written,
            )
        elif not facts.is_mla and facts.attention_family != "HYBRID":
            kv = facts.num_kv_heads
            if (kv >= attention_tp and kv % attention_tp) or (
                kv < attention_tp and attention_tp % kv
            ):
                ctx.add(
                    "error",
                    "tp-kv-heads",
                    f"Attention TP {attention_tp} and the model's {kv} KV heads do not line "
                    "up: KV heads are either split evenly (TP divides them) or replicated "
                    "(TP a multiple of them).",
                    f"Use a TP size that divides {kv} or is a multiple of it.",
                    tp_written,
                )
    if ctx.gpus is None:
        return
    nodes = ctx.int_value("--nnodes", 1)
    if tp > ctx.gpus * max(nodes, 1):
        ctx.add(
            "error",
            "tp-exceeds-gpus",
            f"TP {tp} is larger than the {ctx.gpus} GPU(s) available"
            + (f" on {nodes} nodes" if nodes > 1 else "")
            + "; the engine waits for ranks that never come, or fails at start.",
            f"Use TP ≤ {ctx.gpus} (and a divisor of the head count).",
            tp_written,
        )
        return
    if ctx.engine == "vllm":
        dp_local = ctx.int_value("--data-parallel-size-local", 0)
        per_node = tp * pp * (dp_local if dp_local else dp)
        needed_here = per_node if (dp_local or nodes <= 1) else tp * pp * dp
        available = ctx.gpus if (dp_local or nodes <= 1) else ctx.gpus * nodes
        what = "TP × PP × DP" + ("-local" if dp_local else "")
    else:
        dp_is_attention = ctx.on("--enable-dp-attention")
        needed_here = tp * pp * (1 if dp_is_attention else dp)
        available = ctx.gpus * max(nodes, 1)
        what = "TP × PP" + ("" if dp_is_attention else " × DP")
    if needed_here > available:
        ctx.add(
            "error",
            "parallel-exceeds-gpus",
            f"{what} = {needed_here} GPUs, but {available} are available.",
            "Lower the parallel sizes or add GPUs/nodes.",
        )


def _divisors_upto(n: int, limit: int) -> list[int]:
    return [d for d in range(1, min(n, limit) + 1) if n % d == 0]


def _rule_moe_ep(ctx: _Ctx) -> None:
    facts = ctx.facts
    if facts is None or not facts.moe:
        return
    tp, dp = ctx.tp, ctx.dp
    src = f"{PLAYBOOK} ('MoE와 전문가 병렬': TP slices every expert, EP keeps experts whole)"
    if ctx.engine == "vllm":
        if ctx.on("--enable-expert-parallel") or tp * dp <= 1:
            return
        if dp > 1:
            message = (
                f"MoE model on {dp} data-parallel ranks without `--enable-expert-parallel`: every "
                "DP rank holds a full copy of all experts, so expert weights take "
                f"{dp}× the memory and the KV cache (and concurrency) shrinks accordingly."
            )
        else:
            message = (
                f"MoE model with TP {tp} and no `--enable-expert-parallel`: each expert is "
                f"sliced across all {tp} GPUs, so every GPU works on every selected expert and "
                "the all-reduce moves activations for all of them. It runs, silently slower: "
                "the point of activating only a few experts is lost."
            )
        ctx.add(
            "warning",
            "moe-without-ep",
            message,
            "Add `--enable-expert-parallel` (EP size = TP × DP): experts stay whole, one set "
            "per GPU, and tokens travel to them.",
            source=src,
        )
        return
    if ctx.int_value("--ep-size", 1) > 1 or tp <= 1:
        return
    ctx.add(
        "warning",
        "moe-without-ep",
        f"MoE model with TP {tp} and no `--ep-size`: SGLang slices each expert across all "
        f"{tp} GPUs, so every GPU works on every selected expert. It runs, silently slower.",
        f"Add `--ep-size {tp}` (EP inside the TP group). `--enable-moe-ep` from the playbook "
        f"does not exist in {ctx.label}.",
        source=src,
    )


def _rule_parsers(ctx: _Ctx) -> None:
    facts = ctx.facts
    src = f"{PLAYBOOK} ('4. 소프트웨어 버전 확인': parser names differ per family)"
    tool = ctx.last.get("--tool-call-parser")
    if ctx.engine == "vllm":
        if ctx.on("--enable-auto-tool-choice") and tool is None:
            ctx.add(
                "error",
                "auto-tool-choice-without-parser",
                "`--enable-auto-tool-choice` without `--tool-call-parser`: vLLM refuses to "
                "start (it needs to know how this model writes a tool call).",
                "Add `--tool-call-parser NAME` for the model family.",
                "--enable-auto-tool-choice",
            )
        if tool is not None and not ctx.on("--enable-auto-tool-choice"):
            ctx.add(
                "warning",
                "parser-without-auto-tool-choice",
                "`--tool-call-parser` without `--enable-auto-tool-choice`: requests with "
                "tool_choice='auto' (the default of most agent frameworks) are refused, so "
                "the model never calls tools on its own.",
                "Add `--enable-auto-tool-choice`.",
                tool.written,
            )
    if facts is None:
        return
    for kind, flag, needed, names in (
        ("tool", "--tool-call-parser", facts.has_tool_parser_need, facts.tool_call_parser),
        (
            "reasoning",
            "--reasoning-parser",
            facts.has_reasoning_parser_need,
            facts.reasoning_parser,
        ),
    ):
        expected = names.for_engine(ctx.engine)
        given = ctx.last.get(flag)
        if given is None:
            if not needed:
                continue
            symptom = (
                "tool calls come back as plain text and the model 'never calls tools'"
                if kind == "tool"
                else "the thinking text leaks into the answer instead of reasoning_content"
            )
            name = f" {expected}" if expected else " NAME"
            extra = (
                " --enable-auto-tool-choice"
                if kind == "tool"
                and ctx.engine == "vllm"
                and not ctx.on("--enable-auto-tool-choice")
                else ""
            )
            ctx.add(
                "warning",
                f"missing-{kind}-parser",
                f"No `{flag}`: {symptom}.",
                f"Add `{flag}{name}{extra}`"
                + ("" if expected else " (the parser for this model family)")
                + ".",
                source=src,
            )
        elif expected and given.value and given.value != expected:
            ctx.add(
                "warning",
                f"{kind}-parser-mismatch",
                f"`{flag} {given.value}` is not the parser this model's family uses on "
                f"{ctx.label} (`{expected}`); names are per family (GLM-5: glm47 / glm45).",
                f"Use `{flag} {expected}`.",
                given.written,
                source=src,
            )


def _rule_engine_should_choose(ctx: _Ctx) -> None:
    facts = ctx.facts
    if facts is None:
        return
    src_dsa = (
        f"{PLAYBOOK} ('정밀도를 사용자가 지정하면 안됨', '5. 엔진에게 맡길 것'); {SGLANG_AUTO}; "
        f"{VLLM_NOTES} §3"
    )
    if facts.is_dsa:
        kv = ctx.last.get("--kv-cache-dtype")
        if kv is not None and kv.value not in (None, "auto"):
            auto = _dsa_auto_kv_dtype(ctx.engine, ctx.gpu, facts)
            same = auto is not None and kv.value in auto
            ctx.add(
                "info" if same else "warning",
                "engine-should-choose",
                (
                    f"`{kv.written} {kv.value}` is what the engine picks on this GPU anyway, "
                    "but pinned it no longer follows the GPU. "
                    if same
                    else f"`{kv.written} {kv.value}` on a DSA model overrides the engine's own "
                    "choice. "
                )
                + _dsa_kv_reason(ctx.engine, ctx.gpu, facts),
                f"Remove `{kv.written}`; the engine's auto pick is per GPU generation.",
                kv.written,
                src_dsa,
            )
        for flag in (
            "--attention-backend",
            "--prefill-attention-backend",
            "--decode-attention-backend",
            "--dsa-prefill-backend",
            "--dsa-decode-backend",
        ):
            arg = ctx.last.get(flag)
            if arg is None:
                continue
            ctx.add(
                "warning",
                "engine-should-choose",
                f"`{arg.written} {arg.value}` on a DSA model pins one kernel path. "
                + _dsa_backend_reason(ctx.engine, ctx.gpu),
                f"Remove `{arg.written}` unless a kernel bug forces it (then note why).",
                arg.written,
                src_dsa,
            )
    block = ctx.last.get(ctx.flag("block"))
    if block is not None and ((facts.is_hybrid and ctx.engine == "vllm") or facts.is_dsa):
        if facts.is_hybrid:
            block_tokens = facts.attention_block_tokens
            aligned = (
                f"{block_tokens} tokens for this model"
                if block_tokens
                else "e.g. Qwen3-Next: 544 tokens"
            )
            why = (
                "vLLM sizes the attention block so one attention page equals one "
                f"linear-attention state page ({aligned}); a fixed block size breaks that "
                "alignment and brings back padding or a startup error."
            )
        else:
            page = engine_rules().default_block_size.mla
            why = (
                f"sparse DSA kernels need their own page size (vLLM forces {page}; SGLang "
                "64 × index_kpool)."
            )
        ctx.add(
            "warning",
            "engine-should-choose",
            f"`{block.written} {block.value}` on a {facts.attention_family} model: {why}",
            f"Remove `{block.written}`.",
            block.written,
            f"{PLAYBOOK} ('vLLM이 푼 방식'); {VLLM_NOTES} §6; {SGLANG_AUTO}",
        )


def _is_glm_dsa(facts: ModelFacts) -> bool:
    """GLM-DSA, whose vLLM ``auto`` KV dtype turns fp8 on SM10x (``data/engine_rules.yaml``);
    the architecture prefix covers facts written without a model_type."""
    glm_types = engine_rules().sparse_mla_backends.auto_fp8_model_types.values
    return facts.model_type in glm_types or facts.architecture.startswith(("GlmMoeDsa", "Glm5Next"))


# SGLang accepts both spellings of the 16-bit dtype on --kv-cache-dtype.
_DTYPE_SPELLINGS = {"bfloat16": frozenset({"bf16", "bfloat16"})}


def _dsa_auto_kv_dtype(engine: Engine, gpu: Gpu | None, facts: ModelFacts) -> frozenset[str] | None:
    """The spellings of the KV dtype the engine's ``auto`` resolves to for a DSA model on
    ``gpu`` (SGLang: bf16 on Hopper, fp8_e4m3 on SM >= 10; vLLM: fp8_e4m3 for GLM-DSA on SM10x,
    else the model dtype), or None when the GPU is unknown."""
    if gpu is None or gpu.compute_capability is None:
        return None
    major = gpu.compute_capability[0]
    if engine == "sglang":
        dtype = engine_rules().sglang.dsa_auto_dtype["blackwell" if major >= 10 else "hopper"]
        return _DTYPE_SPELLINGS.get(dtype, frozenset({dtype}))
    if _is_glm_dsa(facts) and major == 10:
        return frozenset({"fp8", "fp8_e4m3"})
    return frozenset({"bfloat16"})


def _dsa_kv_reason(engine: Engine, gpu: Gpu | None, facts: ModelFacts) -> str:
    """Why a DSA model's KV dtype is the engine's call, with what it would pick on ``gpu``."""
    base = (
        "DSA layers keep two caches with different precisions (the MLA latent, and the "
        "lightning indexer's FP8 keys, which stay FP8 whatever you set), and the best latent "
        "dtype depends on the GPU. "
    )
    arch = "" if gpu is None else gpu.arch
    blackwell = arch.startswith("sm_10") or arch.startswith("sm_12")
    if engine == "sglang":
        if gpu is None:
            pick = "SGLang picks bfloat16 on Hopper and fp8_e4m3 on Blackwell (SM ≥ 10)."
        else:
            dtype = engine_rules().sglang.dsa_auto_dtype["blackwell" if blackwell else "hopper"]
            pick = f"On {gpu.name} ({arch}) SGLang {engine_version('sglang')} would pick {dtype}."
        return base + pick + " Forcing one dtype throws away that per-GPU choice."
    if _is_glm_dsa(facts):
        pick = "vLLM 0.33.0 maps auto to fp8_e4m3 on SM10x Blackwell for GLM-DSA, bf16 elsewhere"
    else:
        pick = "vLLM 0.33.0 keeps auto = bf16 for DeepSeek-V3.2"
    auto = _dsa_auto_kv_dtype(engine, gpu, facts)
    if gpu is not None and auto is not None:
        pick += f" (on {gpu.name}: {sorted(auto)[-1]})"
    rules = engine_rules()
    hopper_backend = rules.sparse_mla_backends.fp8_layout["sm_90"].backend
    row_bytes = rules.ds_mla_packed_bytes.values["fp8_ds_mla"]
    return (
        f"{base}{pick}; an explicit fp8 on Hopper moves it to {hopper_backend} and its "
        f"{row_bytes}-byte fp8_ds_mla row instead."
    )


def _dsa_backend_reason(engine: Engine, gpu: Gpu | None) -> str:
    if engine == "sglang":
        return (
            "SGLang sets attention_backend=dsa and picks the prefill and decode kernels "
            "separately per GPU (H200: flashmla_sparse prefill + fa3 decode; indexer top-k "
            "in sgl-kernel; GLM-DSA on SM12x with fp8: flashinfer_sparse_mla), plus the page "
            "size; one backend flag forces a single path for every phase."
        )
    return (
        "vLLM picks the sparse MLA backend from the GPU generation and KV dtype "
        "(Hopper bf16: FLASH_ATTN_MLA_SPARSE, fp8: FLASHMLA_SPARSE; Blackwell: "
        "FLASHINFER_MLA_SPARSE; SM12x: FLASHINFER_MLA_SPARSE_SM120); a fixed backend fails "
        "on the other generations."
    )


_DSA_PATH: dict[str, Literal["native", "sm120", "none"]] = {
    "pass": "native",
    "warn": "sm120",
    "fail": "none",
}


def dsa_kernel_path(gpu: Gpu) -> Literal["native", "sm120", "none", "other-vendor"]:
    """Whether the DSA sparse kernels exist for ``gpu``, read from ``data/kernel_gates.yaml``:
    Hopper and datacenter Blackwell have them; consumer/workstation Blackwell (sm_120) only a
    newer, separate path; Ada, Ampere and generations the file does not list none at all."""
    if gpu.vendor.lower() != "nvidia":
        return "other-vendor"
    rule = kernel_gates().dsa.archs.get(gpu.arch)
    return "none" if rule is None else _DSA_PATH[rule.status]


def _rule_hardware(ctx: _Ctx) -> None:
    gpu, facts = ctx.gpu, ctx.facts
    if gpu is None:
        return
    kv = ctx.last.get("--kv-cache-dtype")
    kv_value = (kv.value or "").lower() if kv is not None else ""
    quant = ctx.last.get("--quantization")
    quant_value = (quant.value or "").lower() if quant is not None else ""
    model_id = ctx.model_id or ""
    src_gate = f"{PLAYBOOK} ('3. 하드웨어 게이팅 확인', 'NVFP4'); {FACTS} §1, §2d"

    nvfp4_weights = (
        quant_value in NVFP4_WEIGHTS[ctx.engine]
        or "nvfp4" in model_id.lower()
        or (facts is not None and facts.checkpoint_format == "nvfp4")
    )
    if not gpu.fp4:
        if nvfp4_weights:
            ctx.add(
                "error",
                "nvfp4-without-fp4",
                f"NVFP4 weights on {gpu.name} ({gpu.arch}), which has no FP4 tensor cores: "
                "NVFP4 needs Blackwell. The 4-bit kernels are missing (at best a slow "
                "weight-only fallback), so the point of the checkpoint is lost.",
                "Use the FP8 checkpoint (Hopper / Ada) or BF16, with the matching "
                "`--quantization`.",
                quant.written if quant is not None else None,
                src_gate,
            )
        if kv_value in NVFP4_KV:
            ctx.add(
                "error",
                "nvfp4-without-fp4",
                f"`{kv.written if kv else '--kv-cache-dtype'} {kv_value}` needs FP4 hardware "
                f"(Blackwell); {gpu.name} ({gpu.arch}) has none.",
                "Use `--kv-cache-dtype fp8` (Hopper/Ada) or leave it on auto.",
                kv.written if kv is not None else None,
                src_gate,
            )
    elif kv_value == "nvfp4_ds_mla" and gpu.arch not in ("sm_100", "sm_103"):
        ctx.add(
            "error",
            "nvfp4-without-fp4",
            f"`{kv_value}` is a datacenter-Blackwell (SM100) FlashMLA-sparse layout; "
            f"{gpu.name} ({gpu.arch}) cannot use it.",
            "Leave the KV dtype on auto.",
            kv.written if kv is not None else None,
            src_gate,
        )

    if kv is not None and kv_value.startswith(FP8_KV_PREFIXES):
        backend = (ctx.value("--attention-backend") or "").upper()
        if not gpu.fp8:
            ctx.add(
                "warning",
                "fp8-kv-storage-only",
                f"FP8 KV cache on {gpu.name} ({gpu.arch}), which has no FP8 tensor cores: the "
                "cache is stored in 8 bits (half the memory) but converted back on every read; "
                "expect no speed-up, and some backends refuse it.",
                "Keep it only for the capacity; compare against `--kv-cache-dtype auto`.",
                kv.written,
                f"{FACTS} §2d (vLLM quantized KV docs: 'no latency improvements'; Ampere has no "
                "FP8 tensor cores)",
            )
        if ctx.engine == "vllm" and backend == "FLASH_ATTN" and gpu.arch != "sm_90":
            ctx.add(
                "error",
                "fp8-kv-backend",
                f"`--attention-backend FLASH_ATTN` with an FP8 KV cache on {gpu.arch}: "
                "FlashAttention reads FP8 KV only as FA3 on Hopper.",
                "Drop `--attention-backend` (vLLM then picks FlashInfer / Triton) or the FP8 KV.",
                kv.written,
                f"{FACTS} §2d (flash_attn_supports_fp8: FA3 and SM90 only)",
            )
        if ctx.engine == "sglang" and (ctx.value("--attention-backend") or "") == "triton":
            ctx.add(
                "warning",
                "fp8-kv-backend",
                "`--attention-backend triton` does not support an FP8 KV cache in SGLang's "
                "backend matrix.",
                "Drop `--attention-backend` or use fa3 (Hopper) / flashinfer.",
                kv.written,
                f"{FACTS} §2c",
            )
        if (
            facts is not None
            and facts.attention_family == "MLA"
            and (gpu.arch.startswith("sm_8") or gpu.arch.startswith("sm_12"))
        ):
            ctx.add(
                "warning",
                "fp8-kv-backend",
                f"MLA with an FP8 KV cache on {gpu.arch}: the only MLA backend there is "
                "TRITON_MLA, which has refused FP8 KV ('No valid attention backend found').",
                "Use `--kv-cache-dtype auto` on this GPU.",
                kv.written,
                f"{FACTS} §2a",
            )

    if facts is not None and facts.is_dsa:
        path = dsa_kernel_path(gpu)
        if path == "none":
            ctx.add(
                "error",
                "dsa-kernel-missing",
                f"DSA sparse attention has no kernels for {gpu.name} ({gpu.arch}): the lightning "
                "indexer GEMM, top-k paging and sparse MLA decode exist for sm_90 and sm_100 "
                "only; the stock engines crash at start ('No valid attention backend').",
                "Serve it on Hopper or datacenter Blackwell, or pick a GQA / hybrid model.",
                source=f"{PLAYBOOK} ('하드웨어가 안 맞으면 실행이 안됨'); {FACTS} §2b",
            )
        elif path == "sm120":
            ctx.add(
                "warning",
                "dsa-kernel-sm120",
                f"DSA on {gpu.name} ({gpu.arch}): sm_100 kernels (FlashMLA, DeepGEMM) do not "
                "run on sm_120. vLLM 0.33.0 and SGLang 0.5.23 have a separate SM12x path "
                "(FLASHINFER_MLA_SPARSE_SM120 / flashinfer_sparse_mla) with known stability "
                "reports; the playbook treats workstation Blackwell as unsupported.",
                "Validate under sustained load before relying on it.",
                source=f"{PLAYBOOK}; {FACTS} §2b (PR #54929 livelock report)",
            )


# --- explanations ---------------------------------------------------------------------------


# Why a flag is in a command, by the engine's own spelling; {value} is the value given.
_REASONS: dict[str, str] = {
    "--quantization": "Tells the engine how the checkpoint's weights are quantized ({value}); it "
    "must match the checkpoint, it does not convert anything.",
    "--tool-call-parser": "Turns the model's own tool-call text format ({value}) into OpenAI "
    "tool_calls; without it tool calls arrive as plain text. Names differ per family "
    "(GLM-4.7/5.x: glm47).",
    "--reasoning-parser": "Moves the thinking block into reasoning_content ({value}); without it "
    "the thinking leaks into the answer. GLM-5 reuses the GLM-4.5 format (glm45).",
    "--trust-remote-code": "Lets the checkpoint run its own Python modelling/tokenizer code; "
    "review it.",
    "--chunked-prefill-size": "Prefill is processed {value} tokens at a time, bounding activation "
    "memory and letting decode steps interleave with long prompts.",
    "--max-num-batched-tokens": "At most {value} tokens per scheduler step (the prefill chunk "
    "size in vLLM).",
    "--gpu-memory-utilization": "Share of GPU memory vLLM may use in all ({value}); the KV cache "
    "gets what is left after weights and activations.",
    "--max-model-len": "Longest request (prompt + output) accepted: {value} tokens; sizes the KV "
    "reserve.",
    "--context-length": "Longest request (prompt + output) accepted: {value} tokens; sizes the KV "
    "reserve.",
    "--kv-cache-dtype": "KV cache precision ({value}); fp8 halves the bytes per token.",
    "--enable-expert-parallel": "MoE experts stay whole, one set per GPU; tokens travel to them "
    "(all-to-all).",
    "--ep-size": "Expert parallelism over {value} GPUs: experts whole per GPU, tokens travel.",
    "--data-parallel-size": "{value} data-parallel groups (replicas, or attention-DP with EP).",
    "--dp-size": "{value} data-parallel groups (replicas, or attention-DP with EP).",
    "--attn-dp-size": "{value} attention-DP groups inside the TP group: each keeps its own "
    "requests' KV.",
    "--enable-auto-tool-choice": "Lets the model decide to call a tool (tool_choice='auto').",
    "--enable-prefix-caching": "Reuses the KV of prompt prefixes already seen (bit-identical for "
    "GQA/MHA).",
    "--disable-radix-cache": "Turns SGLang's prefix cache off (reproducibility runs on hybrid "
    "models).",
    "--enable-metrics": "Exposes /metrics (token_usage) for measuring real KV use.",
}


def _reason(engine: Engine, canonical: str, value: str | None, ctx: _Ctx) -> str:
    if canonical in ("--model", "--model-path", "model_tag"):
        text = "The checkpoint to serve."
        if value and "nvfp4" in value.lower():
            text += " An NVFP4 checkpoint: 4-bit weights that need Blackwell FP4 tensor cores."
        return text
    if canonical in ("--tensor-parallel-size", "--tp-size"):
        text = (
            f"Splits every layer over {value} GPUs (one team per request); it must divide the "
            "attention heads."
        )
        if ctx.facts is not None and ctx.facts.is_mla:
            text += " With MLA/DSA the latent KV is replicated on every TP rank."
        return text
    if canonical == "--mem-fraction-static":
        number = _parse_number(value)
        leftover = f"; {1 - number:.0%} stays free" if number is not None else ""
        return (
            f"Share of GPU memory for weights + the KV pool ({value}){leftover} for "
            "activations of the prefill chunk, CUDA graphs and NCCL buffers. Lower values "
            "trade KV capacity (users) for headroom against OOM on long prefills."
        )
    template = _REASONS.get(canonical)
    return "" if template is None else template.format(value=value)


def _explanations(ctx: _Ctx) -> tuple[FlagExplanation, ...]:
    out: list[FlagExplanation] = []
    if ctx.engine == "vllm" and ctx.parsed.positionals:
        out.append(
            FlagExplanation(
                ctx.parsed.positionals[0],
                "model_tag",
                ctx.parsed.positionals[0],
                "The model to serve (positional).",
                _reason("vllm", "model_tag", ctx.parsed.positionals[0], ctx),
            )
        )
    for arg in ctx.parsed.args:
        if arg.info is None or arg.canonical is None:
            out.append(
                FlagExplanation(
                    arg.written, "", arg.value, f"Not a flag of {ctx.label}.", "See the findings."
                )
            )
            continue
        meaning = arg.info.help.strip().split("\n")[0]
        if arg.canonical != arg.written and arg.abbreviation_of is None:
            meaning = f"(alias of {arg.canonical}) {meaning}"
        out.append(
            FlagExplanation(
                arg.written,
                arg.canonical,
                arg.value,
                meaning,
                _reason(ctx.engine, arg.canonical, arg.value, ctx),
            )
        )
    return tuple(out)


def _left_to_engine(ctx: _Ctx) -> tuple[FlagExplanation, ...]:
    facts = ctx.facts
    if facts is None:
        return ()
    out: list[FlagExplanation] = []
    table = flag_table(ctx.engine)

    def absent(flag: str, reason: str) -> None:
        if flag not in ctx.last and flag in table:
            out.append(FlagExplanation(flag, flag, None, table[flag].help.strip(), reason))

    if facts.is_dsa:
        kept = "Left out on purpose. "
        absent("--kv-cache-dtype", kept + _dsa_kv_reason(ctx.engine, ctx.gpu, facts))
        absent("--attention-backend", kept + _dsa_backend_reason(ctx.engine, ctx.gpu))
    elif facts.attention_family == "MLA":
        absent(
            "--attention-backend",
            "Left out on purpose: the engine reads kv_lora_rank from config.json and routes to "
            "its MLA kernels for this GPU by itself.",
        )
    if facts.is_hybrid and ctx.engine == "vllm":
        absent(
            "--block-size",
            "Left out on purpose: the engine computes the attention block size that makes one "
            "attention page equal one linear-attention state page.",
        )
    return tuple(out)


# --- entry points ---------------------------------------------------------------------------

_RULES: tuple[Callable[[_Ctx], None], ...] = (
    _rule_flag_spelling,
    _rule_values,
    _rule_duplicates,
    _rule_model_present,
    _rule_memory_fraction,
    _rule_context,
    _rule_parallel_sizes,
    _rule_moe_ep,
    _rule_parsers,
    _rule_engine_should_choose,
    _rule_hardware,
)


def lint_command(
    text: str,
    model: ModelFacts | None = None,
    gpu: Gpu | None = None,
    gpus: int | None = None,
) -> LintReport:
    """Parse an inherited launch command and check it; raises ``InputError("command", …)``
    when the text is not a vLLM / SGLang launch command at all."""
    if gpus is not None and (
        isinstance(gpus, bool) or not isinstance(gpus, int) or not 1 <= gpus <= 4096
    ):
        raise InputError("gpus", f"a whole number of GPUs from 1 to 4096, got {gpus!r}")
    inv = _extract(text)
    parsed = _parse(inv.engine, inv.args)
    ctx = _Ctx(inv.engine, parsed, model, gpu, gpus)
    if inv.inferred:
        ctx.add(
            "info",
            "engine-inferred",
            f"No launcher in the manifest; the flags read as {ctx.label}.",
            "Check the container image's entrypoint matches.",
        )
    for rule in _RULES:
        rule(ctx)
    findings = sorted(ctx.findings, key=lambda f: _SEVERITY_ORDER[f.severity])
    return LintReport(
        engine=inv.engine,
        engine_version=engine_version(inv.engine),
        launcher=inv.launcher,
        model=ctx.model_id,
        parsed_from=inv.parsed_from,
        findings=tuple(findings),
        explanations=_explanations(ctx),
        left_to_engine=_left_to_engine(ctx),
    )


def format_report(report: LintReport) -> str:
    lines = [
        f"engine: {ENGINE_LABEL[report.engine]} {report.engine_version} ({report.launcher})"
        + (f", model {report.model}" if report.model else "")
    ]
    if report.findings:
        lines.append("findings:")
        for f in report.findings:
            where = f" [{f.flag}]" if f.flag else ""
            lines.append(f"  {f.severity:<7} {f.code}{where}: {f.message}")
            lines.append(f"          fix: {f.fix}")
    else:
        lines.append("findings: none")
    lines.append("flags:")
    for e in report.explanations:
        value = f" {e.value}" if e.value is not None and e.flag != e.value else ""
        lines.append(f"  {e.flag}{value}: {e.meaning}" + (f" — {e.reason}" if e.reason else ""))
    if report.left_to_engine:
        lines.append("left to the engine:")
        for e in report.left_to_engine:
            lines.append(f"  {e.flag}: {e.reason}")
    return "\n".join(lines)


USAGE = 'lint "COMMAND" [--model SOURCE] [--gpu NAME] [--gpus N] [--json]'


class _ArgError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # argparse calls this instead of raising
        raise _ArgError(message)


def cli_main(argv: list[str], load_model_facts: Callable[[str], ModelFacts]) -> int:
    """``lint "COMMAND" [--model SOURCE] [--gpu NAME] [--gpus N] [--json]``.

    Exit 0 with the report (findings are not failures), 2 with one stderr line naming the
    field when the input cannot be read.
    """
    from engine.hardware.gpus import lookup_gpu

    if argv[1:2] in (["-h"], ["--help"]) or argv[:1] in (["-h"], ["--help"]):
        print(USAGE)
        return 0
    parser = _Parser(prog="lint", add_help=False, allow_abbrev=False)
    parser.add_argument("command")
    parser.add_argument("--model")
    parser.add_argument("--gpu")
    parser.add_argument("--gpus")
    parser.add_argument("--json", action="store_true")
    try:
        try:
            ns = parser.parse_args(argv)
        except _ArgError as err:
            raise InputError("argv", f"{USAGE} ({err})") from None
        gpus: int | None = None
        if ns.gpus is not None:
            if not re.fullmatch(r"\d{1,4}", ns.gpus) or int(ns.gpus) < 1:
                raise InputError("gpus", f"a whole number of GPUs from 1 to 4096, got {ns.gpus!r}")
            gpus = int(ns.gpus)
        gpu = lookup_gpu(ns.gpu) if ns.gpu is not None else None
        facts = load_model_facts(ns.model) if ns.model is not None else None
        report = lint_command(ns.command, facts, gpu, gpus)
    except InputError as err:
        print(f"error: {err}".replace("\n", " "), file=sys.stderr)
        return 2
    if ns.json:
        print(json.dumps(report.to_dict(), indent=2, ensure_ascii=False))
    else:
        print(format_report(report))
    return 0
