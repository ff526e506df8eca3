"""Reading HTML the way the tests need: tags, text, style sheets, scripts, and external
references."""

from __future__ import annotations

import base64
import hashlib
import re
from html.parser import HTMLParser

REFERENCE_ATTRIBUTES = {
    "src",
    "href",
    "xlink:href",
    "action",
    "formaction",
    "poster",
    "srcset",
    "data",
    "background",
    "ping",
}
# A <script> is its page's own unless it has a src (a reference, found below); which inline
# scripts may run is the Content-Security-Policy's to say (``allowed_scripts``).
LOADING_TAGS = {"link", "iframe", "frame", "object", "embed", "img", "base", "audio"}


class Page(HTMLParser):
    """Tags, attributes, text and style sheets of a page, as html.parser sees them."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, list[tuple[str, str | None]]]] = []
        self.text: list[str] = []
        self.styles: list[str] = []
        self.scripts: list[tuple[str | None, str]] = []  # (type attribute, content)
        self._in: list[str] = []
        self._attrs: list[tuple[str, str | None]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, attrs))
        self._in.append(tag)
        self._attrs = attrs

    def handle_endtag(self, tag: str) -> None:
        if tag in self._in:
            while self._in and self._in.pop() != tag:
                pass

    def handle_data(self, data: str) -> None:
        if self._in and self._in[-1] == "style":
            self.styles.append(data)
        elif self._in and self._in[-1] == "script":
            self.scripts.append((dict(self._attrs).get("type"), data))
        else:
            self.text.append(data)

    @property
    def all_text(self) -> str:
        return "".join(self.text)


def parse(page: str) -> Page:
    parser = Page()
    parser.feed(page)
    parser.close()
    return parser


def external_references(page: str) -> list[str]:
    """Everything in a page that would load or run something from elsewhere."""
    parsed = parse(page)
    found = []
    for tag, attrs in parsed.tags:
        if tag in LOADING_TAGS:
            found.append(f"<{tag}>")
        for name, value in attrs:
            if name in REFERENCE_ATTRIBUTES and value and not value.startswith("#"):
                found.append(f"{tag} {name}={value}")
            if name.startswith("on"):
                found.append(f"{tag} {name}")  # an event handler: script in an attribute
            if name == "style" and value and re.search(r"url\(|@import", value, re.I):
                found.append(f"{tag} style={value}")
            if name == "http-equiv" and (value or "").lower() == "refresh":
                found.append("meta refresh")
    for sheet in parsed.styles:
        found += [f"css {m.group()}" for m in re.finditer(r"@import|url\s*\(", sheet, re.I)]
    return found


def allowed_scripts(page: str) -> tuple[list[str], list[str]]:
    """(scripts that will run, data blocks): every script that runs must be allowed by its
    hash in the page's Content-Security-Policy, and the policy must allow nothing else."""
    parsed = parse(page)
    policy = next(
        dict(attrs)["content"] or ""
        for tag, attrs in parsed.tags
        if tag == "meta" and dict(attrs).get("http-equiv") == "Content-Security-Policy"
    )
    sources = dict(d.strip().split(" ", 1) for d in policy.split(";") if " " in d.strip())
    code = [text for kind, text in parsed.scripts if kind in (None, "", "text/javascript")]
    data = [text for kind, text in parsed.scripts if kind == "application/json"]
    allowed = set(sources.get("script-src", "").split())
    for text in code:
        digest = base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode()
        assert f"'sha256-{digest}'" in allowed, "a script the policy does not allow"
    assert all(a.startswith("'sha256-") for a in allowed), allowed
    assert sources.get("default-src") == "'none'"
    return code, data
