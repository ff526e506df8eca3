"""Paged searches on a session's socket, their answers decoded here rather than by ldap3.

ldap3 encodes each search request; the answers are read off the connection's socket and
decoded here: ldap3 turns every entry into dicts of formatted values through
per-attribute configuration lookups, which costs about ten times what the wire does (see
DESIGN.md, performance facts). Entries are streamed page by page and never held all at
once; their order is never relied on.
"""

from __future__ import annotations

import logging
from collections.abc import Generator, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import ldap3
from ldap3.core.exceptions import LDAPException
from ldap3.core.results import RESULT_CODES
from ldap3.operation.search import search_operation
from ldap3.protocol.rfc2696 import paged_search_control

if TYPE_CHECKING:
    from syncd.sources.ldap.connection import Session

log = logging.getLogger(__name__)

_RECV_SIZE = 1 << 18
_PAGED_RESULTS_OID = b"1.2.840.113556.1.4.319"


@dataclass(frozen=True)
class Search:
    step: str  # for error texts: "search users under ou=People,dc=acme,dc=example"
    base: str
    filter: str
    attributes: tuple[str, ...]
    page_size: int
    # Continuation references are collected here (AD: other partitions and domains of the
    # forest, for the reader to follow or report); None: a reference fails the search.
    references: list[str] | None = None
    # Incremental reads: the filter part selecting what changed since the mark, kept
    # apart because the counter it compares is the server's own (AD's uSNChanged): a
    # search sent on to another server carries that server's instead.
    changed: str = ""

    @property
    def sent_filter(self) -> str:
        """The filter sent: ``filter``, narrowed by ``changed``."""
        return f"(&{self.filter}{self.changed})" if self.changed else self.filter


class Several(tuple[bytes, ...]):
    """Every value of an attribute that has more than one, in the order the server sent
    them. That order means nothing (LDAP promises none, and a change may reorder them):
    each reader of a slot decides what several values mean (see ``values.py``)."""

    __slots__ = ()


# A DN and the value of each requested attribute by slot (None: not present; Several:
# more than one), plus one last slot that is always None.
Value = bytes | Several | None
Values = list[Value]
Entry = tuple[str, Values]


class WithSeveral(list[Value]):
    """An entry's values where some slots hold Several (``slots``): a reader tells the rare
    entry that needs its rules by the list's type, and finds those slots without looking
    at each one."""

    __slots__ = ("slots",)

    def __init__(self, values: Values, slots: list[int]) -> None:
        super().__init__(values)
        self.slots = tuple(slots)


class Wire:
    """Paged searches on a session's socket, answers decoded here (see the module docstring)."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self._buffer = b""
        self._offset = 0

    def entries(self, search: Search) -> Iterator[Entry]:
        """Every entry the search finds, page by page, in no particular order."""
        slots = {name.lower().encode("utf-8"): i for i, name in enumerate(search.attributes)}
        request = self._request(search)
        cookie = b""
        page = 0
        while True:
            page += 1
            step = f"{search.step}: page {page}"
            try:
                message_id = send_page(self.session.connection, request, search.page_size, cookie)
                cookie = yield from self._page(
                    message_id, search, slots, len(search.attributes) + 1, step
                )
            except TimeoutError as exc:
                raise self.session.fail(
                    step, f"no answer within {self.session.read_timeout:g}s"
                ) from exc
            except (OSError, LDAPException) as exc:
                raise self.session.fail(
                    step, f"connection lost ({exc or type(exc).__name__})"
                ) from exc
            except (IndexError, ValueError) as exc:
                raise self.session.fail(
                    step, f"could not decode the server's answer ({exc})"
                ) from exc
            if not cookie:
                return

    def _request(self, search: Search) -> Any:
        connection = self.session.connection
        try:
            return search_operation(
                search_base=search.base,
                search_filter=search.sent_filter,
                search_scope=ldap3.SUBTREE,
                dereference_aliases=ldap3.DEREF_NEVER,
                attributes=list(search.attributes),
                size_limit=0,
                time_limit=0,
                types_only=False,
                auto_escape=connection.auto_escape,
                auto_encode=connection.auto_encode,
            )
        except LDAPException as exc:
            raise self.session.fail(
                search.step, f"invalid filter {search.sent_filter!r}: {exc}"
            ) from exc

    def _page(
        self, message_id: int, search: Search, slots: dict[bytes, int], width: int, step: str
    ) -> Generator[Entry, None, bytes]:
        """The entries of one page; returns the cookie for the next (empty: none left).

        Messages are framed straight from the receive buffer: a generator per message
        layer would cost as much as decoding the entry.
        """
        data, i = self._buffer, self._offset
        while True:
            n = len(data)
            while n - i >= 2:
                if data[i] != 0x30:
                    raise ValueError(f"not an LDAP message (byte 0x{data[i]:02x})")
                length = data[i + 1]
                if length < 0x80:
                    start = i + 2
                    end = start + length
                else:
                    start = i + 2 + (length & 0x7F)
                    if start > n:
                        break
                    end = start + int.from_bytes(data[i + 2 : start], "big")
                if end > n:
                    break
                k = data[start + 1]  # messageID: INTEGER
                got_id = int.from_bytes(data[start + 2 : start + 2 + k], "big")
                op = start + 2 + k
                i = end
                if got_id == message_id and data[op] == 0x64:  # SearchResultEntry
                    yield decode_entry(data, op, slots, width)
                    continue
                self._buffer, self._offset = data, i
                done = self._other_message(data, op, end, got_id, message_id, search, step)
                if done is not None:
                    return done
            data = data[i:] + self._receive()
            i = 0

    def _other_message(
        self,
        data: bytes,
        op: int,
        end: int,
        got_id: int,
        message_id: int,
        search: Search,
        step: str,
    ) -> bytes | None:
        """Handle any message but an entry; a SearchResultDone gives the next page's cookie."""
        tag = data[op]
        if got_id != message_id:
            if got_id == 0:
                message = _unsolicited(data, op)
                raise self.session.fail(step, f"the server ended the session ({message})")
            raise self.session.fail(step, f"answer to another request ({got_id}, not {message_id})")
        if tag == 0x65:  # SearchResultDone
            return self._done(data, op, end, search, step)
        if tag == 0x73:  # SearchResultReference
            urls = _strings(data, op, end)
            if search.references is None:
                raise self.session.fail(
                    step,
                    f"part of the subtree is on another server (referral to {', '.join(urls)});"
                    " a partial read is not used: point the base below it",
                )
            search.references.extend(urls[:1])  # any one URL of a reference names the subtree
        else:
            log.debug("%s: ignored a message with tag 0x%02x", step, tag)
        return None

    def _receive(self) -> bytes:
        sock = self.session.connection.socket
        if sock is None:
            raise ConnectionError("the connection is closed")
        chunk: bytes = sock.recv(_RECV_SIZE)
        if not chunk:
            raise ConnectionError("the server closed the connection")
        return chunk

    def _done(self, data: bytes, i: int, end: int, search: Search, step: str) -> bytes:
        code, matched, message, referrals, op_end = decode_result(data, i)
        if code == 0:
            return paged_cookie(data, op_end, end)
        name = RESULT_CODES.get(code, f"result code {code}")
        detail = f" ({message})" if message else ""
        if code == 32:
            raise self.session.fail(
                step, f"the base {search.base} does not exist: noSuchObject{detail}"
            )
        if code == 10:
            raise self.session.fail(
                step,
                f"the base {search.base} is on another server: referral to {', '.join(referrals)}",
            )
        if code in (3, 4, 11):
            raise self.session.fail(
                step,
                f"the server stopped the search: {name}{detail};"
                " raise the server's limits for the bind DN",
            )
        return_text = f"{name}{detail}" + (f", matched {matched}" if matched else "")
        raise self.session.fail(step, return_text)


def send_page(connection: ldap3.Connection, request: Any, page_size: int, cookie: bytes) -> int:
    """Send one page's search request; its answer is read by Wire, not by ldap3."""
    controls = [paged_search_control(True, page_size, cookie)]
    message_id: int = connection.strategy.send("searchRequest", request, controls)
    connection.strategy._outstanding.pop(message_id, None)
    return message_id


def decode_entry(data: bytes, i: int, slots: dict[bytes, int], width: int) -> Entry:
    """A SearchResultEntry at ``data[i]``: its DN and the value(s) of each requested attribute.

    The hot loop of a read: BER lengths are decoded inline, attribute names are matched
    as bytes (a name seen in another case is learnt once into ``slots``).
    """
    i += 1
    b = data[i]
    i += 1 if b < 0x80 else 1 + (b & 0x7F)  # protocolOp length: not needed
    i += 1  # objectName: OCTET STRING
    b = data[i]
    if b < 0x80:
        n = b
        i += 1
    else:
        k = b & 0x7F
        n = int.from_bytes(data[i + 1 : i + 1 + k], "big")
        i += 1 + k
    dn = data[i : i + n].decode("utf-8")
    i += n + 1  # attributes: SEQUENCE
    b = data[i]
    if b < 0x80:
        n = b
        i += 1
    else:
        k = b & 0x7F
        n = int.from_bytes(data[i + 1 : i + 1 + k], "big")
        i += 1 + k
    stop = i + n
    values: Values = [None] * width
    several: list[int] | None = None  # the slots with several values
    while i < stop:
        i += 1  # PartialAttribute: SEQUENCE
        b = data[i]
        i += 2 if b < 0x80 else 2 + (b & 0x7F)  # its length, then the type's tag
        b = data[i]
        if b < 0x80:
            n = b
            i += 1
        else:
            k = b & 0x7F
            n = int.from_bytes(data[i + 1 : i + 1 + k], "big")
            i += 1 + k
        name = data[i : i + n]
        i += n + 1  # vals: SET
        b = data[i]
        if b < 0x80:
            n = b
            i += 1
        else:
            k = b & 0x7F
            n = int.from_bytes(data[i + 1 : i + 1 + k], "big")
            i += 1 + k
        set_end = i + n
        slot = slots.get(name)
        if slot is None:
            slot = slots[name] = slots.get(name.lower(), -1)
        if slot >= 0 and n:
            b = data[i + 1]  # the first value's length, after its tag
            if b < 0x80:
                end = i + 2 + b
                values[slot] = data[i + 2 : end]
            else:
                k = b & 0x7F
                start = i + 2 + k
                end = start + int.from_bytes(data[i + 2 : start], "big")
                values[slot] = data[start:end]
            if end < set_end:  # more than one value: rare, and never reduced to the first here
                values[slot] = _several(data, i, set_end)
                several = [*several, slot] if several else [slot]
        i = set_end
    return dn, values if several is None else WithSeveral(values, several)


def _several(data: bytes, i: int, stop: int) -> Several:
    """Every value of the SET OF values at ``data[i:stop]``."""
    found = []
    while i < stop:
        b = data[i + 1]  # each value: OCTET STRING, its length inline as in decode_entry
        if b < 0x80:
            start = i + 2
            i = start + b
        else:
            start = i + 2 + (b & 0x7F)
            i = start + int.from_bytes(data[i + 2 : start], "big")
        found.append(data[start:i])
    return Several(found)


def _tlv(data: bytes, i: int) -> tuple[int, int, int]:
    """(tag, start of value, end of value) of the element at ``data[i]``."""
    tag = data[i]
    b = data[i + 1]
    if b < 0x80:
        return tag, i + 2, i + 2 + b
    k = b & 0x7F
    start = i + 2 + k
    return tag, start, start + int.from_bytes(data[i + 2 : start], "big")


def _strings(data: bytes, i: int, stop: int) -> list[str]:
    """The OCTET STRINGs inside the constructed element at ``data[i]``."""
    _, j, end = _tlv(data, i)
    out = []
    while j < min(end, stop):
        _, start, j = _tlv(data, j)
        out.append(data[start:j].decode("utf-8", "replace"))
    return out


def decode_result(data: bytes, i: int) -> tuple[int, str, str, list[str], int]:
    """An LDAPResult: code, matched DN, diagnostic message, referral URLs, end of the element."""
    _, j, op_end = _tlv(data, i)
    _, start, j = _tlv(data, j)
    code = int.from_bytes(data[start:j], "big")
    _, start, j = _tlv(data, j)
    matched = data[start:j].decode("utf-8", "replace")
    _, start, j = _tlv(data, j)
    message = data[start:j].decode("utf-8", "replace")
    referrals = _strings(data, j, op_end) if j < op_end and data[j] == 0xA3 else []
    return code, matched, message, referrals, op_end


def _unsolicited(data: bytes, i: int) -> str:
    """What an unsolicited notification (a notice of disconnection) says."""
    try:
        code, _, message, _, _ = decode_result(data, i)
    except IndexError:
        return "unsolicited notification"
    return message or RESULT_CODES.get(code, f"result code {code}")


def paged_cookie(data: bytes, i: int, end: int) -> bytes:
    """The paged-results cookie among the controls after a SearchResultDone (empty: done)."""
    if i >= end or data[i] != 0xA0:
        return b""
    _, j, controls_end = _tlv(data, i)
    while j < controls_end:
        _, k, control_end = _tlv(data, j)
        _, start, k = _tlv(data, k)
        oid = data[start:k]
        value = b""
        while k < control_end:
            tag, start, k = _tlv(data, k)
            if tag == 0x04:
                value = data[start:k]
        if oid == _PAGED_RESULTS_OID and value:
            _, m, _ = _tlv(value, 0)  # realSearchControlValue: SEQUENCE
            _, _, m = _tlv(value, m)  # size
            _, start, m = _tlv(value, m)  # cookie
            return value[start:m]
        j = control_end
    return b""
