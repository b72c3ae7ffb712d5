"""Where a config.json comes from: a file, JSON text, a dict, an upload, the bundled
catalog, or the Hugging Face hub (config.json only: never weights, never remote code)."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from engine.errors import InputError
from engine.model.config import MAX_CONFIG_BYTES, ModelConfig, normalize
from engine.rules import DATA_DIR

MODELS_DIR = DATA_DIR / "models"
HF_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,95}/[A-Za-z0-9][A-Za-z0-9._-]{0,95}$")


@dataclass(frozen=True)
class LoadedModel:
    """A normalised config plus where it came from (shown on every page)."""

    config: ModelConfig
    source: str  # "catalog", "file", "json", "upload", "hub"
    name: str  # catalog name, file name or hub id


def parse_json_bytes(data: bytes, what: str = "config.json") -> Any:
    if len(data) > MAX_CONFIG_BYTES:
        raise InputError(
            what,
            f"a config.json of at most {MAX_CONFIG_BYTES // 1_000_000} MB, got {len(data):,} bytes",
        )
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise InputError(what, f"UTF-8 text (byte {err.start} is not valid UTF-8)") from None
    return parse_json_text(text, what)


def parse_json_text(text: str, what: str = "config.json") -> Any:
    if len(text.encode("utf-8", "surrogatepass")) > MAX_CONFIG_BYTES:
        raise InputError(what, f"a config.json of at most {MAX_CONFIG_BYTES // 1_000_000} MB")
    if not text.strip():
        raise InputError(what, "a JSON object; the input is empty")
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise InputError(
            what, f"valid JSON ({err.msg} at line {err.lineno}, column {err.colno})"
        ) from None
    except RecursionError:
        raise InputError(what, "valid JSON of reasonable nesting depth") from None


def catalog_names() -> list[str]:
    """Bundled configs, named ``org/model`` (file ``org__model.json``)."""
    return sorted(p.stem.replace("__", "/", 1) for p in MODELS_DIR.glob("*.json"))


def catalog_path(name: str) -> Path | None:
    stem = name.strip().replace("/", "__", 1)
    p = MODELS_DIR / f"{stem}.json"
    if p.is_file():
        return p
    low = name.strip().lower()
    for cand in catalog_names():
        if cand.lower() == low or cand.split("/", 1)[-1].lower() == low:
            return MODELS_DIR / f"{cand.replace('/', '__', 1)}.json"
    return None


@cache
def _catalog_config(name: str) -> ModelConfig:
    path = catalog_path(name)
    assert path is not None
    return normalize(parse_json_bytes(path.read_bytes(), name))


def load_catalog(name: str) -> LoadedModel:
    path = catalog_path(name)
    if path is None:
        raise InputError(
            "model", f"a bundled catalog name (e.g. {catalog_names()[0]}), got {name!r}"
        )
    canonical = path.stem.replace("__", "/", 1)
    return LoadedModel(_catalog_config(canonical), "catalog", canonical)


def _hub_reachable(timeout: float = 3.0) -> bool:
    """A quick TCP probe of the hub endpoint, so an offline machine fails in seconds
    instead of waiting out huggingface_hub's retries."""
    import os
    import socket
    from urllib.parse import urlparse

    url = urlparse(os.environ.get("HF_ENDPOINT", "https://huggingface.co"))
    host = url.hostname or "huggingface.co"
    port = url.port or (443 if url.scheme == "https" else 80)
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def _hub_error(repo_id: str, reason: str) -> InputError:
    return InputError(
        "model",
        f"a config.json for {repo_id!r} from the Hugging Face hub, which could not be read "
        f"({reason}). Pick a bundled catalog model or upload the config.json instead",
    )


def load_hub(repo_id: str, revision: str | None = None) -> LoadedModel:
    """Fetch only ``config.json`` with ``hf_hub_download`` (honours HF_HUB_CACHE and
    HF_HUB_OFFLINE): the local cache first, then the hub. No weights, no remote code."""
    import os

    if not HF_ID.match(repo_id):
        raise InputError("model", f"a Hugging Face id like 'org/name', got {repo_id!r}")
    from huggingface_hub import hf_hub_download

    try:
        path = hf_hub_download(
            repo_id=repo_id, filename="config.json", revision=revision, local_files_only=True
        )
    except Exception:  # not in the local cache: go online below
        offline = os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes", "on")
        if offline:
            raise _hub_error(
                repo_id,
                "offline or not found: HF_HUB_OFFLINE is set and it is not in the local cache",
            ) from None
        if not _hub_reachable():
            raise _hub_error(repo_id, "offline or not found: the hub cannot be reached") from None
        try:
            path = hf_hub_download(
                repo_id=repo_id, filename="config.json", revision=revision, etag_timeout=5
            )
        except Exception as err:  # the hub raises many types; all mean "not available here"
            raise _hub_error(repo_id, f"{type(err).__name__}: offline or not found") from None
    data = Path(path).read_bytes()
    return LoadedModel(normalize(parse_json_bytes(data, "config.json")), "hub", repo_id)


def load_pasted(text: str, name: str = "pasted config.json") -> LoadedModel:
    """Pasted text is JSON and nothing else: never a path, a catalog name or a hub id."""
    if not isinstance(text, str) or not text.strip().startswith("{"):
        raise InputError("config.json", "JSON text starting with '{'")
    return LoadedModel(normalize(parse_json_text(text)), "json", name)


def load_model(source: str | bytes | Mapping[str, Any], name: str | None = None) -> LoadedModel:
    """Any source -> LoadedModel. Strings are tried as JSON text, a file path, a bundled
    catalog name, then a Hugging Face id."""
    if isinstance(source, Mapping):
        return LoadedModel(normalize(source), "json", name or "pasted config")
    if isinstance(source, bytes):
        return LoadedModel(
            normalize(parse_json_bytes(source)), "upload", name or "uploaded config.json"
        )
    if not isinstance(source, str) or not source.strip():
        raise InputError("model", "a config.json path, JSON text, catalog name or hub id")
    text = source.strip()
    if text.startswith("{"):
        return LoadedModel(normalize(parse_json_text(text)), "json", name or "pasted config")
    if catalog_path(text) is not None:
        return load_catalog(text)
    path = Path(text).expanduser()
    if path.is_file():
        try:
            size = path.stat().st_size
            if size > MAX_CONFIG_BYTES:
                raise InputError(
                    "config.json",
                    f"a file of at most {MAX_CONFIG_BYTES // 1_000_000} MB, got {size:,} bytes",
                )
            data = path.read_bytes()
        except OSError as err:
            raise InputError("config.json", f"a readable file ({err.strerror})") from None
        return LoadedModel(normalize(parse_json_bytes(data)), "file", path.name)
    if path.is_dir() and (path / "config.json").is_file():
        return load_model(str(path / "config.json"), name)
    if HF_ID.match(text):
        return load_hub(text)
    raise InputError(
        "model",
        f"an existing config.json path, JSON text, catalog name or 'org/name' hub id; got {text!r}",
    )
