"""Sources as readers see them: readable titles with links, never the fact base's tags.

The data files keep each fact's source the way the researchers wrote it: abbreviations (``AIC``,
``IX``), verification tags (``[V]``, ``[3P]``, ``[index-only]``), section marks into an internal
fact base and relative paths to the team's reference texts. That is right for the data and wrong
for a page. ``refs`` turns a source string into titled links for a "Sources" list; ``clean`` strips
the internal marks from a sentence that is shown as text.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from engine.rules import Loose, load_data
from engine.text.safe import inert, plain

GITHUB = "https://github.com/"


@dataclass(frozen=True)
class SourceRef:
    """One source: what it is, in words, and where to read it (None: no public address)."""

    title: str
    url: str | None = None

    def markdown(self) -> str:
        title = escape_markdown(self.title)
        return f"[{title}]({self.url})" if self.url else title


# --- cleaning --------------------------------------------------------------------------------

# Verification and provenance tags of the fact base: [V], [3P], [3P mirror], [index-only],
# [UNVERIFIED: ...], [uncertain: ...], [inferred: ...], [facts §6, V].
_TAG = re.compile(
    r"\s*\[(?:V|3P[^\]]*|index-only|UNVERIFIED[^\]]*|uncertain[^\]]*|inferred[^\]]*|facts[^\]]*)\]",
    re.IGNORECASE,
)
# Section marks into the internal fact base: (facts §4), (facts.md §1), facts §2e, facts.md §1
# (GB200 row), "facts §KV offload / LMCache:".
_FACTS = re.compile(
    r"\s*\((?:see\s+)?facts(?:\.md)?\s*§[^)]*\)|,?\s*\bfacts(?:\.md)?\s*§[\w.]*(?:\s\([^)]*\))?"
    r"(?:\s[A-Z][\w/ -]*?:)?"
)
# Paths into the team's shared folder (not part of the app): ../shared/seeds/004, /work/shared/…
_SHARED_PAREN = re.compile(r"\s*\((?:\.\./|/work/)?shared/[^)]*\)")
_SHARED = re.compile(r"(?:\.\./|/work/)shared/\S+|\bshared/\S+")
_PLAYBOOK_PATH = re.compile(r"Playbook text \((?:\.\./|/work/)?shared/seeds/\d+[^)]*\)")
_SEEDS = re.compile(r"(?:\.\./|/work/)?shared/seeds/\d+\S*")
_FACT_BASE = re.compile(r"\bFact base\s*(?:§[\w.]+)?\s*(?:\((?:\.\./|/work/)?shared/[^)]*\))?")
_ENGINE_TABLE = re.compile(r"\bdata/engines/([a-z]+)-(\d+\.\d+\.\d+)-flags\.json")
_DATA_FILE = re.compile(r"\bdata/([\w-]+)\.yaml")


class _EngineName(Loose):
    label: str
    repository: str


class _EngineNames(Loose):
    engines: dict[str, _EngineName]


# Each engine's label and repository, as its adapter reads them (data/engines/adapters.yaml):
# this layer is below the adapters, so it reads the same rows, not the adapter.
_ENGINES = load_data(_EngineNames, "engines/adapters.yaml").engines
ENGINE_NAMES = {name: row.label for name, row in _ENGINES.items()}
ENGINE_REPOS = {name: row.repository for name, row in _ENGINES.items()}
_SPACES = re.compile(r"\s{2,}")
_ORPHAN = re.compile(r"\(\s*\)|\s+(?=[,;:.)])|^[\s;,:]+|[\s;,:]+$")


def clean(text: str, *, markdown: bool = False) -> str:
    """``text`` without internal tags, fact-base section marks or paths into the shared folder,
    its control characters shown as escapes (engine text quotes config strings); with
    ``markdown=True`` also inert for a Markdown element (``engine.text.safe.inert``)."""
    out = _PLAYBOOK_PATH.sub("Serving playbook", plain(text))
    out = _SHARED_PAREN.sub("", out)
    out = _SEEDS.sub("Serving playbook", out)
    out = _FACT_BASE.sub("", out)
    out = _ENGINE_TABLE.sub(
        lambda m: (
            f"{ENGINE_NAMES.get(m.group(1), m.group(1))} {m.group(2)} flag table (read "
            "from the release)"
        ),
        out,
    )
    out = _DATA_FILE.sub(lambda m: f"the app's {m.group(1).replace('_', ' ')} facts", out)
    out = _TAG.sub("", out)
    out = _FACTS.sub("", out)
    out = _SHARED.sub("", out)
    out = _SPACES.sub(" ", out)
    out = _ORPHAN.sub("", out).strip()
    return inert(out) if markdown else out


def has_internal_marks(text: str) -> bool:
    """True when ``text`` still carries a tag, a fact-base mark or a shared-folder path."""
    return bool(
        _TAG.search(text)
        or re.search(r"\bfacts(?:\.md)?\s*§", text)
        or re.search(r"(?:\.\./|/work/)shared/", text)
    )


# --- links -----------------------------------------------------------------------------------

_URL = re.compile(r"https?://[^\s)'\"]+")
_GITHUB_PATH = re.compile(r"\bgithub\.com/[^\s)'\"]+")
_REPO_NUMBER = re.compile(r"\b([\w.-]+/[\w.-]+)(?: [\w./-]+)* (PR|pull|issue|issues) #(\d+)")
_ENGINE_NUMBER = re.compile(r"\b(vLLM|vllm|SGLang|sglang) (PR|issue) #(\d+)")
_RELEASE = re.compile(r"\b(vLLM|SGLang) v(\d+\.\d+\.\d+(?:\.post\d+)?) release notes")
_PINNED = re.compile(r"\b(vLLM|SGLang) (\d+\.\d+\.\d+)\b")
_REPO_FILE = re.compile(r"^(sglang|recipes|vllm):([\w./-]+)@([0-9a-f]{7,40})")
_REPO_AT_START = re.compile(r"^([A-Za-z0-9][\w.-]*/[A-Za-z0-9][\w.-]*)(?=\s|$)")
_REPO_FILE_AT = re.compile(r"^([\w.-]+/[\w.-]+) ([\w./-]+\.\w+)\S* @([0-9a-f]{7,40})\b")
DOCS = (
    (re.compile(r"\bvLLM docs\b"), "https://docs.vllm.ai/"),
    (re.compile(r"\b(?:SGLang docs|sgl-docs)\b"), GITHUB + "sgl-project/sglang/tree/main/docs"),
)
_DOMAIN = re.compile(
    r"\b((?:[a-z0-9-]+\.)+(?:com|org|io|ai|net|dev|network|co)(?:/[^\s)'\";,]*)?)", re.IGNORECASE
)
SHORT_REPOS = ENGINE_REPOS | {"recipes": "vllm-project/recipes"}
# Abbreviations the GPU catalog uses (data/gpus.yaml header).
ABBREVIATIONS = (
    (
        re.compile(r"^AIC systems/"),
        "NVIDIA AIConfigurator systems/",
        GITHUB + "ai-dynamo/aiconfigurator",
    ),
    (
        re.compile(r"^IX gpu-specs\.ts"),
        "InferenceX GPU specs (gpu-specs.ts)",
        GITHUB + "SemiAnalysisAI/InferenceX-app",
    ),
    (
        re.compile(r"^ROCm gpu-specs"),
        "AMD ROCm GPU specifications",
        "https://rocm.docs.amd.com/en/latest/reference/gpu-specs.html",
    ),
)
NOT_REPOS = ("data/", "shared/", "docs/", "models/", "systems/", "examples/", "vllm/", "sglang/")


def _strip_url(url: str) -> str:
    return url.rstrip(".,;:'\"")


def _url_of(item: str) -> tuple[str, str | None]:
    """(title, url) for one source item."""
    title = item
    for pattern, words, url in ABBREVIATIONS:
        if pattern.search(item):
            return pattern.sub(words, item, count=1), url
    if m := _URL.search(item):
        return title, _strip_url(m.group(0))
    if m := _GITHUB_PATH.search(item):
        return title, "https://" + _strip_url(m.group(0))
    if m := _REPO_FILE.search(item):
        repo = SHORT_REPOS[m.group(1)]
        short = f"{repo}: {m.group(2)} @{m.group(3)[:7]}" + item[m.end() :]
        return short, f"{GITHUB}{repo}/blob/{m.group(3)}/{m.group(2)}"
    if item.startswith("cookbook:"):
        return "SGLang cookbook: " + re.sub(r"@([0-9a-f]{7})[0-9a-f]+", r"@\1", item[9:]), None
    if m := _ENGINE_NUMBER.search(item):
        kind = "pull" if m.group(2) == "PR" else "issues"
        return title, f"{GITHUB}{ENGINE_REPOS[m.group(1).lower()]}/{kind}/{m.group(3)}"
    if (m := _REPO_NUMBER.search(item)) and not m.group(1).startswith(NOT_REPOS):
        kind = "pull" if m.group(2) in ("PR", "pull") else "issues"
        return title, f"{GITHUB}{m.group(1)}/{kind}/{m.group(3)}"
    if m := _RELEASE.search(item):
        repo = ENGINE_REPOS[m.group(1).lower()]
        return title, f"{GITHUB}{repo}/releases/tag/v{m.group(2)}"
    if (m := _REPO_FILE_AT.search(item)) and not m.group(1).startswith(NOT_REPOS):
        return title, f"{GITHUB}{m.group(1)}/blob/{m.group(3)}/{m.group(2)}"
    if m := _REPO_AT_START.search(item):
        repo = m.group(1)
        if not repo.startswith(NOT_REPOS) and "." not in repo.split("/")[0]:
            return title, GITHUB + repo
    if m := _DOMAIN.search(item):
        return title, "https://" + _strip_url(m.group(1))
    for pattern, url in DOCS:
        if pattern.search(item):
            return title, url
    if m := _PINNED.search(item):
        repo = ENGINE_REPOS[m.group(1).lower()]
        return title, f"{GITHUB}{repo}/tree/v{m.group(2)}"
    if re.search(r"\brecipes\b", item):
        return title, GITHUB + "vllm-project/recipes"
    return title, None


# What starts a new source inside a "; "-separated list (anything else continues the one before:
# "vLLM platforms/cuda.py MLA priorities: A; B; C" is one source with three clauses).
_SOURCE_START = re.compile(
    r"^(?:https?://|[\w.-]+/[\w.-]+|vLLM|vllm|SGLang|sglang|sgl-|recipes|AIC |IX |ROCm|"
    r"nvidia-smi|rocm-smi|[Ss]erving playbook|[Pp]laybook|cookbook:|NVIDIA|Hugging Face|"
    r"transformers|thamada|llm-d|modal|[Ff]acts|Fact base|data/|"
    r"[\w-]+(?:\.[\w-]+)*\.(?:com|org|io|ai|net)\b)"
)


def _items(source: str) -> list[str]:
    """The sources of a ``;``-separated list; a ``;`` inside parentheses or before a clause
    that does not start a source stays inside the item."""
    out: list[str] = []
    depth = 0
    for piece in re.split(r";\s+", source.replace("\n", " ")):
        if out and (depth > 0 or not _SOURCE_START.match(piece.strip())):
            out[-1] += "; " + piece
        else:
            out.append(piece)
        depth = max(0, depth + piece.count("(") - piece.count(")"))
    return out


def refs(source: str) -> list[SourceRef]:
    """A source string as titled links: one per source in a ``;``-separated list, internal
    marks removed, items that were only internal marks dropped."""
    out = []
    for raw in _items(source):
        item = re.sub(r"^\((.*)\)$", r"\1", clean(raw))
        if len(item) < 12 or item.lower().startswith("not found"):
            continue
        title, url = _url_of(item)
        out.append(SourceRef(title, url))
    return out


def collect(sources: Iterable[str]) -> list[SourceRef]:
    """Every ref of several source strings, each once, in order."""
    seen: dict[SourceRef, None] = {}
    for s in sources:
        for r in refs(s):
            seen.setdefault(r, None)
    return list(seen)


def escape_markdown(text: str) -> str:
    """Text shown literally in Markdown on one line (no emphasis, links, tables, math or line
    breaks from its characters): the report's escaping, ``engine.text.safe.inert`` in its
    strict, one-line form."""
    return inert(text, strict=True, one_line=True)
