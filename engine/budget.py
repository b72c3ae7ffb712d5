"""One memory budget for the process: every cache that can hold a config or a Study counts its
entries in bytes with a real sizer, and together they hold at most ``BUDGET_BYTES``.

A hosted app serves every session from one process. Caches bounded one by one, by entries, let
the whole grow with what users paste: the speed model's shapes held a config each, the downloads
closed over their Study, and a 7 MiB config held about 40 bytes per byte of its text. Here each
such cache is a ``Cache`` of the one ``BUDGET``: an entry is sized when it is put
(``deep_size``: every object it reaches, as ``sys.getsizeof`` counts them), and past the budget
the least recently used entry of any cache leaves first. The count is an upper bound of what the
caches hold: an object two entries share is counted in each, and only the newest entry stays
when it alone is larger than the budget.
"""

from __future__ import annotations

import functools
import gc
import sys
import threading
import types
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, Generic, TypeVar

MIB = 1024 * 1024
# The process's caches together: the configs users handed in, the Studies, the downloads and
# the speed model's shapes. A catalog model's Study holds 0.1-0.5 MB (so this keeps 250-1,000 of
# them), a held config at most ``engine.model.store.MAX_HELD_BYTES`` of text, about 7 times that
# as Python objects. Not more: Python's cyclic garbage collector walks every object the caches
# hold in each full pass, stopping every session meanwhile (0.2 s per 100,000 objects on the
# loaded 2-core machine; a DeepSeek-V3 Study holds 1,700 of them).
BUDGET_BYTES = 128 * MIB

# Objects every entry shares with the process (classes, modules, code, functions' globals) are
# not the entry's: the walk neither counts them nor goes through them.
_SHARED: tuple[type, ...] = (
    type,
    types.ModuleType,
    types.CodeType,
    types.FrameType,
    types.BuiltinFunctionType,
    types.WrapperDescriptorType,
    types.MethodDescriptorType,
    types.GetSetDescriptorType,
    types.MemberDescriptorType,
    type(functools.lru_cache(maxsize=1)(len)),
)


def _inside(obj: object) -> list[object]:
    """What ``obj`` holds that belongs to it: a function's closure and defaults (not its module's
    globals), a bound method's object, any other object's referents."""
    if isinstance(obj, types.FunctionType):
        out: list[object] = list(obj.__defaults__ or ())
        for cell in obj.__closure__ or ():
            try:
                out.append(cell.cell_contents)
            except ValueError:  # an empty cell
                continue
        return out
    if isinstance(obj, types.MethodType):
        return [obj.__self__, obj.__func__]
    return gc.get_referents(obj)


def deep_size(root: object, stop: tuple[type, ...] = (), found: list[object] | None = None) -> int:
    """Bytes of ``root`` and of every object it reaches, each once (``sys.getsizeof``); objects
    of a ``stop`` type are left out with what they reach, and listed in ``found`` (once each)."""
    seen: set[int] = set()
    stack: list[object] = [root]
    total = 0
    while stack:
        obj = stack.pop()
        if id(obj) in seen or isinstance(obj, _SHARED):
            continue
        seen.add(id(obj))
        if stop and isinstance(obj, stop):
            if found is not None:
                found.append(obj)
            continue
        total += sys.getsizeof(obj)
        stack.extend(_inside(obj))
    return total


_once_lock = threading.Lock()
_once: dict[int, tuple[weakref.ref[Any], int]] = {}
_MAX_ONCE = 4096  # past it the entries of objects gone are dropped


def size_once(obj: object) -> int:
    """``deep_size(obj)``, walked once per object (a config, a model's layers, a KV sizing: large,
    immutable, and read by many cached values); ``obj`` must accept a weak reference."""
    key = id(obj)
    with _once_lock:
        hit = _once.get(key)
    if hit is not None and hit[0]() is obj:
        return hit[1]
    size = deep_size(obj)
    with _once_lock:
        if len(_once) >= _MAX_ONCE:
            for k in [k for k, (ref, _) in _once.items() if ref() is None]:
                del _once[k]
        _once[key] = (weakref.ref(obj), size)
    return size


K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class Budget:
    """The bytes the process's caches hold, in the order they were last used."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.lock = threading.RLock()
        self._order: OrderedDict[tuple[str, Hashable], int] = OrderedDict()
        self._caches: dict[str, Cache[Any, Any]] = {}
        self.total = 0

    def register(self, cache: Cache[Any, Any]) -> None:
        with self.lock:
            self._caches[cache.name] = cache

    def charge(self, name: str, key: Hashable, size: int) -> None:
        """Count ``size`` bytes for the entry (replacing its old count), then let the least
        recently used entries of every cache go while the whole is over the limit."""
        with self.lock:
            self.total += size - self._order.pop((name, key), 0)
            self._order[(name, key)] = size
            while self.total > self.limit and len(self._order) > 1:
                (owner, old), freed = self._order.popitem(last=False)
                self.total -= freed
                self._caches[owner].evicted(old)

    def touch(self, name: str, key: Hashable) -> None:
        with self.lock:
            if (name, key) in self._order:
                self._order.move_to_end((name, key))

    def release(self, name: str, key: Hashable) -> None:
        with self.lock:
            self.total -= self._order.pop((name, key), 0)

    def held(self) -> dict[str, tuple[int, int]]:
        """Per cache: (entries, bytes counted)."""
        with self.lock:
            out = {name: (0, 0) for name in self._caches}
            for (name, _), size in list(self._order.items()):
                n, b = out[name]
                out[name] = (n + 1, b + size)
            return out


BUDGET = Budget(BUDGET_BYTES)


class Cache(Generic[K, V]):
    """A cache whose entries count against ``budget`` with the bytes ``sizer`` gives."""

    def __init__(
        self, name: str, sizer: Callable[[V], int], budget: Budget = BUDGET, max_entries: int = 0
    ) -> None:
        self.name = name
        self.sizer = sizer
        self.budget = budget
        self.max_entries = max_entries  # 0: bytes alone bound it
        self._entries: OrderedDict[K, V] = OrderedDict()
        budget.register(self)

    def get(self, key: K) -> V | None:
        with self.budget.lock:
            value = self._entries.get(key)
            if value is not None:
                self._entries.move_to_end(key)
                self.budget.touch(self.name, key)
            return value

    def put(self, key: K, value: V, size: int | None = None) -> V:
        """Keep ``value`` (sized outside the lock: a large entry takes a while to walk)."""
        size = self.sizer(value) if size is None else size
        with self.budget.lock:
            self._entries[key] = value
            self._entries.move_to_end(key)
            self.budget.charge(self.name, key, size)
            if self.max_entries and len(self._entries) > self.max_entries:
                oldest = next(iter(self._entries))
                self.pop(oldest)
        return value

    def pop(self, key: K) -> V | None:
        with self.budget.lock:
            self.budget.release(self.name, key)
            return self._entries.pop(key, None)

    def evicted(self, key: K) -> None:
        """The budget let ``key`` go (its bytes are already released)."""
        self._entries.pop(key, None)

    def clear(self) -> None:
        with self.budget.lock:
            for key in list(self._entries):
                self.pop(key)

    def __contains__(self, key: object) -> bool:
        with self.budget.lock:
            return key in self._entries

    def held(self) -> tuple[int, int]:
        """(entries, bytes counted)."""
        return self.budget.held().get(self.name, (0, 0))


class Memo(Generic[K, V]):
    """The last ``most`` results put, by key, the oldest put leaving first: a result computed
    once per key (two threads may both compute one; the later put stays). Bounded by entries,
    not bytes: for results that do not hold a Study's worth of objects each."""

    def __init__(self, most: int) -> None:
        self.most = most
        self._lock = threading.Lock()
        self._entries: OrderedDict[K, V] = OrderedDict()

    def __contains__(self, key: K) -> bool:
        with self._lock:
            return key in self._entries

    def get(self, key: K) -> V | None:
        with self._lock:
            return self._entries.get(key)

    def put(self, key: K, value: V) -> V:
        with self._lock:
            self._entries[key] = value
            while len(self._entries) > self.most:
                self._entries.popitem(last=False)
        return value
