"""A real Active Directory domain controller for tests: Samba, provisioned on loopback.

``samba-tool domain provision`` makes a fresh domain (realm ACME.TEST) in a directory of
the caller's choosing, with its own smb.conf; ``samba -i -M single`` then serves it, with
only the LDAP service, bound to 127.0.0.1, as a child process stopped by the context
manager (or by the kernel, with SIGTERM, if the process that started it dies). Nothing of
the system's Samba configuration or state is used.

Samba's LDAP server listens on the standard ports (389, 636, and the Global Catalog's 3268
and 3269): they must be free on 127.0.0.1. A simple bind needs TLS, so the server gets a
certificate from the tests' own CA (``tests.support.slapd.make_tls_files``).

    with running_samba(tmp_path, tls_files, ldif=...) as dc:
        ... read from dc.url (ldaps://127.0.0.1:636), bind as dc.bind_dn / dc.password ...
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import ldap3
from ldap3.core.exceptions import LDAPException
from pydantic import SecretStr

from syncd.config import LdapSource
from tests.support.processes import (
    die_with_parent_in_own_group,
    port_free,
    run_checked,
    stop_process,
    wait_until_serving,
)
from tests.support.slapd import TlsFiles
from tests.support.waiting import scaled

SAMBA = Path("/usr/sbin/samba")
SAMBA_TOOL = Path("/usr/bin/samba-tool")
SYSTEM_PYTHON = Path("/usr/bin/python3")  # Debian's, with Samba's python3-samba bindings
REALM = "ACME.TEST"
DOMAIN = "ACME"
BASE = "DC=acme,DC=test"
ADMIN_PASSWORD = "Samba-Admin-Pw-4b7e"  # meets the domain's default complexity rules
PORTS = (389, 636, 3268, 3269)
START_TIMEOUT = scaled(30.0)

# Adds LDIF to the domain's database before the server starts: one transaction, through
# Samba's own database modules (about 1 ms an entry; over LDAP it is ten times that).
# flags=0: a naming context added makes a partition file (SamDB's default forbids it).
_OFFLINE_ADD = """
import sys
from samba.auth import system_session
from samba.param import LoadParm
from samba.samdb import SamDB
lp = LoadParm()
lp.load(sys.argv[1])
db = SamDB(url=sys.argv[2], session_info=system_session(), lp=lp, flags=0)
db.transaction_start()
db.add_ldif(open(sys.argv[3], encoding="utf-8").read())
db.transaction_commit()
"""


def ad_source(dc: SambaDC, tls: TlsFiles, **values: Any) -> LdapSource:
    """An Active Directory source reading ``dc`` over TLS as its administrator; ``values``
    (users_base and the rest) are added, or replace these."""
    settings: dict[str, Any] = {
        "urls": [dc.url],
        "flavor": "active_directory",
        "ca_file": tls.ca_cert,
        "bind_dn": dc.bind_dn,
        "bind_password": SecretStr(dc.password),
        "connect_timeout": 5.0,
        "read_timeout": 20.0,
    }
    return LdapSource(**(settings | values))


class SambaDC:
    """One provisioned domain; ``start``/``stop`` keep its data."""

    def __init__(self, directory: Path, tls: TlsFiles) -> None:
        for program in (SAMBA, SAMBA_TOOL, SYSTEM_PYTHON):
            if not program.exists():
                raise RuntimeError(f"{program} is missing: `make system-packages` installs Samba")
        self.directory = directory
        self.tls = tls
        self.base = BASE
        self.bind_dn = f"CN=Administrator,CN=Users,{BASE}"
        self.password = ADMIN_PASSWORD
        self.url = "ldaps://127.0.0.1:636"
        self.global_catalog_url = "ldaps://127.0.0.1:3269"
        self.config_file = directory / "etc" / "smb.conf"
        self.log_file = directory / "samba.log"
        self._process: subprocess.Popen[bytes] | None = None
        self._provision()

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    # ------------------------------------------------------------ life cycle

    def _options(self) -> list[str]:
        d = self.directory
        options = {
            "interfaces": "127.0.0.1",
            "bind interfaces only": "yes",
            "netbios name": "DC1",
            "log file": str(self.log_file),
            "pid directory": str(d / "run"),
            "ncalrpc dir": str(d / "run" / "ncalrpc"),
            "winbindd socket directory": str(d / "run" / "winbindd"),
            "tls keyfile": str(self.tls.key),
            "tls certfile": str(self.tls.cert),
            "tls cafile": "",
        }
        return [f"--option={key}={value}" for key, value in options.items()]

    def _provision(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        (self.directory / "run").mkdir(exist_ok=True)
        run_checked(
            [SAMBA_TOOL, "domain", "provision", "--use-rfc2307", f"--realm={REALM}",
             f"--domain={DOMAIN}", "--server-role=dc", "--dns-backend=NONE",
             f"--adminpass={ADMIN_PASSWORD}", f"--targetdir={self.directory}", *self._options()]
        )  # fmt: skip

    def add_offline(self, ldif: str) -> None:
        """Add entries straight to the database (the server must be stopped)."""
        if self.running:
            raise RuntimeError("stop the domain controller before adding entries offline")
        path = self.directory / "offline.ldif"
        path.write_text(ldif, encoding="utf-8")
        sam = self.directory / "private" / "sam.ldb"
        run_checked([SYSTEM_PYTHON, "-c", _OFFLINE_ADD, self.config_file, sam, path])

    def start(self) -> None:
        """Start the LDAP service; return once it answers a bind over LDAPS."""
        if self.running:
            return
        taken = [port for port in PORTS if not port_free(port)]
        if taken:
            raise RuntimeError(
                f"127.0.0.1 ports {taken} are taken: Samba's LDAP server needs 389, 636, "
                "3268 and 3269 (is another Samba or LDAP server running?)"
            )
        self._log_start = self.log_file.stat().st_size if self.log_file.exists() else 0
        with (self.directory / "samba.out").open("ab") as out:
            self._process = subprocess.Popen(
                [SAMBA, "-i", "-M", "single", "-s", self.config_file,
                 "--option=server services=ldap", *self._options()],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=out,
                preexec_fn=die_with_parent_in_own_group,
            )  # fmt: skip
        self._wait_until_ready()

    def stop(self) -> None:
        process, self._process = self._process, None
        stop_process(process)

    def _wait_until_ready(self) -> None:
        process = self._process
        assert process is not None
        status = wait_until_serving(
            "samba", process, self._problem, timeout=START_TIMEOUT, tail=self._tail, pause=0.05
        )
        if status is not None:
            self._process = None
            raise RuntimeError(f"samba exited with status {status}:\n{self._tail()}")

    def _problem(self) -> str | None:
        """None if Samba's LDAP server takes a bind, else what is wrong."""
        try:
            with self.connection(timeout=1.0):
                return None
        except LDAPException as exc:
            return str(exc)

    def _tail(self) -> str:
        text = ""
        for path in (self.directory / "samba.out", self.log_file):
            with suppress(OSError):
                text += path.read_text(encoding="utf-8", errors="replace")[-1500:]
        return text

    # ------------------------------------------------------------ data

    @contextmanager
    def connection(self, timeout: float = 5.0) -> Iterator[ldap3.Connection]:
        """An LDAPS connection bound as the domain's Administrator."""
        tls = ldap3.Tls(validate=2, ca_certs_file=str(self.tls.ca_cert))  # ssl.CERT_REQUIRED
        server = ldap3.Server(
            "127.0.0.1",
            port=636,
            use_ssl=True,
            tls=tls,
            get_info=ldap3.NONE,
            connect_timeout=timeout,
        )
        conn = ldap3.Connection(
            server,
            self.bind_dn,
            self.password,
            receive_timeout=int(timeout) or 1,
            check_names=False,
        )
        try:
            if not conn.bind():
                raise LDAPException(f"bind refused: {conn.result['description']}")
            yield conn
        finally:
            with suppress(LDAPException):
                conn.unbind()

    def add(self, dn: str, object_class: str | list[str], attributes: dict[str, object]) -> None:
        with self.connection() as conn:
            if not conn.add(dn, object_class, attributes):
                raise RuntimeError(f"add {dn}: {conn.result}")

    def modify(self, dn: str, changes: dict[str, object]) -> None:
        """Replace attribute values online: ``{"title": "Lead"}``."""
        with self.connection() as conn:
            if not conn.modify(dn, {k: [(ldap3.MODIFY_REPLACE, [v])] for k, v in changes.items()}):
                raise RuntimeError(f"modify {dn}: {conn.result}")

    def highest_committed_usn(self) -> int:
        with self.connection() as conn:
            conn.search("", "(objectClass=*)", ldap3.BASE, attributes=["highestCommittedUSN"])
            return int(conn.response[0]["raw_attributes"]["highestCommittedUSN"][0])


@contextmanager
def running_samba(directory: Path, tls: TlsFiles, *, ldif: str = "") -> Iterator[SambaDC]:
    """A provisioned, started domain controller (``ldif`` added first), stopped on leaving."""
    dc = SambaDC(directory, tls)
    if ldif:
        dc.add_offline(ldif)
    try:
        dc.start()
        yield dc
    finally:
        dc.stop()


BULK_PEOPLE = 1005  # more than a page of 1000, Active Directory's cap
CHILD = f"DC=child,{BASE}"


def samba_ldif(bulk: int) -> str:
    """The tests' domain data: OU=Acme (a small company), OU=Bulk (``bulk`` people) and
    a child domain, DC=child (ivy).

    userAccountControl 544 is NORMAL_ACCOUNT | PASSWD_NOTREQD: an enabled account without
    a password; 546 adds ACCOUNTDISABLE. accountExpires is a FILETIME (0: never).

    Samba cannot join a second domain to the forest; the child domain stands in for one:
    a naming context of its own below the domain (instanceType 13: its head, writable,
    with a naming context above it). Searches of the domain refer to it, as AD refers to
    a child domain, and the Global Catalog port reads it; it is held by the same server.
    """
    acme = f"OU=Acme,{BASE}"
    entries = [
        (acme, "organizationalUnit", {}),
        (f"OU=Engineering,{acme}", "organizationalUnit", {}),
        (f"OU=Sales,{acme}", "organizationalUnit", {}),
        (f"CN=Alice Liddell,OU=Engineering,{acme}", "user",
         {"sAMAccountName": "alice", "displayName": "Alice L.", "mail": "alice@acme.test",
          "employeeID": "1001", "title": "Engineer", "userAccountControl": "544"}),
        (f"CN=Bob Builder,OU=Engineering,{acme}", "user",
         {"sAMAccountName": "bob", "userAccountControl": "546"}),
        (f"CN=Carol Expired,OU=Sales,{acme}", "user",  # expired on 2020-01-01
         {"sAMAccountName": "carol", "userAccountControl": "544",
          "accountExpires": "132223104000000000"}),
        (f"CN=Dave Never,OU=Sales,{acme}", "user",
         {"sAMAccountName": "dave", "userAccountControl": "544", "accountExpires": "0"}),
        (f"CN=PC01,OU=Engineering,{acme}", "computer", {"sAMAccountName": "PC01$"}),
        (f"OU=Bulk,{BASE}", "organizationalUnit", {}),
        (CHILD, "domainDNS", {"instanceType": "13"}),
        (f"CN=Ivy Child,{CHILD}", "user", {"sAMAccountName": "ivy", "userAccountControl": "544"}),
    ]  # fmt: skip
    entries += [
        (f"CN=Person {i:04d},OU=Bulk,{BASE}", "user",
         {"sAMAccountName": f"person{i:04d}", "userAccountControl": "544"})
        for i in range(bulk)
    ]  # fmt: skip
    chunks = []
    for dn, object_class, attributes in entries:
        lines = [f"dn: {dn}", f"objectClass: {object_class}"]
        lines += [f"{name}: {value}" for name, value in attributes.items()]
        chunks.append("\n".join(lines) + "\n")
    return "\n".join(chunks)
