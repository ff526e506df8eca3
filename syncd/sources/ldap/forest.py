"""Where a read's searches go: the server read from and, for Active Directory, the forest.

A search of an Active Directory domain answers with continuation references where the
subtree goes on in another partition: the application partitions (DomainDnsZones,
ForestDnsZones, Configuration), which hold no people, and the other domains of the
forest (a child domain below the base). Those domains are read through the Global
Catalog when ``global_catalog`` is set: the same search, based at the referenced DN, on
the catalog (which holds every domain's objects, with the attributes of its partial
attribute set). Otherwise each is a warning naming the domain that was not read, in the
log and in the Directory. Never are they skipped silently; for OpenLDAP any reference
fails the read, as before.

An incremental read asks the catalog for what changed since the catalog's own mark
(``uSNChanged`` counts per server), for the domains read under that mark; any other
domain, or a mark from another catalog server, is read in full.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from dataclasses import replace
from urllib.parse import urlsplit

import ldap3
from ldap3.core.exceptions import LDAPException
from ldap3.utils.uri import parse_uri

from syncd.config import LdapSource
from syncd.sources import active_directory as ad
from syncd.sources.ldap.connection import Session, connect
from syncd.sources.ldap.wire import Entry, Search

log = logging.getLogger(__name__)


class Forest:
    """Runs a read's searches; follows or reports what Active Directory refers elsewhere."""

    def __init__(self, session: Session, settings: LdapSource, password: str | None) -> None:
        self.session = session
        self.settings = settings
        self.warnings: list[str] = []
        self.unread: list[str] = []  # the domains not read (each a warning too)
        self._password = password
        self._catalog: Session | None = None
        self._warned: set[str] = set()
        # Incremental reads: the catalog's mark from the read before (None: none of its own).
        self.catalog_since: ad.CatalogMark | None = None
        self._catalog_server = ""
        self._catalog_usn: int | None = None
        self._read_domains: set[str] = set()

    def entries(self, search: Search) -> Iterator[Entry]:
        """Every entry of the search, and of the domains it refers to when they are read."""
        if self.settings.flavor != "active_directory":
            yield from self.session.wire.entries(search)
            return
        references: list[str] = []
        yield from self.session.wire.entries(replace(search, references=references))
        for url in dict.fromkeys(references):
            yield from self._referred(search, url)

    def close(self) -> None:
        if self._catalog is not None:
            self._catalog.close()
        self.session.close()

    def _referred(self, search: Search, url: str) -> Iterator[Entry]:
        try:
            base = (parse_uri(url) or {}).get("base") or ""
        except (LDAPException, ValueError):  # not an LDAP URL
            base = ""
        if ad.is_application_partition(base):
            log.debug("%s: %s is an application partition (no people): not read", search.step, url)
            return
        catalog = self.settings.global_catalog
        if not base or catalog is None:
            self._warn(search, url, base)
            return
        session = self._catalog_session()
        domain = ad.domain_of(base)
        changed = self._changed_in(domain, base, search) if search.changed else ""
        log.info(
            "%s: reading %s%s through the Global Catalog %s",
            search.step,
            base,
            " (changes)" if changed else "",
            catalog,
        )
        step = f"{search.step}: {base} through the Global Catalog"
        if domain:
            self._read_domains.add(domain)
        # The catalog holds the whole forest: what it refers to again is not followed.
        yield from session.wire.entries(
            replace(search, step=step, base=base, references=[], changed=changed)
        )

    @property
    def catalog_mark(self) -> ad.CatalogMark | None:
        """The catalog's mark for the next read: None if no domain was read through it."""
        if self._catalog_usn is None or not self._read_domains:
            return None
        return ad.CatalogMark(
            self._catalog_usn, self._catalog_server, frozenset(self._read_domains)
        )

    def _changed_in(self, domain: str, base: str, search: Search) -> str:
        """The catalog's own change filter for a domain; "" reads it in full."""
        since = self.catalog_since
        if since is not None and since.server == self._catalog_server and domain in since.domains:
            return since.changed_filter()
        log.info(
            "%s: %s is read in full through the Global Catalog %s: no mark of that "
            "server's own for it from the read before",
            search.step,
            base,
            self._catalog_server,
        )
        return ""

    def _catalog_session(self) -> Session:
        if self._catalog is None:
            assert self.settings.global_catalog is not None
            catalog = self.settings.model_copy(update={"urls": [self.settings.global_catalog]})
            self._catalog = connect(catalog, self._password)
            # Before any search on it: a change made during the read is read next time.
            self._catalog_server, self._catalog_usn = root_dse(self._catalog)
            if self._catalog_usn is None:
                log.warning(
                    "the Global Catalog %s publishes no highestCommittedUSN: the domains "
                    "read through it are read in full by every incremental read",
                    self.settings.global_catalog,
                )
        return self._catalog

    def _warn(self, search: Search, url: str, base: str) -> None:
        domain = ad.domain_of(base) or url
        if domain in self._warned:
            return
        self._warned.add(domain)
        message = (
            f"the domain {domain} was not read: {search.step} was referred to {url} "
            "(another domain of the forest); set source.ldap.global_catalog to read it "
            "through a Global Catalog, or set users_base so that it is left out"
        )
        log.warning("%s", message)
        self.warnings.append(message)
        self.unread.append(f"the domain {domain}")


def root_dse(session: Session) -> tuple[str, int | None]:
    """An AD server's name and ``highestCommittedUSN``, from its root DSE."""
    connection = session.connection
    try:
        found = connection.search(
            "", "(objectClass=*)", ldap3.BASE, attributes=["highestCommittedUSN", "dnsHostName"]
        )
    except (LDAPException, OSError) as exc:
        raise session.fail("read the root DSE", str(exc)) from exc
    entries = (connection.response or []) if found else []
    raw = entries[0].get("raw_attributes", {}) if entries else {}
    server = (
        _first_raw(raw, "dnsHostName") or urlsplit(session.url).hostname or session.url
    ).lower()
    usn = _first_raw(raw, "highestCommittedUSN")
    return server, int(usn) if usn is not None and usn.isdigit() else None


def _first_raw(raw: Mapping[str, list[bytes]], name: str) -> str | None:
    for key, values in raw.items():
        if key.lower() == name.lower() and values:
            return values[0].decode("utf-8", "replace")
    return None
