"""AppTest: the Fine-tuning expander (Memory's training tab, the Fit planner) and the serving tab change the numbers
to albert_core's, a LoRA link on ALBERT asks for target modules, and bad values warn."""

from test_app_pages import figure, goto, no_errors, open_app, open_fields, open_tab, table_with, traces

from albert_core.choices import LoraSpec
from albert_core.estimate.finetune import trainable
from albert_core.estimate.serving import weight_bytes
from albert_core.presets import PRESETS
from albert_core.step.training import training_memory
from albert_core.workload import Workload


def _row(df, config):
    return df[df["config"] == config].iloc[0]


def test_lora_link_on_albert_asks_for_targets_and_counts_the_others():
    at = open_app({"train_mode": "lora", "memory_tab": "training"})
    goto(at, "memory")
    no_errors(at)
    asks = [w.value for w in at.warning if "albert-base" in w.value]
    assert asks and "peft has no default LoRA targets" in asks[0] and "Target modules" in asks[0]
    assert "query" in asks[0]  # the candidates are named
    t = table_with(at, "trainable", "frozen")
    assert "albert" not in " ".join(t["config"])  # not counted, not wrong
    bert = trainable(PRESETS["bert-base"], "lora")
    assert int(_row(t, "bert-base")["trainable"]) == bert.trainable
    at.text_input(key="ctl.lora_targets").set_value("query,value").run()
    no_errors(at)
    assert not [w for w in at.warning if "albert-base" in w.value]
    t = table_with(at, "trainable", "frozen")
    spec = LoraSpec(targets=("query", "value"))
    assert int(_row(t, "albert-base")["trainable"]) == trainable(PRESETS["albert-base"], "lora", lora=spec).trainable
    assert at.query_params["lora_targets"] == "query,value" and at.query_params["train_mode"] == "lora"


def test_modes_and_heads_change_the_peak_table():
    at = open_tab(goto(open_app(), "memory"), "memory", "training")
    assert not [w for w in at.selectbox if w.key == "ctl.train_mode"]  # closed in full fine-tuning: not even run
    peak = table_with(at, "peak", "sum_of_parts")
    full = int(_row(peak, "bert-base")["peak"])
    open_fields(at, "finetune")  # as clicking the expander would
    at.selectbox(key="ctl.train_mode").set_value("frozen-layers").run()
    at.number_input(key="ctl.frozen_layers").set_value(6).run()
    at.selectbox(key="ctl.head").set_value("classification").run()
    at.number_input(key="ctl.num_labels").set_value(5).run()
    no_errors(at)
    peak = table_with(at, "peak", "sum_of_parts")
    m = training_memory(PRESETS["bert-base"], Workload(batch_size=8, seq_len=512, precision="mixed_bf16",
                                                       optimizer="adamw", attention="eager", mode="frozen-layers:6",
                                                       head="classification", num_labels=5))
    r = _row(peak, "bert-base")
    assert (int(r["peak"]), int(r["sum_of_parts"]), r["phase"]) == (m.peak, m.total, m.peak_phase)
    assert m.peak < full
    bar = traces(figure(at, "memory_training"))["the step's peak"]  # the black bar across bert-base's stack
    assert bar["y"][bar["x"].index("bert-base")] * 2**30 == m.peak
    q = at.query_params
    assert (q["train_mode"], q["frozen_layers"], q["head"], q["num_labels"]) == ("frozen-layers", "6",
                                                                                  "classification", "5")


def test_fit_planner_uses_the_peak_of_the_mode():
    at = goto(open_app({"train_mode": "bitfit", "fit_tab": "table"}), "fit")
    no_errors(at)
    plan = table_with(at, "needed_bytes", "max_batch_size")
    kw = dict(precision="mixed_bf16", optimizer="adamw", attention="eager", mode="bitfit")
    m = training_memory(PRESETS["bert-large"], Workload(batch_size=8, seq_len=512, **kw))
    r = _row(plan, "bert-large")
    assert int(r["needed_bytes"]) == m.peak and int(r["sum_of_parts"]) == m.total
    assert int(r["trainable"]) == trainable(PRESETS["bert-large"], "bitfit").trainable


def test_fit_says_where_a_peak_above_the_sum_of_the_parts_comes_from():
    """A new user's run: with FSDP the Fit planner put the step's peak above "the sum of the parts" (albert-xxlarge
    27.28 against 26.68 GiB on 4 T4s) without a word. The peak holds what no part has (temporaries, the input,
    buffers, the unit ZeRO-3 / FSDP gathers whole: TrainingMemory.beyond_parts); sharded, the parts' gradients no
    longer outweigh them. Each config's line now says what and how much where its peak is above its sum (the
    table's exact bytes), and only there; FSDP's lines name the gathered unit."""
    for sharding in ("fsdp", "zero2"):
        at = goto(open_app({"gpu": "T4 16 GB", "num_gpus": "4", "sharding": sharding, "fit_tab": "table"}), "fit")
        no_errors(at)
        plan = table_with(at, "needed_bytes", "max_batch_size")
        above = {r["config"] for _, r in plan.iterrows() if int(r["needed_bytes"]) > int(r["sum_of_parts"])}
        lines = [line for m in at.markdown for line in m.value.splitlines() if "the sum of the parts" in line]
        said = {r["config"] for _, r in plan.iterrows() for line in lines
                if line.startswith(f"- **{r['config']}**") and "what no part has" in line}
        assert len(lines) == len(plan) == 4 and said == above and above, lines
        assert all(("gathered unit (ZeRO-3)" in line) == (sharding == "fsdp") for line in lines if "no part" in line)


def test_bad_fine_tuning_values_warn():
    at = open_app({"train_mode": "qlora", "lora_dropout": "2", "head": "seq"})
    text = " ".join(w.value for w in at.warning)
    for key in ("train_mode", "lora_dropout", "head"):
        assert key in text
    at = goto(open_app({"train_mode": "lora", "lora_targets": "query", "memory_tab": "training"}), "memory")
    at.text_input(key="ctl.lora_targets").set_value("query;;value").run()
    no_errors(at)
    assert any("lora_targets must be module names" in w.value for w in at.warning)


def test_serving_tab_numbers_and_controls():
    at = open_tab(goto(open_app(), "memory"), "memory", "serving")
    no_errors(at)
    t = table_with(at, "format", "vs_approx")
    cfg = PRESETS["albert-base"]
    int4 = weight_bytes(cfg, "int4", dtype="bfloat16", group_size=128)
    assert int(_row_fmt(t, "int4")["weights"]) == int4.weights
    # issue 29: int4 (one value per byte, unpacked, plus group scales) holds more than int8, said before int4 is picked
    int8 = weight_bytes(cfg, "int8", dtype="bfloat16", group_size=128)
    assert int4.weights > int8.weights and at.selectbox(key="ctl.serve_format").value != "int4"
    said = [c.value for c in at.caption if c.value.startswith("int4 holds more than int8 here")]
    assert len(said) == 1 and "one int4 value per byte, unpacked" in said[0], [c.value for c in at.caption]
    at.number_input(key="ctl.group_size").set_value(64).run()
    at.toggle(key="ctl.serve_embeddings").set_value(True).run()
    t = table_with(at, "format", "vs_approx")
    int4e = weight_bytes(cfg, "int4", dtype="bfloat16", group_size=64, quantize_embeddings=True)
    assert int(_row_fmt(t, "int4")["weights"]) == int4e.weights != int4.weights
    at.number_input(key="ctl.group_size").set_value(100).run()  # divides no width of albert-base
    no_errors(at)
    at.selectbox(key="ctl.serve_format").set_value("int4").run()
    assert any("group_size 100 must divide" in w.value for w in at.warning)
    assert at.query_params["group_size"] == "100" and at.query_params["memory_tab"] == "serving"


def _row_fmt(df, fmt):
    return df[df["format"] == fmt].iloc[0]


def test_k_beyond_a_configs_layers_is_said_and_clipped():
    at = open_tab(goto(open_app({"train_mode": "frozen-layers", "frozen_layers": "20"}), "memory"), "memory", "training")
    no_errors(at)
    note = " ".join(c.value for c in at.caption if "k = 20" in c.value)
    assert "bert-base (12)" in note and "bert-large" not in note  # bert-large has 24 layers
    t = table_with(at, "trainable", "frozen")
    assert int(_row(t, "bert-base")["trainable"]) == trainable(PRESETS["bert-base"], "frozen-layers:12").trainable
    assert int(_row(t, "bert-large")["trainable"]) == trainable(PRESETS["bert-large"], "frozen-layers:20").trainable


def test_fit_planner_with_no_countable_config_keeps_the_sidebar_and_says_why():
    """A head on a config too deep to list tensor by tensor: Fit says what to change and ends the page; the
    sidebar (drawn after the page) is still there to change it with, and so is the link."""
    deep = {"preset": "bert-base", "num_layers": "96", "inner_group_num": "1024", "head": "classification"}
    at = open_app(deep)
    goto(at, "fit")
    no_errors(at)
    why = [w.value for w in at.warning if "layer applications" in w.value]
    assert why and "98,304" in why[0] and "lower num_layers or inner_group_num" in why[0]
    open_fields(at)
    assert at.sidebar.number_input(key="f.num_layers").value == 96
    assert at.query_params["inner_group_num"] == "1024" and at.query_params["head"] == "classification"
    at.selectbox(key="ctl.head").set_value("none").run()  # full fine-tuning without a head: counted at any depth
    no_errors(at)
    assert not [w for w in at.warning if "layer applications" in w.value] and at.get("plotly_chart")


def test_one_lora_target_list_serves_every_family_and_says_how():
    """issue 29: with `query,value`, DeBERTa and ModernBERT dropped out of every table, one yellow box each; now
    each model gets the modules of the same meaning, and the expander says which."""
    q = {"preset": "albert-base", "compare": "bert-base,deberta-v3-base,ModernBERT-base", "train_mode": "lora",
         "lora_targets": "query,value", "head": "classification", "num_labels": "3", "memory_tab": "training"}
    at = goto(open_app(q), "memory")
    no_errors(at)
    assert not [w.value for w in at.warning if "LoRA" in w.value]
    said = [c.value for c in at.caption if c.value.startswith("The targets in each model's own names")]
    assert said == ["The targets in each model's own names: deberta-v3-base: query → query_proj, value → value_proj; "
                    "ModernBERT-base: query → Wqkv, value → Wqkv."], [c.value for c in at.caption]
    t = table_with(at, "trainable", "frozen")
    spec = LoraSpec(targets=("query", "value"))
    for name in ("albert-base", "bert-base", "deberta-v3-base", "ModernBERT-base"):
        want = trainable(PRESETS[name], "lora", head="classification", num_labels=3, lora=spec).trainable
        assert int(_row(t, name)["trainable"]) == want, name
