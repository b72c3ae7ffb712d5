"""Configs the user handed in (an upload, a paste, a CLI path), held in memory by digest.

A Scenario names such a config by the sha256 of its normalised content, so the study of a
scenario stays a pure function of the scenario and two users who upload the same file share
one cached study. The store is bounded: the oldest entry leaves first.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict

from engine.errors import InputError
from engine.model.loader import LoadedModel

MAX_ENTRIES = 256

_lock = threading.Lock()
_models: OrderedDict[str, LoadedModel] = OrderedDict()


def digest_of(model: LoadedModel) -> str:
    """sha256 of the config's normalised content (key order and spacing do not matter)."""
    text = json.dumps(model.config.raw, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def put(model: LoadedModel) -> str:
    """Keep ``model`` and return its digest."""
    digest = digest_of(model)
    with _lock:
        _models[digest] = model
        _models.move_to_end(digest)
        while len(_models) > MAX_ENTRIES:
            _models.popitem(last=False)
    return digest


def get(digest: str) -> LoadedModel:
    with _lock:
        model = _models.get(digest)
        if model is not None:
            _models.move_to_end(digest)
    if model is None:
        raise InputError(
            "model",
            "an uploaded config.json this server still holds; it has been dropped, upload it again",
        )
    return model
