"""Import by Hub id, end to end through huggingface_hub against a real local HTTP server.

The server (http.server in a thread on 127.0.0.1) serves the Hub's file layout,
/{repo_id}/resolve/{revision}/config.json, with the headers the Hub sends (X-Repo-Commit, ETag,
Content-Length; X-Error-Code on errors, which huggingface_hub maps to its exceptions). HF_ENDPOINT
points at it and HF_HUB_CACHE at a temporary folder. Nothing of our own code is replaced.
"""

import json
import re
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from albert_core.decoders.decoder_presets import DECODER_PRESETS
from albert_core.estimate.params import count_parameters
from albert_core.formats import hub
from albert_core.formats.hf import from_hf_config
from albert_core.presets import HUB_CONFIGS, PRESETS
from albert_core.workload import Workload

ROBERTA = json.dumps(HUB_CONFIGS["xlm-roberta-large"][1]).encode()
# a model_type no family models: Verify and `verify --hub` measure it on the engine
MEGATRON = json.dumps({"model_type": "megatron-bert", "vocab_size": 99, "hidden_size": 32, "num_hidden_layers": 2,
                       "num_attention_heads": 4, "intermediate_size": 37, "max_position_embeddings": 64}).encode()
COMMIT = "a" * 40
# the decoder presets' config.json as albert_core writes it (decoders.decoder_config.DecoderConfig.to_hf), under their ids
DECODERS = {p.model_id: json.dumps(p.cfg.to_hf()).encode() for p in DECODER_PRESETS.values()}
PUBLISHED = {hub_id: json.dumps(d).encode() for hub_id, d in HUB_CONFIGS.values()}  # every preset's Hub id


class HubHandler(BaseHTTPRequestHandler):
    """The Hub's /{repo_id}/resolve/{revision}/{filename}, with one behaviour per repository name."""

    gets: list[str] = []

    def log_message(self, *args):  # quiet
        pass

    def do_HEAD(self):
        self._answer(send_body=False)

    def do_GET(self):
        HubHandler.gets.append(self.path)
        self._answer(send_body=True)

    def _error(self, status, code):
        self.send_response(status)
        self.send_header("X-Error-Code", code)
        self.send_header("X-Error-Message", code)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def _answer(self, send_body):
        repo, _, rest = self.path.lstrip("/").partition("/resolve/")
        if rest != "main/config.json":
            return self._error(404, "EntryNotFound")
        name = repo.split("/")[-1]
        if name == "missing":
            return self._error(401, "RepoNotFound")  # the Hub answers 401 for missing and private repos alike
        if name == "gated":
            return self._error(403, "GatedRepo")
        if name == "no-config":
            return self._error(404, "EntryNotFound")
        if name == "slow":
            time.sleep(2.0)
        body = {"not-json": b"<html>Hello</html>", "huge": b" " * (1 << 20), "array": b"[1, 2]",
                "megatron-small": MEGATRON}.get(name, PUBLISHED.get(repo, DECODERS.get(repo, ROBERTA)))
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("X-Repo-Commit", COMMIT)
        self.send_header("ETag", '"0123456789abcdef"')
        if name == "unannounced" and not send_body:
            pass  # HEAD without a size: the cap must hold while reading
        else:
            self.send_header("Content-Length", str(len(body if name != "unannounced" else b" " * 300_000)))
        self.end_headers()
        if send_body:
            self.wfile.write(body if name != "unannounced" else b" " * 300_000)


@pytest.fixture
def server(monkeypatch, tmp_path):
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), HubHandler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{httpd.server_address[1]}"
    monkeypatch.setenv("HF_ENDPOINT", url)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub-cache"))
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    HubHandler.gets.clear()
    hub._fetch_text.cache_clear()
    yield url
    httpd.shutdown()
    httpd.server_close()


def test_found_parses_and_counts_like_the_preset(server):
    d = hub.fetch_config("FacebookAI/xlm-roberta-large")
    assert d == HUB_CONFIGS["xlm-roberta-large"][1]
    cfg = hub.config_from_hub("FacebookAI/xlm-roberta-large")
    assert cfg.name == "FacebookAI/xlm-roberta-large"
    assert count_parameters(cfg).total == count_parameters(PRESETS["xlm-roberta-large"]).total
    assert from_hf_config(d).family == "roberta"


@pytest.mark.parametrize("preset", ["mpnet-base", "all-mpnet-base-v2"])
def test_mpnet_by_hub_id_is_the_preset(server, preset):
    hub_id = HUB_CONFIGS[preset][0]
    cfg = hub.config_from_hub(hub_id)
    assert cfg.family == "mpnet" and cfg == PRESETS[preset].replace(name=hub_id)
    assert count_parameters(cfg).total == 109_486_464  # sentence-transformers' all-mpnet-base-v2: 109.5M


def test_results_are_cached_and_only_config_json_is_fetched(server):
    for _ in range(3):
        hub.fetch_config("org/model")
    hub.fetch_config("https://huggingface.co/org/model")  # the same id written as an address
    assert HubHandler.gets == ["/org/model/resolve/main/config.json"]
    d = hub.fetch_config("org/model")
    d["vocab_size"] = 1  # a caller's change does not reach the cache
    assert hub.fetch_config("org/model")["vocab_size"] == 250002


@pytest.mark.parametrize("repo,fragment", [
    ("org/missing", "was not found on the Hub (or it is private)"),
    ("org/gated", "is gated"),
    ("org/no-config", "has no config.json"),
    ("org/huge", "is over 65,536 bytes"),
    ("org/unannounced", "is over 65,536 bytes"),
    ("org/not-json", "is not valid JSON"),
    ("org/array", "not an object"),
])
def test_failures_say_what_happened(server, repo, fragment):
    with pytest.raises(hub.HubError, match=re.escape(fragment)):
        hub.fetch_config(repo)


def test_failures_are_not_cached(server):
    with pytest.raises(hub.HubError):
        hub.fetch_config("org/missing")
    with pytest.raises(hub.HubError):
        hub.fetch_config("org/missing")
    assert hub._fetch_text.cache_info().currsize == 0


def test_slow_hub_times_out(server):
    t0 = time.monotonic()
    with pytest.raises(hub.HubError, match=r"did not answer within 0.5 s"):
        hub.fetch_config("org/slow", timeout=0.5)
    assert time.monotonic() - t0 < 1.9  # gave up before the server answered (no retries)


def test_offline(monkeypatch, tmp_path):
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{port}")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    with pytest.raises(hub.HubError, match="cannot reach the Hugging Face Hub.*offline"):
        hub.fetch_config("org/model", timeout=2)


@pytest.mark.parametrize("bad", ["", "   ", "a/b/c", "x--y", "../etc/passwd", "name with spaces", "a" * 120, 42])
def test_malformed_ids_are_refused_before_any_request(bad, monkeypatch):
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # would fail differently if a request were made
    with pytest.raises(hub.HubError, match="model id"):
        hub.fetch_config(bad)


def test_cli_params_by_hub_id(server, capsys):
    from albert_core.cli.main import main

    assert main(["params", "--hub", "FacebookAI/xlm-roberta-large", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["total"] == count_parameters(PRESETS["xlm-roberta-large"]).total
    assert main(["params", "--hub", "org/gated"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: org/gated is gated") and "Traceback" not in err


def test_cli_params_of_a_decoder_by_hub_id_is_its_preset(server, capsys):
    from albert_core.cli.main import main

    assert main(["params", "--hub", "Qwen/Qwen2.5-0.5B", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["total"] == 494_032_768 and d["token_table"] == 136_134_656 and d["config"]["name"] == "Qwen/Qwen2.5-0.5B"
    assert main(["params", "--paper", "--hub", "Qwen/Qwen2.5-0.5B"]) == 2  # the paper's networks are encoders
    err = capsys.readouterr().err
    assert "Qwen/Qwen2.5-0.5B is a decoder (qwen2)" in err and "`verify --trace`" in err
    assert main(["memory", "--hub", "Qwen/Qwen2.5-0.5B", "--num-gpus", "2", "--sharding", "zero2"]) == 2
    assert "a decoder is measured for one device" in capsys.readouterr().err  # named before anything is measured


def test_verify_by_hub_id_of_an_encoder_outside_the_families(server, capsys):
    from albert_core.cli import main as cli
    from albert_core.engine import core as engine

    assert cli.main(["verify", "--hub", "test/megatron-small", "--batch-size", "2", "--seq-len", "16", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    from albert_core.share import CONTROLS

    cfg = json.loads(MEGATRON)
    # the command's default precision: the app's
    run = engine.Run(Workload(2, 16, CONTROLS["precision"].default, "eager", device="cpu"), fake=False)
    built = engine.measure(lambda: engine.build_auto(cfg), 99, run, what=("saved",))
    assert d["parameters"]["built"] == built.parameters and d["parameters"]["estimate"] is None
    assert d["activations"]["measured"] == built.saved  # fake tensors in the command, real ones here


def test_verify_page_measures_an_encoder_outside_the_families_by_hub_id(server):
    from test_app_pages import goto, open_app

    at = goto(open_app({"verify_batch": "2", "verify_seq_len": "16"}), "verify")
    at.text_input(key="verify_other_hub").input("test/megatron-small").run()
    at.button(key="verify_other_run").click().run(timeout=120)
    assert not at.exception and not at.error, [e.value for e in at.error]
    metrics = {m.label: m.value for m in at.metric}
    from albert_core.engine import core as engine

    built = engine.measure(lambda: engine.build_auto(json.loads(MEGATRON)), 99,
                           engine.Run(Workload(2, 16, "float32", "eager", device="cpu")), what=("saved",))
    assert metrics["Parameters built (megatron-bert)"] == f"{built.parameters:,}"
    assert any("No closed form" in c.value for c in at.caption)
    # issue 29: the eval forward's peak is said to leave the weights out (336 MiB read beside 2.09 GiB of weights)
    assert "Eval forward peak, beyond the weights" in metrics
