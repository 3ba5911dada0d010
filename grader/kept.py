"""A memo bounded by the size of what it holds: what a worker keeps of what a class repeats (a frame's bytes, an
answer met again), so that memory stays flat however many students, and whatever a student sends, come by."""

from __future__ import annotations

from typing import Generic, Hashable, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class SizedMemo(Generic[K, V]):
    """Values by key, at most `limit` units of size in all (the caller says what a value's size is): the oldest
    go first when a new one needs the room; a value larger than the whole limit is not kept."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.size = 0
        self._values: dict[K, tuple[V, int]] = {}

    def get(self, key: K) -> V | None:
        kept = self._values.get(key)
        return kept[0] if kept is not None else None

    def put(self, key: K, value: V, size: int) -> None:
        if size > self.limit:
            return
        old = self._values.pop(key, None)
        if old is not None:
            self.size -= old[1]
        while self._values and self.size + size > self.limit:
            self.size -= self._values.pop(next(iter(self._values)))[1]
        self._values[key] = (value, size)
        self.size += size

    def __len__(self) -> int:
        return len(self._values)
