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


def pytest_collection_modifyitems(config, items):
    """Under pytest-xdist (scripts/test.sh runs -n 2 --dist loadgroup) every browser test runs on one worker, one
    after another, as without xdist: each drives its module's server and Chromium; the other worker meanwhile
    runs the rest."""
    import pytest

    for item in items:
        if item.get_closest_marker("browser"):
            item.add_marker(pytest.mark.xdist_group("browser"))
