"""Test-wide settings.

Hypothesis under CI (CI=true): the same examples on every run of the same commit. `derandomize`
derives each test's seed from the test itself, and no example database is read or written, so a
failure found once is not replayed from a stored file on the next run (issue #8). Locally the
default profile keeps exploring new examples and remembers failures in .hypothesis/.
"""

import os

from hypothesis import settings

settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
    settings.load_profile("ci")
