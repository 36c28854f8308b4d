"""Test-wide settings.

Hypothesis under CI (CI=true): the same examples on every run of the same commit. `derandomize`
derives each test's seed from the test itself, and no example database is read or written, so a
failure found once is not replayed from a stored file on the next run (issue #8). Locally the
default profile keeps exploring new examples and remembers failures in .hypothesis/.
"""

import functools
import os

import pytest
from hypothesis import settings
from streamlit.components.v2 import manifest_scanner
from streamlit.testing.v1 import local_script_runner

settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
    settings.load_profile("ci")



# Each AppTest scans every installed distribution's metadata for Streamlit v2 components when it first runs
# (streamlit/testing/v1/app_test.py, discover_and_register_components): 0.10 of 0.13 s CPU per AppTest here. The
# installed packages do not change while the tests run, so one scan per process serves every AppTest.
manifest_scanner.scan_component_manifests = functools.cache(manifest_scanner.scan_component_manifests)


# AppTest waits for its script run by polling every millisecond (local_script_runner.require_widgets_deltas): the
# waiting thread wakes 1,000 times a second and takes the GIL from the script thread each time. The script thread
# says SHUTDOWN before it returns (LocalScriptRunner.run joins it right after), so joining it waits for the same
# moment without waking; past the timeout the original reports it (its timeout 0: the same error and shutdown).
_poll_for_deltas = local_script_runner.require_widgets_deltas


def _join_for_deltas(runner, timeout: float = 3) -> None:
    thread = runner._script_thread
    if thread is not None:
        thread.join(timeout)
    if not runner.script_stopped():
        _poll_for_deltas(runner, 0)


local_script_runner.require_widgets_deltas = _join_for_deltas


# The suite in parts (`pytest -m unit`, `-m property`, `-m app`, `-m browser`, or `-m "not browser"` as the quick
# loop while coding; pyproject.toml lists the markers): browser tests are marked in their modules; the others by kind.
APP_MODULES = ("test_app_", "test_valid_configs", "test_robustness_url", "test_report")


@pytest.hookimpl(tryfirst=True)  # before pytest's -m selection reads the marks
def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.get_closest_marker("browser"):
            continue
        seeded = "seed" in getattr(getattr(item, "callspec", None), "params", {})  # a seeded random draw
        if seeded or getattr(getattr(item, "obj", None), "is_hypothesis_test", False):
            item.add_marker(pytest.mark.property)
        elif item.module.__name__.startswith(APP_MODULES):
            item.add_marker(pytest.mark.app)
        else:
            item.add_marker(pytest.mark.unit)
