"""Departments derived from the paths people carry, by one rule for every source.

A department's id is its path: its names trimmed, in NFC, empty ones dropped, joined by
the separator. The same department then gets the same id in every export, and from either
source (the CSV layout ``paths``, LDAP's ``departments_from = "attribute"``), so a
company that moves from one source to the other keeps its departments.
"""

from __future__ import annotations

from syncd.model import Department
from syncd.sources._text import split_path
from syncd.spelling import nfc


class DepartmentPaths:
    """The departments on the paths seen so far, each with where it was first seen."""

    def __init__(self, separator: str) -> None:
        self.separator = separator
        self._ids: dict[str, str | None] = {}  # path as read -> id: most paths repeat
        self._found: dict[str, tuple[str, Department]] = {}

    def department_of(self, path: str | None, where: str) -> str | None:
        """The id of the path's last department (None for no path); adds any not seen yet."""
        if not path:
            return None
        try:
            return self._ids[path]
        except KeyError:
            found = self._ids[path] = self._add(path, where)
            return found

    def id_of(self, path: str) -> str:
        """The id the path's last department has (or would have), without adding it."""
        return self.separator.join(self._names(path))

    def _names(self, path: str) -> tuple[str, ...]:
        # In NFC: "Café" exported composed on one row and decomposed on another is one
        # department, with one id (build_directory takes every id in NFC too).
        return tuple(nfc(name) for name in split_path(path, self.separator))

    def _add(self, path: str, where: str) -> str | None:
        names = self._names(path)
        department_id: str | None = None
        for depth, name in enumerate(names, start=1):
            parent_id = department_id
            department_id = self.separator.join(names[:depth])
            if department_id not in self._found:
                self._found[department_id] = (where, Department(department_id, name, parent_id))
        return department_id

    def departments(self) -> list[tuple[str, Department]]:
        """Each department found, with where it was first seen (file:line or DN)."""
        return list(self._found.values())
