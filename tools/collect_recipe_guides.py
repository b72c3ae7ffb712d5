"""Write tests/fixtures/vllm_recipe_guides.yaml from a checkout of vllm-project/recipes: every
single-node `vllm serve` command of a recipe guide (the `guide:` text of models/*.yaml) whose
checkpoint, or its family, has a bundled config in data/models/, each on the GPU the guide names
for it.

    python -m tools.collect_recipe_guides [--repo GIT_DIR] [--out FILE] [--check]

``--repo`` is a git directory (bare or not) of vllm-project/recipes; the commit read is its HEAD
(default: the mirror at /work/.mirror/vllm-project+recipes/repo). ``--check`` writes nothing and
exits 1 when the fixture differs from what the recipes give.

Which config a recipe's checkpoint is linted against (``bundled_model``): the bundled config of
the same id, the base of an official sibling (data/recipes.yaml ``checkpoints``), a bundled
config the linter's own name rule calls the same model (engine/lint/model.py ``relatedness``:
the same significant tokens, so -Instruct, -0528, -Exp, -FP8 variants), or a family the recipes
state (FAMILIES below, each with the recipe's words). A command is collected when it serves the
recipe's checkpoint, one of its ``variants``, or a checkpoint of the same significant name.

Which hardware: the first text that names a GPU of the catalog (``python -m engine gpus``), in
this order: the headings above the command, deepest first; the lines that lead into its code
block, nearest first; the guide's ``Hardware`` prerequisite line (of several, the one labelled
with the checkpoint's precision; of clauses split at ';', the one naming it). A ROCm command
(ROCm or AITER variables, or the words ROCm / AMD around it) takes the first AMD GPU named
there, any other the first NVIDIA GPU; a GPU family name shared by several catalog rows ("A100")
is read as the fuller name the same guide gives it ("A100 80GB"), or not at all; last, when
the guide names none, the recipe's meta.hardware if it verified exactly one GPU. Left out: a
command whose headings name only hardware outside the catalog (TPU, Xeon, H800 ...) and whose
lead-in names no catalog GPU, a section headed by a system whose GPU differs from the catalog
row of its name (DGX Station, DGX Spark), placeholders (`vllm serve ...`) and every multi-node
command. The GPU count is the command's own TP x PP x DP.
"""

from __future__ import annotations

import argparse
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from engine.hardware.gpus import Gpu, aliases, all_gpus
from engine.lint.model import relatedness
from engine.model.formats import official_sibling
from engine.model.loader import catalog_names, catalog_path

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "tests" / "fixtures" / "vllm_recipe_guides.yaml"
MIRROR = Path("/work/.mirror/vllm-project+recipes/repo")
URL = "https://github.com/vllm-project/recipes/blob/{commit}/{path}"

# Recipe checkpoints whose bundled config is another version of the same architecture, with the
# words that say so. Nothing else is mapped by hand.
FAMILIES: dict[str, tuple[str, str]] = {
    "zai-org/GLM-5.1": (
        "zai-org/GLM-5",
        "models/zai-org/GLM-5.1.yaml: 'GLM-5.1 refreshed version of GLM-5' (744B, glm47 / glm45)",
    ),
    "zai-org/GLM-5.2": (
        "zai-org/GLM-5",
        "models/zai-org/GLM-5.2.yaml: related_recipes GLM-5 and GLM-5.1, ~743B total, the same "
        "MTP, glm47 / glm45 parsers and FP8 / NVFP4 variants as GLM-5 (its native window is "
        "1M tokens, GLM-5's 202,752: the linter treats a stand-in's limit as not its own)",
    ),
    "zai-org/GLM-4.5": (
        "zai-org/GLM-4.7",
        "data/models/SOURCES.md: GLM-4.7 has the GLM-4.5/4.6 architecture (Glm4MoeForCausalLM)",
    ),
    "zai-org/GLM-4.6": (
        "zai-org/GLM-4.7",
        "data/models/SOURCES.md: GLM-4.7 has the GLM-4.5/4.6 architecture (Glm4MoeForCausalLM)",
    ),
}

# Hardware outside the GPU catalog. A section headed by one of these is left out unless the lines
# leading into the command name a catalog GPU (a guide may run on past its Xeon section).
OTHER_HARDWARE = re.compile(
    r"\b(TPU|Trillium|Ironwood|Xeon|CPU|H800|XPU|Gaudi|Ascend|Radeon)\b", re.IGNORECASE
)
# Systems whose GPU shares a catalog name but not its memory (DGX Station's GB300 has 252 GB,
# the catalog's 288 GB): a section headed by one is always left out.
SYSTEMS = re.compile(r"\b(DGX Station|DGX Spark|GB10|Jetson|Thor)\b", re.IGNORECASE)
ROCM = re.compile(r"ROCM|AITER|HIP_VISIBLE_DEVICES|\bAMD\b", re.IGNORECASE)
HARDWARE_LINE = re.compile(r"^\s*[-*]\s*(\*\*)?Hardware\b", re.IGNORECASE)
MULTI_NODE_FLAGS = frozenset(
    {
        "--nnodes",
        "--node-rank",
        "--headless",
        "--data-parallel-address",
        "--data-parallel-start-rank",
        "--data-parallel-size-local",
        "--master-addr",
    }
)
PARALLEL_FLAGS = {
    "--tensor-parallel-size": "tp",
    "--tensor_parallel_size": "tp",
    "-tp": "tp",
    "--pipeline-parallel-size": "pp",
    "--pipeline_parallel_size": "pp",
    "-pp": "pp",
    "--data-parallel-size": "dp",
    "--data_parallel_size": "dp",
    "-dp": "dp",
}
PRECISIONS = ("nvfp4", "mxfp4", "mxfp8", "fp8", "fp4", "int4", "bf16")
HEADER = """\
# Single-node `vllm serve` commands of the vLLM recipes' guides (the `guide:` text of
# models/*.yaml at vllm-project/recipes {short}), each on the GPU the guide names for it: the
# heading above the command, else the line leading into its code block, else the guide's
# `Hardware` prerequisite line (source.hardware_quote). The model is the bundled config of the
# same checkpoint or of its family (tools/collect_recipe_guides.py FAMILIES). Written by
# `python -m tools.collect_recipe_guides` (rerun it; do not edit by hand).
# tests/test_lint_recipe_guides.py lints each one.
"""


@dataclass(frozen=True)
class Block:
    headings: tuple[str, ...]  # outermost first
    lead: tuple[str, ...]  # the prose lines between the last heading or block and this one
    text: str


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True
    ).stdout


def blocks(guide: str) -> list[Block]:
    """The guide's fenced code blocks with the headings above them and the lines leading in."""
    out: list[Block] = []
    heads: list[tuple[int, str]] = []
    lead: list[str] = []
    body: list[str] | None = None
    for line in guide.split("\n"):
        if line.strip().startswith("```"):
            if body is None:
                body = []
            else:
                text = "\n".join(body) + "\n"
                out.append(Block(tuple(h for _, h in heads), tuple(lead), text))
                body, lead = None, []
            continue
        if body is not None:
            body.append(line)
            continue
        m = re.match(r"^(#+)\s+\S", line)
        if m:
            level = len(m.group(1))
            heads = [h for h in heads if h[0] < level] + [(level, line.strip())]
            lead = []
        elif line.strip():
            lead.append(line.strip())
    return out


def _command_starts(lines: list[str]) -> list[int]:
    """Indexes of the lines that begin a `vllm serve` command (its VAR=value prefix lines
    included)."""
    starts = []
    for i, line in enumerate(lines):
        if re.match(r"^\s*(?:[A-Z][A-Z0-9_]*=\S*\s+)*vllm serve\b", line):
            j = i
            while j > 0 and re.match(r"^\s*[A-Z][A-Z0-9_]*=\S*\s*\\$", lines[j - 1]):
                j -= 1
            starts.append(j)
    return starts


def commands(block: str) -> list[str]:
    """The block verbatim when it holds one `vllm serve` command; else the lines before the first
    command (exports) with each command in turn."""
    lines = block.split("\n")
    starts = _command_starts(lines)
    if len(starts) <= 1:
        return [block] if starts else []
    preamble = lines[: starts[0]]
    out = []
    for s in starts:
        end = s
        while end < len(lines) and lines[end].rstrip().endswith("\\"):
            end += 1
        cmd = lines[s : end + 1]
        out.append("\n".join(preamble + cmd).strip("\n") + "\n")
    return out


def _serve_words(command: str) -> list[str]:
    """The words after `vllm serve` (continuations joined; none when the shell cannot split)."""
    joined = command.replace("\\\n", " ")
    for line in joined.split("\n"):
        if "vllm serve" in line:
            try:
                words = shlex.split(line, comments=True)
            except ValueError:
                return []
            i = words.index("serve") if "serve" in words else -1
            return words[i + 1 :]
    return []


def served_model(words: list[str]) -> str | None:
    if not words or words[0].startswith("-"):
        return None
    model = words[0]
    if model.startswith(("$", "<", ".")) or "/" not in model:
        return None
    return model


def world_size(words: list[str]) -> int | None:
    sizes = {"tp": 1, "pp": 1, "dp": 1}
    for i, w in enumerate(words):
        flag, _, value = w.partition("=")
        if flag in PARALLEL_FLAGS:
            value = value or (words[i + 1] if i + 1 < len(words) else "")
            if not value.isdigit():
                return None
            sizes[PARALLEL_FLAGS[flag]] = int(value)
    return sizes["tp"] * sizes["pp"] * sizes["dp"]


def multi_node(words: list[str], command: str) -> bool:
    flags = {w.partition("=")[0] for w in words}
    return bool(flags & MULTI_NODE_FLAGS) or bool(re.search(r"#\s*node\s*\d", command, re.I))


def _spellings() -> list[tuple[str, Gpu]]:
    rows = []
    for g in all_gpus():
        for s in {g.key, *aliases(g.key)}:
            rows.append((s, g))
    return sorted(rows, key=lambda r: (-len(r[0]), r[0]))


def _family_words(guide: str) -> dict[str, Gpu]:
    """A family word shared by several catalog keys ("A100") -> the row the guide itself names
    in full ("A100 80GB"), where it names exactly one."""
    gpus = all_gpus()
    out: dict[str, Gpu] = {}
    for word in {g.key.split()[0] for g in gpus}:
        rows = [g for g in gpus if g.key.split()[0] == word]
        if len(rows) < 2:
            continue
        named = [g for g in rows if _find(g.key, guide)]
        if len(named) == 1:
            out[word.lower()] = named[0]
    return out


def _pattern(spelling: str) -> re.Pattern[str]:
    """A GPU name in prose: any case and spacing, alone or after a count ("8xH200", "8x MI300X"),
    not inside a longer name ("H20" is not "H200")."""
    name = r"\s*".join(map(re.escape, spelling.split()))
    return re.compile(r"(?:(?<=[0-9][x×])|(?<![A-Za-z0-9]))" + name + r"(?![A-Za-z0-9])", re.I)


def _find(spelling: str, text: str) -> re.Match[str] | None:
    return _pattern(spelling).search(text)


def gpus_named(text: str, family: dict[str, Gpu]) -> list[Gpu]:
    """The catalog GPUs a line names, in the order it names them."""
    found: list[tuple[int, Gpu]] = []
    taken: list[tuple[int, int]] = []
    named = [*_spellings(), *family.items()]
    for spelling, gpu in named:
        for m in _pattern(spelling).finditer(text):
            if any(a < m.end() and m.start() < b for a, b in taken):
                continue
            taken.append((m.start(), m.end()))
            found.append((m.start(), gpu))
    return [g for _, g in sorted(found, key=lambda x: x[0])]


def _precision(model: str) -> str:
    """The weight format a checkpoint name states (bf16 when it states none)."""
    return next((p for p in PRECISIONS if re.search(rf"\b{p}\b", model.lower())), "bf16")


def _hardware_line(guide_lines: list[str], model: str) -> tuple[str, str] | None:
    """The guide's `Hardware` prerequisite: of several ("Hardware (BF16):", "Hardware (FP8):"),
    the one for the checkpoint's precision; of a line split at ';', the clause that names it."""
    lines = [ln.strip() for ln in guide_lines if HARDWARE_LINE.match(ln)]
    if not lines:
        return None
    precision = _precision(model)
    label = re.compile(rf"Hardware\W*\(\s*{precision}\b", re.IGNORECASE)
    line = next((ln for ln in lines if label.search(ln)), lines[0])
    clauses = [c for c in line.split(";") if c.strip()]
    if len(clauses) > 1:
        mine = (c for c in clauses if re.search(rf"\b{precision}\b", c, re.I))
        return line, next(mine, clauses[0])
    return line, line


def hardware(
    block: Block,
    command: str,
    guide_lines: list[str],
    model: str,
    family: dict[str, Gpu],
    verified: tuple[str, ...] = (),
) -> tuple[Gpu, str] | None:
    """The GPU the guide names for the command, and the text that names it; None when the guide
    names none of the catalog for it. ``verified``: the recipe's ``meta.hardware`` entries marked
    verified (``b200: verified``), read last, only when they are one GPU of the catalog."""
    if any(SYSTEMS.search(h) for h in block.headings):
        return None
    near = (*block.headings[-1:], *block.lead)
    vendor = "amd" if ROCM.search(command) or any(ROCM.search(t) for t in near) else "nvidia"

    def pick(text: str) -> Gpu | None:
        return next((g for g in gpus_named(text, family) if g.vendor == vendor), None)

    for heading in reversed(block.headings):
        gpu = pick(heading)
        if gpu is not None:
            return gpu, heading
    for line in reversed(block.lead):  # the nearest line that names hardware decides
        gpu = pick(line)
        if gpu is not None:
            return gpu, line
        if OTHER_HARDWARE.search(line) and not gpus_named(line, family):
            return None
    if any(OTHER_HARDWARE.search(h) for h in block.headings):
        return None
    prerequisite = _hardware_line(guide_lines, model)
    if prerequisite is not None:
        gpu = pick(prerequisite[1])
        if gpu is not None:
            return gpu, prerequisite[0]
    if len(verified) == 1:  # the recipe verified it on one GPU only
        quote = f"meta.hardware: {verified[0]}: verified"
        gpu = pick(verified[0])
        if gpu is not None:
            return gpu, quote
    return None


def bundled_for(model_id: str) -> tuple[str, str | None] | None:
    """The bundled config of a recipe's checkpoint, and the family note (None: same model)."""
    if catalog_path(model_id) is not None:
        return model_id, None
    sibling = official_sibling(model_id)
    if sibling is not None and catalog_path(sibling.base) is not None:
        return sibling.base, None
    if model_id in FAMILIES:
        return FAMILIES[model_id]
    same = [n for n in catalog_names() if (relatedness(model_id, n) or (0,))[0] == 1]
    if same:
        return same[0], None
    return None


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def collect(repo: Path) -> list[dict[str, Any]]:
    commit = _git(repo, "rev-parse", "HEAD").strip()
    paths = sorted(
        p
        for p in _git(repo, "ls-tree", "-r", "--name-only", commit, "models/").split()
        if p.endswith(".yaml")
    )
    rows: list[dict[str, Any]] = []
    for path in paths:
        recipe = yaml.safe_load(_git(repo, "show", f"{commit}:{path}"))
        guide = recipe.get("guide") or ""
        model_id = recipe["model"]["model_id"]
        bundled = bundled_for(model_id)
        if bundled is None or "vllm serve" not in guide:
            continue
        variants = {
            v["model_id"]
            for v in (recipe.get("variants") or {}).values()
            if isinstance(v, dict) and v.get("model_id")
        }
        guide_lines = guide.split("\n")
        family = _family_words(guide)
        hw_meta = (recipe.get("meta") or {}).get("hardware") or {}
        verified = tuple(k for k, v in hw_meta.items() if v == "verified")
        n = 0
        for block in blocks(guide):
            for command in commands(block.text):
                words = _serve_words(command)
                model = served_model(words)
                if model is None or multi_node(words, command):
                    continue
                if not (
                    model in variants
                    or model == model_id
                    or (relatedness(model, model_id) or (0,))[0] == 1
                ):
                    continue
                size = world_size(words)
                if size is None or size > 8:
                    continue
                hw = hardware(block, command, guide_lines, model, family, verified)
                if hw is None:
                    continue
                gpu, quote = hw
                n += 1
                row: dict[str, Any] = {
                    "id": f"recipe-guide-{_slug(Path(path).stem)}-{n}-{_slug(gpu.key)}",
                    "engine": "vllm",
                    "command": command,
                    "model": model,
                    "bundled_model": bundled[0],
                    "hardware": {"gpu": gpu.key, "gpus_per_node": size, "nodes": 1},
                    "source": {
                        "url": URL.format(commit=commit, path=path),
                        "repo": "vllm-project/recipes",
                        "path": path,
                        "commit": commit,
                        "hardware_quote": quote,
                    },
                }
                if bundled[1]:
                    row["notes"] = f"family: {bundled[1]}"
                rows.append(row)
    return rows


def render(rows: list[dict[str, Any]], commit: str) -> str:
    body = yaml.safe_dump(rows, sort_keys=False, allow_unicode=True, width=100)
    return HEADER.format(short=commit[:7]) + body


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repo", type=Path, default=MIRROR)
    ap.add_argument("--out", type=Path, default=FIXTURE)
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args(argv)
    rows = collect(args.repo)
    text = render(rows, rows[0]["source"]["commit"] if rows else "")
    if args.check:
        same = args.out.exists() and args.out.read_text(encoding="utf-8") == text
        print(f"{len(rows)} commands; fixture {'up to date' if same else 'differs'}")
        return 0 if same else 1
    args.out.write_text(text, encoding="utf-8")
    print(f"{len(rows)} commands -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
