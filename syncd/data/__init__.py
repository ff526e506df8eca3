"""Files that ship with syncd: the example settings, the sample company, the systemd units
and the template of ``syncd init``.

In a checkout the repository's ``config/`` and ``systemd/`` are these files: ``config`` and
``systemd`` here are links to them, and a wheel carries copies. Read them through this
module (``importlib.resources``): the same code then serves a checkout, an editable
install and an installed wheel.
"""

from __future__ import annotations

from importlib.resources import files
from importlib.resources.abc import Traversable

_HERE = files(__name__)
EXAMPLE_SETTINGS = _HERE / "config" / "syncd.example.toml"
SAMPLE = _HERE / "config" / "sample"
UNITS = _HERE / "systemd"
SETTINGS_TEMPLATE = _HERE / "syncd.toml.j2"


def unit_files() -> list[Traversable]:
    """syncd.service, syncd-sync.service and syncd-sync.timer."""
    return sorted((f for f in UNITS.iterdir() if f.is_file()), key=lambda f: f.name)
