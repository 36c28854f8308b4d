"""serve.py: `streamlit run serve.py` serves app.py as Streamlit's ASGI app, and its warm-up imports what every page
needs (never torch). The browser suite runs the app through serve.py (tests/browser/harness.py)."""

import json
import subprocess
import sys
from pathlib import Path

from streamlit.web.server.app_discovery import discover_asgi_app

ROOT = Path(__file__).resolve().parents[1]


def test_streamlit_run_finds_the_app_in_serve_py():
    found = discover_asgi_app(ROOT / "serve.py")
    assert found.is_asgi_app and found.app_name == "app"
    assert not discover_asgi_app(ROOT / "app.py").is_asgi_app  # app.py stays a plain Streamlit script


def test_warm_up_imports_what_the_pages_need_and_not_torch():
    code = ("import json, sys; sys.path.insert(0, '.'); import serve; before = set(sys.modules); serve.warm_up(); "
            "print(json.dumps({'before': sorted(m for m in ('pandas', 'ui.figures') if m in before), "
            "'after': sorted(m for m in ('pandas', 'ui.figures', 'ui.sidebar', 'torch', 'transformers') "
            "if m in sys.modules)}))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert seen["before"] == []  # importing serve.py itself loads none of it: the server starts at once
    assert seen["after"] == ["pandas", "ui.figures", "ui.sidebar"]
