"""Where a config.json comes from: a file, pasted JSON text, a dict, an upload (with its
hf_quant_config.json and safetensors index), the bundled catalog, or the Hugging Face hub
(small JSON files only: never weights, never remote code). Beside the config, the hub, a folder,
an upload and the catalog (data/models/templates/) may give the chat template, read as text and
never rendered."""

from __future__ import annotations

import json
import os
import re
import socket
import sys
from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from huggingface_hub import hf_hub_download

from engine import errors as E
from engine.decision import Code, Decision, Name, Source
from engine.errors import InputError, JsonError
from engine.model.config import MAX_CONFIG_BYTES, MAX_CONFIG_MIB, ModelConfig, normalize
from engine.model.formats import official_sibling, raw_in_format
from engine.rules import DATA_DIR, data_yaml

MODELS_DIR = DATA_DIR / "models"
# A catalog model's chat template, as published, beside its config: templates/<org>__<name>.jinja
# (the source of each in data/models/SOURCES.md). Base models and models whose template could
# not be found have none.
CATALOG_TEMPLATES_DIR = MODELS_DIR / "templates"
HF_ID = re.compile(
    r"^[A-Za-z0-9][A-Za-z0-9._-]{0,95}/[A-Za-z0-9][A-Za-z0-9._-]{0,95}\Z"
)  # \Z: no trailing \n
CONFIG = "config.json"
QUANT_CONFIG = "hf_quant_config.json"
INDEX = "model.safetensors.index.json"
COMPANIONS = (QUANT_CONFIG, INDEX)
# Where a repo keeps its chat template, in transformers' order of precedence: a
# chat_template.jinja beside the tokenizer wins over tokenizer_config.json's "chat_template";
# processors of multimodal models keep theirs in chat_template.json.
TEMPLATE_JINJA = "chat_template.jinja"
TEMPLATE_JSON = "chat_template.json"
TOKENIZER_CONFIG = "tokenizer_config.json"
TEMPLATE_FILES = (TEMPLATE_JINJA, TEMPLATE_JSON, TOKENIZER_CONFIG)
MAX_SOURCE_CHARS = 4096  # longer than any path or id; only JSON text may be longer
MAX_INT_DIGITS = sys.get_int_max_str_digits() or 4300  # int() refuses longer digit strings
BOM = "\ufeff"  # an editor's byte-order mark before pasted or typed JSON text
_METADATA_FIRST = re.compile(rb'\s*\{\s*"metadata"\s*:\s*')


@dataclass(frozen=True)
class CheckpointIndex:
    """The checkpoint as measured by its ``model.safetensors.index.json``: ``total_size``
    bytes of tensor data, the parameter count when the index metadata states it, parameters
    per stored dtype when it lists them, and the tensor count of its weight map."""

    total_size: int
    total_parameters: int | None
    parameters_by_dtype: tuple[tuple[str, int], ...]
    tensors: int | None
    source: str  # "hub", "upload" or "file", with the repo id or file name


@dataclass(frozen=True)
class ChatTemplate:
    """A chat template as plain text, with the file it came from. ``text`` is None when the
    file was larger than the limit and was not read (``chars`` then holds its size in bytes).
    It is hostile text: engine.software.templates scans it for markers and never renders it."""

    file: str
    text: str | None
    chars: int


@dataclass(frozen=True)
class LoadedModel:
    """A normalised config plus where it came from (shown on every page)."""

    config: ModelConfig
    source: str  # "catalog", "file", "json", "upload", "hub"
    name: str  # catalog name, file name or hub id
    checkpoint: CheckpointIndex | None = None
    note: Decision | None = None  # e.g. why a hub id was answered from the bundled catalog
    files: tuple[str, ...] = (CONFIG,)  # the files read (config.json and companions)
    chat_template: ChatTemplate | None = None  # None: no template at hand (paste, base model)


# A checkpoint's safetensors index lists every tensor (DeepSeek-V3's is 8.9 MB); only its
# metadata is decoded when it comes first, so it may be larger than a config.
MAX_INDEX_BYTES = 32 * 1024 * 1024


def _limit(what: str) -> int:
    return MAX_INDEX_BYTES if what == INDEX else MAX_CONFIG_BYTES


def _size_error(what: str, size: int) -> InputError:
    if what == INDEX:
        return InputError(what, E.FILE_SIZE(most=MAX_INDEX_BYTES, got=size))
    return InputError(what, E.CONFIG_SIZE(mib=MAX_CONFIG_MIB, most=MAX_CONFIG_BYTES, got=size))


def parse_json_bytes(data: bytes, what: str = CONFIG) -> Any:
    """Parse JSON straight from bytes (no decoded copy kept, no second walk here)."""
    if len(data) > _limit(what):  # refused before any parsing
        raise _size_error(what, len(data))
    if not data.strip():
        raise InputError(what, E.FILE_EMPTY())
    try:
        return json.loads(data)
    except UnicodeDecodeError as err:
        raise InputError(what, E.FILE_UTF8(at=err.start)) from None
    except json.JSONDecodeError as err:
        raise JsonError(what, err.msg, err.lineno, err.colno) from None
    except RecursionError:
        raise InputError(what, E.FILE_DEPTH()) from None
    except ValueError:  # the one other error of json.loads: an integer too long to convert
        raise InputError(what, E.FILE_DIGITS(most=MAX_INT_DIGITS)) from None


def parse_json_text(text: str, what: str = CONFIG) -> Any:
    if len(text) > _limit(what):  # characters >= bytes / 4: cheap bound before encoding
        raise _size_error(what, len(text))
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError as err:
        raise InputError(what, E.FILE_UTF8_CHAR(at=err.start)) from None
    return parse_json_bytes(data, what)


def _object(parsed: Any, what: str) -> Mapping[str, Any]:
    if not isinstance(parsed, Mapping):
        raise InputError(what, E.FILE_OBJECT())
    return parsed


def catalog_names() -> list[str]:
    """Bundled configs, named ``org/model`` (file ``org__model.json``)."""
    return sorted(p.stem.replace("__", "/", 1) for p in MODELS_DIR.glob("*.json"))


def catalog_path(name: str) -> Path | None:
    name = name.strip()
    if not name or len(name) > 200 or "\x00" in name:
        return None
    stem = name.replace("/", "__", 1)
    if "/" not in stem and "\\" not in stem and not stem.startswith("."):
        p = MODELS_DIR / f"{stem}.json"
        if p.is_file():
            return p
    low = name.lower()
    for cand in catalog_names():
        if cand.lower() == low or cand.split("/", 1)[-1].lower() == low:
            return MODELS_DIR / f"{cand.replace('/', '__', 1)}.json"
    return None


@cache
def _catalog_config(name: str) -> ModelConfig:
    path = catalog_path(name)
    assert path is not None
    return normalize(_object(parse_json_bytes(path.read_bytes(), name), name))


def load_catalog(name: str) -> LoadedModel:
    """A bundled config, with the model's bundled chat template when it has one."""
    path = catalog_path(name)
    if path is None:
        raise InputError("model", E.CATALOG_NAME(got=E.got(name[:100])))
    canonical = path.stem.replace("__", "/", 1)
    template = catalog_template(canonical)
    files = (CONFIG,) if template is None else (CONFIG, template.file)
    return LoadedModel(
        _catalog_config(canonical), "catalog", canonical, files=files, chat_template=template
    )


# ---------------------------------------------------------------------------------------------
# Companion files: hf_quant_config.json and model.safetensors.index.json
# ---------------------------------------------------------------------------------------------


def merge_quant_config(
    config: Mapping[str, Any], quant: Mapping[str, Any] | None
) -> Mapping[str, Any]:
    """vLLM transformers_utils/config.py get_config: config.json's own quantization_config
    wins (ModelOpt 0.31 and later write it there); else hf_quant_config.json is the
    quantization_config (ModelOpt 0.29 and before). vLLM's ModelConfig then names the method
    of a ``producer.name == "modelopt"`` document ``modelopt``."""
    if quant is None or config.get("quantization_config") is not None:
        return config
    qc = dict(quant)
    inner = qc.get("quantization")
    if isinstance(inner, Mapping):
        # SGLang's ModelConfig._parse_modelopt_quant_config reads these keys at the top;
        # vLLM reads them nested or at the top: both see the same document
        qc = {**{k: v for k, v in inner.items() if k not in qc}, **qc}
    producer = qc.get("producer")
    modelopt = isinstance(producer, Mapping) and str(producer.get("name", "")).lower() == "modelopt"
    if qc.get("quant_method") is None and modelopt:
        qc["quant_method"] = "modelopt"
    return {**config, "quantization_config": qc}


def _int(v: Any) -> int | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, int) and v >= 0:
        return v
    if isinstance(v, str) and v.isdigit() and len(v) < 20:
        return int(v)
    return None


def parse_index(data: bytes, source: str) -> CheckpointIndex:
    """``model.safetensors.index.json`` -> its metadata. Only the ``metadata`` object is
    decoded when it comes first (the weight map can be megabytes); otherwise the whole file."""
    if len(data) > MAX_INDEX_BYTES:
        raise _size_error(INDEX, len(data))
    meta: Any = None
    tensors: int | None = None
    head = _METADATA_FIRST.match(data[:256])
    if head is not None:
        try:
            meta, _ = json.JSONDecoder().raw_decode(data.decode("utf-8"), head.end())
        except (ValueError, UnicodeDecodeError):
            meta = None
    if not isinstance(meta, Mapping):
        parsed = _object(parse_json_bytes(data, INDEX), INDEX)
        meta = parsed.get("metadata")
        wm = parsed.get("weight_map")
        tensors = len(wm) if isinstance(wm, Mapping) else None
    if not isinstance(meta, Mapping):
        raise InputError(f"{INDEX}.metadata", E.INDEX_METADATA())
    total = _int(meta.get("total_size"))
    if total is None or total == 0:
        raise InputError(f"{INDEX}.metadata.total_size", E.POSITIVE_BYTES())
    by_dtype: list[tuple[str, int]] = []
    per = meta.get("parameters") or meta.get("parameters_by_dtype")
    if isinstance(per, Mapping):
        for k, v in per.items():
            n = _int(v)
            if n is not None:
                by_dtype.append((str(k)[:32], n))
    total_params = _int(meta.get("total_parameters"))
    if total_params is None and by_dtype:
        total_params = sum(n for _, n in by_dtype)
    return CheckpointIndex(total, total_params, tuple(by_dtype), tensors, source)


def _template_limits() -> tuple[int, int]:
    """(bytes read of a template file, characters of template kept): data/chat_templates.yaml
    (read as data: the template scanner in engine/software sits above the loader)."""
    limits = data_yaml("chat_templates.yaml")["limits"]
    return int(limits["max_file_bytes"]), int(limits["max_template_chars"])


def template_text(name: str, data: bytes) -> str | None:
    """The chat template held by ``data``, a file named ``name`` (one of TEMPLATE_FILES): the
    text of a .jinja file, or the "chat_template" of a JSON file (a string, or transformers'
    list of named templates, joined). None when the file holds no template or is not UTF-8."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if name == TEMPLATE_JINJA:
        return text if text.strip() else None
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError):
        return None
    found = doc.get("chat_template") if isinstance(doc, Mapping) else None
    if isinstance(found, str):
        return found if found.strip() else None
    if isinstance(found, list):
        parts = [
            t["template"]
            for t in found
            if isinstance(t, Mapping) and isinstance(t.get("template"), str)
        ]
        return "\n".join(parts) if parts else None
    return None


def read_template_file(name: str, data: bytes) -> ChatTemplate | None:
    """The template in ``data`` (at most the byte limit plus one byte of a file named ``name``).
    A file or a template over the limits is kept as its size only, never as text."""
    max_bytes, max_chars = _template_limits()
    if len(data) > max_bytes:
        return ChatTemplate(name, None, len(data))
    text = template_text(name, data)
    if text is None:
        return None
    return ChatTemplate(name, text if len(text) <= max_chars else None, len(text))


def _template_in(files: Mapping[str, bytes]) -> ChatTemplate | None:
    for name in TEMPLATE_FILES:
        data = files.get(name)
        found = None if data is None else read_template_file(name, data)
        if found is not None:
            return found
    return None


def _template_at(paths: Mapping[str, Path]) -> ChatTemplate | None:
    max_bytes, _ = _template_limits()
    for name in TEMPLATE_FILES:
        path = paths.get(name)
        if path is None:
            continue
        try:
            with path.open("rb") as f:
                data = f.read(max_bytes + 1)  # bounded: a larger file is only known as larger
        except OSError:
            continue
        found = read_template_file(name, data)
        if found is not None:
            return found
    return None


@cache
def catalog_template(name: str) -> ChatTemplate | None:
    """The chat template bundled for the catalog model ``name`` (canonical ``org/model``), read
    like a chat_template.jinja from any other source (same reader, same limits), and named by
    its path in the repository. None when none is bundled."""
    stem = name.replace("/", "__", 1)
    path = CATALOG_TEMPLATES_DIR / f"{stem}.jinja"
    if not path.is_file():
        return None
    found = _template_at({TEMPLATE_JINJA: path})
    if found is None:
        return None
    return replace(found, file=path.relative_to(DATA_DIR.parent).as_posix())


def _with_companions(
    config: Mapping[str, Any],
    quant: bytes | None,
    index: bytes | None,
    source: str,
) -> tuple[ModelConfig, CheckpointIndex | None, tuple[str, ...]]:
    files = [CONFIG]
    quant_doc = None
    if quant is not None:
        quant_doc = _object(parse_json_bytes(quant, QUANT_CONFIG), QUANT_CONFIG)
        files.append(QUANT_CONFIG)
    cfg = normalize(merge_quant_config(config, quant_doc))
    ckpt = None
    if index is not None:
        ckpt = parse_index(index, source)
        files.append(INDEX)
    return cfg, ckpt, tuple(files)


def load_files(files: Mapping[str, bytes], name: str | None = None) -> LoadedModel:
    """An upload of config.json with, optionally, hf_quant_config.json and
    model.safetensors.index.json beside it (matched by file name; a single file of any
    name is the config)."""
    by_name: dict[str, bytes] = {}
    for fname, data in files.items():
        base = Path(str(fname)).name.lower()
        if not isinstance(data, bytes):
            raise InputError(str(fname)[:100], E.FILE_BYTES())
        by_name[base] = data
    config = by_name.pop(CONFIG, None)
    templates = {n: by_name.pop(n) for n in TEMPLATE_FILES if n in by_name}
    if config is None:
        others = [n for n in by_name if n not in COMPANIONS]
        if len(others) != 1:
            raise InputError(
                CONFIG,
                E.ONE_CONFIG(
                    companions=(Name(QUANT_CONFIG), Name(INDEX)),
                    got=tuple(Name(str(n)[:100]) for n in sorted(files)[:5]),
                ),
            )
        config = by_name.pop(others[0])
    unknown = [n for n in by_name if n not in COMPANIONS]
    if unknown:
        raise InputError(
            unknown[0][:100], E.ONE_OF(choices=(Name(CONFIG), Name(QUANT_CONFIG), Name(INDEX)))
        )
    label = name or "uploaded config.json"
    raw = _object(parse_json_bytes(config, CONFIG), CONFIG)
    cfg, ckpt, read = _with_companions(
        raw, by_name.get(QUANT_CONFIG), by_name.get(INDEX), f"upload {label}"
    )
    template = _template_in(templates)
    if template is not None:
        read = (*read, template.file)
    return LoadedModel(cfg, "upload", label, ckpt, files=read, chat_template=template)


def load_pasted(
    text: str,
    name: str = "pasted config.json",
    *,
    quant_config: str | None = None,
    index: str | None = None,
) -> LoadedModel:
    """Pasted text is parsed as JSON and nothing else: never a path, a catalog name or a hub
    id, so a paste box cannot make the server read its own files. The texts of
    hf_quant_config.json and model.safetensors.index.json may be pasted beside it."""
    if not isinstance(text, str):
        raise InputError(CONFIG, E.FILE_NOT_JSON_TEXT())
    stripped = text.strip().removeprefix(BOM).strip()
    if not stripped:
        raise InputError(CONFIG, E.FILE_EMPTY())
    if not stripped.startswith("{"):
        raise InputError(CONFIG, E.FILE_NOT_JSON_TEXT())
    raw = _object(parse_json_text(stripped), CONFIG)
    extra = {QUANT_CONFIG: quant_config, INDEX: index}
    blobs: dict[str, bytes] = {}
    for fname, body in extra.items():
        if body is not None and body.strip():
            try:
                blobs[fname] = body.encode("utf-8")
            except UnicodeEncodeError:
                raise InputError(fname, E.FILE_UTF8_TEXT()) from None
    cfg, ckpt, read = _with_companions(
        raw, blobs.get(QUANT_CONFIG), blobs.get(INDEX), f"pasted {name}"
    )
    return LoadedModel(cfg, "json", name, ckpt, files=read)


# ---------------------------------------------------------------------------------------------
# The hub
# ---------------------------------------------------------------------------------------------


def _hub_reachable(timeout: float = 3.0) -> bool:
    """A quick TCP probe of the hub endpoint, so an offline machine fails in seconds
    instead of waiting out huggingface_hub's retries."""
    url = urlparse(os.environ.get("HF_ENDPOINT", "https://huggingface.co"))
    host = url.hostname or "huggingface.co"
    port = url.port or (443 if url.scheme == "https" else 80)
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def _offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes", "on")


# Why the hub gave no config.json, and what answered instead (data/i18n/<lang>/model.yaml).
HUB_OFFLINE_ENV = Code("model.hub.reason.offline_env")
HUB_UNREACHABLE = Code("model.hub.reason.unreachable")
HUB_NOT_FOUND = Code("model.hub.reason.not_found")
HUB_BUNDLED = Code("model.hub.bundled", "repo", "reason")
HUB_BUNDLED_TEMPLATE = Code("model.hub.bundled_template", "repo", "reason")
HUB_SIBLING = Code("model.hub.sibling", "repo", "reason", "base", "format", "source")


def _hub_error(repo_id: str, reason: Decision) -> InputError:
    return InputError("model", E.HUB_UNREADABLE(repo=E.got(repo_id), reason=reason))


def _read_small(path: str, what: str) -> bytes:
    p = Path(path)
    try:
        size = p.stat().st_size
        if size > _limit(what):
            raise _size_error(what, size)
        return p.read_bytes()
    except OSError as err:
        raise InputError(what, E.readable(err)) from None


def _hub_file(repo_id: str, filename: str, revision: str | None, online: bool) -> str | None:
    """The cached path of one small file of the repo: the local cache first, then (when
    ``online``) the hub. None when the repo has no such file or it cannot be had."""
    try:
        return str(
            hf_hub_download(
                repo_id=repo_id, filename=filename, revision=revision, local_files_only=True
            )
        )
    except Exception:  # not cached (or cached as missing)
        if not online:
            return None
    try:
        return str(
            hf_hub_download(repo_id=repo_id, filename=filename, revision=revision, etag_timeout=5)
        )
    except Exception:  # absent from the repo, or the hub went away: the file is optional
        return None


def load_hub(repo_id: str, revision: str | None = None) -> LoadedModel:
    """``config.json`` and, when the repo has them, ``hf_quant_config.json`` and
    ``model.safetensors.index.json``, through ``hf_hub_download`` (honours HF_HUB_CACHE and
    HF_HUB_OFFLINE; the local cache first). No weights, no remote code. When the hub cannot
    be read and the id is a bundled catalog model, the bundled config answers, with a note."""
    if not isinstance(repo_id, str) or not HF_ID.match(repo_id):
        raise InputError("model", E.HUB_ID(got=E.got(str(repo_id)[:100])))
    path = _hub_file(repo_id, CONFIG, revision, online=False)
    online = False
    if path is None:
        if _offline():
            reason = HUB_OFFLINE_ENV()
        elif not _hub_reachable():
            reason = HUB_UNREACHABLE()
        else:
            online = True
            path = _hub_file(repo_id, CONFIG, revision, online=True)
            reason = HUB_NOT_FOUND()
        if path is None:
            return _catalog_fallback(repo_id, reason)
    else:
        online = not _offline() and _hub_reachable()
    raw = _object(parse_json_bytes(_read_small(path, CONFIG), CONFIG), CONFIG)
    quant_path = _hub_file(repo_id, QUANT_CONFIG, revision, online)
    index_path = _hub_file(repo_id, INDEX, revision, online)
    quant = _read_small(quant_path, QUANT_CONFIG) if quant_path else None
    index = _read_small(index_path, INDEX) if index_path else None
    cfg, ckpt, read = _with_companions(raw, quant, index, f"hub {repo_id}")
    template = _hub_template(repo_id, revision, online)
    if template is not None:
        read = (*read, template.file)
    return LoadedModel(cfg, "hub", repo_id, ckpt, files=read, chat_template=template)


def _hub_template(repo_id: str, revision: str | None, online: bool) -> ChatTemplate | None:
    """The repo's chat template, cache-first like config.json (offline: the cache only)."""
    for name in TEMPLATE_FILES:
        found = _hub_file(repo_id, name, revision, online)
        template = _template_at({name: Path(found)}) if found is not None else None
        if template is not None:
            return template
    return None


def _catalog_fallback(repo_id: str, reason: Decision) -> LoadedModel:
    if catalog_path(repo_id) is None:
        return _sibling_fallback(repo_id, reason)
    bundled = load_catalog(repo_id)
    said = HUB_BUNDLED if bundled.chat_template is None else HUB_BUNDLED_TEMPLATE
    note = said(repo=Name(repo_id), reason=reason)
    return LoadedModel(
        bundled.config,
        "catalog",
        bundled.name,
        note=note,
        files=bundled.files,
        chat_template=bundled.chat_template,
    )


def _sibling_fallback(repo_id: str, reason: Decision) -> LoadedModel:
    """An official FP8 / NVFP4 / MXFP4 / BF16 sibling of a bundled model (data/recipes.yaml
    checkpoints), answered from the bundled config in the sibling's format: the checkpoint an
    alternative suggests applies offline exactly as it was checked."""
    sibling = official_sibling(repo_id)
    if sibling is None or catalog_path(sibling.base) is None:
        raise _hub_error(repo_id, reason)
    base = load_catalog(sibling.base)
    raw = raw_in_format(base.config.raw, sibling.fmt)
    if raw is None:
        raise _hub_error(repo_id, reason)
    note = HUB_SIBLING(
        repo=Name(repo_id),
        reason=reason,
        base=Name(base.name),
        format=Name(sibling.fmt.upper()),
        source=Source(sibling.source),
    )
    return LoadedModel(normalize(raw), "hub", repo_id, note=note)


# ---------------------------------------------------------------------------------------------
# Any source
# ---------------------------------------------------------------------------------------------


def _read_path(path: Path) -> LoadedModel:
    """A config.json on this machine (the CLI), with its companions from the same folder."""
    data = _read_small(str(path), CONFIG)
    raw = _object(parse_json_bytes(data), CONFIG)
    quant = index = None
    template = None
    if path.name == CONFIG:
        folder = path.parent
        try:
            if (folder / QUANT_CONFIG).is_file():
                quant = _read_small(str(folder / QUANT_CONFIG), QUANT_CONFIG)
            if (folder / INDEX).is_file():
                index = _read_small(str(folder / INDEX), INDEX)
            template = _template_at(
                {n: folder / n for n in TEMPLATE_FILES if (folder / n).is_file()}
            )
        except OSError:
            quant = index = template = None
    cfg, ckpt, read = _with_companions(raw, quant, index, f"file {path.name}")
    if template is not None:
        read = (*read, template.file)
    return LoadedModel(cfg, "file", path.name, ckpt, files=read, chat_template=template)


def _as_path(text: str) -> Path | None:
    """``text`` as an existing file or folder with a config.json, or None. Bounded and
    OSError-safe: a 300-character string is not an error, just not a path."""
    if len(text) > MAX_SOURCE_CHARS or "\x00" in text:
        return None
    try:
        path = Path(text).expanduser()
        if path.is_file():
            return path
        if path.is_dir() and (path / CONFIG).is_file():
            return path / CONFIG
    except (OSError, RuntimeError, ValueError):
        return None
    return None


def load_model(source: str | bytes | Mapping[str, Any], name: str | None = None) -> LoadedModel:
    """Any source -> LoadedModel (the CLI's entry point). Strings are tried as JSON text, a
    bundled catalog name, a file path (with hf_quant_config.json and the safetensors index
    beside it), then a Hugging Face id. The app's paste box calls ``load_pasted`` instead."""
    if isinstance(source, Mapping):
        return LoadedModel(normalize(source), "json", name or "pasted config")
    if isinstance(source, bytes):
        raw = _object(parse_json_bytes(source), CONFIG)
        return LoadedModel(normalize(raw), "upload", name or "uploaded config.json")
    if not isinstance(source, str) or not source.strip():
        raise InputError("model", E.MODEL_SOURCE(got=E.got(source)))
    text = source.strip().removeprefix(BOM).strip()
    if text.startswith("{"):
        return load_pasted(text, name or "pasted config")
    if catalog_path(text) is not None:
        return load_catalog(text)
    path = _as_path(text)
    if path is not None:
        return _read_path(path)
    if HF_ID.match(text):
        return load_hub(text)
    shown = text if len(text) <= 100 else text[:99] + "…"
    raise InputError("model", E.MODEL_SOURCE(got=E.got(shown)))
