"""Answers that are not the platform's envelope, and envelope errors, as the client reports them.

The emulator always answers with an envelope, so a base_url pointing at some other web
server is played by a real one: Python's static file server over a directory whose
files are the "answers".
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from syncd.emulator import RunningEmulator
from syncd.errors import PlatformError, PlatformUnavailable
from syncd.platform import MemoryTokenStore, PlatformClient, app_key
from syncd.snapshot import CachedToken
from tests.platform.platform_helpers import (
    NODE_ROUTE,
    ORG_ROUTE,
    TOKEN_ROUTE,
    Connect,
    requests_seen,
    settings_for,
)
from tests.support.payloads import dept, person

FAKE_TOKEN = "static-server-token-1234"


class StaticSite:
    """A static web server on loopback; counts the requests it answers, by path."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.seen: Counter[str] = Counter()
        site = self

        class Handler(SimpleHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                site.seen[self.path.split("?")[0]] += 1

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), partial(Handler, directory=str(root)))
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        # a short poll interval: shutdown() waits for the serving loop to notice
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    def put(self, path: str, body: str) -> None:
        target = self.root / path.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(body, encoding="utf-8")


@pytest.fixture
def site(tmp_path: Path) -> Iterator[StaticSite]:
    site = StaticSite(tmp_path / "www")
    site.root.mkdir()
    site.thread.start()
    yield site
    site.server.shutdown()
    site.server.server_close()


@pytest.fixture
def site_client(connect: Connect, site: StaticSite, emulator: RunningEmulator) -> PlatformClient:
    """A client for the static site, holding a token already so no token request is made."""
    tokens = MemoryTokenStore()
    app = app_key(settings_for(emulator, base_url=site.url))
    tokens.renew(app, None, lambda: CachedToken(FAKE_TOKEN, 2**62, 0), 0)
    return connect(base_url=site.url, tokens=tokens, retry_attempts=3)


ORG_FILE = "/v1/admin/organizations/acme"


def test_html_page_is_not_an_envelope(site: StaticSite, site_client: PlatformClient) -> None:
    site.put(ORG_FILE, f"<html>welcome {FAKE_TOKEN} demo-secret</html>")
    with pytest.raises(PlatformUnavailable) as caught:
        site_client.root()
    message = str(caught.value)
    assert "HTTP 200" in message and "application/octet-stream" in message
    assert "not the platform's JSON envelope" in message
    assert "GET /v1/admin/organizations/acme:" in message and "access_token" not in message
    assert "welcome" not in message and FAKE_TOKEN not in message
    assert site.seen[ORG_FILE] == 1  # an answer, however wrong: not retried


def test_not_found_page_reports_status_and_content_type(site_client: PlatformClient) -> None:
    with pytest.raises(PlatformUnavailable, match=r"HTTP 404 with text/html"):
        site_client.root()


def test_truncated_json_is_not_an_envelope(site: StaticSite, site_client: PlatformClient) -> None:
    site.put(ORG_FILE, '{"status": 0, "message": "ok", "result": {"id": 1')
    with pytest.raises(PlatformUnavailable, match="not the platform's JSON envelope"):
        site_client.root()


def test_envelope_status_115_is_transient_whatever_the_http_code(
    site: StaticSite, site_client: PlatformClient
) -> None:
    site.put(ORG_FILE, '{"status": 115, "message": "Internal Server Error.", "result": {}}')
    with pytest.raises(PlatformUnavailable) as caught:
        site_client.root()
    assert "platform status 115: Internal Server Error." in str(caught.value)
    assert site.seen[ORG_FILE] == 3
    assert site_client.retries == 2


def test_envelope_error_on_http_200(site: StaticSite, site_client: PlatformClient) -> None:
    site.put(ORG_FILE, '{"status": 208502, "message": "no matching organization", "result": {}}')
    with pytest.raises(PlatformError) as caught:
        site_client.root()
    assert (caught.value.status, caught.value.message) == (208502, "no matching organization")
    assert caught.value.endpoint == "GET /v1/admin/organizations/acme"
    assert site.seen[ORG_FILE] == 1


def test_record_of_the_wrong_shape_is_reported_without_its_values(
    site: StaticSite, site_client: PlatformClient
) -> None:
    site.put(ORG_FILE, '{"status": 0, "message": "ok", "result": {"id": "secret-ish-id"}}')
    with pytest.raises(PlatformUnavailable) as caught:
        site_client.root()
    assert "Node id" in str(caught.value) and "secret-ish-id" not in str(caught.value)


def test_server_error_page_is_retried_then_unavailable(
    site: StaticSite, site_client: PlatformClient
) -> None:
    # Python's static server answers POST with 501 and an HTML page.
    with pytest.raises(PlatformUnavailable, match=r"HTTP 501 \(text/html\)"):
        site_client.import_orgs([{"name": "X", "serial_no": "X-1"}])  # safe to resend
    assert site_client.retries == 2
    assert site_client.calls["POST /v1/admin/organizations/{org_code}/import-orgs"] == 3


def test_envelope_error_carries_status_message_and_endpoint(
    client: PlatformClient, emulator: RunningEmulator
) -> None:
    with pytest.raises(PlatformError) as caught:
        client.node(31337)
    error = caught.value
    assert (error.status, error.message) == (208502, "no matching organization")
    assert error.endpoint == "GET /v1/admin/organizations/acme/31337"
    assert str(error) == (
        "GET /v1/admin/organizations/acme/31337: platform status 208502: no matching organization"
    )
    assert requests_seen(emulator, "GET", ORG_ROUTE + "/{node_id}") == 1


# The HTTP code of a failure is unspecified: the envelope's status decides, even on HTTP 500.


def test_envelope_error_with_http_500_is_the_error_not_a_retry(
    client: PlatformClient, emulator: RunningEmulator
) -> None:
    client.token()
    emulator.set_faults(errors_as_http_500=True)
    with pytest.raises(PlatformError) as caught:
        client.node(31337)
    assert (caught.value.status, caught.value.message) == (208502, "no matching organization")
    assert requests_seen(emulator, "GET", NODE_ROUTE) == 1
    assert client.retries == 0
    assert emulator.stats()["faults"]["errors_as_http_500"] == 1


def test_delete_refusals_with_http_500_keep_their_status(
    client: PlatformClient, emulator: RunningEmulator
) -> None:
    sales = client.import_orgs([dept("Sales", serial_no="S")]).successes["Acme/Sales"]
    client.import_employees([person("ann", "Acme/Sales")])
    emulator.set_faults(errors_as_http_500=True)
    with pytest.raises(PlatformError) as still_staffed:
        client.delete_node(sales)
    assert still_staffed.value.status == 208507
    with pytest.raises(PlatformError) as gone:
        client.delete_node(424242)
    assert gone.value.status == 208502
    assert client.retries == 0


def test_token_not_found_with_http_500_renews_the_token(
    client: PlatformClient, emulator: RunningEmulator
) -> None:
    client.token()
    emulator.issue_token()  # another program took the application's one token
    emulator.set_faults(errors_as_http_500=True)
    tokens_before = requests_seen(emulator, "POST", TOKEN_ROUTE)
    assert client.root().name == "Acme"
    assert requests_seen(emulator, "GET", ORG_ROUTE) == 2  # refused once, then accepted
    assert requests_seen(emulator, "POST", TOKEN_ROUTE) == tokens_before + 1
    assert client.retries == 0
