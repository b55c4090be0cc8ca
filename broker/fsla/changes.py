"""Edits of F-SLA documents as JSON: a merge patch applied, and the changes between two.

Pure functions on JSON values (dicts, lists, strings, numbers, booleans, None).

- :func:`merge_patch` is JSON Merge Patch, RFC 7396 (Hoffman and Snell, 2014), section 2: a
  patch object replaces the members it names, ``null`` removes one, nested objects are merged the
  same way, anything else (a list, a string) replaces the value whole.
- :func:`changes` lists each field that differs as a path, its old value and its new value.
  Paths join object keys with dots and list positions as ``[i]``
  (``cross_border_export.min_k``, ``rule_sets[0].min_k``); a list of plain values (purposes,
  codes) is one field, compared whole, because "purpose 2 became purpose 3" says less than the
  two lists side by side.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

ABSENT = "(absent)"


def merge_patch(target: Any, patch: Any) -> Any:
    """``target`` with ``patch`` applied (RFC 7396); neither argument is modified.

    Examples
    --------
    >>> merge_patch({"a": 1, "b": {"c": 2, "d": 3}}, {"a": 5, "b": {"c": None}})
    {'a': 5, 'b': {'d': 3}}
    >>> merge_patch({"a": [1, 2]}, {"a": [3]})
    {'a': [3]}
    """
    if not isinstance(patch, dict):
        return patch
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


@dataclass(frozen=True)
class Change:
    """One field that differs: ``old`` or ``new`` is :data:`ABSENT` where the key is missing."""

    path: str
    old: Any
    new: Any

    def __str__(self) -> str:
        return f"{self.path}: {_show(self.old)} -> {_show(self.new)}"

    @property
    def field(self) -> str:
        """The top-level field the change is in: ``cross_border_export`` for
        ``cross_border_export.min_k``."""
        return self.path.split(".")[0].split("[")[0]


def _show(value: Any) -> str:
    return ABSENT if value is ABSENT else json.dumps(value, ensure_ascii=False)


def changes(old: Any, new: Any, path: str = "") -> list[Change]:
    """Every field of ``new`` that differs from ``old``, in document order.

    Examples
    --------
    >>> [str(c) for c in changes({"x": {"min_k": 5}, "p": ["a"]}, {"x": {"min_k": 10}, "p": ["a"]})]
    ['x.min_k: 5 -> 10']
    >>> [str(c) for c in changes({"rule_sets": [{"min_k": 5}]}, {"rule_sets": [{"min_k": 10}]})]
    ['rule_sets[0].min_k: 5 -> 10']
    """
    if isinstance(old, dict) and isinstance(new, dict):
        found: list[Change] = []
        for key in [*new, *(k for k in old if k not in new)]:
            where = f"{path}.{key}" if path else str(key)
            found += changes(old.get(key, ABSENT), new.get(key, ABSENT), where)
        return found
    if _list_of_objects(old) and _list_of_objects(new):
        found = []
        for i in range(max(len(old), len(new))):
            before = old[i] if i < len(old) else ABSENT
            after = new[i] if i < len(new) else ABSENT
            found += changes(before, after, f"{path}[{i}]")
        return found
    if old is ABSENT and new is ABSENT:
        return []
    if old is not ABSENT and new is not ABSENT and _same(old, new):
        return []
    return [Change(path or "(document)", old, new)]


def _list_of_objects(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, dict) for v in value)


def _same(a: Any, b: Any) -> bool:
    """Equal as JSON: 1 and 1.0 are one number, True and 1 are not."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    return a == b
