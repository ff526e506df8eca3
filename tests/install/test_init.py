"""`syncd init`: settings for each kind of source that load as written, the unit files, and
never a file replaced."""

from __future__ import annotations

import io
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pexpect
import pytest

from syncd.cli import run_cli
from syncd.config import load_settings, platform_of, source_of
from syncd.data import SAMPLE
from syncd.setup.init import UNITS_START
from tests.cli.terminal import finish
from tests.daemon.support import DEADLINE
from tests.support.cli import syncd

REPO = Path(__file__).resolve().parents[2]
SHIPPED_UNITS = sorted((REPO / "systemd").iterdir())


def init(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    return syncd(capsys, "init", *args)


@pytest.fixture
def credentials(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The secrets as systemd gives them to the service: files in $CREDENTIALS_DIRECTORY."""
    folder = tmp_path / "credentials"
    folder.mkdir()
    (folder / "client_secret").write_text("platform-secret\n")
    (folder / "bind_password").write_text("ldap-password\n")
    monkeypatch.setenv("CREDENTIALS_DIRECTORY", str(folder))
    return folder


def test_the_csv_settings_read_the_sample_company_as_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], credentials: Path
) -> None:
    path = tmp_path / "syncd.toml"
    code, output = init(capsys, str(path))
    assert code == 0, output
    assert path.stat().st_mode & 0o777 == 0o600
    for name in ("employees.csv", "departments.csv"):
        (tmp_path / name).write_bytes(SAMPLE.joinpath(name).read_bytes())

    settings = load_settings(path)
    source = source_of(settings)
    assert source.csv is not None
    assert source.csv.employees == tmp_path / "employees.csv"
    platform = platform_of(settings)
    assert platform.client_secret is not None
    assert platform.client_secret.get_secret_value() == "platform-secret"

    assert run_cli(["check", "--config", str(path)]) == 0
    checked = capsys.readouterr().out
    assert "employees   40" in checked and "departments 11" in checked
    assert "rejected    0" in checked


@pytest.mark.parametrize("kind", ["openldap", "active_directory"])
def test_the_ldap_settings_load_as_written_with_the_passwords_as_credentials(
    kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], credentials: Path
) -> None:
    path = tmp_path / f"{kind}.toml"
    code, output = init(capsys, "--source", kind, str(path))
    assert code == 0, output
    text = path.read_text(encoding="utf-8")
    assert "password =" not in text and "secret =" not in text  # no secret, even as a placeholder

    settings = load_settings(path)
    source = source_of(settings)
    assert source.kind == "ldap" and source.ldap is not None
    assert source.ldap.flavor == kind
    assert source.ldap.urls[0].startswith("ldaps://")
    assert source.ldap.bind_password is not None
    assert source.ldap.bind_password.get_secret_value() == "ldap-password"
    assert platform_of(settings).client_secret is not None


def test_an_existing_file_is_never_replaced(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "syncd.toml"
    path.write_text("# the admin's own settings\n")
    code, output = init(capsys, "--source", "openldap", str(path))
    assert code == 3
    assert f"{path} already exists: syncd init never overwrites a file" in output
    assert path.read_text() == "# the admin's own settings\n"

    dangling = tmp_path / "link.toml"
    dangling.symlink_to(tmp_path / "elsewhere.toml")
    assert init(capsys, str(dangling))[0] == 3
    assert not (tmp_path / "elsewhere.toml").exists()


def test_a_missing_path_a_folder_or_a_missing_folder_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, output = init(capsys)
    assert code == 3
    assert "name the settings file to write" in output
    code, output = init(capsys, str(tmp_path))
    assert code == 3
    assert f"{tmp_path} is a folder: name the settings file, e.g. {tmp_path}/syncd.toml" in output
    code, output = init(capsys, str(tmp_path / "etc" / "syncd.toml"))
    assert code == 3
    assert f"folder {tmp_path / 'etc'} does not exist" in output
    assert list(tmp_path.iterdir()) == []


def test_the_units_are_the_shipped_ones_and_all_or_none_are_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, output = init(capsys, "--units", str(tmp_path))
    assert code == 0, output
    # The shipped units, each starting the syncd that wrote them (this environment's).
    this = Path(sys.executable).parent / "syncd"
    for unit in SHIPPED_UNITS:
        written = tmp_path / unit.name
        shipped = unit.read_text(encoding="utf-8")
        assert written.read_text(encoding="utf-8") == shipped.replace(
            f"={UNITS_START} ", f"={this} "
        )
        assert written.stat().st_mode & 0o777 == 0o644
    assert f"ExecStart={this} run\n" in (tmp_path / "syncd.service").read_text()
    assert f"ExecStart={this} sync" in (tmp_path / "syncd-sync.service").read_text()
    assert f"The units start {this}, this syncd" in output

    again = tmp_path / "again"
    again.mkdir()
    (again / "syncd-sync.timer").write_text("[Timer]\nOnCalendar=daily\n")
    settings = tmp_path / "syncd.toml"
    code, output = init(capsys, str(settings), "--units", str(again))
    assert code == 3
    assert f"{again / 'syncd-sync.timer'} already exists" in output
    assert sorted(p.name for p in again.iterdir()) == ["syncd-sync.timer"]
    assert not settings.exists()  # the settings file is not written either


def test_the_example_settings_take_the_secret_from_the_systemd_credential(
    tmp_path: Path, credentials: Path
) -> None:
    # README's service install: the example's settings, the secret as a credential. A
    # client_secret_file in the example would be read instead, and be missing.
    example = tmp_path / "syncd.toml"
    example.write_bytes((REPO / "config" / "syncd.example.toml").read_bytes())

    settings = load_settings(example)
    assert platform_of(settings).client_secret_file is None
    platform = platform_of(settings)
    assert platform.client_secret is not None
    assert platform.client_secret.get_secret_value() == "platform-secret"
    for unit in ("syncd.service", "syncd-sync.service"):
        text = (REPO / "systemd" / unit).read_text()
        assert "LoadCredential=client_secret:/etc/syncd/credentials/client_secret" in text


@pytest.fixture
def home_install() -> Iterator[Path]:
    """syncd as pipx installs it, in a home folder: a virtual environment under /home/...
    (this one's packages, linked) whose bin/syncd the admin runs."""
    if not os.access("/home", os.W_OK):
        pytest.skip("needs a writable /home: it plays a user's pipx install")
    home = Path(tempfile.mkdtemp(prefix="syncd-admin-", dir="/home"))
    try:
        venv = home / ".local" / "share" / "pipx" / "venvs" / "syncd"
        (venv / "bin").mkdir(parents=True)
        here = Path(sys.prefix)
        (venv / "pyvenv.cfg").write_bytes((here / "pyvenv.cfg").read_bytes())
        (venv / "lib").symlink_to(here / "lib")
        (venv / "bin" / "python").symlink_to(here / "bin" / "python")
        script = venv / "bin" / "syncd"
        script.write_text(
            f"#!{venv}/bin/python\nimport sys\nfrom syncd.cli import main\nsys.exit(main())\n"
        )
        script.chmod(0o755)
        yield home
    finally:
        shutil.rmtree(home)


def test_units_written_by_a_home_folder_syncd_say_protect_home_hides_it(
    home_install: Path, tmp_path: Path
) -> None:
    syncd = home_install / ".local" / "share" / "pipx" / "venvs" / "syncd" / "bin" / "syncd"
    settings = home_install / "syncd.toml"
    env = {k: v for k, v in os.environ.items() if not k.startswith("SYNCD_")}
    env.update(TERM="xterm-256color", COLUMNS="80", LINES="40")
    child = pexpect.spawn(
        str(syncd),
        ["init", str(settings), "--units", str(tmp_path)],
        env=env,
        encoding="utf-8",
        dimensions=(40, 80),
        timeout=DEADLINE,
    )
    child.logfile_read = io.StringIO()

    code, screen = finish(child)

    said = " ".join(screen.split())  # wrapped at 80 columns
    assert code == 0, screen
    hidden = "which the units' ProtectHome=yes hides from the service"
    assert f"{syncd} is under /home, {hidden}: the service would not start" in said, screen
    assert "install syncd system-wide" in said and "/opt/syncd/bin/syncd" in said, screen
    assert f"{settings} is under /home, {hidden}: the service could not read it" in said, screen
    for unit in ("syncd.service", "syncd-sync.service"):
        text = (tmp_path / unit).read_text(encoding="utf-8")
        assert f"ExecStart={syncd} " in text
        # The settings file written with them, not the example's /etc/syncd/syncd.toml.
        assert f"\nEnvironment=SYNCD_CONFIG={settings}\n" in text, text


def test_units_of_a_system_wide_syncd_say_nothing_of_protect_home(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = tmp_path / "etc" / "syncd.toml"
    settings.parent.mkdir()
    units = tmp_path / "units"
    units.mkdir()

    code, output = init(capsys, str(settings), "--units", str(units))

    assert code == 0, output
    assert "ProtectHome" not in output  # /work/... and /tmp/...: not under a home folder
    assert f"Environment=SYNCD_CONFIG={settings}\n" in (units / "syncd.service").read_text()
