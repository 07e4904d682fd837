"""Lab 03's metadata facets and permission filters over the numpy pages.

A page's metadata is its ``module`` and its ``kind``. A ``Permission`` says which pages a
user may see: the modules open to them (``None``: every module) minus the kinds closed to
them. Two ways to apply it to a search:

- ``late_filter``: take the top ``k`` pages, then drop the ones the user may not see (what
  a filter bolted on after the search does; it can leave fewer than ``k``, or none);
- inside the search: the closed pages never enter the ranking
  (``practice.ChunkSearch.pages(..., allowed=...)``), so the top ``k`` are all visible.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Iterable, Sequence


@dataclass(frozen=True)
class Permission:
    """A user's view of the corpus: open modules (``None``: all) and closed kinds."""

    name: str
    modules: frozenset[str] | None = None
    closed_kinds: frozenset[str] = frozenset()

    def allows(self, document) -> bool:
        """May this user see ``document`` (anything with ``module`` and ``kind``)?"""
        return (self.modules is None or document.module in self.modules) and document.kind not in self.closed_kinds

    def visible(self, documents: Iterable) -> frozenset[str]:
        """The ids of the documents this user may see."""
        return frozenset(d.doc_id for d in documents if self.allows(d))


def permission(name: str, modules: Sequence[str] | None = None, closed_kinds: Sequence[str] = ()) -> Permission:
    """A ``Permission``; ``modules`` empty is refused (a user who sees nothing needs no search)."""
    if modules is not None and not modules:
        raise ValueError(f"modules of {name!r} must be None (every module) or a non-empty list")
    return Permission(name, None if modules is None else frozenset(modules), frozenset(closed_kinds))


def facets(documents: Iterable, field: str) -> dict[str, int]:
    """How many documents carry each value of ``field`` (``module`` or ``kind``), most first, ties by value."""
    if field not in ("module", "kind"):
        raise ValueError(f"field must be 'module' or 'kind'; got {field!r}")
    counts = Counter(getattr(d, field) for d in documents)
    return dict(sorted(counts.items(), key=lambda pair: (-pair[1], pair[0])))


def late_filter(page_ids: Sequence[str], visible: frozenset[str], k: int) -> list[str]:
    """The top ``k`` pages of a ranking, then only the visible ones among them."""
    return [p for p in page_ids[:k] if p in visible]


def depth_for(page_ids: Sequence[str], visible: frozenset[str], k: int) -> int | None:
    """How many pages a late filter must fetch to keep ``k`` visible ones (None: the ranking never gets there)."""
    kept = 0
    for depth, page in enumerate(page_ids, start=1):
        kept += page in visible
        if kept == k:
            return depth
    return None


# The permission groups of lab 03 and of ``python -m ragcourse search --user NAME``.
USERS: tuple[Permission, ...] = (permission("random only", ["numpy.random"]),
                                 permission("linalg + fft", ["numpy.linalg", "numpy.fft"]),
                                 permission("no classes", None, ["class"]),
                                 permission("everything"))


def user_named(name: str) -> Permission:
    """The permission group called ``name``; ValueError naming the groups that exist."""
    for user in USERS:
        if user.name == name:
            return user
    raise ValueError(f"argument --user: no permission group {name!r}; the groups are "
                     + ", ".join(repr(u.name) for u in USERS))


def where_filter(conditions: Sequence[str], documents: Sequence) -> frozenset[str]:
    """The ids of the documents matching every ``field=value`` (fields: module, kind)."""
    allowed = frozenset(d.doc_id for d in documents)
    for condition in conditions:
        field, equals, value = condition.partition("=")
        if not equals or field not in ("module", "kind"):
            raise ValueError(f"argument --where: must look like module=numpy.linalg or kind=ufunc; got {condition!r}")
        values = facets(documents, field)
        if value not in values:
            raise ValueError(f"argument --where: no page has {field}={value!r}; {field} is one of "
                             + ", ".join(values))
        allowed &= frozenset(d.doc_id for d in documents if getattr(d, field) == value)
    return allowed
