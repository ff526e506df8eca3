"""The platform's tags syncd sets: which to send, keeping those another admin set.

A body carrying ``tag_names`` sets a person's whole tag list on the platform (the
emulator's reading of section G, see README "Groups to tags"); a body carrying none
leaves it. So syncd sends tags only when the ones it sets change, and then sends the
person's tags as the platform holds them, less the ones syncd set before and no longer
wants, plus the ones it wants: a tag syncd never set is never taken away.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

Tag = tuple[str, str]  # (group, tag)


def tag_pairs(values: Iterable[Any]) -> set[Tag]:
    """(group, tag) pairs from ``[group, tag]`` lists or ``{group, tag}`` objects; other
    shapes are passed over."""
    found: set[Tag] = set()
    for value in values:
        if isinstance(value, Mapping):
            group, tag = value.get("group"), value.get("tag")
        elif isinstance(value, list | tuple) and len(value) == 2:
            group, tag = value
        else:
            continue
        if isinstance(group, str) and isinstance(tag, str):
            found.add((group, tag))
    return found


def tags_to_send(platform: Iterable[Tag], had: Iterable[Tag], wanted: Iterable[Tag]) -> list[Tag]:
    """The person's whole tag list to send: the platform's, less what syncd set and no
    longer wants, plus what it wants; sorted."""
    wanted_set = set(wanted)
    dropped = set(had) - wanted_set
    return sorted((set(platform) - dropped) | wanted_set)


def tag_names(tags: Iterable[Tag]) -> list[dict[str, str]]:
    """Section G's ``tag_names``: each a Tag object of group and tag."""
    return [{"group": group, "tag": tag} for group, tag in tags]


def tags_text(value: Iterable[Any]) -> str:
    """Tags as people read them: ``Teams: Engineering, Duty: On call`` (none: "none")."""
    return ", ".join(f"{group}: {tag}" for group, tag in sorted(tag_pairs(value))) or "none"
