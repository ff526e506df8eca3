"""How many examples a property tries: every one in ``make test``, a tenth in ``make check``.

The hypothesis profile in force chooses (``--hypothesis-profile``; the profiles are
registered in tests/conftest.py): ``suite``, hypothesis's 100 examples where a test names
no count, for the whole suite (CI); ``check``, 10, for the quick tier before a commit. A
property that names its own count writes ``examples(300)``: 300 under ``suite``, 30
under ``check``, never fewer than MINIMUM. One knob scales them all.
"""

from __future__ import annotations

from hypothesis import settings

FULL = 100  # hypothesis's default count, the suite's: a test's own count is given relative to it
MINIMUM = 5
SUITE = "suite"  # every example, no deadline: the whole suite's (CI)
CHECK = "check"  # a tenth: make check's


def examples(count: int) -> int:
    """``count`` examples under the default profile; scaled like it under another."""
    return max(MINIMUM, count * settings().max_examples // FULL)
