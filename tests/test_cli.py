"""`python -m albert_core`: tables, JSON, and clean failures (exit 2, one message, no traceback)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from albert_core.estimate.flops import forward_flops, training_flops
from albert_core.estimate.params import count_parameters
from albert_core.formats.hf import to_hf_config
from albert_core.presets import PRESETS
from albert_core.units import format_count
from albert_core.workload import Workload

ROOT = Path(__file__).resolve().parents[1]


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "albert_core", *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=60)


@pytest.mark.parametrize("preset", ["albert-base", "bert-base"])
def test_params_table(preset):
    r = run("params", "--preset", preset)
    assert r.returncode == 0 and r.stderr == ""
    c = count_parameters(PRESETS[preset])
    assert f"{c.total:,}" in r.stdout and format_count(c.total) in r.stdout
    assert f"{c.embedding:,}" in r.stdout and f"{c.embedding_pct:5.1f}%" in r.stdout
    assert "word_embeddings" in r.stdout and "pooler.dense" in r.stdout
    assert ("embedding_hidden_mapping_in" in r.stdout) == PRESETS[preset].factorized


def test_params_heads_and_json():
    r = run("params", "--preset", "albert-xxlarge", "--heads", "--json")
    assert r.returncode == 0
    d = json.loads(r.stdout)
    c = count_parameters(PRESETS["albert-xxlarge"], heads=True)
    assert d["total"] == c.total and d["heads"] == c.heads > 0
    assert sum(g["params"] for g in d["groups"]) == c.total
    assert d["config"] == PRESETS["albert-xxlarge"].to_dict()


def test_config_files_ours_and_hf(tmp_path):
    cfg = PRESETS["albert-large"].replace(name="mine", sharing="ffn", num_groups=4, embedding_dim=64)
    ours = tmp_path / "ours.json"
    ours.write_text(json.dumps(cfg.to_dict()))
    hf = tmp_path / "config.json"
    hf.write_text(json.dumps(to_hf_config(cfg)))
    for path in (ours, hf):
        r = run("params", "--config", str(path), "--json")
        assert r.returncode == 0, r.stderr
        assert json.loads(r.stdout)["total"] == count_parameters(cfg).total


def test_flops():
    r = run("flops", "--preset", "albert-xxlarge", "--seq-len", "128", "--batch-size", "4", "--json")
    assert r.returncode == 0
    d = json.loads(r.stdout)
    assert d["total"] == forward_flops(PRESETS["albert-xxlarge"], 128, 4).total
    assert d["training"] == training_flops(PRESETS["albert-xxlarge"], 128, 4)
    r = run("flops", "--preset", "bert-base")
    assert r.returncode == 0 and "attention_scores" in r.stdout


def _bad_files(tmp_path):
    (tmp_path / "malformed.json").write_text('{"hidden_dim": 768,')
    (tmp_path / "list.json").write_text("[1, 2]")
    (tmp_path / "heads.json").write_text('{"hidden_dim": 770}')
    (tmp_path / "unknown.json").write_text('{"width": 3}')
    (tmp_path / "hf_bad.json").write_text('{"model_type": "albert", "vocab_size": "many"}')
    (tmp_path / "binary.json").write_bytes(b"\xff\xfe\x00")
    (tmp_path / "adir").mkdir()
    return {
        "malformed": (["params", "--config", str(tmp_path / "malformed.json")], "not valid JSON"),
        "list": (["params", "--config", str(tmp_path / "list.json")], "JSON object"),
        "heads": (["params", "--config", str(tmp_path / "heads.json")], "num_heads (12) must divide hidden_dim (770)"),
        "unknown": (["params", "--config", str(tmp_path / "unknown.json")], "unknown field 'width'"),
        "hf_bad": (["params", "--config", str(tmp_path / "hf_bad.json")], "vocab_size"),
        "binary": (["params", "--config", str(tmp_path / "binary.json")], "UTF-8"),
        "dir": (["params", "--config", str(tmp_path / "adir")], "cannot read"),
        "missing": (["params", "--config", str(tmp_path / "nope.json")], "No such file"),
        "preset": (["params", "--preset", "albert-huge"], "invalid choice: 'albert-huge'"),
        "both": (["params", "--preset", "bert-base", "--config", "x.json"], "not allowed with"),
        "seq": (["flops", "--preset", "bert-base", "--seq-len", "4096"], "must be at most max_position (512)"),
        "nocmd": ([], "required"),
    }


@pytest.mark.parametrize("case", ["malformed", "list", "heads", "unknown", "hf_bad", "binary", "dir", "missing",
                                  "preset", "both", "seq", "nocmd"])
def test_bad_input_exits_2_with_a_message(tmp_path, case):
    args, needle = _bad_files(tmp_path)[case]
    r = run(*args)
    assert r.returncode == 2
    assert needle in r.stderr
    assert "Traceback" not in r.stderr and r.stdout == ""


def test_main_in_process_keeps_torch_out():
    code = ("import sys; from albert_core.cli.main import main; assert main(['params', '--preset', 'bert-large']) == 0; "
            "assert 'torch' not in sys.modules and 'transformers' not in sys.modules")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert r.returncode == 0, r.stderr


# ---- every family (issue 10) -------------------------------------------------------------------
FAMILY_PRESETS = ["roberta-base", "xlm-roberta-base", "distilbert-base-uncased", "electra-small-discriminator",
                  "deberta-v3-base", "ModernBERT-base", "bert-base-multilingual-cased"]


@pytest.mark.parametrize("preset", FAMILY_PRESETS)
def test_params_config_json_of_every_family(preset, tmp_path, capsys):
    from albert_core.cli.main import main
    from albert_core.presets import HUB_CONFIGS

    path = tmp_path / "config.json"
    path.write_text(json.dumps(HUB_CONFIGS[preset][1]))  # the published config.json, as downloaded
    assert main(["params", "--config", str(path), "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    c = count_parameters(PRESETS[preset])
    assert d["total"] == c.total and d["embedding"] == c.embedding
    assert sum(g["params"] for g in d["groups"]) == c.total
    assert main(["params", "--config", str(path)]) == 0
    assert f"{c.total:,}" in capsys.readouterr().out


def test_params_roberta_config_through_python_m(tmp_path):
    path = tmp_path / "roberta.json"
    path.write_text(json.dumps(to_hf_config(PRESETS["roberta-base"])))
    r = run("params", "--config", str(path))
    assert r.returncode == 0 and r.stderr == ""
    assert "124,645,632" in r.stdout and "embeddings.position_embeddings" in r.stdout


def test_heads_of_a_family_without_them_is_a_clear_error(capsys):
    from albert_core.cli.main import main

    assert main(["params", "--preset", "deberta-v3-base", "--heads"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: heads: for family 'deberta-v2'") and "Traceback" not in err


def test_refused_key_is_named(tmp_path, capsys):
    from albert_core.cli.main import main

    path = tmp_path / "decoder.json"
    path.write_text(json.dumps({**to_hf_config(PRESETS["bert-base"]), "is_decoder": True}))
    assert main(["params", "--config", str(path)]) == 2
    assert "is_decoder=true is not supported" in capsys.readouterr().err


# ---- verify and memory ---------------------------------------------------------------------------
def _main_json(capsys, *args: str) -> dict:
    from albert_core.cli import main as cli

    assert cli.main([*args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_verify_json_measured_beside_estimated(capsys):
    from albert_core.estimate.activations import activation_memory

    d = _main_json(capsys, "verify", "--preset", "albert-base", "--batch-size", "4", "--seq-len", "128",
                   "--dtype", "float32")
    cfg = PRESETS["albert-base"]
    assert d["parameters"]["built"] == d["parameters"]["estimate"] == count_parameters(cfg).total
    assert (
        d["activations"]["measured"]
        == d["activations"]["estimate"]
        == activation_memory(
            cfg, Workload(batch_size=4, seq_len=128, precision="float32", attention="eager", device="cpu")
        ).total
    )
    t = d["training_peak"]
    assert sum(t["at_peak"].values()) == t["measured"] and t["phase"] in ("forward", "backward", "optimizer step")
    assert t["at_start"]["parameters"] == 4 * count_parameters(cfg).total
    assert d["settings"]["how"].startswith("fake tensors") and d["settings"]["source"] == "hf"
    assert d["inference_peak"]["total"] == d["inference_peak"]["estimate"]
    assert list(d["engine_timings"]) == ["build", "inference", "step"]  # where its time went (saved: in the step)


def test_verify_runs_a_master_copy_precision_as_memory_plans_it(capsys):
    """--precision bf16_master (a choice of both commands) is the Workload's: the engine runs the bfloat16 model with
    float32 masters, its saved bytes those of the bfloat16 forward, and the replayed step equals it to the byte."""
    from albert_core.estimate.activations import activation_memory

    d = _main_json(capsys, "verify", "--preset", "mpnet-base", "--batch-size", "2", "--seq-len", "32",
                   "--precision", "bf16_master", "--optimizer", "sgd")
    cfg = PRESETS["mpnet-base"]
    assert d["settings"]["dtype"] == "bf16_master"
    assert (
        d["activations"]["measured"]
        == activation_memory(
            cfg, Workload(batch_size=2, seq_len=32, precision="bfloat16", attention="sdpa", device="cpu")
        ).total
    )
    t = d["training_peak"]
    assert t["measured"] == t["estimate"] and t["at_peak"]["master weights"] == 4 * count_parameters(cfg).total


def test_verify_as_a_command_prints_its_table_and_no_import_warnings():
    """torchao is installed here (requirements-dev.txt), and transformers imported it on every build: its two
    "Failed to load ... torchao/_C_..." lines and torch's two _pytree warnings came before verify's table. The
    command marks it absent (serving.skip_torchao); main() in a process of its own leaves torchao alone."""
    r = subprocess.run([sys.executable, "-m", "albert_core", "verify", "--preset", "bert-base", "--batch-size", "1",
                        "--seq-len", "8"], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert r.returncode == 0 and r.stderr == "", r.stderr[-2000:]
    assert r.stdout.startswith("bert-base: batch 1, seq_len 8")
    code = ("import sys; from albert_core.cli import main as cli; import contextlib, io; "
            "f = io.StringIO(); ctx = contextlib.redirect_stdout(f); ctx.__enter__(); "
            "rc = cli.main(['params', '--preset', 'bert-base']); ctx.__exit__(None, None, None); "
            "print(rc, 'torchao' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert done.stdout.split() == ["0", "False"], done.stderr[-1000:]  # main() marks nothing absent


def test_verify_real_equals_fake_and_text_output(capsys):
    from albert_core.cli import main as cli

    args = ["verify", "--preset", "bert-base", "--batch-size", "1", "--seq-len", "8", "--dtype", "bfloat16"]
    fake, real = _main_json(capsys, *args), _main_json(capsys, *args, "--real")
    assert real["settings"]["how"].startswith("real")
    for k in ("activations", "training_peak", "inference_peak", "parameters"):
        assert fake[k] == real[k], k
    assert cli.main(args) == 0
    text = capsys.readouterr().out
    assert "training step peak" in text and f"{fake['training_peak']['measured']:,}" in text
    gap = fake["training_peak"]["estimate"] - fake["training_peak"]["measured"]  # equal said in a word, as on Verify
    assert ("(equal)" if gap == 0 else f"({gap:+,} B)") in text and "(+0)" not in text


def test_the_commands_start_from_the_apps_defaults(capsys):
    """verify and memory read every default from share.CONTROLS, the app's (issue 29 item 6): bert-base 8 × 512
    gave 2.89 GiB of activations from `memory` (sdpa) and 4.86 GiB on the Memory page (eager)."""
    from albert_core.cli.main import build_parser
    from albert_core.share import CONTROLS

    def default(name: str):
        return CONTROLS[name].default

    p = build_parser()
    v = p.parse_args(["verify"])
    assert (v.batch_size, v.seq_len, v.precision, v.attention, v.optimizer, v.source, v.checkpointing, v.real) == (
        default("verify_batch"), default("verify_seq_len"), default("precision"), default("attention"),
        default("optimizer"), default("source"), default("checkpointing"), default("verify_real"))
    m = p.parse_args(["memory"])
    assert (m.batch_size, m.seq_len, m.precision, m.optimizer, m.num_gpus, m.sharding, m.attention,
            m.checkpointing) == (default("batch_size"), default("seq_len"), default("precision"), default("optimizer"),
                                 default("num_gpus"), default("sharding"), default("attention"),
                                 default("checkpointing"))
    from albert_core.cli.verify_memory import finetune_settings

    # --head left out: an encoder's is the app's (none); a decoder's its own (cli/decoder_memory.decoder_head)
    assert (v.train, finetune_settings(v)["head"]) == (default("train_mode"), default("head"))
    d = _main_json(capsys, "memory", "--preset", "bert-base", "--train", "lora")
    lora = d["parameters"]["lora"]
    assert (lora["r"], lora["lora_alpha"], lora["lora_dropout"]) == (default("lora_r"), default("lora_alpha"),
                                                                      default("lora_dropout"))
    assert d["settings"]["attention"] == default("attention")


def test_memory_json_parts_sum_to_total(capsys):
    from albert_core.step.training import training_memory

    d = _main_json(capsys, "memory", "--preset", "bert-base", "--batch-size", "16", "--seq-len", "512",
                   "--precision", "mixed_bf16", "--num-gpus", "4", "--sharding", "zero2")
    t = d["training_memory"]
    from albert_core.share import CONTROLS

    # the command's default: the app's
    ref = training_memory(PRESETS["bert-base"], Workload(batch_size=16, seq_len=512, precision="mixed_bf16", num_gpus=4,
                                                         sharding="zero2", attention=CONTROLS["attention"].default))
    assert t["total"] == ref.total == sum(t[k] for k in ("weights", "gradients", "optimizer_state",
                                                          "master_weights", "activations"))
    assert d["settings"]["sharding"] == "zero2" and d["parameters"]["stored"] == count_parameters(PRESETS["bert-base"]).total


@pytest.mark.parametrize("args, message", [
    (["verify", "--preset", "bert-base", "--seq-len", "9999"], "max_position"),
    (["verify", "--preset", "bert-base", "--batch-size", "0"], "batch_size"),
    (["verify", "--preset", "roberta-base", "--source", "reference"], "reference encoder builds BERT and ALBERT only"),
    (["verify", "--preset", "albert-base", "--source", "hf", "--checkpointing"], "kind='reference'"),
    (["memory", "--preset", "bert-base", "--num-gpus", "0"], "num_gpus"),
    (["memory", "--preset", "bert-base", "--seq-len", "4096"], "max_position"),
])
def test_verify_and_memory_bad_input_exit_2_with_a_message(args, message, capsys):
    from albert_core.cli import main as cli

    assert cli.main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err and "Traceback" not in err


# ---- fine-tuning, task heads and serving (issue 18, item 5) -------------------------------------------
def _step(cfg, args_mode: str, *, head="none", num_labels=2, lora=None, B=8, S=512, dtype="mixed_bf16"):
    from albert_core.share import CONTROLS
    from albert_core.step.peak import step_peak

    return step_peak(cfg, Workload(B, S, dtype, CONTROLS["attention"].default, False, "cuda", "adamw", None, args_mode,
                                   head, num_labels, lora))


@pytest.mark.parametrize("preset", ["xlm-roberta-base", "albert-base"])
def test_memory_train_and_head_flags_count_as_finetune_and_step(preset, capsys):
    from albert_core.choices import LoraSpec
    from albert_core.estimate.finetune import trainable

    cfg = PRESETS[preset]
    targets = ("query", "value") if preset == "albert-base" else None  # peft has no default for albert
    cases = [("full", "none", {}), ("frozen-embeddings", "none", {}), ("frozen-layers:1", "token:7", {}),
             ("bitfit", "mlm", {}), ("lora", "none", {"r": 8}), ("lora", "classification:3", {"r": 16}),
             ("lora", "none", {"r": 8, "targets": ("query", "key", "value")})]
    seen = {}
    for mode, head_arg, lo in cases:
        head, labels = (head_arg.split(":")[0], int(head_arg.split(":")[1])) if ":" in head_arg else (head_arg, 2)
        flags = ["--train", mode, "--head", head_arg]
        lora = None
        if mode == "lora":
            t = lo.get("targets", targets)
            lora = LoraSpec(r=lo["r"], targets=t)
            flags += ["--lora-r", str(lo["r"])] + (["--lora-targets", ",".join(t)] if t else [])
        d = _main_json(capsys, "memory", "--preset", preset, *flags)
        ref = trainable(cfg, mode, head=head, num_labels=labels, lora=lora)
        p = d["parameters"]
        assert (p["trainable"], p["frozen"], p["total"]) == (ref.trainable, ref.frozen, ref.total), (mode, head_arg)
        est = _step(cfg, mode, head=head, num_labels=labels, lora=lora)
        assert (d["training_peak"]["estimate"], d["training_peak"]["phase"]) == (est.peak, est.phase), (mode, head_arg)
        assert sum(d["training_peak"]["at_peak"].values()) == d["training_peak"]["estimate"]
        seen[(mode, head_arg, lo.get("r"), lo.get("targets"))] = (p["trainable"], d["training_peak"]["estimate"])
    counts = [v[0] for v in seen.values()]
    assert len(set(counts)) == len(counts)  # every flag changes what trains
    full = seen[("full", "none", None, None)]
    # and, without a head's logits (an MLM head's B × S × V can outweigh what freezing saves), the step's peak falls
    assert all(v[1] < full[1] for k, v in seen.items() if k[0] != "full" and k[1] == "none")
    adapter = seen[("lora", "none", 8, None)][0]
    assert seen[("lora", "none", 8, ("query", "key", "value"))][0] * 2 == adapter * 3  # 3 of 2 same-sized Linears


def test_memory_lora_alpha_and_dropout_change_no_count(capsys):
    base = _main_json(capsys, "memory", "--preset", "bert-base", "--train", "lora")
    other = _main_json(capsys, "memory", "--preset", "bert-base", "--train", "lora", "--lora-alpha", "32",
                       "--lora-dropout", "0.1")
    assert base["parameters"]["trainable"] == other["parameters"]["trainable"]
    assert (other["parameters"]["lora"]["lora_alpha"], other["parameters"]["lora"]["lora_dropout"]) == (32, 0.1)
    assert base["parameters"]["lora"]["targets"] == ["query", "value"]  # peft's default for bert


@pytest.mark.parametrize("flags", [["--serve", "float32"], ["--serve", "bfloat16"], ["--serve", "int8"],
                                   ["--serve", "int8", "--quantize-embeddings"], ["--serve", "int4"],
                                   ["--serve", "int4", "--group-size", "64", "--serve-dtype", "float32"],
                                   ["--serve", "int4-packed", "--head", "classification:3"]])
def test_memory_serve_bytes_are_serving_weight_bytes(flags, capsys):
    from albert_core.estimate.heads import parse_head
    from albert_core.estimate.serving import approximate_bytes, weight_bytes

    d = _main_json(capsys, "memory", "--preset", "deberta-v3-base", *flags)
    a = dict(zip(flags[::2], flags[1::2], strict=False))
    head, labels = parse_head(a.get("--head", "none"))
    ref = weight_bytes(PRESETS["deberta-v3-base"], a["--serve"], dtype=a.get("--serve-dtype", "bfloat16"),
                       group_size=int(a.get("--group-size", 128)), quantize_embeddings="--quantize-embeddings" in flags,
                       head=head, num_labels=max(labels, 1))
    v = d["serving"]
    assert v["weights"] == ref.weights and v["format"] == a["--serve"]
    assert v["inference_activations"] is None and "not modelled for family 'deberta-v2'" in v["inference_activations_note"]
    assert v["weights"] == v["quantized_values"] + v["scales"] + v["zero_points"] + v["kept"]
    assert v["approx"] == approximate_bytes(PRESETS["deberta-v3-base"], a["--serve"], head=head,
                                            num_labels=max(labels, 1))


def test_memory_json_keys_and_text(capsys):
    from albert_core.cli import main as cli

    d = _main_json(capsys, "memory", "--preset", "bert-base", "--train", "lora", "--serve", "int8")
    for section, keys in {"parameters": ("trainable", "frozen", "total", "lora_adapter", "lora"),
                          "training_peak": ("estimate", "phase", "moment", "at_peak", "at_start", "dtype",
                                            "weights_dtype", "note"),
                          "serving": ("weights", "quantized_values", "scales", "zero_points", "kept", "approx"),
                          "training_memory": ("total",)}.items():
        assert all(k in d[section] for k in keys), (section, set(keys) - set(d[section]))
    assert d["training_peak"]["weights_dtype"] == "float32" and "autocast" in d["training_peak"]["note"]
    from albert_core.estimate.activations import activation_memory

    assert (
        d["serving"]["inference_activations"]
        == activation_memory(
            PRESETS["bert-base"],
            Workload(batch_size=8, seq_len=512, precision="bfloat16", attention="eager"),
            training=False,
        ).total
    )
    assert _main_json(capsys, "memory", "--preset", "bert-base", "--precision", "bfloat16")["serving"] is None
    assert cli.main(["memory", "--preset", "bert-base", "--train", "lora", "--serve", "int4"]) == 0
    text = capsys.readouterr().out
    assert f"{d['parameters']['trainable']:,}" in text and "step peak" in text and "serving int4 g=128" in text


@pytest.mark.parametrize("args, message", [
    (["--preset", "albert-base", "--train", "lora"], "--lora-targets"),
    (["--train", "lora", "--lora-r", "0"], "LoRA rank r must be a whole number from 1"),
    (["--train", "lora", "--lora-dropout", "1"], "lora_dropout must be a probability"),
    (["--train", "lora", "--lora-targets", "nothing"], "match no module"),
    (["--lora-r", "4"], "--lora-r only applies with --train lora"),
    (["--train", "frozen"], "training mode must be one of"),
    (["--train", "frozen-layers:99"], "from 0 to 12"),
    (["--head", "classifier:3"], "head must be one of"),
    (["--head", "token:many"], "must be a whole number"),
    (["--serve", "int4", "--group-size", "100"], "Choose a group size that divides 128"),
    (["--serve", "int8", "--group-size", "64"], "--group-size only applies with --serve int4"),
    (["--serve", "bfloat16", "--quantize-embeddings"], "only applies with --serve int8"),
    (["--serve", "int4-packed", "--serve-dtype", "float16"], "--serve-dtype bfloat16"),
])
def test_memory_finetune_and_serve_bad_input_exits_2_with_a_message(args, message, capsys):
    from albert_core.cli import main as cli

    assert cli.main(["memory", *args]) == 2
    out = capsys.readouterr()
    assert out.err.startswith("error: ") and message in out.err and out.out == ""
    assert len(out.err.strip().splitlines()) == 1


def test_verify_train_lora_measures_the_peft_model_fake_equal_to_real(tmp_path, capsys):
    from albert_core.choices import LoraSpec
    from albert_core.estimate.finetune import trainable

    cfg = PRESETS["albert-base"].replace(name="tiny", vocab_size=120, embedding_dim=8, hidden_dim=16, num_heads=2,
                                         intermediate_dim=24, num_layers=3, max_position=32)
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(cfg.to_dict()))
    args = ["verify", "--config", str(path), "--batch-size", "2", "--seq-len", "16", "--train", "lora",
            "--lora-r", "4", "--lora-targets", "query,value", "--head", "classification:3", "--optimizer", "adafactor"]
    fake, real = _main_json(capsys, *args), _main_json(capsys, *args, "--real")
    ref = trainable(cfg, "lora", head="classification", num_labels=3, lora=LoraSpec(r=4, targets=("query", "value")))
    p = fake["parameters"]
    assert p["trainable"] == {"built": ref.trainable, "estimate": ref.trainable}  # ALBERT's shared layer adapted once
    assert p["built"] == p["estimate"] == ref.total
    assert fake["settings"]["how"].startswith("fake") and real["settings"]["how"].startswith("real")
    for k in ("parameters", "activations", "training_peak", "inference_peak"):
        assert fake[k] == real[k], k
    t = fake["training_peak"]
    assert sum(t["at_peak"].values()) == t["measured"] and isinstance(t["estimate"], int)
    from albert_core.cli import main as cli

    assert cli.main(["verify", "--preset", "bert-base", "--train", "lora", "--source", "reference"]) == 2
    assert "drop --source reference" in capsys.readouterr().err


def test_memory_json_follows_the_mode_and_the_sharding(capsys):
    """The sum of the parts takes --train and --head, and the peak is training_memory's, ZeRO applied per moment."""
    from albert_core.choices import LoraSpec
    from albert_core.step.training import training_memory

    args = ("memory", "--preset", "bert-base", "--batch-size", "8", "--seq-len", "256", "--precision", "mixed_bf16")
    d = _main_json(capsys, *args, "--train", "lora", "--head", "classification:3", "--num-gpus", "4",
                   "--sharding", "zero3")
    from albert_core.share import CONTROLS

    ref = training_memory(PRESETS["bert-base"], Workload(batch_size=8, seq_len=256, precision="mixed_bf16", num_gpus=4,
                                                         sharding="zero3", mode="lora", head="classification",
                                                         num_labels=3, lora=LoraSpec(),
                                                         attention=CONTROLS["attention"].default))
    t, k = d["training_memory"], d["training_peak"]
    assert (t["mode"], t["head"], t["trainable"], t["total"]) == ("lora", "classification", ref.trainable, ref.total)
    assert k["estimate"] == ref.peak and k["sharding_modelled"] is True and k["per_device_unsharded"] is False
    full = _main_json(capsys, *args, "--head", "classification:3", "--num-gpus", "4", "--sharding", "zero3")
    assert t["gradients"] < full["training_memory"]["gradients"]  # LoRA: gradients of the adapters and head only
    one = _main_json(capsys, *args, "--train", "lora", "--head", "classification:3")
    assert one["training_peak"]["estimate"] > k["estimate"]  # zero3 over 4 shards parameters, gradients, state


def test_usage_names_the_command_as_it_was_run(capsys):
    from albert_core.cli.main import build_parser

    assert build_parser().format_usage().startswith("usage: albert-core ")  # the console script (pip install .)
    run = subprocess.run([sys.executable, "-m", "albert_core", "--help"], capture_output=True, text=True,
                         cwd=Path(__file__).resolve().parents[1])
    assert run.returncode == 0 and run.stdout.startswith("usage: python -m albert_core ")


@pytest.mark.parametrize("missing", ["torch", "transformers"])
def test_verify_without_torch_says_what_to_install(monkeypatch, capsys, missing):
    """Run with a Python that lacks the engine's packages: a message and exit 2, not a ModuleNotFoundError."""
    from albert_core.cli import main as cli

    for name in [m for m in sys.modules if m == missing or m.startswith(missing + ".")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, missing, None)  # `import <missing>` now raises ModuleNotFoundError
    assert cli.main(["verify", "--preset", "bert-base", "--batch-size", "1", "--seq-len", "8"]) == 2
    err = capsys.readouterr().err
    assert f"this Python has no {missing}" in err and "pip install ." in err and "Traceback" not in err


# ---- the ALBERT paper's results beside exact counts (issue 28) ----------------------------------------------
def test_params_paper_table():
    from albert_core.estimate import paper_results as pr

    r = run("params", "--paper")
    assert r.returncode == 0 and r.stderr == ""
    for row in pr.ROWS:  # every row, its exact count and its Avg
        line = next(ln for ln in r.stdout.splitlines() if f"  {row.label}  " in ln and ln.lstrip().startswith(
            f"{row.table}  "))
        assert f"{row.exact_params():,}" in line and f"{row.scores.avg:.1f}" in line
        assert (f"{row.params_m}M" in line) == (row.params_m is not None)
        assert all(f"[{pr.INCONSISTENCIES.index(i) + 1}]" in line for i in row.inconsistencies())
    assert all(i.text in r.stdout for i in pr.INCONSISTENCIES)
    assert pr.TPU_NOTE in r.stdout and "4.7x" in r.stdout and "5.6x" in r.stdout
    assert "trained this exact network" not in r.stdout and "not a network" not in r.stdout  # no config given


def test_params_paper_with_a_config_and_json(capsys):
    from albert_core.cli.main import main
    from albert_core.estimate import paper_results as pr

    assert main(["params", "--paper", "--preset", "bert-base", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert [x["key"] for x in d["rows"]] == [row.key for row in pr.ROWS]
    assert [x["params_exact"] for x in d["rows"]] == [row.exact_params() for row in pr.ROWS]
    assert {x["key"] for x in d["rows"] if x["params_printed"] is None} == {row.key for row in pr.ROWS
                                                                           if row.params_m is None}
    assert [i["key"] for i in d["inconsistencies"]] == [i.key for i in pr.INCONSISTENCIES]
    assert d["match"]["rows"] == [] and "not a network the paper trained" in d["match"]["text"]
    assert main(["params", "--paper", "--preset", "albert-base"]) == 0
    out = capsys.readouterr().out
    assert pr.match_text(PRESETS["albert-base"]) in out and "trained this exact network" in out


def test_params_paper_bad_config_exits_2(tmp_path):
    (tmp_path / "bad.json").write_text('{"hidden_dim": 770}')
    r = run("params", "--paper", "--config", str(tmp_path / "bad.json"))
    assert r.returncode == 2 and "num_heads (12) must divide hidden_dim (770)" in r.stderr
    assert "Traceback" not in r.stderr and r.stdout == ""


def test_main_in_a_fresh_process_says_its_error_first():
    """main() called in-process (as the tests do) in a process that has not imported torchao: transformers imported
    it on the first model class asked for, and torch's _pytree warning about torchao's Enum came before "error: "
    on stderr. The test above failed that way whenever no earlier test in its worker had imported torchao."""
    code = ("import sys; from albert_core.cli import main as cli; "
            "sys.exit(cli.main(['verify', '--preset', 'albert-base', '--source', 'hf', '--checkpointing']))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert r.returncode == 2 and r.stderr.startswith("error: ") and "kind='reference'" in r.stderr, r.stderr[-2000:]
    assert "_pytree" not in r.stderr and "torchao" not in r.stderr, r.stderr


TINY_LLAMA = {"model_type": "llama", "vocab_size": 300, "hidden_size": 32, "intermediate_size": 48,
              "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2}


def test_verify_trace_of_a_decoder_gives_polynomials_equal_to_what_it_measures(tmp_path, capsys):
    """`verify --trace`: a config.json no family models (a Llama) traced once with B and S as symbols; each
    polynomial, at the command's batch and length, equals what the engine measured there (JSON and text)."""
    from albert_core.cli.main import main
    from albert_core.cli.verify_memory import trace_text

    path = tmp_path / "llama.json"
    path.write_text(json.dumps(TINY_LLAMA))
    assert main(["verify", "--config", str(path), "--batch-size", "3", "--seq-len", "40", "--trace", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    t = d["trace"]
    assert t["saved"]["at"] == d["activations"]["measured"] > 0
    assert d["parameters"]["estimate"] == d["parameters"]["built"]  # albert_core.decoders' closed form
    assert t["step"]["peak"] == d["training_peak"]["measured"] > t["saved"]["at"]
    assert t["saved"]["terms"] and "B·S" in t["saved"]["text"] and t["ranges"][0] == ["B", 2, None]
    text = "\n".join(trace_text(d))  # what the command prints without --json
    assert "holds where B >= 2, S >= 2" in text and text.count("  equal") == 2 and t["saved"]["text"] in text


def test_verify_trace_refuses_what_it_does_not_trace(tmp_path, capsys):
    from albert_core.cli.main import main

    assert main(["verify", "--preset", "bert-base", "--trace", "--real", "--seq-len", "8", "--batch-size", "1"]) == 2
    assert "drop --source reference and --real" in capsys.readouterr().err
    assert main(["verify", "--preset", "bert-base", "--trace", "--train", "lora"]) == 2
    assert "drop --train and --head" in capsys.readouterr().err


def test_verify_trace_of_a_model_that_cannot_be_traced_says_so_beside_its_measurement(tmp_path, capsys, monkeypatch):
    """An op that refuses symbolic sizes (PyTorch raises from inside the model's code) is a line saying so, the
    measurement printed above it, exit 0: never a traceback."""
    from albert_core.cli.main import main
    from albert_core.engine import trace

    def refuses(*_args, **_kwargs):
        raise RuntimeError("Could not guard on data-dependent expression u0 > 1\nmore")

    monkeypatch.setattr(trace, "trace_saved", refuses)
    path = tmp_path / "llama.json"
    path.write_text(json.dumps(TINY_LLAMA))
    assert main(["verify", "--config", str(path), "--batch-size", "2", "--seq-len", "8", "--trace"]) == 0
    out = capsys.readouterr().out
    assert "activations (saved)" in out and "could not be traced" in out and "drop --trace" in out
    assert "Traceback" not in out and "more" not in out.split("could not be traced")[1]


def test_params_of_a_decoder_preset_and_config_json(tmp_path, capsys):
    """`params` for decoders: the preset's breakdown, its published count beside it, the tied LM head named; a
    config.json of a decoder counted the same; a broken one named by its key, exit 2."""
    from albert_core.cli.main import main
    from albert_core.decoders.decoder_params import count_decoder
    from albert_core.decoders.decoder_presets import DECODER_PRESETS

    assert main(["params", "--preset", "Llama-3.2-1B", "--heads"]) == 0
    out = capsys.readouterr().out
    assert "lm_head (tied to the token table)" in out and "1,235,814,400" in out
    assert "published (meta-llama/Llama-3.2-1B, base model): 1,235,814,400: equal" in out
    assert "262,668,288 (21.3% of the total)" in out
    assert main(["params", "--preset", "gpt2"]) == 0
    assert "note: positions: a learned table of n_positions rows (wpe), counted in the embedding" in capsys.readouterr().out
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**DECODER_PRESETS["gemma-3-270m"].cfg.to_hf(), "tie_word_embeddings": False}))
    assert main(["params", "--config", str(path), "--heads", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    untied = DECODER_PRESETS["gemma-3-270m"].cfg.replace(tied=False)
    assert d["total"] == count_decoder(untied, heads=True).total == 268_098_176 + 262_144 * 640
    assert d["lm_head"] == 262_144 * 640 and d["published"] is None
    path.write_text(json.dumps({**TINY_LLAMA, "num_key_value_heads": 3}))
    assert main(["params", "--config", str(path)]) == 2
    err = capsys.readouterr().err
    assert "num_key_value_heads (3) must divide num_attention_heads (4)" in err and "Traceback" not in err
    assert main(["params", "--paper", "--preset", "gpt2"]) == 2  # the paper's networks are encoders
    assert "gpt2 is a decoder (gpt2)" in capsys.readouterr().err
    assert main(["flops", "--preset", "Qwen2.5-0.5B", "--seq-len", "2048", "--batch-size", "4", "--json"]) == 0
    f = json.loads(capsys.readouterr().out)
    qwen = DECODER_PRESETS["Qwen2.5-0.5B"].cfg
    assert f["lm_head"] == 2 * 4 * 2048 * qwen.hidden_dim * qwen.vocab_size == 2 * 4 * 2048 * 896 * 151_936
    assert f["training"] == 3 * f["total"]
    assert f["attention_scores"] == 24 * 2 * 4 * 14 * 2048**2 * 64


def test_params_of_a_decoder_gives_its_kv_cache(capsys):
    from albert_core.cli.main import main
    from albert_core.decoders.decoder_presets import DECODER_PRESETS
    from albert_core.decoders.decoder_serving import kv_cache

    gemma = DECODER_PRESETS["gemma-3-270m"].cfg
    assert main(["params", "--preset", "gemma-3-270m", "--context", "4096", "--json"]) == 0
    k = json.loads(capsys.readouterr().out)["kv_cache"]
    assert k["after_prompt"] == kv_cache(gemma, 1, 4096).total == 18 * 4096 * 2 * 256 * 2
    assert k["generating"] == kv_cache(gemma, 1, 4095, 1).total == (3 * 4096 + 15 * 512) * 2 * 256 * 2
    assert (k["global_layers"], k["local_layers"], k["per_token_all_layers"]) == (3, 15, 18 * 1024)
    assert main(["params", "--preset", "embeddinggemma-300m"]) == 0
    assert "KV cache: none (embeddinggemma-300m attends both ways" in capsys.readouterr().out
    assert main(["params", "--preset", "gpt2", "--context", "2000"]) == 2
    assert "--context must be between 2 and max_position (1,024), got 2,000" in capsys.readouterr().err


def test_params_cuts_for_an_encoder_and_a_decoder(capsys):
    """`params --cuts E`: ALBERT's two cuts, for bert-base (issue 10's 31,515,648 shared all) and for Qwen2.5-0.5B."""
    from albert_core.cli.main import main
    from albert_core.decoders.decoder_params import decoder_cuts
    from albert_core.decoders.decoder_presets import DECODER_PRESETS

    assert main(["params", "--preset", "bert-base", "--cuts", "128"]) == 0
    out = capsys.readouterr().out
    assert "shared all" in out and "31,515,648 (31.5M)" in out and "pooler" in out
    assert main(["params", "--preset", "Qwen2.5-0.5B", "--cuts", "128", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["cuts"] == decoder_cuts(DECODER_PRESETS["Qwen2.5-0.5B"].cfg, 128)
    assert main(["params", "--preset", "gpt2", "--cuts", "0"]) == 2
    assert "--cuts: embedding_dim must be a whole number of at least 1, got 0" in capsys.readouterr().err
