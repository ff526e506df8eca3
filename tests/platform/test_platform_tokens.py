"""The application's one token: fetched once, shared through the state database, renewed once;
on both state database engines (``engine``: each in turn, ``store_url``).

The emulator, like the platform, keeps one token per application: issuing a new one
invalidates the old. Its ``tokens_issued`` count proves how many tokens syncd asked for.
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from pydantic import SecretStr
from sqlalchemy import Engine, text

from syncd.clock import now_ms
from syncd.emulator import RunningEmulator
from syncd.errors import TokenError
from syncd.platform import MemoryTokenStore, PlatformClient, app_key
from syncd.platform._requests import RENEWALS
from syncd.snapshot import CachedToken, TokenStore, open_engine, write
from tests.platform.platform_helpers import TOKEN_ROUTE, Connect, requests_seen, settings_for
from tests.support.waiting import scaled


@pytest.fixture
def engine(state_file: Path, store_url: str | None) -> Iterator[Engine]:
    """The state database of this module's tests: SQLite, then PostgreSQL."""
    opened = open_engine(state_file, store_url)
    yield opened
    opened.dispose()


def tokens_issued(emulator: RunningEmulator) -> int:
    return int(emulator.state()["tokens_issued"])


def test_token_is_fetched_once_and_kept_in_the_store(
    client: PlatformClient, emulator: RunningEmulator, store: TokenStore
) -> None:
    token = client.token()
    client.root()
    client.root()
    assert client.token() == token
    assert tokens_issued(emulator) == 1
    stored = store.get(app_key(settings_for(emulator)))
    assert stored is not None and stored.access_token == token


def test_app_key_names_url_domain_client_and_a_digest_of_the_secret(
    emulator: RunningEmulator,
) -> None:
    key = app_key(settings_for(emulator))
    app, _, digest = key.partition("#")
    assert app == f"{emulator.base_url}|acme|syncd"
    assert len(digest) == 32 and "demo-secret" not in key
    other = app_key(settings_for(emulator, client_secret=SecretStr("another-secret")))
    assert other.partition("#")[0] == app and other != key


def test_a_wrong_secret_fails_at_once_though_a_token_is_cached(
    connect: Connect, emulator: RunningEmulator, state_file: Path
) -> None:
    """Issue 24 case 7: the cached token was keyed without the secret, so a changed or
    wrong secret went on working until the token expired."""
    connect().root()  # the right secret: a token is cached in the state database
    wrong = connect(client_secret=SecretStr("wrong-secret-value"))
    with pytest.raises(TokenError) as caught:
        wrong.root()
    assert caught.value.status == 202104
    message = str(caught.value)
    assert "check platform.client_id and platform.client_secret" in message
    assert "'syncd'" in message and emulator.base_url in message
    assert "wrong-secret-value" not in message and "demo-secret" not in message
    assert wrong.calls["GET /v1/admin/organizations/{org_code}"] == 0
    for path in state_file.parent.glob("syncd.db*"):  # neither secret is kept, in any form
        data = path.read_bytes()
        assert b"wrong-secret-value" not in data and b"demo-secret" not in data


def test_a_changed_secret_fetches_its_own_token_and_replaces_the_old_one(
    connect: Connect, emulator: RunningEmulator, store: TokenStore
) -> None:
    old = connect(client_secret=SecretStr("old-secret"))
    old_key = app_key(settings_for(emulator, client_secret=SecretStr("old-secret")))
    store.renew(old_key, None, lambda: CachedToken("token-of-the-old-secret", 2**62, 0), 0)
    assert old.token() == "token-of-the-old-secret"
    client = connect()  # the secret now in the settings
    assert client.root().name == "Acme"
    assert client.token() != "token-of-the-old-secret"
    assert tokens_issued(emulator) == 1
    assert store.get(old_key) is None  # the old secret's token is let go


def test_tokens_kept_under_the_old_key_are_let_go_by_the_migration(tmp_path: Path) -> None:
    database = tmp_path / "syncd.db"
    open_engine(database).dispose()
    with sqlite3.connect(database) as db:
        db.execute("PRAGMA user_version = 5")
        db.execute(
            "INSERT INTO tokens (app, access_token, expire_time) "
            "VALUES ('http://p|acme|syncd', 'old-key-token', 9999999999999)"
        )
    open_engine(database).dispose()
    with sqlite3.connect(database) as db:
        assert db.execute("SELECT count(*) FROM tokens").fetchone() == (0,)


def test_two_clients_over_one_state_file_share_one_token(
    connect: Connect, emulator: RunningEmulator, state_file: Path, store_url: str | None
) -> None:
    first = connect()
    first.root()
    # The second client opens the state file anew, as another process would.
    other_engine = open_engine(state_file, store_url)
    try:
        second = connect(tokens=TokenStore(other_engine))
        second.root()
        assert second.token() == first.token()
        assert tokens_issued(emulator) == 1
        assert second.calls[f"POST {TOKEN_ROUTE}"] == 0

        emulator.issue_token()  # someone invalidates the shared token
        first.root()  # 10011: renews once, through the store
        assert tokens_issued(emulator) == 3
        second.root()  # 10011 on the old token: takes first's new one from the store
        assert tokens_issued(emulator) == 3
        assert second.token() == first.token()
        assert second.calls[f"POST {TOKEN_ROUTE}"] == 0
    finally:
        other_engine.dispose()


@pytest.mark.slow  # syncd's client in a second process
def test_another_process_uses_the_stored_token(
    client: PlatformClient, emulator: RunningEmulator, state_file: Path, store_url: str | None
) -> None:
    token = client.token()
    script = textwrap.dedent(
        f"""
        from pathlib import Path
        from pydantic import SecretStr
        from syncd.config import PlatformSettings
        from syncd.platform import PlatformClient
        from syncd.snapshot import TokenStore, open_engine
        settings = PlatformSettings(
            base_url={emulator.base_url!r}, domain_id="acme", org_code="acme",
            client_id="syncd", client_secret=SecretStr("demo-secret"), org_id="acme")
        store = TokenStore(open_engine(Path({str(state_file)!r}), {store_url!r}))
        with PlatformClient(settings, store) as client:
            print(client.root().name, client.calls["POST /v1/token"])
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=scaled(60),
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["Acme", "0"]
    assert tokens_issued(emulator) == 1
    assert client.token() == token


def test_expired_token_in_the_store_is_renewed(
    connect: Connect, emulator: RunningEmulator, store: TokenStore
) -> None:
    client = connect()
    app = app_key(settings_for(emulator))
    store.renew(app, None, lambda: CachedToken("expired-token-value", 1_000, 0), 0)
    client.root()
    assert tokens_issued(emulator) == 1
    renewed = store.get(app)
    assert renewed is not None and renewed.access_token != "expired-token-value"


def test_token_refused_is_renewed_once_and_the_call_succeeds(
    client: PlatformClient, emulator: RunningEmulator
) -> None:
    before = client.token()
    emulator.issue_token()
    assert client.root().name == "Acme"
    assert client.token() != before
    assert tokens_issued(emulator) == 3
    assert client.calls["GET /v1/admin/organizations/{org_code}"] == 2
    assert client.retries == 0  # a renewal is not a transient retry


def test_token_expired_on_the_platform_clock_is_renewed(
    client: PlatformClient, emulator: RunningEmulator
) -> None:
    client.root()
    emulator.advance_clock(emulator.options.token_lifetime_seconds + 1)
    assert client.root().name == "Acme"
    assert tokens_issued(emulator) == 2


class InvalidatingTransport(httpx.BaseTransport):
    """Real HTTP to the emulator; before each request to ``match`` the token is replaced,
    as if another program with the same credentials kept asking for tokens."""

    def __init__(self, emulator: RunningEmulator, match: str, times: int = 1_000_000) -> None:
        self._emulator = emulator
        self._match = match
        self._times = times
        self._inner = httpx.HTTPTransport()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if self._match in request.url.path and self._times > 0:
            self._times -= 1
            self._emulator.issue_token()
        return self._inner.handle_request(request)

    def close(self) -> None:
        self._inner.close()


def test_a_token_refused_after_every_renewal_raises_token_error(
    connect: Connect, emulator: RunningEmulator
) -> None:
    client = connect(transport=InvalidatingTransport(emulator, "/page-orgs"))
    client.root()
    with pytest.raises(TokenError) as caught:
        list(client.page_orgs())
    assert caught.value.status == 10011
    assert "another program" in str(caught.value)
    assert "syncd" in str(caught.value) and emulator.base_url in str(caught.value)
    assert client.calls["GET /v1/admin/organizations/{org_code}/page-orgs"] == 1 + RENEWALS
    assert client.calls[f"POST {TOKEN_ROUTE}"] == 1 + RENEWALS  # the first, and each renewal


def test_a_renewed_token_refused_again_is_renewed_again(
    connect: Connect, emulator: RunningEmulator
) -> None:
    """Issue 25 case 6: another host with the same application renewed between this
    renewal and the call sent with it; the call is renewed for again, not failed."""
    client = connect(transport=InvalidatingTransport(emulator, "/page-orgs", times=2))
    client.root()
    assert [n.name for n in client.page_orgs()] == ["Acme"]
    assert client.calls["GET /v1/admin/organizations/{org_code}/page-orgs"] == 3
    assert client.calls[f"POST {TOKEN_ROUTE}"] == 3


def test_threads_renew_a_refused_token_only_once(
    client: PlatformClient, emulator: RunningEmulator
) -> None:
    client.token()
    emulator.issue_token()
    with ThreadPoolExecutor(max_workers=8) as pool:
        names = list(pool.map(lambda _: client.root().name, range(16)))
    assert names == ["Acme"] * 16
    assert tokens_issued(emulator) == 3
    assert client.calls[f"POST {TOKEN_ROUTE}"] == 2


def test_threads_of_a_new_client_fetch_one_token(
    client: PlatformClient, emulator: RunningEmulator
) -> None:
    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(lambda _: client.root(), range(16)))
    assert tokens_issued(emulator) == 1


@pytest.mark.parametrize(
    ("override", "status"),
    [({"client_secret": "wrong-secret-value"}, 202104), ({"client_id": "nobody"}, 202102)],
)
def test_bad_credentials_raise_token_error(
    connect: Connect, emulator: RunningEmulator, override: dict[str, str], status: int
) -> None:
    client = connect(**override)
    with pytest.raises(TokenError) as caught:
        client.root()
    error = caught.value
    assert error.status == status
    client_id = override.get("client_id", "syncd")
    assert repr(client_id) in str(error) and emulator.base_url in str(error)
    assert "wrong-secret-value" not in str(error) and "demo-secret" not in str(error)
    assert error.endpoint == "POST /v1/token"
    assert requests_seen(emulator, "POST", TOKEN_ROUTE) == 1  # never retried
    assert client.calls["GET /v1/admin/organizations/{org_code}"] == 0


def test_owner_id_names_a_domain_application(connect: Connect) -> None:
    client = connect(org_id=None, owner_id="acme")
    assert client.root().name == "Acme"


def test_memory_token_store_shares_like_the_database(
    connect: Connect, emulator: RunningEmulator
) -> None:
    tokens = MemoryTokenStore()
    first, second = connect(tokens=tokens), connect(tokens=tokens)
    first.root()
    second.root()
    assert tokens_issued(emulator) == 1
    emulator.issue_token()
    first.root()
    second.root()
    assert tokens_issued(emulator) == 3
    assert "demo-secret" not in repr(tokens)


def test_renewals_while_the_state_database_is_locked_neither_wait_nor_go_back(
    client: PlatformClient, emulator: RunningEmulator, store: TokenStore, engine: Engine
) -> None:
    """Issue 25 case 6: a renewal while a write transaction holds the state database
    (the run's own batch, here another connection) waited out the busy timeout and failed
    with "database is locked". Now the token is used at once and stored when the lock is
    free; a second renewal meanwhile never goes back to the token stored before."""
    first = client.token()
    app = app_key(settings_for(emulator))
    with write(engine):  # a batch's transaction holds the write lock
        emulator.issue_token()  # another host renews: ours is refused
        assert client.root().name == "Acme"
        second = client.token()
        assert second != first
        emulator.issue_token()  # and again, before the database could store ours
        assert client.root().name == "Acme"
        third = client.token()
        assert third not in (first, second)
        stored = store.get(app)
        assert stored is not None and stored.access_token == third  # this process's newest
    store.flush(timeout=scaled(30))
    with engine.connect() as conn:
        assert conn.execute(text("SELECT access_token FROM tokens")).all() == [(third,)]
    assert client.calls[f"POST {TOKEN_ROUTE}"] == 3


def test_a_renewal_stored_late_is_written_over_by_the_newer_one(
    client: PlatformClient,
    emulator: RunningEmulator,
    store: TokenStore,
    engine: Engine,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Two renewals while the database is locked leave two writes waiting; the earlier
    one may land first, once the lock is free. The later one must still be written over
    it: it was written only over the token stored before both (1 run in 10 of the test
    above ended with the second token stored, refused by the platform since the third)."""
    if engine.dialect.name != "sqlite":
        pytest.skip("on PostgreSQL a batch's transaction does not hold token writes back")
    waiting: list[str] = []
    monkeypatch.setattr(TokenStore, "_write_later", lambda _self, app: waiting.append(app))
    first = client.token()
    app = app_key(settings_for(emulator))
    with write(engine):
        emulator.issue_token()
        assert client.root().name == "Acme"
        second = client.token()
        emulator.issue_token()
        assert client.root().name == "Acme"
        third = client.token()
    assert waiting == [app, app]
    # The earlier renewal's write lands first, as its waiting writer would have made it.
    row = (second, now_ms() + 3_600_000, None)
    assert store._table.compare_and_set(app, (first, second), row, 30)
    assert store._write(app, timeout=scaled(30))  # then the later one's
    with engine.connect() as conn:
        assert conn.execute(text("SELECT access_token FROM tokens")).all() == [(third,)]
