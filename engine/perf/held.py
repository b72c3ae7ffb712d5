"""Files a user gave (a GPU calibration, a benchmark calibration), held by the digest of their
validated JSON: a Scenario names one by that digest, and the last ``most`` are kept for every
session of the process (least recently used dropped first)."""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from typing import Generic, TypeVar

from pydantic import BaseModel

M = TypeVar("M", bound=BaseModel)


class Held(Generic[M]):
    def __init__(self, most: int) -> None:
        self.most = most
        self._lock = threading.Lock()
        self._held: OrderedDict[str, M] = OrderedDict()

    def put(self, item: M) -> str:
        """Hold ``item`` and return its digest."""
        digest = hashlib.sha256(item.model_dump_json().encode()).hexdigest()
        with self._lock:
            self._held[digest] = item
            self._held.move_to_end(digest)
            while len(self._held) > self.most:
                self._held.popitem(last=False)
        return digest

    def get(self, digest: str) -> M | None:
        """The item held under ``digest`` (None: never given, or dropped since)."""
        with self._lock:
            item = self._held.get(digest)
            if item is not None:
                self._held.move_to_end(digest)
        return item
