"""Issue 34's layout: move syncd's top-level modules into packages, and rewrite every
reference to them (imports, patch targets, docs, file paths). Idempotent: run it again
after merging a branch that still names the old paths (``python tools/relayout.py``).

Logger names stay what they were (``syncd.runner``...): admins filter logs by them.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# old dotted name (under syncd.) -> new dotted name (under syncd.)
MOVES = {
    **{
        m: f"run.{m}"
        for m in (
            "runner",
            "recovery",
            "rebuild",
            "delivery",
            "unchanged",
            "saved_plan",
            "known_problems",
            "dry_runs",
            "cursors",
            "runs",
            "policy",
            "notifications",
            "leadership",
            "lock",
        )
    },
    "daemon": "service.daemon",
    "metrics": "service.metrics",
    "_status": "service.status",
    "_cluster": "service.cluster",
    "_notify": "service.sd_notify",
    "_schedule": "config.cron",
    "init": "setup.init",
    "demo": "setup.demo",
}
PACKAGES = {
    "run": "A run and what is around it: reading, planning, applying, recording.",
    "service": "The long-running service: the daemon, its status, health and metrics.",
    "setup": "Getting started: new settings and units (``syncd init``), the demo.",
}
TEXT_SUFFIXES = {
    ".py",
    ".md",
    ".toml",
    ".cfg",
    ".ini",
    ".yml",
    ".yaml",
    ".j2",
    ".service",
    ".timer",
    ".txt",
}
TEXT_NAMES = {"Makefile", "Dockerfile"}
SKIP = ("tools/relayout.py",)


def git(*args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=ROOT, check=True, text=True, capture_output=True
    ).stdout


def move_files() -> None:
    for package, doc in PACKAGES.items():
        init = ROOT / "syncd" / package / "__init__.py"
        if not init.exists():
            init.parent.mkdir(exist_ok=True)
            init.write_text(f'"""{doc} (docs/design.md)"""\n', encoding="utf-8")
            git("add", str(init.relative_to(ROOT)))
    for old, new in MOVES.items():
        source = ROOT / "syncd" / f"{old}.py"
        if source.exists():
            git("mv", f"syncd/{old}.py", "syncd/" + new.replace(".", "/") + ".py")


def keep_logger_names() -> None:
    for old, new in MOVES.items():
        path = ROOT / "syncd" / (new.replace(".", "/") + ".py")
        text = path.read_text(encoding="utf-8")
        fixed = text.replace("logging.getLogger(__name__)", f'logging.getLogger("syncd.{old}")')
        if fixed != text:
            path.write_text(fixed, encoding="utf-8")


_NAMES = "|".join(sorted(map(re.escape, MOVES), key=len, reverse=True))
# syncd.runner (not .syncd.runner, not a logger's name in getLogger("syncd.leadership"),
# not caplog's logger="syncd.notifications", not the daemon's own "syncd.daemon: " line prefix).
_DOTTED = re.compile(rf'(?<![\w./-])(?<!getLogger\(")(?<!logger=")syncd\.({_NAMES})\b(?!: )')
_PATH = re.compile(rf"(?<![\w.])syncd/({_NAMES})\.py\b")
_FROM = re.compile(
    r"^(?P<indent>[ \t]*)from syncd import (?P<names>[^(\n]+?)(?P<tail>[ \t]*(#.*)?)$", re.M
)


def _split_from(match: re.Match[str]) -> str:
    """``from syncd import cursors, delivery as d, clock`` -> one line per package."""
    indent, tail = match["indent"], match["tail"]
    groups: dict[str, list[str]] = {}
    for item in (i.strip() for i in match["names"].split(",")):
        name = item.split(" as ")[0].strip()
        if name in MOVES:
            package, _, module = MOVES[name].rpartition(".")
            groups.setdefault(f"syncd.{package}", []).append(item.replace(name, module, 1))
        else:
            groups.setdefault("syncd", []).append(item)
    if list(groups) == ["syncd"]:
        return match.group(0)
    lines = [
        f"{indent}from {base} import {', '.join(items)}" for base, items in sorted(groups.items())
    ]
    lines[0] += tail
    return "\n".join(lines)


def rewrite(text: str) -> str:
    text = _FROM.sub(_split_from, text)
    text = _DOTTED.sub(lambda m: "syncd." + MOVES[m[1]], text)
    return _PATH.sub(lambda m: "syncd/" + MOVES[m[1]].replace(".", "/") + ".py", text)


def rewrite_tree() -> list[str]:
    changed = []
    for name in git("ls-files").splitlines():
        path = ROOT / name
        if name in SKIP or not path.is_file():
            continue
        if path.suffix not in TEXT_SUFFIXES and path.name not in TEXT_NAMES:
            continue
        text = path.read_text(encoding="utf-8")
        new = rewrite(text)
        if new != text:
            path.write_text(new, encoding="utf-8")
            changed.append(name)
    return changed


if __name__ == "__main__":
    move_files()
    keep_logger_names()
    for name in rewrite_tree():
        print(name, file=sys.stderr)
