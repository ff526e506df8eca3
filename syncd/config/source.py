"""Where people come from: the CSV or LDAP source, its mapping rules and the photos."""

# Pydantic copies a list or dict default for each instance; ruff sees that only through a
# base class in the same file, and Section is in section.py.
# ruff: noqa: RUF012

from __future__ import annotations

import unicodedata
from pathlib import Path
from typing import Annotated, Literal
from urllib.parse import urlsplit

from pydantic import Field, SecretStr, field_validator, model_validator

from syncd.config.section import PositiveFloat, Section, _one_of, without_userinfo
from syncd.mapping import SourceMapping

LDAP_SCHEMES = ("ldap", "ldaps", "ldapi")


class CsvEmployeeColumns(Section):
    """Header names of the employee file, by model field. Any header text works (Chinese too)."""

    id: str = "id"
    username: str = "username"
    name: str = "name"
    department: str = "department"  # an id (layout two_files) or a path (layout paths)
    positions: str | None = "positions"  # secondary departments, joined by positions_separator
    en_name: str | None = "en_name"
    email: str | None = "email"
    mobile: str | None = "mobile"
    tel: str | None = "tel"
    sn: str | None = "sn"
    gender: str | None = "gender"
    birthday: str | None = "birthday"
    job_title: str | None = "job_title"
    sort_order: str | None = "sort_order"
    senior: str | None = "senior"
    status: str | None = "status"
    # Effective dates (sync.dates), YYYY-MM-DD: read only when named here.
    start_date: str | None = None
    end_date: str | None = None


def status_key(value: str) -> str:
    """A status value as compared: trimmed, case-folded, in Unicode NFC (canonical caseless)."""
    return unicodedata.normalize("NFC", unicodedata.normalize("NFD", value.strip()).casefold())


class CsvDepartmentColumns(Section):
    id: str = "id"
    name: str = "name"
    parent_id: str = "parent_id"
    sort_order: str | None = "sort_order"
    sn: str | None = "sn"
    en_name: str | None = "en_name"
    # The department's head: a person's id (the employee file's id column); that person's
    # position in the department is made the platform's ``chief``. None: not read.
    head: str | None = None


class CsvSource(Section):
    layout: Literal["two_files", "paths"] = "two_files"
    employees: Path
    departments: Path | None = None  # required by layout two_files
    encoding: str = "auto"  # auto: UTF-8 (with or without BOM), else GB18030
    delimiter: str = "auto"  # auto: sniffed among , ; tab |
    path_separator: str = "/"  # layout paths: "Head Office/R&D/Backend"
    positions_separator: str = ";"
    # Status is a closed vocabulary (when the status column is in the file): a value in
    # neither list rejects its row, the person kept as they are. "" names an empty cell.
    departed_values: list[str] = ["离职", "inactive", "departed", "disabled"]
    active_values: Annotated[list[str], Field(min_length=1)] = [
        "在职",
        "试用",
        "试用期",
        "正式",
        "active",
        "enabled",
        "probation",
    ]
    columns: CsvEmployeeColumns = CsvEmployeeColumns()
    department_columns: CsvDepartmentColumns = CsvDepartmentColumns()
    extra_columns: dict[str, str] = {}  # header -> extra attribute name

    @model_validator(mode="after")
    def _departments_file_for_two_files(self) -> CsvSource:
        if self.layout == "two_files" and self.departments is None:
            raise ValueError(
                "layout 'two_files' needs source.csv.departments (the departments file)"
            )
        return self

    @model_validator(mode="after")
    def _status_values_apart(self) -> CsvSource:
        departed = {status_key(v) for v in self.departed_values}
        both = [v for v in self.active_values if status_key(v) in departed]
        if both:
            raise ValueError(
                f"status value {both[0]!r} is in both source.csv.active_values and "
                "source.csv.departed_values: a status must mean one thing"
            )
        return self


class GroupTag(Section):
    """A rule of ``[[source.ldap.group_tags]]``: members of a group get a platform tag."""

    group: str  # the group's DN, or its name (cn; on AD also sAMAccountName) under groups_base
    tag_group: str  # the platform Tag's group
    tag: str  # the platform Tag's tag

    @field_validator("group", "tag_group", "tag")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be empty")
        return value.strip()


class LdapSource(Section):
    urls: list[str] = Field(min_length=1)  # several for failover: ldaps://dc1, ldaps://dc2
    flavor: Literal["openldap", "active_directory"] = "openldap"
    start_tls: bool = False  # for ldap:// URLs
    verify_tls: bool = True
    ca_file: Path | None = None
    # The name the server's certificate must carry, when the URLs name it otherwise (an
    # IP address, an alias): verification stays on, against this name.
    tls_server_name: str | None = None
    bind_dn: str | None = None
    bind_password: SecretStr | None = None
    bind_password_file: Path | None = None
    users_base: str
    users_filter: str | None = None  # default per flavor
    departments_from: Literal["ou_tree", "attribute"] = "ou_tree"
    departments_base: str | None = None  # default: users_base
    department_name_attribute: str = "ou"  # or "description"
    department_attribute: str | None = None  # departments_from = attribute: holds a path
    department_path_separator: str = "/"
    # Several values (the README's table; never "the first"): department values that name
    # no department (shell patterns, any case: ["People"]); several left reject the person,
    # or with "positions" each is a position (the primary: the first path alphabetically).
    department_values_ignored: list[str] = []
    several_departments: Literal["reject", "positions"] = "reject"
    email_domains: list[str] = []  # several mail values: the one in the first domain with any
    departed_filter: str | None = None  # OpenLDAP: e.g. "(pwdAccountLockedTime=*)"
    page_size: Annotated[int, Field(gt=0, le=1000)] = 500
    connect_timeout: PositiveFloat = 10.0
    read_timeout: PositiveFloat = 60.0
    attributes: dict[str, str] = {}  # model field -> LDAP attribute, over the flavor's preset
    extra_attributes: dict[str, str] = {}  # LDAP attribute -> extra attribute name
    # Active Directory: continuation references to other domains of the forest are read
    # through this Global Catalog (ldaps://gc.corp.example:3269); unset, each is a warning.
    global_catalog: str | None = None
    # Groups to tags (README "Groups to tags"): rules, and where group names are looked up
    # (default users_base). Nested groups count: AD resolves them (the in-chain rule);
    # on OpenLDAP syncd follows member groups found under groups_base.
    group_tags: list[GroupTag] = []
    groups_base: str | None = None
    # Department heads: the OU's attribute naming its head by DN (AD: managedBy); that
    # person's position in the department becomes ``chief``. None: not read.
    department_head_attribute: str | None = None

    @field_validator("global_catalog")
    @classmethod
    def _ldap_url(cls, value: str | None) -> str | None:
        if value is not None and urlsplit(value).scheme.lower() not in ("ldap", "ldaps"):
            raise ValueError(
                "must be an ldaps:// (or ldap://) URL, e.g. ldaps://gc.corp.example:3269"
            )
        return value

    @field_validator("urls")
    @classmethod
    def _ldap_urls(cls, urls: list[str]) -> list[str]:
        for url in urls:
            scheme = urlsplit(url.strip()).scheme.lower()
            if scheme not in LDAP_SCHEMES:
                raise ValueError(
                    f"{without_userinfo(url)!r} is not an LDAP URL: use ldaps://host (or "
                    "ldap://host with start_tls = true)"
                )
        return [url.strip() for url in urls]

    @model_validator(mode="after")
    def _department_values_for_attribute(self) -> LdapSource:
        if self.departments_from == "ou_tree" and (
            self.department_values_ignored or self.several_departments != "reject"
        ):
            raise ValueError(
                "department_values_ignored and several_departments apply to "
                "departments_from = 'attribute'; with 'ou_tree' the entry's place decides"
            )
        return self

    @model_validator(mode="after")
    def _heads_on_the_ou_tree(self) -> LdapSource:
        if self.department_head_attribute and self.departments_from != "ou_tree":
            raise ValueError(
                "department_head_attribute is read on the departments' entries: it needs "
                "departments_from = 'ou_tree'"
            )
        return self

    @model_validator(mode="after")
    def _one_password_source(self) -> LdapSource:
        _one_of(self.bind_password, self.bind_password_file, "source.ldap.bind_password")
        return self


class PhotoSettings(Section):
    """People's photos, set as their avatars on the platform: off unless ``enabled``."""

    enabled: bool = False
    # CSV: a folder of image files, each named by a field's value and any extension
    # (photos/10023.jpg for work number 10023); required for a CSV source.
    folder: Path | None = None
    named_by: Literal["sn", "id", "username"] = "sn"
    # LDAP: the attribute holding the photo; default jpegPhoto, AD's thumbnailPhoto.
    attribute: str | None = None
    max_bytes: Annotated[int, Field(gt=0, le=20 * 1024 * 1024)] = 1024 * 1024
    types: Annotated[list[Literal["jpeg", "png"]], Field(min_length=1)] = ["jpeg", "png"]


class SourceSettings(Section):
    kind: Literal["csv", "ldap"]
    csv: CsvSource | None = None
    ldap: LdapSource | None = None
    mapping: SourceMapping = SourceMapping()  # rules: templates, transforms, a row filter
    photos: PhotoSettings = PhotoSettings()

    @model_validator(mode="after")
    def _section_for_kind(self) -> SourceSettings:
        if getattr(self, self.kind) is None:
            raise ValueError(
                f"source.kind is {self.kind!r} but there is no [source.{self.kind}] section"
            )
        return self

    @model_validator(mode="after")
    def _photo_folder_for_csv(self) -> SourceSettings:
        if self.kind == "csv" and self.photos.enabled and self.photos.folder is None:
            raise ValueError(
                "source.photos is enabled for a CSV source but source.photos.folder is not set "
                '(the folder of image files, e.g. folder = "photos")'
            )
        return self
