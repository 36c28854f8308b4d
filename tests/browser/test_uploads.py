"""A file too big to be a config.json (issue 17): the page says in words what it is and what to upload.

The browser refuses a file over an uploader's max_upload_size before sending it, with only a red icon whose
reason shows on hover. Up to albert_core.formats.upload.UPLOAD_MB the file reaches the app, which refuses it (over
64 KiB) with a message; over it, the caption under each uploader says what happens. Tried with a 2 MB file, as a
tokenizer.json is, on the sidebar's import and on Verify's "A decoder, or any other model transformers builds".
"""

from __future__ import annotations

import tomllib

import pytest

from albert_core.formats.upload import MAX_UPLOAD_BYTES, UPLOAD_MB

from .harness import ROOT, open_section, rerun, wait_until_idle

pytestmark = pytest.mark.browser

BIG = 2 * 1024 * 1024  # bytes: a tokenizer.json, uploaded by mistake
PAYLOAD = b'{"model": "' + b"x" * (BIG - 13) + b'"}'



def test_the_server_takes_what_the_uploaders_take():
    server = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())["server"]
    assert server["maxUploadSize"] == UPLOAD_MB and BIG < UPLOAD_MB * 1024 * 1024 and BIG > MAX_UPLOAD_BYTES


def _said(text: str) -> None:
    """The message says how big the file is, what a config.json weighs, the limit, and what to upload."""
    for words in ("2.00 MiB", f"{BIG:,} bytes", "a config.json is a few kB", "64 KiB", "upload its config.json"):
        assert words in text, f"{words!r} not in {text!r}"


def _caption(where) -> str:
    return " ".join(where.locator('[data-testid="stCaptionContainer"]').all_inner_texts())


def test_sidebar_import_of_a_2_mb_file_says_what_to_do(server, page):
    page.goto(f"{server}/parameters")
    wait_until_idle(page)
    open_section(page, "Import / export")
    sidebar = page.locator('[data-testid="stSidebar"]')
    assert "a few kB; read up to 64 KiB" in sidebar.locator('[data-testid="stFileUploader"]').inner_text()
    assert f"over {UPLOAD_MB} MB" in _caption(sidebar)  # what the browser's own refusal means, in words
    rerun(page, lambda: sidebar.locator('input[type="file"]').set_input_files(
        {"name": "tokenizer.json", "mimeType": "application/json", "buffer": PAYLOAD}), timeout_ms=60_000)
    alert = sidebar.locator('[data-testid="stAlertContentError"]')
    alert.first.wait_for(timeout=30_000)
    text = alert.first.inner_text()
    assert "tokenizer.json cannot be read" in text
    _said(text)


def test_verify_other_encoder_upload_of_a_2_mb_file_says_what_to_do(server, page):
    page.goto(f"{server}/verify")
    wait_until_idle(page)
    section = page.locator('[data-testid="stMain"] [data-testid="stExpander"]').filter(has_text="any other model transformers builds")
    section.locator("summary").click()
    uploader = section.locator('[data-testid="stFileUploader"]')
    uploader.wait_for(timeout=30_000)
    assert "a few kB; read up to 64 KiB" in uploader.inner_text()
    assert f"over {UPLOAD_MB} MB" in _caption(section)
    rerun(page, lambda: uploader.locator('input[type="file"]').set_input_files(
        {"name": "tokenizer.json", "mimeType": "application/json", "buffer": PAYLOAD}), timeout_ms=60_000)
    alert = section.locator('[data-testid="stAlertContentError"]')
    alert.first.wait_for(timeout=30_000)
    text = alert.first.inner_text()
    assert "tokenizer.json cannot be read" in text
    _said(text)
