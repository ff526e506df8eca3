"""A real OpenLDAP ``slapd`` for tests and benchmarks: own config, own data, loopback only.

Nothing of the system's slapd service is used: the configuration (slapd.conf style) and
the mdb database live in a directory of the caller's choosing, the server listens on free
ports of 127.0.0.1, runs as a child process and is stopped by the context manager (or
by the kernel, with SIGTERM, if the process that started it dies). Only the schema
files the Debian package installs (read only) and its modules are shared.

    with running_slapd(tmp_path) as slapd:
        slapd.add_ldif("dn: ou=Sales,dc=acme,dc=example\\nobjectClass: organizationalUnit\\n...")
        ... read from slapd.url, bind as slapd.bind_dn / slapd.password ...
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

import ldap3
from ldap3.core.exceptions import LDAPException

from tests.support.processes import (
    die_with_parent_in_own_group,
    free_port,
    port_free,
    run_checked,
    stop_process,
    wait_until_serving,
)
from tests.support.waiting import scaled

SLAPD = Path("/usr/sbin/slapd")
SLAPADD = Path("/usr/sbin/slapadd")
SLAPTEST = Path("/usr/sbin/slaptest")
MODULE_DIR = Path("/usr/lib/ldap")
SCHEMA_DIR = Path("/etc/ldap/schema")  # the package's schema files: read, never changed
DEFAULT_SCHEMAS = ("core", "cosine", "inetorgperson", "nis")
ADMIN_PASSWORD = "slapd-admin-Pw-7d41"  # distinctive: tests look for it in error texts
START_TIMEOUT = scaled(15.0)
PORT_ATTEMPTS = 3


@dataclass(frozen=True)
class TlsFiles:
    """PEM files: the CA that signed the server certificate, the certificate, its key."""

    ca_cert: Path
    cert: Path
    key: Path


def make_tls_files(
    directory: Path,
    *,
    dns_names: Sequence[str] = ("localhost",),
    ips: Sequence[str] = ("127.0.0.1",),
) -> TlsFiles:
    """A throwaway CA and a server certificate it signed, made with the openssl CLI."""
    if shutil.which("openssl") is None:
        raise RuntimeError(
            "the openssl command is needed for TLS test files: install Debian's openssl"
        )
    directory.mkdir(parents=True, exist_ok=True)
    ca_key, ca_cert = directory / "ca.key", directory / "ca.pem"
    key, csr, cert = directory / "server.key", directory / "server.csr", directory / "server.pem"
    ec_key = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    run_checked(
        ["openssl", "req", "-x509", *ec_key, "-keyout", ca_key, "-out", ca_cert, "-days", "2",
         "-subj", "/CN=syncd test CA",
         "-addext", "basicConstraints=critical,CA:TRUE",
         "-addext", "keyUsage=critical,keyCertSign,cRLSign"]
    )  # fmt: skip
    run_checked(
        ["openssl", "req", *ec_key, "-keyout", key, "-out", csr, "-subj", f"/CN={dns_names[0]}"]
    )
    names = [f"DNS:{n}" for n in dns_names] + [f"IP:{ip}" for ip in ips]
    extensions = directory / "server.ext"
    extensions.write_text(
        "basicConstraints=critical,CA:FALSE\n"
        "keyUsage=critical,digitalSignature,keyEncipherment\n"
        "extendedKeyUsage=serverAuth\n"
        "authorityKeyIdentifier=keyid,issuer\n"
        f"subjectAltName={','.join(names)}\n"
    )
    run_checked(
        ["openssl", "x509", "-req", "-in", csr, "-CA", ca_cert, "-CAkey", ca_key,
         "-CAcreateserial", "-out", cert, "-days", "2", "-extfile", extensions]
    )  # fmt: skip
    key.chmod(0o600)
    return TlsFiles(ca_cert=ca_cert, cert=cert, key=key)


class _PortTaken(RuntimeError):
    """slapd could not listen: another process took the port since it was found free."""


class Slapd:
    """One slapd instance: its files live in ``directory``; ``start``/``stop`` keep the data."""

    def __init__(
        self,
        directory: Path,
        *,
        suffix: str = "dc=acme,dc=example",
        tls: TlsFiles | None = None,
        schemas: Iterable[Path] = (),
        extra_config: str = "",
    ) -> None:
        self.directory = directory
        self.suffix = suffix
        self.tls = tls
        self.bind_dn = f"cn=admin,{suffix}"
        self.password = ADMIN_PASSWORD
        self.port = free_port()
        self.ldaps_port = free_port() if tls else None
        self._schemas = [SCHEMA_DIR / f"{name}.schema" for name in DEFAULT_SCHEMAS] + list(schemas)
        self._extra_config = extra_config
        self._process: subprocess.Popen[bytes] | None = None
        self._started = False
        self._log_start = 0
        self.config_file = directory / "slapd.conf"
        self.data_dir = directory / "data"
        self.log_file = directory / "slapd.log"
        self._password_file = directory / "admin.pw"
        self._initialize()

    # ------------------------------------------------------------ addresses

    @property
    def url(self) -> str:
        return f"ldap://127.0.0.1:{self.port}"

    @property
    def ldaps_url(self) -> str:
        if self.ldaps_port is None:
            raise RuntimeError("this slapd was started without TLS files: no ldaps:// listener")
        return f"ldaps://127.0.0.1:{self.ldaps_port}"

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    # ------------------------------------------------------------ life cycle

    def start(self) -> None:
        """Start slapd and return once it answers a real bind and search.

        The first start picks new ports if the chosen ones were taken meanwhile; a restart
        keeps its ports, since callers hold the URLs.
        """
        if self.running:
            return
        for _ in range(PORT_ATTEMPTS - 1):
            try:
                self._launch()
                return
            except _PortTaken:
                if self._started:
                    raise
                self.port = free_port()
                self.ldaps_port = free_port() if self.tls else None
        self._launch()

    def _launch(self) -> None:
        self._log_start = self.log_file.stat().st_size if self.log_file.exists() else 0
        listeners = [f"{self.url}/"]
        if self.ldaps_port is not None:
            listeners.append(f"{self.ldaps_url}/")
        with self.log_file.open("ab") as log:
            self._process = subprocess.Popen(
                [SLAPD, "-d", "0", "-h", " ".join(listeners), "-f", self.config_file],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                preexec_fn=die_with_parent_in_own_group,
            )
        self._wait_until_ready()
        self._started = True

    def stop(self) -> None:
        """Stop slapd (SIGTERM, then SIGKILL if it lingers); the data stays for ``start``."""
        process, self._process = self._process, None
        stop_process(process)

    def __enter__(self) -> Slapd:
        self.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop()

    # ------------------------------------------------------------ data

    def add_ldif(
        self,
        ldif: str | Path,
        *,
        continue_on_error: bool = False,
        relax: bool = False,
        manage_dsa_it: bool = False,
    ) -> None:
        """Add the entries of an LDIF text or file online (``ldapadd``).

        ``relax`` lets the LDIF set operational attributes such as ``modifyTimestamp``;
        ``manage_dsa_it`` adds referral objects as plain entries.
        """
        options = ["-a"]
        options += ["-c"] if continue_on_error else []
        options += ["-e", "relax"] if relax else []
        options += ["-M"] if manage_dsa_it else []
        self._ldapmodify(ldif, options)

    def modify(self, ldif: str | Path, *, relax: bool = False) -> None:
        """Apply LDIF change records online (``changetype: modify``, ``modrdn``, ``delete``...)."""
        self._ldapmodify(ldif, ["-e", "relax"] if relax else [])

    def slapadd(self, ldif: str | Path) -> None:
        """Load many entries offline (``slapadd -q``: fast); a running slapd is restarted."""
        was_running = self.running
        self.stop()
        if isinstance(ldif, Path):
            run_checked([SLAPADD, "-q", "-f", self.config_file, "-l", ldif])
        else:
            run_checked([SLAPADD, "-q", "-f", self.config_file], stdin=ldif.encode("utf-8"))
        if was_running:
            self.start()

    def read_entry(self, dn: str, *attributes: str) -> dict[str, list[str]]:
        """An entry's attributes (operational ones too, when named), as the admin sees them."""
        with self._admin_connection() as conn:
            conn.search(
                dn,
                "(objectClass=*)",
                search_scope=ldap3.BASE,
                attributes=list(attributes) or ["*", "+"],
            )
            if not conn.response:
                raise LookupError(f"{dn}: no such entry ({conn.result['description']})")
            found = conn.response[0]["raw_attributes"]
            return {
                name: [v.decode("utf-8", "replace") for v in values]
                for name, values in found.items()
            }

    # ------------------------------------------------------------ internals

    def _initialize(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        self.data_dir.mkdir(exist_ok=True)
        self._password_file.write_text(self.password)  # ldap tools read it with -y: not in argv
        self._password_file.chmod(0o600)
        self.config_file.write_text(self._config_text())
        if not any(self.data_dir.glob("*.mdb")):
            self.slapadd(_suffix_entry(self.suffix))

    def _config_text(self) -> str:
        lines = [f'include "{schema}"' for schema in self._schemas]
        lines += [
            f'pidfile "{self.directory / "slapd.pid"}"',
            f'argsfile "{self.directory / "slapd.args"}"',
            f'modulepath "{MODULE_DIR}"',
            "moduleload back_mdb",
            "sizelimit unlimited",
        ]
        if self.tls is not None:
            lines += [
                f'TLSCACertificateFile "{self.tls.ca_cert}"',
                f'TLSCertificateFile "{self.tls.cert}"',
                f'TLSCertificateKeyFile "{self.tls.key}"',
            ]
        lines += [
            "database mdb",
            "maxsize 4294967296",  # a sparse map: room for benchmark-sized data
            f'suffix "{self.suffix}"',
            f'rootdn "{self.bind_dn}"',
            f'rootpw "{self.password}"',
            f'directory "{self.data_dir}"',
            "index objectClass eq",
            "index entryUUID eq",
            "index uid eq",
            "index modifyTimestamp eq",
            self._extra_config,
        ]
        return "\n".join(lines) + "\n"

    def _wait_until_ready(self) -> None:
        process = self._process
        assert process is not None
        status = wait_until_serving(
            "slapd", process, self._problem, timeout=START_TIMEOUT, tail=self._log_tail
        )
        if status is not None:
            self._process = None
            self._explain_exit(status)

    def _problem(self) -> str | None:
        """None if slapd answers a search of its root DSE, else what is wrong."""
        try:
            with self._admin_connection(timeout=1.0) as conn:
                if conn.search(
                    "", "(objectClass=*)", search_scope=ldap3.BASE, attributes=["namingContexts"]
                ):
                    return None
                return str(conn.result)
        except LDAPException as exc:
            return str(exc)

    @contextmanager
    def _admin_connection(self, timeout: float = 5.0) -> Iterator[ldap3.Connection]:
        server = ldap3.Server("127.0.0.1", port=self.port, connect_timeout=timeout)
        conn = ldap3.Connection(
            server, self.bind_dn, self.password, receive_timeout=int(timeout) or 1
        )
        try:
            if not conn.bind():
                raise LDAPException(f"bind refused: {conn.result['description']}")
            yield conn
        finally:
            with suppress(LDAPException):
                conn.unbind()

    def _ldapmodify(self, ldif: str | Path, options: list[str]) -> None:
        command: list[str | Path] = ["ldapmodify", "-x", "-H", self.url, "-D", self.bind_dn]
        command += ["-y", self._password_file, *options]
        if isinstance(ldif, Path):
            run_checked([*command, "-f", ldif])
        else:
            run_checked(command, stdin=ldif.encode("utf-8"))

    def _explain_exit(self, status: int) -> None:
        """Raise with the likely reason: slapd says nothing itself at debug level 0."""
        ports = [p for p in (self.port, self.ldaps_port) if p is not None]
        if any(not port_free(p) for p in ports):
            raise _PortTaken(f"one of the ports {ports} is taken")
        check = subprocess.run(
            [SLAPTEST, "-u", "-f", self.config_file], capture_output=True, text=True, check=False
        )
        raise RuntimeError(
            f"slapd exited with status {status}; slaptest says:\n{check.stdout}{check.stderr}"
            f"\nslapd's own output:\n{self._log_tail()}"
        )

    def _log_tail(self) -> str:
        """The end of what the latest launch logged."""
        try:
            with self.log_file.open("rb") as log:
                log.seek(self._log_start)
                return log.read().decode("utf-8", "replace")[-2000:]
        except OSError:
            return "(no log)"


@contextmanager
def running_slapd(
    directory: Path,
    *,
    suffix: str = "dc=acme,dc=example",
    tls: TlsFiles | None = None,
    schemas: Iterable[Path] = (),
    extra_config: str = "",
    ldif: str | Path | None = None,
) -> Iterator[Slapd]:
    """A started slapd (``ldif`` loaded offline first, if given), stopped on leaving."""
    slapd = Slapd(directory, suffix=suffix, tls=tls, schemas=schemas, extra_config=extra_config)
    if ldif is not None:
        slapd.slapadd(ldif)
    try:
        slapd.start()
        yield slapd
    finally:
        slapd.stop()


def synthetic_people_ldif(
    base: str, count: int, *, divisions: int = 10, teams: int = 10, modify_timestamp: str = ""
) -> str:
    """LDIF of ``divisions`` x ``teams`` nested OUs under ``base`` and ``count`` people in them.

    Deterministic (person ``i`` is ``uid=user{i:06d}``), for the benchmarks (load it with
    ``slapadd``) and for tests that need many entries.
    """
    stamp = f"modifyTimestamp: {modify_timestamp}\n" if modify_timestamp else ""
    chunks: list[str] = []
    for d in range(divisions):
        division = f"ou=Division {d},{base}"
        chunks.append(
            f"dn: {division}\nobjectClass: organizationalUnit\nou: Division {d}\n{stamp}\n"
        )
        for t in range(teams):
            chunks.append(
                f"dn: ou=Team {d}-{t},{division}\nobjectClass: organizationalUnit\n"
                f"ou: Team {d}-{t}\n{stamp}\n"
            )
    for i in range(count):
        d, t = i % divisions, (i // divisions) % teams
        chunks.append(
            f"dn: uid=user{i:06d},ou=Team {d}-{t},ou=Division {d},{base}\n"
            f"objectClass: inetOrgPerson\nuid: user{i:06d}\ncn: User Number {i}\nsn: Number{i}\n"
            f"mail: user{i:06d}@acme.example\nmobile: +86 138 {i:08d}\n"
            f"telephoneNumber: +86 10 {i:08d}\nemployeeNumber: E{i:06d}\ntitle: Engineer\n{stamp}\n"
        )
    return "".join(chunks)


def _suffix_entry(suffix: str) -> str:
    attribute, _, value = suffix.split(",")[0].partition("=")
    classes = {
        "dc": ["dcObject", "organization"],
        "o": ["organization"],
        "ou": ["organizationalUnit"],
    }.get(attribute.strip().lower())
    if classes is None:
        raise ValueError(f"suffix {suffix!r}: the first RDN must be dc=, o= or ou=")
    lines = [f"dn: {suffix}", *(f"objectClass: {c}" for c in classes), f"{attribute}: {value}"]
    if "organization" in classes and attribute != "o":
        lines.append(f"o: {value}")
    return "\n".join(lines) + "\n"
