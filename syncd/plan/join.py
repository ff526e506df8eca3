"""Several sources joined into one Directory: plain data in, plain data out, no I/O.

Each source was read as it is alone (its own Directory, its own rejected rows). People are
joined on a key (a field each source holds, normalized the way ``match_value`` compares
it, then by the source's own steps: ``SourceRead.normalize``); each field is taken from the
first source in its precedence that gives a value (syncd.plan.precedence: a source without
a status never decides ``state``; a field in ``JoinRules.clear`` is cleared by an empty
value of its first source). The joined person's id is the key itself: it is the same
whichever sources know them today, so a person found by one more source later is the same
record, never a re-key.

What the join cannot pair is set aside as a rejected row naming the source, and the person
is kept as they are on the platform (``Directory.rejected_keys``): two records of one
source with the same key, a record without a key, a person a required source lacks (under
``wait``: but someone the sources that have them call departed is taken, to be locked, or
is a leaver when their place or name is gone with the source that lacks them), a person
another source rejected. A record a source sets aside only because another gives its
username is kept when its key and username are the pair syncd holds
(``Directory.holders_kept``, as for one source). A read that could not say who is gone
(not complete, a row that may hide others, a part not read: ``Directory.unread``) makes
the joined read say so too: nobody becomes a leaver for want of a source. A warning (a
department head outside their department) is told, never a partial read. A source none of
whose records holds the key is a settings mistake, not data: ``KeyNotHeld`` (the
settings' reader names the setting).

A departure is never held up by a row set aside for what does not say who the person is
(``RejectedRow.departed``: no name, a date that is not one, a department nobody knows).
Every row set aside under a person's key stands for its source's record in deciding their
status. When the source that decides it says departed (in such a row, or in its record),
and nothing else set aside or joined names the key or the username the join gives them
otherwise (``departures_alike``: the rows of sources that do not decide their status are
outranked, as their records would be, and need only give that very pair), they are left
out of the joined read and the rows are marked departed under that pair: the planner
locks the account syncd holds under it and writes nothing else for them
(syncd.plan.departed_aside). When the deciding source's rows do not all say so, nobody
else's word locks them: kept as they are. When whose rows they are is unclear (a record
of the same source under the key, the username joined to someone else or given by a row
whose key cannot be read), they are kept as they are and the run says a leaver keeps
their access (``RejectedRow.departure_held``: partial). But a username syncd holds under
the leaver's key is theirs, whoever else is joined under it or a row under another key
gives it (a login recycled for a new hire): the account is locked, and the others wait.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Literal

from syncd.model import (
    Directory,
    Employee,
    Kind,
    MovedStatus,
    RejectedRow,
    State,
    build_directory,
    departures_alike,
    row_identifiers,
)
from syncd.plan.guards import cannot_tell_departed
from syncd.plan.join_keys import (
    STRIP,
    joined_key,
    key_moved,
    key_value,
    keys_moved,
    named_key,
    record_keys,
)
from syncd.plan.precedence import Precedence
from syncd.plan.values import DEPARTED, SyncedEmployee
from syncd.spelling import look_alike, nfc

# The fields taken by precedence: every field but the id (the key is the joined id).
FIELDS = tuple(f for f in Employee._fields if f != "id")
_INDEX = {name: i for i, name in enumerate(Employee._fields)}
_STATE, _USERNAME = _INDEX["state"], FIELDS.index("username")

Slots = list[Employee | None]  # one record per source, None where the source lacks them


@dataclass(frozen=True)
class SourceRead:
    """One source's read, and what the join needs to know of it."""

    name: str
    directory: Directory
    key: str = "sn"  # the field holding the join key: a model field or extra.<name>
    required: bool = True
    # How its keys are compared, steps applied in this order: strip, nfkc (full-width
    # characters as ASCII), casefold, leading_zeros (a key of digits alone: 00123 is 123).
    normalize: tuple[str, ...] = STRIP
    # Whether its settings have it say who is departed (a status column named, an LDAP
    # departed_filter, AD's flags): one that then reads no status, or calls nobody
    # departed, leaves the join blind (Directory.blind).
    expects_status: bool = True


@dataclass(frozen=True)
class JoinRules:
    # Model field (positions, state, email, ...) -> sources in order; a field not named:
    # every source in the order read.
    precedence: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    missing: Literal["wait", "partial"] = "wait"
    # Model fields the first source in their order that has the person decides, even empty.
    clear: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Joined:
    directory: Directory
    departments_from: str  # the source whose departments are the tree
    # For each joined person asked about (explain=True: everyone), field -> the source
    # that gave it.
    origins: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    waiting: int = 0  # people a required source lacks (join.missing = wait)
    # explain=True: each joined key -> source -> that source's own id of the person.
    members: Mapping[str, Mapping[str, str]] = field(default_factory=dict)


class KeyNotHeld(ValueError):
    """No record of a source holds the join key: the settings name a field it does not fill."""

    def __init__(self, source: str, key: str, records: int) -> None:
        super().__init__(f"source {source!r}: none of its {records} records holds {key}")
        self.source, self.key, self.records = source, key, records


def join(
    reads: Sequence[SourceRead],
    rules: JoinRules,
    *,
    explain: bool = False,
    synced: Mapping[str, SyncedEmployee] | None = None,
) -> Joined:
    """The sources' people joined by key, each field by precedence; departments from the
    first source that decides ``positions``.

    ``synced``: what syncd last wrote, by joined id. A person no source in the username's
    precedence gives a username to keeps the one syncd synced them with (their account):
    so a leaver HR marks departed whose directory account is already deleted is locked,
    not set aside for want of a username.

    A departed person the departments' source lacks, or left without a username or a name,
    is left out of the joined read, not set aside: a leaver, as if no source had them
    (their HR row removed, their directory account disabled). The leaver policy applies,
    and nothing the missing sources decide (name, place) is rewritten; set aside, they
    would have stayed active.

    Raises KeyNotHeld when a source has records and none holds its key."""
    for read in reads:  # in the settings' order: the error names the first at fault
        _key_held(read)
    joining = _Joining(reads, rules, explain, synced)
    # The first source that decides status first: the joined read lists people in its
    # order, so neighbours there are neighbours in the join (guards.shifted_status).
    first = joining.names.index(rules.precedence.get("state", joining.names)[0])
    for i in (first, *(n for n in range(len(reads)) if n != first)):
        joining.pair(i, reads[i])
    for k, slots in joining.people.items():
        joining.take(k, slots)
    joining.departed_alone()
    return Joined(
        joining.directory(),
        joining.departments_from,
        joining.origins,
        joining.waiting,
        joining.members,
    )


class _Joining:
    """One join under way: the records paired by key, then each person merged or set aside."""

    def __init__(
        self,
        reads: Sequence[SourceRead],
        rules: JoinRules,
        explain: bool,
        synced: Mapping[str, SyncedEmployee] | None,
    ) -> None:
        self.reads, self.explain = reads, explain
        self.synced: Mapping[str, SyncedEmployee] = synced if synced is not None else {}
        self.names = names = tuple(r.name for r in reads)
        self.orders = tuple(
            tuple(names.index(s) for s in rules.precedence.get(f, names)) for f in FIELDS
        )
        self.departments_from = rules.precedence.get("positions", names)[0]
        tree = reads[names.index(self.departments_from)].directory
        self.tree, self.from_people = tree.departments, tree.departments_from_people
        self.statuses = [r.directory.status_read for r in reads]
        self.precedence = Precedence(
            self.orders,
            len(reads),
            names.index(self.departments_from),
            self.tree,
            statuses=self.statuses,
            clears=frozenset(_INDEX[f] for f in rules.clear),
        )
        self.required = [i for i, r in enumerate(reads) if r.required]
        self.wait = rules.missing == "wait"
        self.everywhere = self.precedence.compiled((True,) * len(reads))
        self.rejected: list[RejectedRow] = []
        self.people: dict[str, Slots] = {}  # key -> one record per source
        self.held: set[str] = set()  # keys set aside: duplicates
        self.held_usernames: set[str] = set()  # usernames rejected by a source: kept as they are
        self.keyless_usernames: set[str] = set()  # those given by a row without a join key
        self.merged: list[tuple[str, Employee]] = []
        # Joined key -> (source, index in rejected) of each row a source set aside for a
        # field that does not say who the person is, saying they departed; and of every
        # other row set aside under the key.
        self.departures: dict[str, list[tuple[int, int]]] = {}
        self.aside: dict[str, list[tuple[int, int]]] = {}
        self.outranked: set[int] = set()  # rows of sources that do not decide: no say in it
        self.departing: dict[str, tuple[str, list[int]]] = {}  # key -> username, rows to mark
        self.origins: dict[str, dict[str, str]] = {}
        self.members: dict[str, dict[str, str]] = {}
        self.waiting = 0

    # ------------------------------------------------------------ pairing

    def pair(self, i: int, read: SourceRead) -> None:
        """One source's rejected rows carried, and its records put in their slot by key."""
        read, holders = self._holders_kept(read)
        read = keys_moved(read, self.synced)
        start = len(self.rejected)
        _carried(read, self.rejected)
        # _carried appends one row for each of the source's, in order: the n-th is its copy.
        for n, row in enumerate(read.directory.rejected, start):
            if row.kind is not Kind.EMPLOYEE:
                continue
            k = self.rejected[n].key
            if row.username and (folded := look_alike(row.username)) not in holders:
                self.held_usernames.add(folded)
                if not k:
                    self.keyless_usernames.add(folded)
            if k:
                rows = self.departures if row.departed else self.aside
                rows.setdefault(k, []).append((i, n))
        twice = _indexed(read, i, len(self.reads), self.people, self.rejected)
        for k, found in twice.items():
            self.held.add(k)
            ids = ", ".join(repr(e.id) for e in found)
            self.rejected.append(
                RejectedRow(
                    f"{read.name}: people {ids}",
                    f"join key {k!r} ({read.key}) is held by {len(found)} records of "
                    f"source {read.name!r}: it cannot say which one is the person",
                    key=k,
                    username=found[0].username,
                )
            )

    def _holders_kept(self, read: SourceRead) -> tuple[SourceRead, set[str]]:
        """The read with a username's holder kept among its records set aside because
        another gives that username too (``Directory.holders_kept``: the record whose join
        key and username are the pair syncd holds is that person's, as with one source: a
        login a directory gives a new hire while the leaver's account is still there); and
        the usernames so kept (look-alike keys): the other rows that give them are not the
        holder's, and hold nobody up."""
        synced, key, steps = self.synced, read.key, read.normalize
        records = (r.record for r in read.directory.rejected if synced and r.record is not None)
        holds = {
            e.id: known.username
            for e in records
            if (known := synced.get(key_value(e, key, steps) or "")) is not None
        }
        if not holds:
            return read, set()
        kept = read.directory.holders_kept(holds)
        people = kept.employees
        usernames = {look_alike(people[i].username) for i in holds if i in people}
        return replace(read, directory=kept), usernames

    # ------------------------------------------------------------ merging

    def take(self, k: str, slots: Slots) -> None:
        """One key's records merged: joined, or set aside (kept as they are) with the reason."""
        if self.explain:
            self.members[k] = {self.names[i]: e.id for i, e in enumerate(slots) if e is not None}
        if self.held and k in self.held:
            return
        if (k in self.departures or k in self.aside) and self._departing(k, slots):
            return  # departed, a row set aside under the key: locked where they are
        employee = self._merged(k, slots)
        if employee.state is State.DEPARTED and self._unplaced(employee, slots):
            return  # a leaver: departed, and what would say who they are is gone
        aside = self._set_aside(k, employee, slots)
        if aside is not None:
            why, held = aside
            # Its name and numbers as joined: what tells this person from a leaver whose
            # username they were given (syncd.plan.rekeys.weigh_rejected).
            self.rejected.append(
                RejectedRow(
                    _where(k, slots, self.names),
                    why,
                    key=k,
                    username=employee.username or _any_username(slots),
                    identifiers=row_identifiers(partial(getattr, employee), employee.extra),
                    departure_held=held,
                )
            )
            return
        self.merged.append((k, employee))  # where: the key (a row rejected later is named again)
        if self.explain:
            self.origins[k] = self._origins(slots, employee)

    def _merged(self, k: str, slots: Slots) -> Employee:
        """The person by precedence, with the username syncd synced them with when no
        source gives one (their account deleted in the directory)."""
        employee = self.precedence.merge(k, slots) if None in slots else self.everywhere(k, *slots)
        if not employee.username and (known := self.synced.get(k)):
            employee = employee._replace(username=known.username)
        return employee

    def _set_aside(self, k: str, employee: Employee, slots: Slots) -> tuple[str, bool] | None:
        """Why a merged person is kept as they are rather than joined, and whether a
        departure is held up so (said: ``RejectedRow.departure_held``); None: joined."""
        if self._status_unknown(k, slots):
            # A source without a status never makes anyone active: read by such sources
            # alone (join.missing = partial, their HR row gone), they would be.
            return (
                "a read called them departed, and no source that has them now reads a status: "
                "kept as they are until one does"
            ), False
        lacking = self._lacking(employee, slots)
        if lacking:
            # Neither created nor changed, nor a leaver: kept as they are until every
            # required source has them. (A person the sources that have them say departed
            # is taken: they are locked, whoever else lacks them.)
            self.waiting += 1
            return (
                f"waiting for source {', '.join(map(repr, lacking))}: "
                "join.missing = wait syncs a person once every required source has them"
            ), False
        departed = employee.state is State.DEPARTED
        if departed and self._decided_by_row(k, slots):
            return (
                "the source that decides their status set aside its rows for them, and not "
                "all say they left: kept as they are until they are read whole"
            ), False
        username, held = employee.username, self.held_usernames
        if held and username and (folded := look_alike(username)) in held:  # as a rule, none
            if departed and self._holds(k, username) and folded not in self.keyless_usernames:
                # A leaver under the account syncd holds for their key: locked, whoever else
                # a row set aside under another key gives the username to (a new hire, in a
                # spelling refused).
                return None
            # Whose record is it? Rows under their own key were weighed first
            # (_departing, _decided_by_row): a leaver kept so is said.
            return (
                f"another source rejected a record of {username!r}: kept as they are until "
                "every source reads them"
            ), departed
        return None

    def _says_departed(self, k: str, slots: Slots, decider: int) -> bool:
        """Whether the source that decides the person's status says they left, in its
        record or in its rows set aside under their key."""
        if decider in {i for i, _ in self.departures.get(k, ())}:
            return True
        first = slots[decider]
        return first is not None and first.state is State.DEPARTED

    def _decided_by_row(self, k: str, slots: Slots) -> bool:
        """Whether the source that decides the person's status has only rows set aside for
        them, and one says nothing of a departure (whoever else says so is outranked)."""
        decider = self._decider(k, slots)
        if decider is None or slots[decider] is not None:
            return False
        return decider in {i for i, _ in self.aside.get(k, ())}

    def _aside_sources(self, k: str) -> set[int]:
        """The sources that set aside a row under this key."""
        return {i for i, _ in (*self.departures.get(k, ()), *self.aside.get(k, ()))}

    def _decider(self, k: str, slots: Slots) -> int | None:
        """The source that decides the person's status, rows set aside under their key
        standing for their sources' records (None: no source that has them reads one)."""
        aside = self._aside_sources(k)
        found = tuple(e is not None or i in aside for i, e in enumerate(slots))
        deciding = self.precedence.candidates(_STATE, found)
        return deciding[0] if deciding else None

    def _departing(self, k: str, slots: Slots) -> bool:
        """Whether a person with rows set aside under their key is departed: the source
        that decides their status (those rows standing for their sources' records) says
        so, in a row or a record. Then the rows are to be marked with the username the join
        gives them: those that say so, else (a departure read whole) those set aside."""
        decider = self._decider(k, slots)
        if decider is None:
            return False
        if not self._says_departed(k, slots, decider):
            # Another source's departure, held up by its own rows that disagree, is
            # outranked as its record would be: nobody who left keeps access by it.
            named = (*self.departures.get(k, ()), *self.aside.get(k, ()))
            self._unhold(n for i, n in named if i != decider)
            return False
        rows, others = self.departures.get(k, []), self.aside.get(k, [])
        marked = [n for _, n in rows or others]
        beside = any(slots[i] is not None for i in self._aside_sources(k))
        given = {i: self.rejected[n].username for i, n in (*rows, *others)}
        username = self._username(k, slots, given)
        if beside or decider in {i for i, _ in others} or not username:
            # The key names a record of a source beside its row (whose row is it?), the
            # deciding source's own rows do not all say so, or nobody gives a username:
            # held up, and said.
            self._hold(marked)
            return False
        self.departing[k] = (username, marked)
        # The other sources' rows are outranked, as their records would be: they only need
        # to give that very key and username (departures_alike).
        self.outranked.update(n for _, n in others)
        return True

    def _username(self, k: str, slots: Slots, aside: Mapping[int, str | None]) -> str | None:
        """The username the join gives a person, rows set aside standing for their source's
        record: by precedence, else the one syncd synced them with."""
        for s in self.orders[_USERNAME]:
            record = slots[s]
            username = record.username if record is not None else aside.get(s)
            if username:
                return username
        known = self.synced.get(k)
        return known.username if known is not None else None

    def _status_unknown(self, k: str, slots: Slots) -> bool:
        """Whether syncd holds the person locked as departed and none of the sources that
        have them reads a status."""
        known = self.synced.get(k)
        if known is None or not known.locked or known.lock_reason != DEPARTED:
            return False
        return not any(self.statuses[i] for i, e in enumerate(slots) if e is not None)

    def _unplaced(self, employee: Employee, slots: Slots) -> bool:
        """Whether a departed person cannot be written as they are: the departments' source
        lacks them (their place is unknown), or no source gives a username or a name."""
        return slots[self.precedence.tree_source] is None or not (
            employee.username and employee.name
        )

    def _lacking(self, employee: Employee, slots: Slots) -> list[str]:
        """The required sources a person waits for (join.missing = wait; not a leaver)."""
        if not self.wait or None not in slots or employee.state is State.DEPARTED:
            return []
        return [self.names[i] for i in self.required if slots[i] is None]

    def _origins(self, slots: Slots, employee: Employee) -> dict[str, str]:
        """Which source gave each field (the preview): the rule Precedence compiles, walked."""
        gave = _origins(slots, self.precedence, self.names)
        if not any(s is not None and s.username for s in slots) and employee.username:
            gave["username"] = "the state database (as synced)"
        return gave

    def departed_alone(self) -> None:
        """The departures of people no source has a record of, only rows set aside."""
        nobody: Slots = [None] * len(self.reads)
        for k in (self.departures.keys() | self.aside.keys()) - self.people.keys():
            self._departing(k, nobody)

    # ------------------------------------------------------------ the result

    def directory(self) -> Directory:
        """The joined Directory: the tree, the people joined, every row set aside."""
        self._mark_departures()
        reads, merged = self.reads, self.merged
        complete = all(r.directory.complete for r in reads)
        source = " + ".join(f"{r.name}={r.directory.source}" for r in reads)
        filtered = sum(r.directory.filtered for r in reads)
        warnings = [f"{r.name}: {w}" for r in reads for w in r.directory.warnings]
        # Whether any source says who is departed: if none does, everyone reads as active
        # for want of a status, and the planner gives nobody it knew as departed access.
        status_read = any(r.directory.status_read for r in reads)
        blind = self._blind()
        if _plainly_valid(merged):
            # Each source validated its own records and the tree; what joining can break is
            # checked above: a username and a name given, no username twice. So the 100,000
            # people of a join are not validated a second time, one by one.
            directory = Directory(
                dict(self.tree), dict(merged), tuple(self.rejected), complete, source, None,
                filtered, tuple(warnings), status_read=status_read, blind=blind,
            )  # fmt: skip
        else:
            directory = build_directory(
                [(f"{self.departments_from}: department {d.id!r}", d) for d in self.tree.values()],
                merged,
                rejected=self.rejected,
                complete=complete,
                source=source,
                filtered=filtered,
                warnings=warnings,
                status_read=status_read,
            )
            directory = replace(directory, blind=blind)
        # A username any source reads from a row's edge may be changed by a moved line break,
        # and so may a status (syncd.plan.moved_breaks).
        edges = frozenset[str]().union(*(r.directory.username_edges for r in reads))
        moved = self._moved_statuses()
        if edges or moved:
            directory = replace(directory, username_edges=edges, moved_statuses=moved)
        if self.from_people:
            directory = replace(directory, departments_from_people=True)
        return self._named(directory)

    def _moved_statuses(self) -> dict[str, MovedStatus]:
        """The notes of statuses a moved line break may have made, the row beside's id made
        its joined key: as the source's record of it gives it, or, the source having none
        (its row filter left the row out), as the row's cells do (MovedStatus.names);
        named by its source when neither can (syncd holds nobody so: nothing tells). A
        note is under the joined key of the person whose status it weighs, where that
        source decides it; any other is under its source's name and id, which no person's
        change is: it holds only the row beside (a status row the row filter left out, or
        one another source outranks, may still have moved text into the field beside)."""
        if not any(r.directory.moved_statuses for r in self.reads):
            return {}  # as a rule
        keys = {(i, e.id): k for k, slots in self.people.items() for i, e in _present(slots)}
        found: dict[str, MovedStatus] = {}
        for i, read in enumerate(self.reads):
            for source_id, note in read.directory.moved_statuses.items():
                beside = (
                    key_moved(note, read, self.synced)
                    or keys.get((i, note.beside))
                    or named_key(note, read)
                )
                note = note._replace(beside=beside or f"{read.name}:{note.beside}")
                k = keys.get((i, source_id))
                if k is not None and self._decider(k, self.people[k]) == i:
                    found[k] = note
                else:
                    found[f"{read.name}:{source_id}"] = note
        return found

    def _mark_departures(self) -> None:
        """Each departing person's rows marked departed under the joined key and username,
        where every row set aside that gives the key or the username gives both alike and
        says departed (``departures_alike``): else they are kept as they are, as any person
        a row set aside names. Someone joined under that username holds it up (whose
        account is it?), unless it is the account syncd holds under the key: then the
        username is theirs, as ``Directory.holders_kept`` keeps it for its holder (a login
        recycled for a new hire): whoever is joined under it is set aside, and rows under
        another key that give it are that key's person's, holding nobody up."""
        if not self.departing:
            return
        claimed = {look_alike(e.username) for _, e in self.merged if e.username}
        holders: dict[str, str] = {}  # username (look-alike) -> the leaver syncd holds it for
        for k, (username, rows) in self.departing.items():
            if self._holds(k, username):
                holders[look_alike(username)] = k
                if look_alike(username) in claimed:
                    self._claimants_aside(k, username)
            elif look_alike(username) in claimed:
                self._hold(rows)
                continue
            self._mark(k, username, rows)
        apart = [
            n
            for n, r in enumerate(self.rejected)
            if r.key and r.username and holders.get(look_alike(r.username), r.key) != r.key
        ]
        departures_alike(self.rejected, self.outranked, apart)

    def _mark(self, k: str, username: str, rows: Iterable[int]) -> None:
        """A departing person's rows marked departed under ``username``; their outranked
        rows that give no username (a login left empty) take it, as a record that gave
        none: they say nothing against the pair (``departures_alike``)."""
        for n in rows:
            self.rejected[n] = replace(self.rejected[n], username=username, departed=True)
        for _, n in self.aside.get(k, ()):
            if n in self.outranked and not self.rejected[n].username:
                self.rejected[n] = replace(self.rejected[n], username=username)

    def _holds(self, k: str, username: str) -> bool:
        """Whether ``username`` is the one syncd holds for the person of key ``k``."""
        known = self.synced.get(k)
        return known is not None and nfc(known.username) == username

    def _claimants_aside(self, k: str, username: str) -> None:
        """The people joined under ``username``, the account syncd holds for the leaver of
        key ``k``, set aside: kept as they are while it is the leaver's (one who left too
        keeps their own account: held up, and said)."""
        folded = look_alike(username)
        kept: list[tuple[str, Employee]] = []
        for key, e in self.merged:
            if e.username and look_alike(e.username) == folded:
                why = (
                    f"username {e.username!r} is the account syncd holds for {k!r}, who left: "
                    "kept as they are while it is theirs"
                )
                held = e.state is State.DEPARTED
                self.rejected.append(RejectedRow(key, why, key=key, departure_held=held))
            else:
                kept.append((key, e))
        self.merged = kept

    def _hold(self, rows: Iterable[int]) -> None:
        """These rows say their person departed, and the join cannot tell whose departure
        it is: held up, and said (``RejectedRow.departure_held``)."""
        for n in rows:
            self.rejected[n] = replace(self.rejected[n], departure_held=True)

    def _unhold(self, rows: Iterable[int]) -> None:
        """These rows' departure is no longer said to be held up: outranked."""
        for n in rows:
            if self.rejected[n].departure_held:
                self.rejected[n] = replace(self.rejected[n], departure_held=False)

    def _blind(self) -> tuple[str, ...]:
        """The sources that decide status and should say who is departed, but this read
        cannot (syncd.plan.guards.cannot_tell_departed, each alone): a status column
        renamed in one export, a departed_filter that matches nobody, while another source
        still reads a status and would decide for everyone."""
        deciding = {self.names[i] for i in self.orders[FIELDS.index("state")]}
        found = []
        for r in self.reads:
            if r.name in deciding and r.expects_status:
                why = cannot_tell_departed(r.directory)
                if why is not None:
                    found.append(f"{r.name}: {why}")
        return tuple(found)

    def _named(self, directory: Directory) -> Directory:
        """Rows build_directory rejected by key, named by the sources that hold the person."""
        people, names = self.people, self.names
        named = tuple(
            replace(r, where=_where(r.key, people[r.key], names))
            if r.key in people and r.where == r.key
            else r
            for r in directory.rejected
        )
        return replace(directory, rejected=named) if named != directory.rejected else directory


def _present(slots: Slots) -> Iterable[tuple[int, Employee]]:
    """Each source's record in the slots, with the source's index."""
    return ((i, e) for i, e in enumerate(slots) if e is not None)


def _key_held(read: SourceRead) -> None:
    """KeyNotHeld when the source has records and none holds its key. Most often its first
    record holds one: nothing more is read."""
    people = read.directory.employees
    if people and all(key_value(e, read.key, read.normalize) is None for e in people.values()):
        raise KeyNotHeld(read.name, read.key, len(people))


def _indexed(
    read: SourceRead,
    i: int,
    count: int,
    people: dict[str, Slots],
    rejected: list[RejectedRow],
) -> dict[str, list[Employee]]:
    """One source's records put in their slot by key; returns the keys held twice or more."""
    records = list(read.directory.employees.values())
    keys = record_keys(records, read.key, read.normalize)
    twice: dict[str, list[Employee]] = {}
    for e, k in zip(records, keys, strict=True):
        if k is None:
            rejected.append(_keyless(read, e))
            continue
        slots = people.get(k)
        if slots is None:
            slots = people[k] = [None] * count
        elif (first := slots[i]) is not None:
            twice.setdefault(k, [first]).append(e)
            continue
        slots[i] = e
    for k in twice:
        people[k][i] = None
    return twice


def _keyless(read: SourceRead, e: Employee) -> RejectedRow:
    return RejectedRow(
        f"{read.name}: person {e.id!r}",
        f"no join key: {read.key} is empty for {e.username!r}, so this record "
        f"cannot be joined with the other sources' (source {read.name!r})",
        key=None,
        username=e.username,
    )


def _plainly_valid(merged: list[tuple[str, Employee]]) -> bool:
    """Whether every joined person has a username and a name, and no username (in any
    spelling, syncd.spelling) is held twice: then build_directory would reject nobody."""
    if not all(e.username and e.name for _, e in merged):
        return False
    seen = {u.casefold() if (u := e.username).isascii() else look_alike(u) for _, e in merged}
    return len(seen) == len(merged)


def _where(key: str | None, slots: Sequence[Employee | None], names: tuple[str, ...]) -> str:
    found = "+".join(names[i] for i, s in enumerate(slots) if s is not None)
    return f"{found}: key {key!r}"


def _carried(read: SourceRead, rejected: list[RejectedRow]) -> None:
    """A source's own rejected rows, named by the source; a read that could not say who is
    gone (a row that may hide others, a part not read) makes the joined read say it too.
    Warnings are told (Directory.warnings), never taken for a partial read."""
    d = read.directory
    for row in d.rejected:
        # A department's id is the tree's; a person's row names the joined id its join key
        # gives (rekeys.weigh_rejected tells a leaver from the new hire given their username).
        key = row.key if row.kind is not Kind.EMPLOYEE else joined_key(row, read)
        hides = row.may_hide_rows or (row.kind is Kind.EMPLOYEE and not (key or row.username))
        rejected.append(
            RejectedRow(
                f"{read.name}: {row.where}",
                row.reason,
                row.kind,
                key,
                row.username,
                hides,
                status=row.status,  # a status value nobody named stays loud when joined
                identifiers=row.identifiers,
                departure_held=row.departure_held,  # the source's own rows disagreed
                mentions=row.mentions,  # the texts of a row that may hide others
            )
        )
    for part in d.unread:  # a domain not read: who it holds is unknown
        rejected.append(
            RejectedRow(
                f"{read.name}: {d.source}",
                f"part of source {read.name!r} was not read ({part}): nobody is a leaver",
                Kind.EMPLOYEE,
                may_hide_rows=True,
            )
        )


def _origins(slots: Slots, precedence: Precedence, names: tuple[str, ...]) -> dict[str, str]:
    """Which source gave each field: the candidates Precedence compiles from, walked."""
    found = [s is not None for s in slots]
    gave: dict[str, str] = {}
    for n, name in enumerate(FIELDS):
        index = n + 1  # the field's place in Employee (the id is 0)
        candidates = precedence.candidates(index, found)
        if candidates and precedence.first_decides(index):
            gave[name] = names[candidates[0]]
            continue
        for s in candidates:
            record = slots[s]
            assert record is not None
            if precedence.gives(index, s, record[index], record):
                gave[name] = names[s]
                break
    return gave


def _any_username(slots: Slots) -> str | None:
    return next((e.username for e in slots if e is not None and e.username), None)
