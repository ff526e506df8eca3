"""The manual's reference against the code (docs/gen_reference.py writes it from the code).

- Each committed reference page is what the generator writes from the models, the CLI, the
  errors and the metrics now: a setting, option, exit code or metric added, renamed or
  removed without ``make reference`` fails here, naming the page.
- The example settings (``config/syncd.example.toml`` and ``two-sources.example.toml``)
  and the models agree: every key they write, commented out or not, is a setting, and every
  setting is written in one of them (a secret through its ``*_file`` key).
- The checks themselves find what they should: a key the models lack, a setting the
  examples leave out, are reported (on copies of the examples, changed).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs"


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_reference", DOCS / "gen_reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("gen_reference", module)
    spec.loader.exec_module(module)
    return module


gen = _generator()


@pytest.mark.parametrize("page", sorted(gen.PAGES))
def test_the_committed_reference_is_what_the_code_says(page: str) -> None:
    committed = (DOCS / page).read_text(encoding="utf-8")
    assert committed == gen.PAGES[page](), f"docs/{page} is out of date: run make reference"


def test_every_setting_of_the_models_is_in_the_settings_reference() -> None:
    page = gen.settings_page()
    for setting in gen.settings():
        assert f"| `{setting.path.rpartition('.')[2]}` | {setting.type} |" in page, setting.path
    # Checked against the models themselves, not the generator's walk alone.
    from syncd.config import SyncSettings

    for name in SyncSettings.model_fields:
        if name not in ("exclude", "dates"):
            assert f"`SYNCD_SYNC__{name.upper()}`" in page


def test_every_command_and_option_is_in_the_commands_reference() -> None:
    from typer.testing import CliRunner

    from syncd.cli import app

    page = gen.commands_page()
    for name in ("sync", "apply", "check", "run", "status", "init", "demo", "emulator"):
        assert f"## `syncd {name}`" in page
        helped = CliRunner().invoke(app, [name, "--help"], terminal_width=200)
        assert helped.exit_code == 0, helped.output
        for word in helped.output.split():
            option = word.rstrip(",")
            if option.startswith("--") and option.replace("-", "").isalnum() and option != "--help":
                assert f"`{option}`" in page, (name, option)
    for group, name in [("reports", "list"), ("reports", "prune"), ("state", "backup")]:
        assert f"## `syncd {group} {name}`" in page


def test_every_exit_code_and_metric_is_in_the_reference() -> None:
    from syncd import errors

    page = gen.exit_codes_page()
    for name, code in vars(errors).items():
        if name.startswith("EXIT_"):
            assert f"| {code} | `{name}` |" in page
    assert "not described" not in page  # each code's meaning, from errors.py's docstring
    metrics = gen.metrics_page()
    for metric in ("syncd_runs_total", "syncd_last_success_timestamp_seconds", "syncd_leader"):
        assert f"`{metric}`" in metrics


def test_the_example_settings_and_the_models_agree() -> None:
    assert gen.example_problems() == []


def _examples_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, old: str, new: str
) -> list[str]:
    copies = []
    for example in gen.EXAMPLES:
        copy = tmp_path / example.name
        text = example.read_text(encoding="utf-8")
        copy.write_text(text.replace(old, new, 1), encoding="utf-8")
        copies.append(copy)
    monkeypatch.setattr(gen, "EXAMPLES", tuple(copies))
    problems: list[str] = gen.example_problems()
    return problems


def test_a_key_the_models_lack_is_found_commented_out_or_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    problems = _examples_changed(
        tmp_path, monkeypatch, "max_removals = 50\n", "max_removalz = 50\n# max_removals = 50\n"
    )
    assert any("sync.max_removalz: no such setting" in p for p in problems), problems
    problems = _examples_changed(tmp_path, monkeypatch, "# page_size = 500", "# page_sise = 500")
    assert any("source.ldap.page_sise: no such setting" in p for p in problems), problems
    assert any(p.startswith("source.ldap.page_size: a setting no example") for p in problems)


def test_a_setting_the_examples_leave_out_is_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    problems = _examples_changed(tmp_path, monkeypatch, "retry_after_max = 300.0\n", "")
    assert problems == ["platform.retry_after_max: a setting no example settings file names"]
    problems = _examples_changed(
        tmp_path, monkeypatch, "exclude = { usernames = [], departments = [] }", "exclude = {}"
    )
    assert "sync.exclude.usernames: a setting no example settings file names" in problems


def test_a_changed_model_makes_the_committed_reference_stale(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # What the page test relies on: the page follows the models, so a committed copy
    # written before a change no longer matches.
    before = gen.settings_page()
    rows = list(gen.settings())
    monkeypatch.setattr(gen, "settings", lambda: iter(rows[:-1]))
    assert gen.settings_page() != before


def test_the_benchmark_writers_find_their_markers() -> None:
    # `make bench-docs` writes its table into docs/performance.md and its headline into
    # README.md, between these markers: a page rewritten without them stops the writer.
    from benchmarks.table import BEGIN, END, HEADLINE_BEGIN, HEADLINE_END

    performance = (DOCS / "performance.md").read_text(encoding="utf-8")
    readme = (DOCS.parent / "README.md").read_text(encoding="utf-8")
    assert performance.index(BEGIN) < performance.index(END)
    assert readme.index(HEADLINE_BEGIN) < readme.index(HEADLINE_END)


def test_the_readme_links_resolve_and_its_quickstart_is_what_ci_runs() -> None:
    # The site's build checks the links of docs/ (--strict); the README is not in the
    # site, and is read on a forge: its relative links must name files that exist.
    import re

    readme = (DOCS.parent / "README.md").read_text(encoding="utf-8")
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", readme)
    local = [t for t in targets if "://" not in t]
    assert len(local) > 30
    for target in local:
        assert (DOCS.parent / target).exists(), target
    ci = (DOCS.parent / ".ci" / "run").read_text(encoding="utf-8").strip().splitlines()[-1]
    assert ci == "make test"
    assert "\nmake demo    # " in readme and "\nmake test    # " in readme


def test_the_version_the_manual_quotes_is_the_one_syncd_prints() -> None:
    # The README once said 0.2.0 was schema 7 while `syncd --version` said schema 9: every
    # `syncd X (state database schema N)` the manual quotes is what this syncd prints.
    import re
    from importlib.metadata import version

    from syncd.snapshot.tables import SCHEMA_VERSION

    printed = f"syncd {version('syncd')} (state database schema {SCHEMA_VERSION})"
    pages = [DOCS.parent / "README.md", *DOCS.rglob("*.md")]
    quoted = [
        (page.name, found)
        for page in pages
        for found in re.findall(r"syncd \S+ \(state database schema \d+\)", page.read_text())
    ]
    assert quoted, "the manual quotes syncd --version somewhere"
    assert all(found == printed for _, found in quoted), (printed, quoted)
