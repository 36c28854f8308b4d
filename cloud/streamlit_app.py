"""Streamlit Community Cloud's entrypoint: the app that serve.py serves, with this folder's requirements.txt.

Deploy with "Main file path" cloud/streamlit_app.py. Community Cloud reads the dependency file beside the entrypoint
before the one at the repository's root, so it installs cloud/requirements.txt: the root file's pins with PyTorch's
CPU build (PyPI's torch for Linux is the CUDA build: +3.8 GB installed, its measuring process +370 MiB at rest;
docs/deploy.md). That file is generated from ../requirements.txt by scripts/cloud_requirements.py and checked by
tests/test_cloud.py.

Streamlit finds the ASGI app by reading this file (an `app = st.App(...)` assignment), so the line is written here;
everything it is made of (the warm-up at the server's start, the page middleware) is serve.py's.
"""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent  # the repository: app.py, pages/, albert_core/, serve.py
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import streamlit as st  # noqa: E402
from starlette.middleware import Middleware  # noqa: E402

import serve  # noqa: E402  (sets TCP_NODELAY on the listening socket, as under `streamlit run serve.py`)

app = st.App(str(serve.APP), lifespan=serve.lifespan, middleware=[Middleware(serve.PageBase)])
