"""Configs the user handed in (an upload, a paste, a CLI path), held in memory by digest.

A Scenario names such a config by the sha256 of its normalised content, so the study of a
scenario stays a pure function of the scenario and two users who upload the same file share
one cached study. The store is shared by every session and bounded twice: at most
``MAX_ENTRIES`` configs and at most ``MAX_BYTES`` of memory they hold (a measured bound per
config, ``BYTES_PER_JSON_BYTE``); the least recently used leaves first.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict

from engine import errors as E
from engine.errors import InputError
from engine.model.loader import LoadedModel

MAX_ENTRIES = 256
# A pruned config holds a few KB (the 3 MB ModelOpt one keeps 1 KB: its per-module listing is
# summarised); a hostile one up to about 50 MB of Python objects for its 8 MiB cap.
MAX_BYTES = 256 * 1024 * 1024

_lock = threading.Lock()
_models: OrderedDict[str, tuple[LoadedModel, int]] = OrderedDict()
_total = 0


# Python's objects for a parsed config take up to about 8 × its compact JSON length (measured
# on 8 MB configs: 2.8 × for a list of numbers, 7 × for short strings, 7.6 × for half a million
# short keys); the store counts that bound, computed from the text the digest hashes anyway.
BYTES_PER_JSON_BYTE = 8


def _canonical(model: LoadedModel) -> str:
    return json.dumps(model.config.raw, sort_keys=True, separators=(",", ":"), default=str)


def digest_of(model: LoadedModel) -> str:
    """sha256 of the config's normalised content (key order and spacing do not matter)."""
    return _digest(_canonical(model))


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def put(model: LoadedModel) -> str:
    """Keep ``model`` and return its digest."""
    global _total
    text = _canonical(model)
    digest = _digest(text)
    size = BYTES_PER_JSON_BYTE * len(text) + 4096
    with _lock:
        old = _models.pop(digest, None)
        if old is not None:
            _total -= old[1]
        _models[digest] = (model, size)
        _total += size
        while len(_models) > 1 and (len(_models) > MAX_ENTRIES or _total > MAX_BYTES):
            _, (_, freed) = _models.popitem(last=False)
            _total -= freed
    return digest


def held() -> tuple[int, int]:
    """(configs held, bytes they hold)."""
    with _lock:
        return len(_models), _total


def get(digest: str) -> LoadedModel:
    with _lock:
        entry = _models.get(digest)
        if entry is not None:
            _models.move_to_end(digest)
    if entry is None:
        raise InputError("model", E.UPLOAD_DROPPED())
    return entry[0]
