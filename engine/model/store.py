"""Configs the user handed in (an upload, a paste, a CLI path), held in memory by digest.

A Scenario names such a config by the sha256 of its normalised content, so the study of a
scenario stays a pure function of the scenario and two users who upload the same file share
one cached study. The store is shared by every session and is one cache of the process's memory
budget (``engine.budget``): each config is counted by what it holds (``deep_size``), and the
least recently used entry of any cache leaves first. A config that would hold more than
``MAX_HELD_BYTES`` of JSON once read (its module listings summarised) is refused by name: no
real config comes near it, and one entry cannot crowd out every other session's.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

from engine import errors as E
from engine.budget import MIB, Cache, size_once
from engine.decision import Decision
from engine.errors import InputError
from engine.model.config import prune
from engine.model.loader import (
    BOM,
    LoadedModel,
    load_model,
    load_pasted,
    parse_json_bytes,
    parse_json_text,
)

# The largest real config once read is 24 KB of JSON (Nemotron-Super's block_configs, 80
# layers; the 3.6 MB ModelOpt NVFP4 config keeps 1 KB: its per-module listing is summarised);
# the same per-layer blocks at the 4,096-layer cap take about 1.2 MB.
MAX_HELD_BYTES = 2 * MIB

_models: Cache[str, LoadedModel] = Cache("configs", size_once)


def _canonical(model: LoadedModel) -> str:
    return json.dumps(model.config.raw, sort_keys=True, separators=(",", ":"), default=str)


def digest_of(model: LoadedModel) -> str:
    """sha256 of the config's normalised content (key order and spacing do not matter)."""
    return _digest(_canonical(model))


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True)
class Held:
    """A config the store may hold, with its digest."""

    model: LoadedModel
    digest: str


def check(model: LoadedModel) -> Held:
    """``model`` with its digest; ``InputError`` for a config too large to hold."""
    text = _canonical(model)
    if len(text) > MAX_HELD_BYTES:
        raise InputError("config.json", E.HELD_SIZE(most=MAX_HELD_BYTES, got=len(text)))
    return Held(model, _digest(text))


def keep(held: Held) -> str:
    """Hold a checked config and return its digest."""
    _models.put(held.digest, held.model)
    return held.digest


def put(model: LoadedModel) -> str:
    """Keep ``model`` and return its digest; ``InputError`` for a config too large to hold."""
    return keep(check(model))


@dataclass(frozen=True)
class Refused:
    """An ``InputError`` as plain parts (an exception with its own constructor does not pickle)."""

    field: str
    expects: Decision
    why: Decision | None

    def error(self) -> InputError:
        return InputError(self.field, self.expects, why=self.why)


# a text whose summarised JSON is this many times the bound is refused before the per-node
# checks of the full read (most of its time on 8 MiB of bulk); nearer the bound, the full read
# measures exactly what it would hold
_PLAINLY = 1.25


def _plainly_too_large(data: str | bytes) -> Refused | None:
    """The refusal of a text whose JSON, once its module listings are summarised, is plainly too
    large to hold: read after the parse and the summary alone. None: the full read decides."""
    if len(data) <= MAX_HELD_BYTES * _PLAINLY:
        return None
    text = data.strip().removeprefix(BOM).strip() if isinstance(data, str) else None
    if text is not None and not text.startswith("{"):
        return None  # the full read says what it expects
    try:
        raw = parse_json_bytes(data) if isinstance(data, bytes) else parse_json_text(text or "")
    except InputError as err:  # what the full read's parse would say first, said once
        return Refused(err.field, err.expects, err.why)
    try:
        if not isinstance(raw, dict):
            return None
        size = len(json.dumps(prune(dict(raw)), separators=(",", ":"), default=str))
    except (InputError, RecursionError, ValueError, TypeError):
        return None  # the full read says what is wrong, and where
    if size <= MAX_HELD_BYTES * _PLAINLY:
        return None
    return Refused("config.json", E.HELD_SIZE(most=MAX_HELD_BYTES, got=size), None)


def read(data: str | bytes, name: str) -> Held | Refused:
    """A pasted text (``str``) or an uploaded file (``bytes``) read and checked as the store
    would hold it, or why it is refused. A worker process's entry (ui/worker.py): what it
    returns pickles, and the parse of up to 8 MiB, which holds Python's interpreter lock for a
    quarter of a second and more, happens outside the server's process."""
    plainly = _plainly_too_large(data)
    if plainly is not None:
        return plainly
    try:
        if isinstance(data, str):
            return check(load_pasted(data, name))
        return check(load_model(data, name))
    except InputError as err:
        return Refused(err.field, err.expects, err.why)


def held() -> tuple[int, int]:
    """(configs held, bytes they hold)."""
    return _models.held()


def get(digest: str) -> LoadedModel:
    entry = _models.get(digest)
    if entry is None:
        raise InputError("model", E.UPLOAD_DROPPED())
    return entry
