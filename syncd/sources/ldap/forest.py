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
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import replace

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
        self._password = password
        self._catalog: Session | None = None
        self._warned: set[str] = set()

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
        log.info("%s: reading %s through the Global Catalog %s", search.step, base, catalog)
        step = f"{search.step}: {base} through the Global Catalog"
        # The catalog holds the whole forest: what it refers to again is not followed.
        yield from session.wire.entries(replace(search, step=step, base=base, references=[]))

    def _catalog_session(self) -> Session:
        if self._catalog is None:
            assert self.settings.global_catalog is not None
            catalog = self.settings.model_copy(update={"urls": [self.settings.global_catalog]})
            self._catalog = connect(catalog, self._password)
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
