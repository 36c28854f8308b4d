"""AppTest: uploading a config.json (every problem explained), downloading config.json and tables."""

import json

from test_app_pages import goto, open_app, open_fields, open_tab, table_with

from albert_core.estimate.params import count_parameters
from albert_core.formats.hf import to_hf_config
from albert_core.presets import PRESETS
from albert_core.share import PAGE_TABS
from ui.sidebar import MAX_UPLOAD_BYTES


def upload(at, name: str, content: bytes):
    """Open "Import / export" and "Model fields" (a closed section draws no widgets) and upload."""
    at = open_fields(at, "import_export", "model_fields")
    at.sidebar.file_uploader(key="upload").set_value((name, content, "application/json"))
    return at.run()


def test_upload_a_hf_config_sets_every_field():
    cfg = PRESETS["albert-base"].replace(name="my-albert", hidden_dim=1024, num_heads=16, num_layers=6,
                                         vocab_size=32000)
    at = upload(goto(open_app(), "parameters"), "config.json", json.dumps(to_hf_config(cfg)).encode())
    assert not at.exception and not at.sidebar.error
    assert any("Loaded config.json" in s.value for s in at.sidebar.success)
    assert at.sidebar.number_input(key="f.hidden_dim").value == 1024
    assert at.sidebar.number_input(key="f.vocab_size").value == 32000
    t = table_with(at, "per_layer", "total")
    assert t["config"][0] == "my-albert" and t["total"][0] == count_parameters(cfg).total
    assert at.query_params["name"] == "my-albert"


def test_an_upload_puts_the_preset_box_on_its_nearest_preset_and_says_so():
    from albert_core.share import nearest_preset

    cfg = PRESETS["bert-large"].replace(name="my-bert", num_layers=12)  # started from albert-base, the default
    at = upload(open_app(), "config.json", json.dumps(to_hf_config(cfg)).encode())
    assert nearest_preset(cfg) == "bert-large"
    assert at.sidebar.selectbox(key="preset").value == "bert-large"
    (note,) = [s.value for s in at.sidebar.success if "Loaded config.json" in s.value]
    assert "Preset shows bert-large, the nearest preset (2 fields differ)" in note
    assert at.query_params["preset"] == "bert-large" and at.query_params["num_layers"] == "12"
    t = table_with(goto(at, "parameters"), "per_layer", "total")
    assert t["config"][0] == "my-bert" and t["total"][0] == count_parameters(cfg).total


def test_upload_a_plain_hf_bert_config():
    d = {"model_type": "bert", "vocab_size": 30522, "hidden_size": 512, "num_hidden_layers": 4,
         "num_attention_heads": 8, "intermediate_size": 2048, "_name_or_path": "tiny-bert"}
    at = upload(open_app(), "config.json", json.dumps(d).encode())
    assert at.sidebar.selectbox(key="f.family").value == "bert"
    assert at.sidebar.number_input(key="f.embedding_dim").value == 512


def _error(at) -> str:
    assert not at.exception
    (err,) = at.sidebar.error
    return err.value


def test_upload_not_json():
    assert "is not valid JSON" in _error(upload(open_app(), "config.json", b"{vocab_size: 3"))
    assert "is not valid JSON" in _error(upload(open_app(), "config.json", b"\xff\xfe\x00"))


def test_upload_too_big():
    at = upload(open_app(), "config.json", b" " * (MAX_UPLOAD_BYTES + 1))
    assert "64 KiB" in _error(at)


def test_upload_wrong_model_and_bad_fields_are_all_named():
    assert "model_type must be one of 'bert', 'albert', 'roberta'" in _error(upload(open_app(), "c.json", b'{"model_type": "t5"}'))
    # a decoder is named as one, with where its numbers are (albert_core.decoders)
    assert "model_type 'gpt2' is a decoder" in _error(upload(open_app(), "c.json", b'{"model_type": "gpt2"}'))
    d = {"model_type": "albert", "vocab_size": "many", "hidden_size": 768, "num_hidden_layers": 12,
         "num_attention_heads": 7, "intermediate_size": 3072}
    msg = _error(upload(open_app(), "c.json", json.dumps(d).encode()))
    assert "vocab_size" in msg
    d["vocab_size"] = 30000
    msg = _error(upload(open_app(), "c.json", json.dumps(d).encode()))
    assert "num_attention_heads (7) must divide hidden_size (768)" in msg  # in the file's keys
    assert "missing field 'hidden_size'" in _error(upload(open_app(), "c.json", b'{"model_type": "bert"}'))
    assert "JSON object" in _error(upload(open_app(), "c.json", b"[1, 2]"))


def test_failed_upload_keeps_the_config():
    at = upload(open_app({"preset": "bert-large"}), "c.json", b"nope")
    assert at.sidebar.number_input(key="f.hidden_dim").value == 1024
    assert dict(at.query_params) == {"preset": "bert-large"}


def test_download_buttons_exist_for_config_and_tables():
    at = goto(open_fields(open_app(), "import_export"), "parameters")
    labels = {b.label for b in at.download_button}
    for tab in PAGE_TABS["parameters"]:  # the tables' downloads sit on their tabs
        labels |= {b.label for b in open_tab(at, "parameters", tab).download_button}
    assert "Download config.json" in labels
    assert {"Download parameters.csv", "Download sharing-modes.csv", "Download factorization.csv"} <= labels
