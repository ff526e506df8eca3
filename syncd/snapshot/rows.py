"""The tables of the state database, declared with SQLModel.

Imported only to create or migrate the schema (``tables.MIGRATIONS``): what runs every
day writes and reads through SQL statements, and is spared importing SQLModel and the ORM.

Times in ms and the platform's ids are BIGINT: PostgreSQL's INTEGER has 32 bits (SQLite
stores either in the same 64-bit integer).
"""

from __future__ import annotations

from sqlalchemy import BigInteger
from sqlmodel import Field, SQLModel


class DepartmentRow(SQLModel, table=True):
    __tablename__ = "departments"
    source_id: str = Field(primary_key=True)  # the node's serial_no on the platform
    node_id: int | None = Field(default=None, sa_type=BigInteger)
    name_path: str = ""  # "Acme/R&D/Backend", root name first
    fields: str = "{}"  # JSON: what syncd last wrote
    hash: str = ""  # of fields; "" forces a comparison next run
    adopted: bool = False  # found on the platform rather than created by syncd
    # the platform's, after syncd's last write
    last_modified: int | None = Field(default=None, sa_type=BigInteger)


class EmployeeRow(SQLModel, table=True):
    __tablename__ = "employees"
    source_id: str = Field(primary_key=True)  # the employee's extension_id on the platform
    username: str = Field(index=True)
    employee_id: int | None = Field(default=None, sa_type=BigInteger)
    fields: str = "{}"
    hash: str = ""
    adopted: bool = False
    locked: bool = False
    # "departed" (in the source), "missing" (from it), or None: adopted already locked
    lock_reason: str | None = None
    locked_since: int | None = Field(default=None, sa_type=BigInteger)  # ms
    # The key a first run adopted the account by, when not its username (email, mobile,
    # sn): the account keeps the platform's username, whatever the source's is.
    matched_by: str | None = None


class PhotoRow(SQLModel, table=True):
    """The photo syncd last set as a person's avatar; gone with the person's row."""

    __tablename__ = "photos"
    source_id: str = Field(primary_key=True, foreign_key="employees.source_id", ondelete="CASCADE")
    digest: str  # MD5 of the bytes sent (the media API's file_digest)
    media_id: str  # the platform's media id, set as the avatar


class CursorRow(SQLModel, table=True):
    __tablename__ = "cursors"
    name: str = Field(primary_key=True)
    value: str


class TokenRow(SQLModel, table=True):
    __tablename__ = "tokens"
    app: str = Field(primary_key=True)  # base_url|domain_id|client_id#digest of the secret
    access_token: str
    expire_time: int = Field(sa_type=BigInteger)  # ms
    issued_time: int | None = Field(default=None, sa_type=BigInteger)


class RunRow(SQLModel, table=True):
    __tablename__ = "runs"
    id: int | None = Field(default=None, primary_key=True)
    trigger: str = "shell"  # shell, schedule, demo
    mode: str = "apply"  # apply or dry_run
    read: str = "full"  # full or incremental
    source: str = ""  # kind and where
    started_at: int = Field(default=0, sa_type=BigInteger)  # ms
    finished_at: int | None = Field(default=None, sa_type=BigInteger)
    outcome: str = "running"  # running, ok, partial, failed, blocked, interrupted
    exit_code: int | None = None
    pid: int | None = None
    host: str | None = None
    summary: str = "{}"  # JSON: counts, guards, drift, notes, error
    epoch: int | None = None  # the lease's epoch the run wrote under (None: a dry run)
    instance: str | None = None  # host/pid/token of the process that ran it


class RunItemRow(SQLModel, table=True):
    __tablename__ = "run_items"
    run_id: int = Field(primary_key=True, foreign_key="runs.id")
    seq: int = Field(primary_key=True)
    kind: str  # department or employee
    key: str  # source id
    display: str  # name path or username
    action: str
    message: str = ""
    before: str | None = None  # JSON
    after: str | None = None  # JSON
    outcome: str = "planned"  # planned, sent, ok, failed, skipped, recovered
    status: int | None = None  # the platform's status code, when it gave one
    error: str | None = None
    attempts: int = 0


class RejectedRowRecord(SQLModel, table=True):
    __tablename__ = "rejected_rows"
    run_id: int = Field(primary_key=True, foreign_key="runs.id")
    seq: int = Field(primary_key=True)
    kind: str
    where: str
    key: str | None = None
    reason: str = ""
