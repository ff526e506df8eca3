"""Employee tags (section G): ``tags`` (ids, read first) and ``tag_names`` (group and tag).

The spec gives a Tag as group (String, Y), tag (String, Y), group_property and
tag_property (N), and an employee's list form as ``tags`` (list of integer) beside
``tag_names`` (list of string). Where it is silent the emulator assumes, as the README
says: a tag is the pair (group, tag) and has one id in the domain, given on first use;
a body carrying ``tags`` or ``tag_names`` sets the employee's whole tag list (an empty
list clears it), a body carrying neither leaves it as it is; an unknown id is refused.
The list form's ``tag_names`` name each tag of ``tags``, in the same order, as its tag;
the create/detail form gives ``tags`` and, as the body does, ``tag_names`` (group, tag).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from syncd.emulator.codes import bad_request

FIRST_TAG_ID = 7_000_001


@dataclass(frozen=True, slots=True)
class Tag:
    id: int
    group: str
    tag: str
    group_property: str = ""
    tag_property: str = ""

    def as_name(self) -> dict[str, Any]:
        """The Tag object of the create/detail form and of a body's ``tag_names``."""
        return {"group": self.group, "tag": self.tag}


@dataclass
class TagCatalog:
    """The domain's tags by id and by (group, tag)."""

    next_id: int = FIRST_TAG_ID
    _by_id: dict[int, Tag] = field(default_factory=dict)
    _by_name: dict[tuple[str, str], int] = field(default_factory=dict)

    def add(self, tag: Tag) -> None:
        self._by_id[tag.id] = tag
        self._by_name[(tag.group, tag.tag)] = tag.id
        self.next_id = max(self.next_id, tag.id + 1)

    def __iter__(self) -> Iterator[Tag]:
        return iter(self._by_id.values())

    def get(self, tag_id: int) -> Tag | None:
        return self._by_id.get(tag_id)

    def named(self, group: str, tag: str, group_property: str, tag_property: str) -> int:
        """The id of (group, tag), made on first use."""
        found = self._by_name.get((group, tag))
        if found is None:
            found = self.next_id
            self.add(Tag(found, group, tag, group_property, tag_property))
        return found

    def ids_from_body(self, body: Mapping[str, Any]) -> list[int] | None:
        """The tag ids a body sets (sorted, once each), or None when it names no tags.
        ``tags`` is read first when both forms are given (section G)."""
        if body.get("tags") is not None:
            return self._ids(body["tags"])
        if body.get("tag_names") is not None:
            return self._names(body["tag_names"])
        return None

    def _ids(self, value: Any) -> list[int]:
        if not isinstance(value, list):
            raise bad_request("tags must be a list of tag ids")
        ids: set[int] = set()
        for item in value:
            if isinstance(item, bool) or not isinstance(item, int | str):
                raise bad_request(f"tags: {item!r} is not a tag id")
            text = str(item).strip()
            if not text.isdigit() or int(text) not in self._by_id:
                raise bad_request(f"tag not found: {item}")
            ids.add(int(text))
        return sorted(ids)

    def _names(self, value: Any) -> list[int]:
        if not isinstance(value, list):
            raise bad_request("tag_names must be a list of {group, tag}")
        ids: set[int] = set()
        for item in value:
            if not isinstance(item, dict):
                raise bad_request("tag_names: each item must be an object {group, tag}")
            group, tag = item.get("group"), item.get("tag")
            if not isinstance(group, str) or not group.strip():
                raise bad_request("tag_names: group is required")
            if not isinstance(tag, str) or not tag.strip():
                raise bad_request("tag_names: tag is required")
            extras = []
            for name in ("group_property", "tag_property"):
                extra = item.get(name)
                if extra is not None and not isinstance(extra, str):
                    raise bad_request(f"tag_names: {name} must be text")
                extras.append(extra or "")
            ids.add(self.named(group.strip(), tag.strip(), extras[0], extras[1]))
        return sorted(ids)

    def list_form(self, ids: Iterable[int]) -> tuple[list[int], list[str]]:
        """``tags`` and ``tag_names`` of the list form: ids, and each one's tag."""
        known = [t for i in ids if (t := self._by_id.get(i)) is not None]
        return [t.id for t in known], [t.tag for t in known]

    def names(self, ids: Iterable[int]) -> list[dict[str, Any]]:
        return [t.as_name() for i in ids if (t := self._by_id.get(i)) is not None]

    def dump(self) -> list[list[Any]]:
        return [[t.id, t.group, t.tag, t.group_property, t.tag_property] for t in self]

    @classmethod
    def load(cls, data: Iterable[list[Any]]) -> TagCatalog:
        catalog = cls()
        for row in data:
            catalog.add(Tag(int(row[0]), str(row[1]), str(row[2]), str(row[3]), str(row[4])))
        return catalog
