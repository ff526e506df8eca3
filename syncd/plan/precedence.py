"""Each field of a joined person from the first source in its precedence that gives a value.

A join of 100,000 people asks this 100,000 times over every field: a loop over fields and
sources per person cost more than reading a source. So, for each set of sources a person
is found in (two sources: three sets), one function is written once, with each field as
one expression over those sources' records, and compiled; every person found in the same
sources is merged by one call of it. What a value is: anything but None, "" and () (0 and
False are values); ``state`` and ``senior`` always have one (the first source that has
the person decides); ``positions`` are taken from the departments' source when it places
the person, and from another source only when each of its departments is in that tree.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from operator import is_not
from typing import Any

from syncd.model import Employee, Position

_INDEX = {name: i for i, name in enumerate(Employee._fields)}
_ALWAYS_GIVEN = frozenset({_INDEX["state"], _INDEX["senior"]})
_POSITIONS, _STATE = _INDEX["positions"], _INDEX["state"]
# Fields whose falsy values are values (an int 0, a bool False): compared with None.
_NUMBERS = frozenset(
    i
    for i, name in enumerate(Employee._fields)
    if any(t in str(Employee.__annotations__.get(name, "")) for t in ("int", "bool"))
)
# What a field is when no source gives it: the model's default ("" for the required texts,
# which build_directory then rejects with its reason).
EMPTY: tuple[object, ...] = tuple(Employee._field_defaults.get(f, "") for f in Employee._fields)

Merge = Callable[..., Employee]  # (key, *records, one per source, None where absent)


class Precedence:
    """Merges one person's records (one per source, None where a source lacks them).

    ``statuses``: per source, whether it reads a status (a source without one never decides
    ``state``). ``clears``: field indexes the first source in their order that has the person
    decides even with an empty value (``join.clear``)."""

    def __init__(
        self,
        orders: Sequence[Sequence[int]],  # per field after the id: source indexes in order
        sources: int,
        tree_source: int,
        tree: Mapping[str, object],
        *,
        statuses: Sequence[bool] | None = None,
        clears: frozenset[int] = frozenset(),
    ) -> None:
        self._orders = orders
        self._sources = sources
        self.tree_source = tree_source
        self._tree = tree
        self._statuses = tuple(statuses) if statuses is not None else (True,) * sources
        self._clears = clears
        self._compiled: dict[tuple[bool, ...], Merge] = {}
        self._nones = (None,) * sources

    def merge(self, key: str, slots: Sequence[Employee | None]) -> Employee:
        return self.compiled(tuple(map(is_not, slots, self._nones)))(key, *slots)

    def compiled(self, found: tuple[bool, ...]) -> Merge:
        """The merge of people found in these sources (True: the source has them)."""
        merge = self._compiled.get(found)
        if merge is None:
            merge = self._compiled[found] = self._compile(found)
        return merge

    def placed(self, positions: tuple[Position, ...]) -> bool:
        """Positions a joined person can take: some, each in the joined tree (or the root)."""
        tree = self._tree
        return bool(positions) and all(
            p.department_id is None or p.department_id in tree for p in positions
        )

    def candidates(self, index: int, found: Sequence[bool]) -> list[int]:
        """The sources that may decide one field (its index in Employee) of a person found in
        these sources, in order. ``state``: the field's sources that read a status; when none
        of them has the person, the others that do (in the order read): someone the
        sources that have them call departed is departed, whoever decides status lacks them."""
        order = self._orders[index - 1]
        present = [s for s in order if found[s]]
        if index != _STATE:
            return present
        present = [s for s in present if self._statuses[s]]
        if present:
            return present
        return [s for s in range(self._sources) if found[s] and self._statuses[s]]

    def first_decides(self, index: int) -> bool:
        """Whether the first candidate decides the field, value or not (no fall-through)."""
        return index in _ALWAYS_GIVEN or index in self._clears

    def gives(self, index: int, source: int, value: object, record: Employee) -> bool:
        """Whether this source's value is one the field takes (the preview's walk)."""
        if index == _POSITIONS:
            return bool(value) and (source == self.tree_source or self.placed(record.positions))
        if index in _NUMBERS:
            return value is not None
        return value not in (None, "", ())

    def _compile(self, found: tuple[bool, ...]) -> Merge:
        names: dict[str, Any] = {
            "_new": tuple.__new__,
            "_Employee": Employee,
            "_placed": self.placed,
            "_EMPTY": EMPTY,
        }
        parts = ["k"]
        for n in range(len(self._orders)):
            index = n + 1
            parts.append(self._expression(index, self.candidates(index, found)))
        records = ", ".join(f"r{s}" for s in range(self._sources))
        text = f"def merge(k, {records}):\n    return _new(_Employee, ({', '.join(parts)},))\n"
        code = compile(text, f"<syncd.plan.precedence {found}>", "exec")
        exec(code, names)  # noqa: S102 - text made above from field indexes alone
        merge: Merge = names["merge"]
        return merge

    def _expression(self, index: int, present: list[int]) -> str:
        if not present:
            return f"_EMPTY[{index}]"
        if self.first_decides(index):
            return f"r{present[0]}[{index}]"
        expression = f"_EMPTY[{index}]"
        for s in reversed(present):
            value = f"r{s}[{index}]"
            if index == _POSITIONS:
                given = value if s == self.tree_source else f"_placed({value})"
                expression = f"({value} if {given} else {expression})"
            elif index in _NUMBERS:  # 0 is a value
                name = f"v{index}_{s}"
                expression = f"({name} if ({name} := {value}) is not None else {expression})"
            else:  # texts, tuples, objects: empty is None, "" or ()
                expression = f"({value} or {expression})"
        return expression
