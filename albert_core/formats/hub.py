"""Import by Hub id: fetch only a model's config.json from the Hugging Face Hub. No torch, no weights.

`fetch_config("FacebookAI/xlm-roberta-large")` returns the config.json as a dict, or raises HubError
with a message for people: the id is malformed, the Hub cannot be reached (offline), the repository
does not exist or is private, it is gated, it has no config.json, the file is too large or not JSON,
or the Hub did not answer within the timeout. It goes through huggingface_hub (its URL scheme, its
HTTP session and its error mapping): a HEAD request (get_hf_file_metadata, which also gives the size)
and one streamed GET that stops at max_bytes; never a token, never a retry, nothing written to disk.
HF_ENDPOINT is read at each call (a mirror, or the tests' local server). Successful fetches are cached
in memory per (endpoint, id); failures are not, so a retry after going online works.
"""

from __future__ import annotations

import json
import os
import re
from functools import lru_cache
from typing import Any

from .upload import MAX_UPLOAD_BYTES, load_json

DEFAULT_TIMEOUT = 5.0  # seconds for the Hub to answer each request
MAX_CONFIG_BYTES = MAX_UPLOAD_BYTES  # a config.json is a few hundred bytes; the upload's cap
# Hub repo ids: "name" or "owner/name", letters, digits, "-", "_", "."; at most 96 characters each
_PART = r"[A-Za-z0-9](?:[A-Za-z0-9._-]{0,94}[A-Za-z0-9_])?"
_MODEL_ID = re.compile(rf"^(?:{_PART}/)?{_PART}$")
_URL_PREFIX = re.compile(r"^https?://(?:www\.)?huggingface\.co/", re.IGNORECASE)


class HubError(ValueError):
    """Why a config.json could not be fetched, and what to do instead."""


def check_model_id(model_id: Any) -> str:
    """The id, trimmed (a huggingface.co address is accepted too); HubError saying what a valid id looks like."""
    if not isinstance(model_id, str):
        raise HubError(f"a model id is text like FacebookAI/xlm-roberta-large, got {type(model_id).__name__}")
    s = _URL_PREFIX.sub("", model_id.strip()).strip("/")
    if not s:
        raise HubError("enter a model id, e.g. FacebookAI/xlm-roberta-large")
    if len(s) > 200 or not _MODEL_ID.match(s) or "--" in s or ".." in s:
        shown = s if len(s) <= 60 else s[:57] + "..."
        raise HubError(f"{shown!r} is not a Hugging Face model id: write owner/name with letters, digits, '-', "
                       "'_' or '.', e.g. FacebookAI/xlm-roberta-large")
    return s


def fetch_config(model_id: str, *, timeout: float = DEFAULT_TIMEOUT, max_bytes: int = MAX_CONFIG_BYTES) -> dict:
    """The config.json of `model_id` on the Hub (HF_ENDPOINT), as a dict; HubError with a clear message otherwise."""
    mid = check_model_id(model_id)
    endpoint = os.environ.get("HF_ENDPOINT", "").rstrip("/") or None
    text = _fetch_text(mid, endpoint, float(timeout), int(max_bytes))
    return json.loads(text)  # a fresh dict each time; the cached text is already validated


def config_from_hub(model_id: str, **kw: Any) -> Any:
    """fetch_config then hf.from_hf_config, named after the id (ConfigError when the config is not usable)."""
    from .hf import from_hf_config

    mid = check_model_id(model_id)
    d = fetch_config(mid, **kw)
    return from_hf_config({**d, "_name_or_path": mid})


@lru_cache(maxsize=128)
def _fetch_text(model_id: str, endpoint: str | None, timeout: float, max_bytes: int) -> str:
    """config.json's text, checked to be one JSON object (cached: only successes are, lru_cache skips raises)."""
    body = _download(model_id, endpoint, timeout, max_bytes)
    try:
        d = load_json(body)
    except ValueError as e:
        raise HubError(f"{model_id}'s config.json cannot be read: {e}") from None
    if not isinstance(d, dict):
        raise HubError(f"{model_id}'s config.json holds a JSON {type(d).__name__}, not an object of settings")
    return json.dumps(d)


def _download(model_id: str, endpoint: str | None, timeout: float, max_bytes: int) -> bytes:
    import httpx2  # huggingface_hub's HTTP client
    from huggingface_hub import constants, errors, get_hf_file_metadata, hf_hub_url
    from huggingface_hub.utils import build_hf_headers, get_session, hf_raise_for_status

    where = endpoint or constants.ENDPOINT
    if constants.is_offline_mode():
        raise HubError("the Hugging Face Hub is switched off here (HF_HUB_OFFLINE); upload the config.json instead")
    url = hf_hub_url(model_id, "config.json", endpoint=endpoint)
    try:
        meta = get_hf_file_metadata(url, token=False, timeout=timeout, endpoint=endpoint)
        _check_size(model_id, meta.size, max_bytes)
        with get_session().stream("GET", url, headers=build_hf_headers(token=False), timeout=timeout,
                                  follow_redirects=True) as r:
            hf_raise_for_status(r)
            body = b""
            for chunk in r.iter_bytes():
                body += chunk
                _check_size(model_id, len(body), max_bytes)
            return body
    except errors.GatedRepoError:
        raise HubError(f"{model_id} is gated: its owners must approve access, and this app sends no token; "
                       "download its config.json on the Hub and upload it here") from None
    except errors.RepositoryNotFoundError:
        raise HubError(f"{model_id} was not found on the Hub (or it is private): check the spelling, "
                       "or upload its config.json") from None
    except (errors.EntryNotFoundError, errors.RevisionNotFoundError):
        raise HubError(f"{model_id} has no config.json (is it a transformers model?)") from None
    except errors.HfHubHTTPError as e:
        status = e.response.status_code if e.response is not None else "an error"
        raise HubError(f"the Hub answered {status} for {model_id}'s config.json; try again later "
                       "or upload the config.json") from None
    except httpx2.TimeoutException:
        raise HubError(f"the Hub ({where}) did not answer within {timeout:g} s; try again, "
                       "or upload the config.json") from None
    except (httpx2.TransportError, OSError) as e:
        raise HubError(f"cannot reach the Hugging Face Hub ({where}): {type(e).__name__}; "
                       "offline? Upload the config.json instead") from None


def _check_size(model_id: str, size: int | None, max_bytes: int) -> None:
    if size is not None and size > max_bytes:
        raise HubError(f"{model_id}'s config.json is over {max_bytes:,} bytes ({size:,} or more); "
                       "a config.json is a few hundred bytes, so this is not one")
