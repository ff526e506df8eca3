"""How many examples a property tries: every one in ``make test``, a tenth in ``make check``.

The hypothesis profile in force chooses (``--hypothesis-profile``; the profiles are
registered in tests/conftest.py): ``suite``, hypothesis's 100 examples where a test names
no count, for the whole suite (CI); ``check``, 10, for the quick tier before a commit;
``deep``, 2,000, twenty times the suite's, to hunt for rare draws by hand (not in CI: the
fast tier takes about 35 minutes on one core). A property that names its own count
writes ``examples(300)``: 300 under ``suite``, 30 under ``check``, 6,000 under ``deep``,
never fewer than MINIMUM. One knob scales them all.
"""

from __future__ import annotations

from hypothesis import settings

FULL = 100  # hypothesis's default count, the suite's: a test's own count is given relative to it
MINIMUM = 5
SUITE = "suite"  # every example, no deadline: the whole suite's (CI)
CHECK = "check"  # a tenth: make check's
DEEP = "deep"  # twenty times: rare draws hunted by hand


def examples(count: int) -> int:
    """``count`` examples under the default profile; scaled like it under another."""
    return max(MINIMUM, count * settings().max_examples // FULL)
