"""What the official vLLM recipes and SGLang docs set for a model, read from ``data/recipes.yaml``:
speculative-decoding settings, environment variables per GPU generation, flags the recipes always
pass, and the official quantized sibling checkpoints. Rows match on config.json fields (the same
``match`` shape as ``data/software.yaml``), never on a model's name; only ``checkpoints`` is keyed
by repository id, because it records which repositories exist."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from typing import Annotated, Any, Literal

from pydantic import Field

from engine.decision import Code, Decision, Source
from engine.engines import Setting, adapter
from engine.hardware.gpus import Gpu
from engine.launch.launch_data import launch_facts
from engine.launch.plan_parts import EnvVar
from engine.model.config import ModelConfig
from engine.rules import DATA_DIR, Loose, load_data
from engine.scenario import Engine
from engine.software.software_report import SoftwareReport

RECIPES_YAML = DATA_DIR / "recipes.yaml"
ENV_RECIPE = Code("env.recipe", "reason", "source")
# A reason written in data/recipes.yaml: an id whose words are code.recipe.note.<id>.
NoteId = Annotated[str, Field(pattern=r"^[a-z0-9_]+$")]


class Match(Loose):
    architectures: list[str] = Field(min_length=1)
    model_types: list[str] | None = None
    fields: dict[str, str | int | float | bool] | None = None
    present: list[str] | None = None
    at_least: dict[str, float] | None = None

    def matches(self, cfg: ModelConfig) -> bool:
        if cfg.architecture not in self.architectures:
            return False
        types = {cfg.model_type, cfg.wrapper_model_type} - {""}
        if self.model_types is not None and not types & set(self.model_types):
            return False
        for key, want in (self.fields or {}).items():
            if _field(cfg, key) != want:
                return False
        for key in self.present or []:
            if _field(cfg, key) is None:
                return False
        for key, floor in (self.at_least or {}).items():
            got = _field(cfg, key)
            if isinstance(got, bool) or not isinstance(got, int | float) or got < floor:
                return False
        return True


def _field(cfg: ModelConfig, path: str) -> Any:
    node: Any = cfg.raw
    for part in path.split("."):
        if not isinstance(node, dict):
            return None
        node = node.get(part)
    return node


class _VllmSpec(Loose):
    method: str
    num_speculative_tokens: int = Field(ge=1)
    draft_model: str | None = None
    draft_tensor_parallel_size: int | None = Field(default=None, ge=1)
    # more keys of --speculative-config, and those that differ on AMD GPUs
    config: dict[str, str] = Field(default_factory=dict)
    config_amd: dict[str, str] | None = None
    source: str = Field(min_length=1)


class _SglangSpec(Loose):
    algorithm: str
    num_steps: int = Field(ge=1)
    eagle_topk: int = Field(ge=1)
    num_draft_tokens: int = Field(ge=2)
    multi_layer: bool = False  # --enable-multi-layer-eagle: every MTP layer of the checkpoint
    draft_model: str | None = None  # --speculative-draft-model-path (EAGLE3 heads)
    source: str = Field(min_length=1)


class _Speculative(Loose):
    name: str
    match: Match
    vllm: _VllmSpec | None = None
    sglang: _SglangSpec | None = None


class _SpecDefaults(Loose):
    vllm: _VllmSpec
    sglang: _SglangSpec


class _Var(Loose):
    name: str = Field(pattern=r"^[A-Z_][A-Z0-9_]*$")
    value: str
    reason: NoteId


class _Env(Loose):
    name: str
    engine: Engine
    match: Match
    generations: list[str] | None = None
    weight_dtype: str | None = None
    optional: bool = False
    drafts: bool = False  # only where the plan drafts (speculative decoding on)
    vars: list[_Var] = Field(min_length=1)
    source: str = Field(min_length=1)


class _Flag(Loose):
    flag: str = Field(pattern=r"^-{1,2}[A-Za-z0-9][\w.-]*$")
    value: str | None = None
    reason: NoteId


class _BaseFlags(Loose):
    name: str
    engine: Engine
    match: Match
    generations: list[str] | None = None
    weight_dtype: str | None = None
    above_context: int | None = Field(default=None, ge=1)  # only past this many tokens
    required: bool = False  # the recipe marks them mandatory on every platform
    flags: list[_Flag] = Field(min_length=1)
    source: str = Field(min_length=1)


_ANY = "*"


class _ChatTemplate(Loose):
    engine: Engine
    tool_call_parser: str
    reasoning_parser: str | None = _ANY
    template: str = Field(min_length=1)
    source: str = Field(min_length=1)


class RecipesFile(Loose):
    sources: dict[str, str]
    speculative_defaults: _SpecDefaults
    speculative: list[_Speculative]
    env: list[_Env]
    tool_chat_templates: list[_ChatTemplate]
    base_flags: list[_BaseFlags]
    checkpoints: list[dict[str, Any]]


@cache
def recipes() -> RecipesFile:
    return load_data(RecipesFile, RECIPES_YAML.name)


# One code per reason id of the data, declared on import so the catalogs test sees them all.
NOTES: dict[str, Code] = {
    note_id: Code(f"recipe.note.{note_id}")
    for note_id in dict.fromkeys(
        [v.reason for row in recipes().env for v in row.vars]
        + [f.reason for row in recipes().base_flags for f in row.flags]
    )
}


def recipes_source(key: str) -> str:
    """The source of a rule that reads the rows (data/recipes.yaml ``sources``)."""
    return recipes().sources[key]


def note(note_id: str) -> Decision:
    """Why a recipe sets a variable or a flag, as a decision (worded per language)."""
    return NOTES[note_id]()


def _applies(
    generations: list[str] | None, weight_dtype: str | None, gpu: Gpu, sw: SoftwareReport
) -> bool:
    if generations is not None and gpu.generation not in generations:
        return False
    return weight_dtype is None or sw.checkpoint.weight_dtype == weight_dtype


@dataclass(frozen=True)
class Speculative:
    method: str
    num_speculative_tokens: int
    algorithm: str
    num_steps: int
    eagle_topk: int
    num_draft_tokens: int
    source: str
    multi_layer: bool = False  # SGLang drafts with each of the checkpoint's MTP layers
    # a separate draft model (an EAGLE3 head) this engine's row names, instead of MTP layers
    draft_model: str | None = None
    config: tuple[tuple[str, str], ...] = ()  # vLLM: more --speculative-config keys
    config_amd: tuple[tuple[str, str], ...] | None = None
    draft_tensor_parallel_size: int | None = None

    @property
    def perf_method(self) -> Literal["mtp", "eagle3"]:
        """How the speed model counts the drafts' acceptance."""
        return "eagle3" if self.draft_model is not None else "mtp"


def speculative_for(cfg: ModelConfig, engine: Engine) -> Speculative:
    """Draft settings: the first row whose match fits and names this engine (its MTP layers or
    a draft model the recipe names), else the engines' documented MTP defaults."""
    data = recipes()
    row = next(
        (r for r in data.speculative if getattr(r, engine) is not None and r.match.matches(cfg)),
        None,
    )
    v = row.vllm if row is not None and row.vllm is not None else data.speculative_defaults.vllm
    s = (
        row.sglang
        if row is not None and row.sglang is not None
        else data.speculative_defaults.sglang
    )
    own = getattr(row, engine) if row is not None else None  # this engine's row, else default
    source = (own if own is not None else getattr(data.speculative_defaults, engine)).source
    draft = own.draft_model if own is not None else None
    return Speculative(
        v.method,
        v.num_speculative_tokens,
        s.algorithm,
        s.num_steps,
        s.eagle_topk,
        s.num_draft_tokens,
        source,
        s.multi_layer,
        draft,
        tuple(v.config.items()),
        tuple(v.config_amd.items()) if v.config_amd is not None else None,
        v.draft_tensor_parallel_size,
    )


def env_for(
    cfg: ModelConfig, engine: Engine, gpu: Gpu, sw: SoftwareReport, drafts: bool = False
) -> list[EnvVar]:
    """Environment variables the recipes set for this model, engine, GPU generation and
    checkpoint format (rows marked optional are left for the user; rows for speculative
    decoding only where the plan drafts)."""
    out: list[EnvVar] = []
    seen: set[str] = set()
    for row in recipes().env:
        if row.engine != engine or row.optional or not row.match.matches(cfg):
            continue
        if row.drafts and not drafts:
            continue
        if not _applies(row.generations, row.weight_dtype, gpu, sw):
            continue
        for var in row.vars:
            if var.name not in seen:
                seen.add(var.name)
                why = ENV_RECIPE(reason=note(var.reason), source=Source(row.source))
                out.append(EnvVar(var.name, var.value, why))
    return out


@dataclass(frozen=True)
class RecipeFlag:
    flag: str
    value: str | None
    reason: Decision
    source: str
    required: bool = False  # the recipe marks it mandatory: written, linted, never removed


def base_flags_for(
    cfg: ModelConfig, engine: Engine, gpu: Gpu, sw: SoftwareReport, context: int | None = None
) -> list[RecipeFlag]:
    """The flags the recipes pass for this model, engine, GPU, checkpoint and ``context`` (a
    row for long contexts only where the context is known and longer)."""
    return [
        RecipeFlag(f.flag, f.value, note(f.reason), row.source, row.required)
        for row in recipes().base_flags
        if row.engine == engine
        and row.match.matches(cfg)
        and _applies(row.generations, row.weight_dtype, gpu, sw)
        and (row.above_context is None or (context or 0) > row.above_context)
        for f in row.flags
    ]


def required_flags(cfg: ModelConfig, engine: Engine, gpu: Gpu | None) -> list[RecipeFlag]:
    """The flags the model's own recipe marks mandatory for this engine and GPU generation
    (whatever the checkpoint format: the recipes state them for every variant)."""
    return [
        RecipeFlag(f.flag, f.value, note(f.reason), row.source, True)
        for row in recipes().base_flags
        if row.required
        and row.engine == engine
        and row.match.matches(cfg)
        and (gpu is None or row.generations is None or gpu.generation in row.generations)
        for f in row.flags
    ]


def required_setting(
    cfg: ModelConfig, engine: Engine, gpu: Gpu | None, setting: Setting
) -> str | None:
    """The value the model's recipe requires for one of the engine's settings (the KV dtype,
    the block size), or None: the Study sizes with it and the plan writes it."""
    eng = adapter(engine)
    if not eng.has(setting):
        return None
    flag = eng.flag(setting)
    for rf in required_flags(cfg, engine, gpu):
        info = eng.lookup(rf.flag)
        if info is not None and info.flag == flag:
            return rf.value
    return None


@dataclass(frozen=True)
class ChatTemplate:
    template: str
    source: str


def tool_chat_template(
    engine: Engine, tool_call_parser: str, reasoning_parser: str | None
) -> ChatTemplate | None:
    """The tool chat template the recipes pass with these parsers (first row that matches)."""
    for row in recipes().tool_chat_templates:
        if row.engine != engine or row.tool_call_parser != tool_call_parser:
            continue
        if row.reasoning_parser == _ANY or row.reasoning_parser == reasoning_parser:
            return ChatTemplate(row.template, row.source)
    return None


_KINDS = ("fp8", "nvfp4", "mxfp4")


def checkpoints_of(model_id: str) -> list[tuple[str, str, str]]:
    """(kind, repo, source) of the official FP8 / NVFP4 / MXFP4 siblings of ``model_id``."""
    out: list[tuple[str, str, str]] = []
    for row in recipes().checkpoints:
        names = {str(row.get("of", "")).lower(), str(row.get("bundled_model") or "").lower()}
        if model_id.lower() not in names:
            continue
        for kind in _KINDS:
            entry = row.get(kind)
            repo = entry.get("repo") if isinstance(entry, dict) else None
            if isinstance(repo, str) and repo.lower() != model_id.lower():
                out.append((kind, repo, str(row.get("source", ""))))
        break
    return out


_TOKENS = re.compile(r"[-_.]+")


def is_base_checkpoint(model_id: str, sw: SoftwareReport) -> bool:
    """A pre-trained checkpoint by its repository name (data/launch.yaml base_checkpoints)."""
    rules = launch_facts().base_checkpoints
    tokens = set(_TOKENS.split(model_id.rsplit("/", 1)[-1].lower()))
    if tokens & set(rules.marker_tokens):
        return True
    named = rules.instruct_named
    if sw.architecture in named.get("architectures", []):
        return not tokens & set(named.get("tokens", []))
    return False
