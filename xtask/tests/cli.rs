//! `cargo xtask plan` as a user meets it: the built binary on good and bad inputs.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn xtask(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args(args)
        .current_dir(std::env::temp_dir())
        .output()
        .expect("the xtask binary runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Runs a plan that must fail; returns its one-line error.
fn failure(args: &[&str]) -> String {
    let o = xtask(args);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{args:?}: {err}");
    assert!(o.stdout.is_empty(), "{args:?} printed to stdout");
    assert_eq!(err.lines().count(), 1, "{args:?}: not one line: {err}");
    assert!(!err.contains("panicked"), "{args:?} panicked: {err}");
    err.trim_end().to_owned()
}

fn temp(name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("xtask-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

const CIRCUIT: &str = include_str!("../../examples/llama-3.1-8b/circuit.toml");
const FAMILIES: &str = include_str!("../../examples/llama-3.1-8b/families.toml");
const RULES: &str = include_str!("../../examples/llama-3.1-8b/rules.toml");

#[test]
fn no_arguments_plans_the_embedded_example_from_any_directory() {
    let o = xtask(&["plan"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.starts_with("circuit   llama-3.1-8b\ndevice    h100-sxm (132 SMs, 79.6 GiB)\n"));
    // Rows 1, 2, 4, ..., 8192: fourteen rows in the table.
    let rows: Vec<&str> = out
        .lines()
        .filter(|l| {
            l.split_whitespace()
                .next()
                .is_some_and(|w| w.parse::<u64>().is_ok())
        })
        .collect();
    assert_eq!(rows.len(), 14);
    assert!(rows[0].trim_start().starts_with("1     387   15.0 GiB"));
    assert!(rows[13].trim_start().starts_with("8192     355   15.0 GiB"));
    assert!(out.contains("widest workspaces"));
    assert!(out.contains(
        "cublaslt_gemm        cublaslt_workspace   no       32.0 MiB  layer.*.q_proj x32"
    ));
    assert!(out.contains("fit       largest n in 1..=8192 that fits 79.6 GiB: 8192"));
}

#[test]
fn json_has_the_contract_keys_and_exact_bytes() {
    let o = xtask(&[
        "plan",
        "--rows",
        "1,4096",
        "--kv-tokens",
        "1000",
        "--format",
        "json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(j["circuit"], "llama-3.1-8b");
    assert_eq!(j["device"], "h100-sxm");
    assert_eq!(j["sm_count"], 132);
    // The example's context window (its circuit.toml `context`).
    assert_eq!(j["model_context"], 131_072);
    let plans = j["plans"].as_array().unwrap();
    assert_eq!(plans.len(), 2);
    for p in plans {
        let t = &p["totals"];
        assert_eq!(t["weights"], 16_060_522_496u64);
        assert_eq!(t["states"], 131_072_000u64);
        let sum: u64 = ["weights", "activations", "workspaces", "states"]
            .iter()
            .map(|k| t[k].as_u64().unwrap())
            .sum();
        assert_eq!(t["total"].as_u64().unwrap(), sum);
        assert_eq!(t["activations"], p["arena"]["bytes"]);
        assert_eq!(p["digest"].as_str().unwrap().len(), 64);
    }
    assert_eq!(plans[1]["totals"]["workspaces"], 33_554_432u64);
    let keys: Vec<&str> = j.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "schema",
            "circuit",
            "device",
            "sm_count",
            "memory",
            "settings",
            "kv_tokens",
            "sequences",
            "align",
            "budget",
            "max_model_len",
            "model_context",
            "nodes",
            "node_lists",
            "plans",
            "widest",
            "fit",
            "serving",
            "verdict"
        ]
    );
    assert_eq!(j["schema"], 2);
    assert_eq!(j["fit"]["max_rows"], 4096);
    // A term's node list is written once, at the top; rows refer to it by index.
    let cublas = &plans[1]["workspaces"][0];
    assert_eq!(cublas["name"], "cublaslt_workspace");
    let list = j["node_lists"][cublas["nodes"].as_u64().unwrap() as usize]
        .as_array()
        .unwrap();
    // Six GEMM nodes in each of the 32 layers, and the LM head.
    assert_eq!(list.len(), 6 * 32 + 1);
}

#[test]
fn the_per_node_table_sums_to_the_total() {
    let o = xtask(&["plan", "--rows", "4096", "--per-node", "--format", "json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let table = &j["per_node"];
    let sum: u64 = table["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            ["weights", "activations", "workspaces", "states"]
                .iter()
                .map(|k| r[k].as_u64().unwrap())
                .sum::<u64>()
        })
        .sum::<u64>()
        + table["fragmentation"].as_u64().unwrap();
    assert_eq!(sum, j["plans"][0]["totals"]["total"].as_u64().unwrap());
    let text = stdout(&xtask(&["plan", "--rows", "4096", "--per-node"]));
    assert!(text.contains("layer.*.attn_norm x32"));
    assert!(text.contains("(arena fragmentation)"));
}

#[test]
fn files_flags_and_budgets() {
    let dir = root().join("examples/llama-3.1-8b");
    let o = xtask(&[
        "plan",
        "--circuit",
        dir.join("circuit.toml").to_str().unwrap(),
        "--families",
        dir.join("families.toml").to_str().unwrap(),
        "--rules",
        dir.join("rules.toml").to_str().unwrap(),
        "--device",
        "a100-80gb",
        "--rows",
        "1..=8:+7",
        "--set",
        "mode=decode",
        "--budget",
        "0.5",
        "--align",
        "512",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("device    a100-80gb (108 SMs, 80.0 GiB)"));
    assert!(out.contains("settings  mode=decode"));
    assert!(out.contains("budget    40.0 GiB"));
    assert!(out.contains("arena alignment 512 bytes"));
    assert!(out.contains("headroom"));
    let o = xtask(&[
        "plan",
        "--sm-count",
        "64",
        "--rows",
        "2",
        "--budget",
        "20GiB",
    ]);
    assert!(
        stdout(&o).contains("device    64 SMs (64 SMs)"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn hf_configs_plan_with_their_own_registry() {
    let config = root().join("data/models/qwen2.5-7b/config.json");
    let o = xtask(&[
        "plan",
        "--hf-config",
        config.to_str().unwrap(),
        "--rows",
        "1,4096",
        "--kv-tokens",
        "1000",
        "--format",
        "json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(j["circuit"], "qwen2.5-7b");
    assert_eq!(j["plans"][0]["totals"]["weights"], 15_231_233_024u64);
    assert_eq!(j["plans"][0]["totals"]["states"], 57_344_000u64);
}

#[test]
fn a_recurrent_models_per_sequence_state_is_reported_apart_from_its_kv_cache() {
    let config = root().join("data/checkpoints/qwen3-next-80b-a3b-instruct/config.json");
    let args = |format: &'static str| {
        vec![
            "plan".to_owned(),
            "--hf-config".to_owned(),
            config.to_str().unwrap().to_owned(),
            "--rows".to_owned(),
            "1".to_owned(),
            "--kv-tokens".to_owned(),
            "1000".to_owned(),
            "--sequences".to_owned(),
            "3".to_owned(),
            "--format".to_owned(),
            format.to_owned(),
        ]
    };
    let json = args("json");
    let o = xtask(&json.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(o.status.success(), "{}", stderr(&o));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    // 36 Gated DeltaNet layers x (3 x 8192 + 32 x 128 x 128) bf16 per sequence; the KV cache
    // of the 12 full-attention layers, 24,576 bytes per token.
    assert_eq!(j["fixed_state_per_sequence"], 39_518_208u64);
    assert_eq!(
        j["plans"][0]["totals"]["states"],
        1000 * 24_576 + 3 * 39_518_208u64
    );
    assert_eq!(j["plans"][0]["totals"]["weights"], 162_649_725_440u64);
    let table = args("table");
    let o = xtask(&table.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).contains(
            "state     37.7 MiB per sequence of recurrent and convolution state, not per token: 113.1 MiB for 3 sequences"
        ),
        "{}",
        stdout(&o)
    );
}

#[test]
fn the_svgs_are_valid_with_every_series_and_one_rectangle_per_buffer() {
    let chart = temp("chart.svg", "");
    let arena = temp("arena.svg", "");
    let o = xtask(&[
        "plan",
        "--rows",
        "1..=4096:x4",
        "--svg",
        chart.to_str().unwrap(),
        "--arena-svg",
        arena.to_str().unwrap(),
        "--format",
        "json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(&chart).unwrap();
    let doc = roxmltree::Document::parse(&text).expect("the chart is well-formed XML");
    assert_eq!(doc.root_element().tag_name().name(), "svg");
    let labels: Vec<&str> = doc
        .descendants()
        .filter(|n| n.has_tag_name("text"))
        .filter_map(|n| n.text())
        .map(str::trim)
        .collect();
    for series in [
        "total",
        "weights",
        "activations",
        "workspaces",
        "states",
        "budget 79.6 GiB",
    ] {
        assert!(labels.contains(&series), "no `{series}` in the legend");
    }
    // The four stacked bands, one polygon each (xtask/tests/render.rs counts their pixels).
    let bands = doc
        .descendants()
        .filter(|n| n.has_tag_name("polygon"))
        .count();
    assert_eq!(bands, 4);

    let text = std::fs::read_to_string(&arena).unwrap();
    let doc = roxmltree::Document::parse(&text).expect("the memory map is well-formed XML");
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let buffers = j["plans"].as_array().unwrap().last().unwrap()["arena"]["buffers"]
        .as_u64()
        .unwrap();
    let fill = |colour: &str| {
        doc.descendants()
            .filter(|n| n.has_tag_name("rect") && n.attribute("fill") == Some(colour))
            .filter(|n| n.children().any(|c| c.has_tag_name("title")))
            .count() as u64
    };
    // Each buffer is one rectangle named by its <title> (the legend's swatches have none):
    // activations in steel blue, arena workspaces in orange.
    assert_eq!(fill("#4682B4") + fill("#E68C1E"), buffers);
    assert_eq!(fill("#E68C1E"), 32);
}

#[test]
fn bad_inputs_give_one_line_and_exit_1() {
    assert_eq!(
        failure(&["plan", "--circuit", "no/such/file.toml"]),
        "error: cannot read no/such/file.toml: No such file or directory (os error 2)"
    );
    let broken = temp(
        "broken.toml",
        &CIRCUIT.replace("hidden = 4096", "hidden = = 4096"),
    );
    let err = failure(&["plan", "--circuit", broken.to_str().unwrap()]);
    assert!(
        err.ends_with("broken.toml: line 11, column 10: extra `=`, expected nothing"),
        "{err}"
    );
    assert_eq!(
        failure(&["plan", "--device", "h100-nvl-4"]),
        "error: kernel-families/devices.toml: unknown device `h100-nvl-4` (known: h100-sxm, h100-pcie, h100-nvl, h200, h20, gh200, b200, a100-80gb, a100-40gb, a100-pcie-80gb, a100-pcie-40gb, l40s, l4, a40, rtx4090, rtx3090, rtx6000-ada, rtx5090, mi300x); name one of them (--device NAME) or give the SM count itself (--sm-count N)"
    );
    assert_eq!(
        failure(&["plan", "--rows", "0"]),
        "error: --rows `0`: row counts start at 1; write e.g. `1,2,8`, `1..=4096` or `1..=8192:x2`"
    );
    assert!(
        failure(&["plan", "--budget", "lots"]).starts_with("error: --budget `lots`: no number")
    );
    let families = temp(
        "families.toml",
        &FAMILIES.replace("4 * n * heads\"", "4 * n * heads * beams\""),
    );
    let err = failure(&["plan", "--families", families.to_str().unwrap()]);
    assert!(
        err.contains("softmax_lse") && err.contains("`beams`"),
        "{err}"
    );
    let rules = temp("rules.toml", &RULES.replace("[[rule]]\nid = \"rope\"\npattern = [{ op = \"rope\" }]\nkernels = [\"rope_bf16\"]\nemitter = \"cuda\"\n", ""));
    let rules_no_fusion = temp(
        "rules2.toml",
        &std::fs::read_to_string(&rules).unwrap().replace(
            "pattern = [{ op = \"rope\", keep = true }, { op = \"kv_write\" }]",
            "pattern = [{ op = \"rope\", keep = true }, { op = \"kv_write\" }]\nrows = [1, 8]",
        ),
    );
    assert_eq!(
        failure(&[
            "plan",
            "--rules",
            rules_no_fusion.to_str().unwrap(),
            "--rows",
            "16"
        ]),
        format!(
            "error: {}: node `layer.0.rope` (rope) is covered by no rule at n = 16 with mode=prefill; add a rule for `rope` (or fuse with placeholders)",
            rules_no_fusion.display()
        )
    );
    assert_eq!(
        failure(&["plan", "--set", "moed=decode"]),
        "error: --set: setting `moed` is not declared in [settings] (declared: mode)"
    );
}

#[test]
fn usage_errors_exit_2() {
    let o = xtask(&["plan", "--format", "xml"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("invalid value 'xml'"));
    let o = xtask(&["plan", "--device", "a100-80gb", "--sm-count", "8"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn an_imported_config_says_which_defaults_it_used() {
    let config = temp(
        "small-llama.json",
        r#"{"model_type": "llama", "vocab_size": 128256, "hidden_size": 2048, "intermediate_size": 8192,
            "num_hidden_layers": 16, "num_attention_heads": 32, "tie_word_embeddings": true}"#,
    );
    let o = xtask(&[
        "plan",
        "--hf-config",
        config.to_str().unwrap(),
        "--rows",
        "1",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let line = out
        .lines()
        .find(|l| l.starts_with("defaults  "))
        .expect("a defaults line");
    assert!(line.contains("num_key_value_heads = 32"), "{line}");
    assert!(line.contains("head_dim = 64"), "{line}");
    let o = xtask(&[
        "plan",
        "--hf-config",
        config.to_str().unwrap(),
        "--rows",
        "1",
        "--format",
        "json",
    ]);
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(j["config_defaults"]["num_key_value_heads"], "32");
}

/// Every "`cargo xtask ...`:" in the README followed by a fenced block prints exactly that
/// block, so the excerpts stay true when the output changes.
#[test]
fn the_readme_excerpts_are_what_the_commands_print() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let mut checked = 0;
    let mut rest = readme.as_str();
    while let Some(at) = rest.find("`cargo xtask ") {
        rest = &rest[at + "`cargo xtask ".len()..];
        let Some(end) = rest.find('`') else { break };
        let (command, after) = (&rest[..end], &rest[end + 1..]);
        rest = after;
        // `text`: the README is a doc test (tests/lib.rs), where an untagged block is Rust.
        let Some(block) = after.strip_prefix(":\n\n```text\n") else {
            continue;
        };
        let expected = &block[..block.find("```").expect("the block is closed")];
        let args: Vec<&str> = command.split_whitespace().collect();
        let o = Command::new(env!("CARGO_BIN_EXE_xtask"))
            .args(&args)
            .current_dir(root())
            .output()
            .expect("the xtask binary runs");
        assert!(o.status.success(), "{command}: {}", stderr(&o));
        assert_eq!(
            stdout(&o),
            expected,
            "README excerpt of `cargo xtask {command}`"
        );
        checked += 1;
    }
    assert_eq!(checked, 2, "the README's two excerpts");
}

#[test]
fn engine_plans_every_rank_of_a_layout() {
    let config = root().join("data/models/llama-3.1-8b/config.json");
    let config = config.to_str().unwrap();
    let base = [
        "plan",
        "--hf-config",
        config,
        "--engine",
        "vllm==0.19.0",
        "--gpu-memory-utilization",
        "0.95",
        "--max-model-len",
        "8192",
    ];
    // PP 2: one JSON worker per rank, with its stage; the KV tokens are the smaller stage's.
    let pp = xtask(&[&base[..], &["--pp", "2", "--format", "json"]].concat());
    assert!(pp.status.success(), "{}", stderr(&pp));
    let json: serde_json::Value = serde_json::from_str(&stdout(&pp)).unwrap();
    let workers = json["engine"]["workers"].as_array().unwrap();
    let stages: Vec<(u64, u64)> = workers
        .iter()
        .map(|w| (w["rank"].as_u64().unwrap(), w["pp_stage"].as_u64().unwrap()))
        .collect();
    assert_eq!(stages, [(0, 0), (1, 1)]);
    // The last stage runs the sampler and receives the first stage's tensors: more peak,
    // less KV, and its blocks are the ones every worker gets.
    assert!(workers[1]["activation_peak"].as_u64() > workers[0]["activation_peak"].as_u64());
    // The first stage's peak is its forward's; the last stage's, its sampler's.
    let set_by: Vec<&str> = workers
        .iter()
        .map(|w| w["activation_peak_set_by"].as_str().unwrap())
        .collect();
    assert_eq!(set_by, ["forward", "sampler"]);
    let per_token_block = 16 * 16 * 8 * 128 * 2 * 2;
    let last_blocks = workers[1]["kv_cache"].as_u64().unwrap() / per_token_block;
    assert_eq!(
        json["engine"]["kv_cache_tokens"].as_u64().unwrap(),
        last_blocks * 16
    );
    // A forward-set peak gets the note that says how far such a peak was checked; the TP 1
    // default, whose peak is the sampler's, does not.
    let note = "note      a peak set by the forward is the least checked figure: on the one vLLM log of such a peak (Llama-3.1-8B, PP 2, stage 0) it was 16% below what vLLM printed (docs/engines.md, \"The PP 2 gap\")";
    let pp_table = xtask(&[&base[..], &["--pp", "2"]].concat());
    assert!(
        stdout(&pp_table).lines().any(|l| l == note),
        "{}",
        stdout(&pp_table)
    );
    let tp1_table = xtask(&base);
    assert!(
        !stdout(&tp1_table).contains("note      "),
        "{}",
        stdout(&tp1_table)
    );
    // TP 2: both ranks alike, one table row naming them.
    let tp = xtask(&[&base[..], &["--tp", "2"]].concat());
    assert!(tp.status.success(), "{}", stderr(&tp));
    assert!(
        stdout(&tp)
            .lines()
            .any(|l| l.trim_start().starts_with("0-1 ")),
        "{}",
        stdout(&tp)
    );
    // vLLM's prefix-caching flags are taken as a `vllm serve` line gives them and change no
    // byte: the eight logs ran with --no-enable-prefix-caching, the default is on. Only the
    // inputs say the flag was given.
    let without_inputs = |o: &Output| {
        let mut json: serde_json::Value = serde_json::from_str(&stdout(o)).unwrap();
        let inputs = json["engine"]
            .as_object_mut()
            .unwrap()
            .remove("inputs")
            .unwrap();
        (json, inputs["enable_prefix_caching"].clone())
    };
    let (plain, plain_input) = without_inputs(&xtask(&[&base[..], &["--format", "json"]].concat()));
    assert_eq!(
        plain_input,
        serde_json::json!({"value": null, "source": "default of vllm 0.19.0 (no byte depends on it here)"})
    );
    for (flag, value) in [
        ("--no-enable-prefix-caching", false),
        ("--enable-prefix-caching", true),
    ] {
        let with = xtask(&[&base[..], &[flag, "--format", "json"]].concat());
        assert!(with.status.success(), "{flag}: {}", stderr(&with));
        let (with, input) = without_inputs(&with);
        assert_eq!(with, plain, "{flag}");
        assert_eq!(
            input,
            serde_json::json!({"value": value, "source": flag}),
            "{flag}"
        );
    }
    // --quantization fp8 loads the linears in e4m3: 8.49 GiB, as vLLM printed.
    let fp8 = xtask(&[&base[..], &["--quantization", "fp8", "--format", "json"]].concat());
    assert!(fp8.status.success(), "{}", stderr(&fp8));
    let json: serde_json::Value = serde_json::from_str(&stdout(&fp8)).unwrap();
    let weights = json["engine"]["workers"][0]["weights"].as_u64().unwrap() as f64;
    assert!(
        (weights / (1u64 << 30) as f64 - 8.49).abs() < 0.01,
        "{weights}"
    );
    let bad = failure(&[&base[..], &["--quantization", "int3"]].concat());
    assert!(bad.contains("--quantization"), "{bad}");
    // --enforce-eager: no CUDA graph, so no estimate; the table says so.
    let eager = xtask(&[&base[..], &["--enforce-eager"]].concat());
    assert!(eager.status.success(), "{}", stderr(&eager));
    let out = stdout(&eager);
    assert!(
        out.lines()
            .any(|l| l == "CUDA graphs: none captured (--enforce-eager)"),
        "{out}"
    );
    assert!(!out.contains("Estimated CUDA graph memory"), "{out}");
    // The table's run line names the quantization the weights are loaded in, and whence.
    let run_line = |args: &[&str]| {
        let o = xtask(args);
        assert!(o.status.success(), "{}", stderr(&o));
        let out = stdout(&o);
        let line = out.lines().find(|l| l.starts_with("run ")).unwrap();
        line[line.find("quantization ").unwrap()..].to_owned()
    };
    assert_eq!(
        run_line(&[&base[..], &["--quantization", "fp8"]].concat()),
        "quantization fp8 (--quantization, at load)"
    );
    assert_eq!(run_line(&base), "quantization none");
    let gptq = root().join("data/checkpoints/llama-3.1-8b-instruct-w4a16/config.json");
    assert_eq!(
        run_line(&[
            "plan",
            "--engine",
            "vllm==0.19.0",
            "--hf-config",
            gptq.to_str().unwrap()
        ]),
        "quantization gptq (the checkpoint's)"
    );
}

/// A model mixing full and sliding-window layers is laid out as vLLM's hybrid KV-cache manager
/// lays it out: Gemma 3 1B's 22 sliding layers in 6 groups and 4 full ones in 1, each group 4
/// layers, a block 4 x 16 tokens x 1,024 bytes, the printed tokens blocks // 7 x 16, and one
/// request of 32,768 tokens 2,048 + 6 x 545 = 5,318 blocks (the derivation is in
/// engines/tests/vllm_0_19.rs).
#[test]
fn engine_lays_out_a_hybrid_cache_in_groups() {
    let config = root().join("data/checkpoints/gemma-3-1b-it/config.json");
    let config = config.to_str().unwrap();
    let base = ["plan", "--hf-config", config, "--engine", "vllm==0.19.0"];
    let o = xtask(&[&base[..], &["--format", "json"]].concat());
    assert!(o.status.success(), "{}", stderr(&o));
    let json: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let e = &json["engine"];
    let blocks = e["kv_blocks"].as_u64().unwrap();
    let w = &e["workers"][0];
    assert_eq!(w["kv_block_bytes"], 65_536);
    assert_eq!(blocks, w["kv_cache"].as_u64().unwrap() / 65_536);
    assert_eq!(e["kv_cache_tokens"].as_u64().unwrap(), blocks / 7 * 16);
    assert_eq!(e["kv_blocks_per_request"], 5_318);
    assert_eq!(
        e["max_concurrency"].as_f64().unwrap(),
        blocks as f64 / 5_318.0
    );
    let groups = e["kv_groups"].as_array().unwrap();
    let layers: Vec<u64> = groups
        .iter()
        .map(|g| g["layers"].as_u64().unwrap())
        .collect();
    assert_eq!(layers, [4, 4, 4, 4, 3, 3, 4]);
    assert_eq!(groups[0]["kind"], "sliding");
    assert_eq!(groups[0]["window"], 512);
    assert_eq!(groups[6]["kind"], "full");
    assert_eq!(e["starts"], true);
    let table = xtask(&base);
    assert!(table.status.success(), "{}", stderr(&table));
    let out = stdout(&table);
    let tokens = e["kv_cache_tokens"].as_u64().unwrap();
    for line in [
        format!(
            "KV layout {blocks} blocks, 7 groups: 6 x sliding window 512, 16-token blocks (4, 4, 4, 4, 3, 3 layers), 1 x full attention, 16-token blocks (4 layers)"
        ),
        format!("GPU KV cache size: {tokens} tokens"),
        "verdict   starts".to_owned(),
    ] {
        assert!(out.lines().any(|l| l == line), "no {line:?} in\n{out}");
    }
}

/// Llama 4 Scout at TP 8: by default vLLM's profile run encodes 3 dummy images first and keeps
/// their pixel values and outputs (34,546,176 + 75,202,560 bytes) to the end; with
/// `--skip-mm-profiling` the profile is the language model's, with the tower's weights; with
/// `--language-model-only`, or an image limit of 0, vLLM loads the language model alone: each
/// rank holds 225,779,200 bytes less (the tower's share, 219,919,808 bytes,
/// crates/circuit-hf/tests/parallel.rs, in the caching allocator's blocks)
/// and the same kernels run.
#[test]
fn engine_predicts_a_multimodal_checkpoint_with_or_without_its_tower() {
    let config = root().join("data/checkpoints/llama-4-scout-17b-16e-instruct/config.json");
    let config = config.to_str().unwrap();
    let base = [
        "plan",
        "--hf-config",
        config,
        "--engine",
        "vllm==0.19.0",
        "-tp",
        "8",
        "--format",
        "json",
    ];
    let worker = |extra: &[&str]| {
        let o = xtask(&[&base[..], extra].concat());
        assert!(o.status.success(), "{extra:?}: {}", stderr(&o));
        let json: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
        json["engine"]["workers"][0].clone()
    };
    let profiled = worker(&[]);
    let with_tower = worker(&["--skip-mm-profiling"]);
    let text = worker(&["--language-model-only"]);
    assert_eq!(profiled["encoder"]["items"], 3);
    assert_eq!(
        profiled["activation_peak"].as_u64().unwrap()
            - with_tower["activation_peak"].as_u64().unwrap(),
        34_546_176 + 75_202_560
    );
    assert_eq!(with_tower["encoder"], serde_json::Value::Null);
    // The tower's 219,919,808 bytes as the caching allocator holds them (docs/engines.md, "The
    // caching allocator"): its 1-10 MiB tensors share 20 MiB segments, and the one that leaves
    // at most 1 MiB takes the rest: 16 of the 34 qkv_proj weights (1,486,848 bytes) take
    // 1,773,568, one fc1 weight (1,982,464) 2,130,944, the adapter's fc2 (4 MiB) 5 MiB; the
    // small tensors take 512-byte multiples: the class embedding and four pre/post norm
    // tensors (2,816 -> 3,072), per layer six norm and bias tensors of 2,816, fc1's bias
    // (1,408 -> 1,536) and qkv_proj's (1,056 -> 1,536), the patch embedding (206,976 ->
    // 207,360) and the positional embedding (1,624,832 -> 1,625,088).
    let tower_blocks = 16 * (1_773_568 - 1_486_848)
        + (2_130_944 - 1_982_464)
        + (1 << 20)
        + 5 * 256
        + 34 * (6 * 256 + 128 + 480)
        + 384
        + 256;
    assert_eq!(tower_blocks, 5_859_392);
    assert_eq!(
        with_tower["weights"].as_u64().unwrap() - text["weights"].as_u64().unwrap(),
        219_919_808 + tower_blocks
    );
    assert_eq!(
        with_tower["cuda_graph_estimate"],
        text["cuda_graph_estimate"]
    );
    assert_eq!(worker(&["--limit-mm-per-prompt", r#"{"image": 0}"#]), text);
    assert_eq!(
        worker(&["--limit-mm-per-prompt", r#"{"image": {"count": 0}}"#]),
        text
    );
    // A modality the model does not take would change nothing (vLLM ignores it): refused
    // (issue 34), not silently dropped.
    let video = failure(
        &[
            &base[..],
            &[
                "--limit-mm-per-prompt",
                r#"{"image": {"count": 0}, "video": 1}"#,
            ],
        ]
        .concat(),
    );
    assert!(
        video.contains("`video`: the model's tower takes image only"),
        "{video}"
    );
    let audio = failure(&[&base[..], &["--limit-mm-per-prompt", r#"{"audio": 1}"#]].concat());
    assert!(
        audio.contains("`audio`: the modelled multimodal models"),
        "{audio}"
    );
    assert_eq!(
        worker(&["--limit-mm-per-prompt", r#"{"image": 2}"#])["encoder"]["items"],
        3
    );
    let bad = failure(&[&base[..], &["--limit-mm-per-prompt", "image=0"]].concat());
    assert!(
        bad.starts_with("error: --limit-mm-per-prompt: expected a JSON object"),
        "{bad}"
    );
}

/// Qwen2.5-VL's tower takes images and video: by default vLLM's profile encodes one dummy
/// video (it gives the most tokens); with images limited to 0 the tower still serves video, so
/// the video is profiled and the weights keep the tower; with both limited to 0 vLLM builds no
/// tower, as with `--language-model-only`; with videos limited to 0 an image is profiled.
#[test]
fn engine_profiles_qwen2_5_vls_video_unless_limited() {
    let config = root().join("data/models/qwen2.5-vl-7b-instruct/config.json");
    let config = config.to_str().unwrap();
    let base = [
        "plan",
        "--hf-config",
        config,
        "--engine",
        "vllm==0.19.0",
        "--format",
        "json",
    ];
    let worker = |extra: &[&str]| {
        let o = xtask(&[&base[..], extra].concat());
        assert!(o.status.success(), "{extra:?}: {}", stderr(&o));
        let json: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
        json["engine"]["workers"][0].clone()
    };
    let default = worker(&[]);
    assert_eq!(default["encoder"]["modality"], "video");
    let no_images = worker(&["--limit-mm-per-prompt", r#"{"image": 0}"#]);
    assert_eq!(no_images["encoder"], default["encoder"]);
    assert_eq!(no_images["weights"], default["weights"]);
    assert_eq!(
        worker(&["--limit-mm-per-prompt", r#"{"image": 0, "video": 0}"#]),
        worker(&["--language-model-only"])
    );
    let no_videos = worker(&["--limit-mm-per-prompt", r#"{"video": 0}"#]);
    assert_eq!(no_videos["encoder"]["modality"], "image");
    assert_eq!(no_videos["encoder"]["items"], 1);
    // --skip-mm-profiling skips the video's profile when images are at 0 (the tower is still
    // loaded), and is refused when both are (no tower to skip).
    let skipped = worker(&[
        "--limit-mm-per-prompt",
        r#"{"image": 0}"#,
        "--skip-mm-profiling",
    ]);
    assert_eq!(skipped["encoder"], serde_json::Value::Null);
    assert_eq!(skipped["weights"], default["weights"]);
    let o = xtask(
        &[
            &base[..],
            &[
                "--limit-mm-per-prompt",
                r#"{"image": 0, "video": 0}"#,
                "--skip-mm-profiling",
            ],
        ]
        .concat(),
    );
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        stderr(&o).trim(),
        "error: --skip-mm-profiling with limits of 0 for images and video: no vision tower is loaded, so there is no encoder profile to skip; give one of them"
    );
}

/// vLLM refuses a max-model-len above the context the model allows (max_position_embeddings
/// with its rope scaling: DeepSeek-V2-Lite's yarn gives 4,096 x 40 = 163,840), and takes that
/// context when none is given.
#[test]
fn engine_refuses_a_max_model_len_above_the_models_context() {
    let config = root().join("data/models/deepseek-v2-lite/config.json");
    let config = config.to_str().unwrap();
    let default = xtask(&["plan", "--hf-config", config, "--engine", "vllm==0.19.0"]);
    assert!(default.status.success(), "{}", stderr(&default));
    assert!(
        stdout(&default).contains("Maximum concurrency for 163840 tokens per request"),
        "{}",
        stdout(&default)
    );
    let long = [
        "plan",
        "--hf-config",
        config,
        "--engine",
        "vllm==0.19.0",
        "--max-model-len",
        "163841",
    ];
    let o = xtask(&long);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).contains(
            "verdict   does not start: max_model_len 163841 is above the 163840 tokens the model allows"
        ),
        "{}",
        stdout(&o)
    );
}

/// `--layouts`: every TP x PP layout's KV tokens side by side, and the smallest TP and TP x PP
/// (fewest ranks, then fewest stages) that hold `--kv-tokens` under the budget. Llama-3.1-70B
/// does not fit one H100; at 8192 rows TP 2 holds 71,900 tokens, TP 4 580,831.
#[test]
fn layouts_query_names_the_smallest_layout_that_holds_the_kv_tokens() {
    let config = root().join("data/models/llama-3.1-70b/config.json");
    let o = xtask(&[
        "plan",
        "--hf-config",
        config.to_str().unwrap(),
        "--layouts",
        "--rows",
        "8192",
        "--kv-tokens",
        "100000",
        "--format",
        "json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let json: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let kv = |tp: u64, pp: u64| {
        json["layouts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["tp"] == tp && r["pp"] == pp)
            .unwrap()["kv_tokens"]
            .as_u64()
    };
    assert_eq!(kv(1, 1), None);
    assert_eq!(kv(2, 1), Some(71_900));
    assert_eq!(kv(1, 2), Some(77_502));
    assert_eq!(kv(4, 1), Some(580_831));
    assert_eq!(json["layouts"].as_array().unwrap().len(), 12);
    assert_eq!(json["smallest_tp"], 4);
    assert_eq!(
        json["smallest_tp_pp"],
        serde_json::json!({"tp": 4, "pp": 1})
    );
}

#[test]
fn engine_answers_the_budget_questions() {
    let llama = root().join("data/models/llama-3.1-8b/config.json");
    let base = [
        "plan",
        "--hf-config",
        llama.to_str().unwrap(),
        "--engine",
        "vllm==0.19.0",
        "--gpu-memory-utilization",
        "0.95",
        "--max-model-len",
        "8192",
    ];
    let asked = [
        "--largest-max-model-len",
        "--largest-max-num-seqs",
        "--smallest-tp",
        "--target-kv-tokens",
        "300000",
    ];
    // One line each in the table.
    let o = xtask(&[&base[..], &asked[..]].concat());
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    for line in [
        "largest max_model_len that starts: 131072",
        "largest max_num_seqs that starts: 8192",
        "smallest tensor_parallel_size that starts: 1 (",
        "gpu_memory_utilization for 300000 KV tokens: 0.",
    ] {
        assert!(out.lines().any(|l| l.starts_with(line)), "{line}\n{out}");
    }
    // And in the JSON engine object; the utilization found holds the target when used.
    let o = xtask(&[&base[..], &asked[..], &["--format", "json"]].concat());
    assert!(o.status.success(), "{}", stderr(&o));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let e = &j["engine"];
    assert_eq!(e["largest_max_model_len"], 131072);
    assert_eq!(e["largest_max_num_seqs"], 8192);
    assert_eq!(e["smallest_tp"]["tensor_parallel_size"], 1);
    let util = e["gpu_memory_utilization_for_target"]["gpu_memory_utilization"]
        .as_f64()
        .unwrap();
    let mut at = base.to_vec();
    let util = util.to_string();
    at[6] = &util;
    let o = xtask(&[&at[..], &["--format", "json"]].concat());
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(j["engine"]["kv_cache_tokens"].as_u64().unwrap() >= 300_000);
    // Issue 33: a --max-model-len above the model's 131072 does not start, and the largest
    // that does is still answered (at 0.95 the whole 131072 fits).
    let mut long = base.to_vec();
    long[8] = "1000000";
    let o = xtask(&[&long[..], &["--largest-max-model-len"]].concat());
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.lines()
            .any(|l| l == "largest max_model_len that starts: 131072"),
        "{out}"
    );
    assert!(out.contains("verdict   does not start: max_model_len 1000000 is above the 131072 tokens the model allows"), "{out}");
    // Mixtral-8x7B's 87 GiB do not fit one H100: TP 2 is the smallest that starts.
    let mixtral = root().join("data/models/mixtral-8x7b-v0.1/config.json");
    let mut m = base.to_vec();
    m[2] = mixtral.to_str().unwrap();
    let o = xtask(&[&m[..], &["--smallest-tp", "--largest-max-model-len"]].concat());
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains("smallest tensor_parallel_size that starts: 2 (466080 KV tokens; tried 1, 2)"),
        "{out}"
    );
    assert!(
        out.contains("largest max_model_len that starts: none (nothing starts)"),
        "{out}"
    );
    // Each flag is documented, and needs --engine.
    let help = stdout(&xtask(&["plan", "--help"]));
    for flag in [
        "--largest-max-model-len",
        "--largest-max-num-seqs",
        "--smallest-tp",
        "--target-kv-tokens",
    ] {
        assert!(help.contains(flag), "{flag} in --help");
    }
    let o = xtask(&["plan", "--smallest-tp"]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        stderr(&o),
        "error: --smallest-tp is an engine's flag (give --engine vllm with it); without an engine --layouts names the smallest layout that holds --kv-tokens\n"
    );
}

/// Issue 34: with standard output closed (`>&-`) nothing can be written, so the command fails
/// in one line instead of exiting 0 having printed nothing; a write-only /dev/null still works.
#[test]
fn a_closed_standard_output_is_refused_and_dev_null_is_not() {
    let bin = env!("CARGO_BIN_EXE_xtask");
    let o = Command::new("sh")
        .args(["-c", "exec \"$0\" plan --rows 1 >&-", bin])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_eq!(
        stderr(&o),
        "error: standard output is closed (`>&-`), so nothing would be written: redirect it to a file, or write-only to /dev/null (`>/dev/null`)\n"
    );
    let o = Command::new("sh")
        .args(["-c", "exec \"$0\" plan --rows 1 >/dev/null", bin])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

/// Issue 34: a plan failing after the header (an overflow at the largest row count) ends its
/// JSON document with the error instead of leaving half of it; JSON lines end with an error
/// record.
#[test]
fn an_error_mid_sweep_leaves_a_complete_json_document() {
    let families = root().join("tests/bad/families-workspaces-sum-overflow.toml");
    let families = families.to_str().unwrap();
    let message = "tests/bad/families-workspaces-sum-overflow.toml: the sum of the workspaces outside the arena at n = 4096 overflows 64-bit bytes";
    let o = xtask(&[
        "plan",
        "--families",
        families,
        "--rows",
        "1,4096",
        "--format",
        "json",
    ]);
    assert_eq!(o.status.code(), Some(1));
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).expect("a whole JSON document");
    assert!(doc["error"].as_str().unwrap().ends_with(message), "{doc}");
    assert!(doc["plans"].is_array());
    assert!(stderr(&o).trim_end().ends_with(message));
    let o = xtask(&[
        "plan",
        "--families",
        families,
        "--rows",
        "1,4096",
        "--format",
        "jsonl",
    ]);
    assert_eq!(o.status.code(), Some(1));
    let text = stdout(&o);
    let records: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("each line is JSON"))
        .collect();
    assert_eq!(records.first().unwrap()["record"], "header");
    let last = records.last().unwrap();
    assert_eq!(last["record"], "error");
    assert!(last["message"].as_str().unwrap().ends_with(message));
}

/// Issue 34: a FIFO nobody writes to is opened without blocking and read as empty (it used
/// to wait for a writer forever); `/dev/zero` is refused at the circuit file's limit.
#[test]
fn a_fifo_without_a_writer_and_an_endless_device_do_not_hang() {
    let dir = std::env::temp_dir().join(format!("xtask-fifo-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let fifo = dir.join("circuit.toml");
    let _ = std::fs::remove_file(&fifo);
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    let err = failure(&["plan", "--circuit", fifo.to_str().unwrap(), "--rows", "1"]);
    assert_eq!(
        err,
        format!(
            "error: {}: line 1, column 1: missing field `schema`",
            fifo.display()
        )
    );
    let err = failure(&["plan", "--circuit", "/dev/zero", "--rows", "1"]);
    assert_eq!(
        err,
        "error: cannot read /dev/zero: not a regular file, and it did not end within the limit of 8 MiB for a circuit file (docs/testing.md); give a regular file"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `--engine vllm --device D` predicts on D: its CUDA total, its defaults, and the JSON
/// `engine.device` names it with its source; a device without the figures is one line.
#[test]
fn engine_predicts_on_the_device_named() {
    let config = root().join("data/models/llama-3.1-8b/config.json");
    let config = config.to_str().unwrap();
    let base = [
        "plan",
        "--hf-config",
        config,
        "--engine",
        "vllm==0.19.0",
        "--max-model-len",
        "8192",
    ];
    let table = |device: &str| {
        let o = xtask(&[&base[..], &["--device", device]].concat());
        assert!(o.status.success(), "{device}: {}", stderr(&o));
        stdout(&o)
    };
    let h200 = table("h200");
    assert!(
        h200.contains("\ndevice    h200 (NVIDIA H200; compute capability 9.0, 132 SMs)\n"),
        "{h200}"
    );
    assert!(
        h200.contains("run       max_num_batched_tokens 8192 (the engine's default here), max_num_seqs 1024 (the engine's default here), max_model_len 8192"),
        "{h200}"
    );
    assert!(
        h200.contains("memory    total 139.80 GiB (as CUDA reports; a MiB floor: the true figure is up to 1 MiB more), requested 125.82 GiB"),
        "{h200}"
    );
    let a100 = table("a100-80gb");
    assert!(
        a100.contains("run       max_num_batched_tokens 2048 (the engine's default here), max_num_seqs 256 (the engine's default here),"),
        "{a100}"
    );
    assert!(
        a100.contains("memory    total 79.26 GiB (as CUDA reports), requested 71.33 GiB"),
        "{a100}"
    );
    let o = xtask(
        &[
            &base[..],
            &[
                "--device",
                "l40s",
                "--max-num-seqs",
                "64",
                "--format",
                "json",
            ],
        ]
        .concat(),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let j: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let e = &j["engine"];
    assert_eq!(e["device"]["name"], "l40s");
    assert_eq!(e["device"]["product"], "NVIDIA L40S");
    assert_eq!(e["device"]["cuda_total_bytes"], 47_803_596_800u64);
    assert_eq!(e["device"]["cuda_total_precision"], "exact");
    assert!(
        e["device"]["source"]
            .as_str()
            .unwrap()
            .starts_with("deviceQuery on driver 550.127.05")
    );
    assert_eq!(e["device_total"], 47_803_596_800u64);
    assert_eq!(
        (
            e["max_num_batched_tokens"].as_u64(),
            e["max_num_seqs"].as_u64()
        ),
        (Some(2048), Some(64))
    );
    assert_eq!(
        e["defaulted"],
        serde_json::json!(["max_num_batched_tokens"])
    );
    assert_eq!(
        failure(&[&base[..], &["--device", "l40"]].concat()),
        "error: kernel-families/devices.toml: device `l40`: the table names this device without its SM count and memory (no attributable print-out gives it: no print-out of any kind was found (data/devices/README.md, 'Not found'): no product string, SM count, memory, CUDA's total, L2 or compute capability); the planner refuses it rather than guess: give the SM count itself (--sm-count N) and a --budget in bytes for a plain plan, or name a device with figures"
    );
    assert_eq!(
        failure(&[&base[..], &["--device", "h100-pcie"]].concat()),
        "error: device h100-pcie: its total memory as CUDA reports it is not in the device table; the engine prediction is refused rather than guessed"
    );
}

/// `--devices`: the smallest TP that starts on each device, one row each, a refused device
/// with its reason; in JSON an array.
#[test]
fn engine_answers_the_smallest_tp_across_devices() {
    let config = root().join("data/models/llama-3.1-8b/config.json");
    let config = config.to_str().unwrap();
    let base = [
        "plan",
        "--hf-config",
        config,
        "--engine",
        "vllm==0.19.0",
        "--devices",
        "h100,a100-80gb,rtx4090,mi300x,l40",
    ];
    let o = xtask(&base);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let rows: Vec<&str> = out.lines().skip(5).collect();
    assert!(
        rows[0].starts_with("h100-sxm              79.19 GiB     8192   1024            1 "),
        "{out}"
    );
    assert!(
        rows[1].starts_with("a100-80gb             79.26 GiB     2048    256            1 "),
        "{out}"
    );
    assert!(
        rows[2].starts_with("rtx4090               23.64 GiB     2048    256            2 "),
        "{out}"
    );
    assert!(
        rows[3].starts_with("mi300x           refused: device mi300x: vLLM 0.19 on ROCm"),
        "{out}"
    );
    assert!(
        rows[4].starts_with("l40              refused: kernel-families/devices.toml: device `l40`"),
        "{out}"
    );
    let o = xtask(&[&base[..], &["--format", "json"]].concat());
    assert!(o.status.success(), "{}", stderr(&o));
    let j: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let devices = j["engine"]["devices"].as_array().unwrap();
    assert_eq!(devices.len(), 5);
    assert_eq!(devices[0]["device"]["name"], "h100-sxm");
    assert_eq!(devices[0]["smallest_tp"]["tensor_parallel_size"], 1);
    assert_eq!(
        devices[2]["smallest_tp"]["tried"],
        serde_json::json!([1, 2])
    );
    assert!(
        devices[3]["refused"]
            .as_str()
            .unwrap()
            .starts_with("device mi300x: ")
    );
    assert_eq!(j["engine"]["max_model_len"], 131_072);
    for (extra, message) in [
        (
            &["--tp", "2"][..],
            "error: --tensor-parallel-size 2 with --devices: --devices finds the smallest TP that starts on each device itself; drop the flag (or ask one device with --device)",
        ),
        (
            &["--largest-max-model-len"][..],
            "error: --largest-max-model-len with --devices: it is a question of one start-up; ask it with --device NAME (--devices answers the smallest TP per device)",
        ),
        (
            &["--smallest-tp"][..],
            "error: --smallest-tp with --devices: --devices answers it for each device already; drop --smallest-tp",
        ),
        (
            &["--format", "csv"][..],
            "error: --format csv with --devices: the devices' answers are one table; give --format table or json",
        ),
        (
            &["--svg", "devices.svg"][..],
            "error: --svg with --devices: a picture is of one start-up; draw it with --device NAME",
        ),
    ] {
        assert_eq!(failure(&[&base[..], extra].concat()), message, "{extra:?}");
    }
    assert_eq!(
        failure(&[&base[..6], &["h100,h100-nvl-4"]].concat()),
        "error: kernel-families/devices.toml: unknown device `h100-nvl-4` (known: h100-sxm, h100-pcie, h100-nvl, h200, h20, gh200, b200, a100-80gb, a100-40gb, a100-pcie-80gb, a100-pcie-40gb, l40s, l4, a40, rtx4090, rtx3090, rtx6000-ada, rtx5090, mi300x); name one of them (--device NAME) or give the SM count itself (--sm-count N)"
    );
}

/// `--engine vllm==0.17.1` picks the profile standing for that release (0.17.0 and 0.17.1
/// share one), printed in the header and carried in the JSON `engine` object; a patch release
/// (0.10.1.1) maps to its profile; a release no profile stands for (0.16.1) is refused with the
/// list, which starts at 0.10.1.
#[test]
fn engine_release_is_chosen_in_pips_spelling() {
    let config = root().join("data/models/qwen2-7b-instruct/config.json");
    let config = config.to_str().unwrap();
    let run = |spec: &str, rest: &[&str]| {
        xtask(
            &[
                &[
                    "plan",
                    "--hf-config",
                    config,
                    "--engine",
                    spec,
                    "--device",
                    "a100-80gb",
                ][..],
                rest,
            ]
            .concat(),
        )
    };
    let o = run("vllm==0.17.1", &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let header = "engine    vllm 0.17.1 (the profile of releases 0.17.0, 0.17.1)";
    assert!(out.lines().any(|l| l == header), "no {header:?} in\n{out}");
    let o = run("vllm==0.10.1.1", &["--format", "json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let json: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(json["engine"]["version"], "0.10.1.1");
    assert_eq!(
        json["engine"]["releases"],
        serde_json::json!(["0.10.1", "0.10.1.1"])
    );
    let o = run("vllm==0.16.1", &[]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(
        err.contains("--engine vllm==0.16.1: release 0.16.1 is not modelled; the releases modelled are 0.10.1, 0.10.1.1, 0.10.2, ")
            && err.lines().count() == 1,
        "{err}"
    );
}

/// `--engine sglang`: SGLang's printout, side by side with vLLM, and its cross-device table
/// with SGLang's own flags (the numbers are engines/tests/sglang_0_5_23.rs's, derived by hand).
#[test]
fn sglang_prints_its_start_up_side_by_side_and_across_devices() {
    let config = root().join("data/models/llama-3.1-8b/config.json");
    let config = config.to_str().unwrap();
    let base = ["plan", "--hf-config", config, "--device", "h100"];
    let o = xtask(&[&base[..], &["--engine", "sglang==0.5.9"]].concat());
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains("max_total_num_tokens=415159, chunked_prefill_size=8192, max_running_requests=2048, context_len=131072"),
        "{out}"
    );
    let o = xtask(&[&base[..], &["--engine", "vllm==0.19.0,sglang"]].concat());
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains("vllm holds 31648 more KV tokens than sglang"),
        "{out}"
    );
    let devices = [
        "plan",
        "--hf-config",
        config,
        "--engine",
        "sglang",
        "--devices",
        "h100,mi300x",
    ];
    let o = xtask(&devices);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let rows: Vec<&str> = out.lines().skip(5).collect();
    assert!(
        rows[0].starts_with(
            "h100-sxm              79.19 GiB     8192   2048            1       411936"
        ),
        "{out}"
    );
    assert!(
        rows[1].starts_with("mi300x           refused: device mi300x: SGLang on ROCm"),
        "{out}"
    );
    assert_eq!(
        failure(&[&devices[..], &["--tp-size", "2"]].concat()),
        "error: --tp-size 2 with --devices: --devices finds the smallest TP that starts on each device itself; drop the flag (or ask one device with --device)"
    );
    let both = [
        "plan",
        "--hf-config",
        config,
        "--engine",
        "vllm,sglang",
        "--devices",
        "h100",
    ];
    assert_eq!(
        failure(&both),
        "error: --devices with --engine vllm,sglang: ask the cross-device table of one engine at a time"
    );
}

/// Issue 31: `--dp-size N` on an SGLang line runs N replicas of TP x PP GPUs each, every one
/// starting as one alone does (engines/tests/sglang_0_5_23.rs derives the figures): the
/// output says the replicas, the GPUs and the totals over the replicas.
#[test]
fn sglang_data_parallel_replicas_are_said_with_their_totals() {
    let line = "python -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B-Instruct --tp 2 --dp-size 3";
    let o = xtask(&["plan", "--format", "json", "--", line]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let j: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let d = &j["engine"]["sglang"];
    // Each replica: TP 2's 929,952 tokens and 3632 running requests; 2 x 3 = 6 GPUs, 3 x
    // 929,952 = 2,789,856 tokens and 3 x 3632 = 10,896 requests over the replicas.
    assert_eq!(j["engine"]["kv_cache_tokens"], 929_952);
    assert_eq!(
        (&d["dp_size"], &d["gpus"]),
        (&serde_json::json!(3), &serde_json::json!(6))
    );
    assert_eq!(d["max_total_num_tokens_over_replicas"], 2_789_856);
    assert_eq!(d["max_running_requests_over_replicas"], 10_896);
    let o = xtask(&["plan", "--", line]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(
        text.lines().any(|l| l
            == "replicas  --dp-size 3: 6 GPUs, tp 2 x pp 1 each; every replica starts as the one below (SGLang prints each replica's figures)"),
        "{text}"
    );
    assert!(
        text.lines().any(|l| l
            == "over the 3 replicas: max_total_num_tokens 2789856, max_running_requests 10896"),
        "{text}"
    );
}

/// SGLang's `--ep 2` on a pasted launcher line: expert-parallel groups of 2 in TP 2, each rank
/// 64 of Qwen3-30B-A3B's 128 experts whole, the start-up TP 2's (engines/tests/
/// sglang_parallel.rs derives it: 780,545 tokens); with two engines it is refused in one line.
#[test]
fn sglang_expert_parallel_launcher_line() {
    let line = "python -m sglang.launch_server --model-path Qwen/Qwen3-30B-A3B --tp 2 --ep 2";
    let o = xtask(&["plan", "--format", "json", "--", line]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let j: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let d = &j["engine"]["sglang"];
    assert_eq!(
        (d["ep_size"].as_u64(), d["max_total_num_tokens"].as_u64()),
        (Some(2), Some(780_545))
    );
    let o = xtask(&["plan", "--", line]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(
        text.lines().any(|l| l
            == "experts   --ep-size 2: each rank holds 1/2 of the routed experts, each split over tp / 2 ranks; shared experts split over tp"),
        "{text}"
    );
    let config = root().join("data/models/qwen3-30b-a3b/config.json");
    let o = xtask(&[
        "plan",
        "--hf-config",
        config.to_str().unwrap(),
        "--engine",
        "vllm,sglang",
        "--ep-size",
        "2",
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        stderr(&o).trim(),
        "error: --ep-size 2 with two engines: the columns compare one layout, and vLLM's expert parallelism (--enable-expert-parallel) places the experts otherwise; compare without it"
    );
}

/// Issue 31 item 3: SGLang's start-up in CSV (a line per worker) and JSON lines (`run`,
/// `worker`, `summary`), vLLM's shapes, with vLLM's column names where the quantity is the
/// same; read from a pasted launcher line.
#[test]
fn sglang_prints_its_start_up_as_csv_and_json_lines() {
    let line = "python -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B-Instruct --tp 2 --port 30000";
    let o = xtask(&["plan", "--format", "csv", "--", line]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = stdout(&o);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[0],
        "engine,device,tp_size,pp_size,dp_size,ep_size,mem_fraction_static,context_length,chunked_prefill_size,max_running_requests,max_total_tokens,page_size,cuda_graph_max_bs,kv_cache_dtype,dtype,rank,tp_rank,pp_stage,weights,kv_cache,kv_blocks,kv_block_bytes,k_size,v_size,req_to_token,left_for_activations_and_graphs,kv_cache_tokens,max_concurrency,starts,reason,max_total_num_tokens,max_running_requests,context_len,chunked_prefill_size,largest_context_length,smallest_tp,mem_fraction_static_for_target"
    );
    assert_eq!(lines.len(), 3);
    let row: Vec<&str> = lines[2].split(',').collect();
    let col = |name: &str| {
        let at = lines[0].split(',').position(|c| c == name).unwrap();
        row[at]
    };
    assert_eq!(
        (col("engine"), col("tp_size"), col("rank"), col("tp_rank")),
        ("sglang==0.5.23", "2", "1", "1")
    );
    assert_eq!(
        (
            col("kv_cache_tokens"),
            col("max_total_num_tokens"),
            col("starts")
        ),
        ("929952", "929952", "true")
    );
    // 929,952 tokens and one padding page, 32 layers x 4 KV heads a rank x 128 x 2 B.
    assert_eq!(col("k_size"), (929_953u64 * 32 * 4 * 128 * 2).to_string());
    let o = xtask(&["plan", "--format", "jsonl", "--", line]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let records: Vec<serde_json::Value> = stdout(&o)
        .lines()
        .map(|l| serde_json::from_str(l).expect("each line is JSON"))
        .collect();
    let kinds: Vec<&str> = records
        .iter()
        .map(|r| r["record"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["run", "worker", "worker", "summary"]);
    assert_eq!(records[0]["inputs"]["tp_size"]["source"], "--tp-size");
    assert_eq!(records[0]["serve_line"]["ignored"][0], "--port 30000");
    assert_eq!(records[2]["kv_blocks"], 929_952);
    assert_eq!(records[3]["kv_cache_tokens"], 929_952);
    assert_eq!(records[3]["verdict"]["starts"], true);
}

/// Issue 31: a user's ordinary SGLang launcher line. Its serving, logging, parser,
/// scheduling-order and run-time flags change no byte (each `ignored` in
/// engines/sglang-0.5.23/serve_flags.toml, cited where 0.5.23 reads it), and
/// `--disable-radix-cache` changes none for a model whose every layer keeps a full cache: the
/// prediction is the bare line's, byte for byte, and the line lists what it ignored.
#[test]
fn an_ordinary_sglang_line_predicts_what_its_bare_line_predicts() {
    let bare =
        "python -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B-Instruct --tp 2";
    let flags = [
        "--host 0.0.0.0",
        "--port 30000",
        "--trust-remote-code",
        "--log-level warning",
        "--enable-metrics",
        "--served-model-name llama",
        "--api-key secret",
        "--chat-template chatml",
        "--tool-call-parser llama3",
        "--reasoning-parser deepseek-r1",
        "--schedule-policy lpm",
        "--random-seed 7",
        "--watchdog-timeout 600",
        "--grammar-backend xgrammar",
        "--stream-interval 2",
        "--enable-mixed-chunk",
        "--num-continuous-decode-steps 2",
        "--enable-tf32-matmul",
        "--numa-node 0 1",
    ];
    let long = format!("{bare} --disable-radix-cache {}", flags.join(" "));
    let json = |line: &str| {
        let o = xtask(&["plan", "--format", "json", "--", line]);
        assert_eq!(o.status.code(), Some(0), "{line}: {}", stderr(&o));
        let mut j: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
        let serve = j.as_object_mut().unwrap().remove("serve_line").unwrap();
        (j, serve)
    };
    let (bare_json, _) = json(bare);
    let (long_json, serve) = json(&long);
    assert_eq!(long_json, bare_json);
    assert_eq!(serve["ignored"], serde_json::json!(flags));
    assert_eq!(
        serve["flags"],
        serde_json::json!(["--tp-size", "2", "--disable-radix-cache"])
    );
}

/// Issue 31: `--quantization` on an SGLang line names SGLang's method: the checkpoint's own
/// (compressed-tensors here) changes no byte of the prediction; FP8 applied while loading a
/// bf16 checkpoint is refused in one line (SGLang keeps per-channel scales, the importer's
/// online FP8 per-tensor ones).
#[test]
fn sglang_quantization_naming_the_checkpoints_own_changes_nothing() {
    let model = root().join("data/checkpoints/llama-3.1-8b-instruct-fp8-dynamic");
    let bare = format!(
        "python -m sglang.launch_server --model-path {}",
        model.display()
    );
    let json = |line: &str| {
        let o = xtask(&["plan", "--format", "json", "--", line]);
        assert_eq!(o.status.code(), Some(0), "{line}: {}", stderr(&o));
        let mut j: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
        j.as_object_mut().unwrap().remove("serve_line");
        j
    };
    let named = json(&format!("{bare} --quantization compressed-tensors"));
    assert_eq!(named, json(&bare));
    // Weights as SGLang prints them, the caching allocator's segments: the checkpoint's
    // 9,083,953,152 B and the float32 rope cache 67,108,864 B; every FP8 linear weight
    // (qkv_proj 24 MiB, o_proj 16, gate_up_proj 112, down_proj 56) and the BF16 embeddings
    // and lm_head (1002 MiB each) are 2 MiB multiples of 10 MiB or more, a segment each; the
    // small tensors, a layer's BF16 per-channel scales (qkv 6,144 + o 4,096 + gate_up 28,672
    // + down 4,096 rows x 2 B = 86,016 B) and two norms (16,384 B), 32 x 102,400 + the final
    // norm 8,192 = 3,284,992 B, fill two 2 MiB small segments: 9,151,062,016 - 3,284,992 +
    // 4,194,304 = 9,151,971,328 B. F = 84,485,089,526 B (78.6829 GiB), A = F - 9,151,971,328
    // - the rope cache's growth 131,072 = 70.1593 GiB, rest = 70.1593 - 78.6829 x 0.17 =
    // 56.7832 GiB = 60,970,521,906 B over 131,072 B a token: 465,168 tokens.
    assert_eq!(named["engine"]["workers"][0]["weights"], 9_151_971_328_u64);
    assert_eq!(named["engine"]["kv_cache_tokens"], 465_168);
    let config = root().join("data/models/llama-3.1-8b/config.json");
    assert_eq!(
        failure(&[
            "plan",
            "--engine",
            "sglang",
            "--hf-config",
            config.to_str().unwrap(),
            "--quantization",
            "fp8"
        ]),
        "error: --quantization fp8: SGLang quantizes an unquantized checkpoint's linear weights to FP8 with one float32 scale per output channel (layers/quantization/fp8.py:1151-1163 in 0.5.23), where the importer's online FP8 keeps one per tensor, so it is not modelled for SGLang"
    );
}

/// Issue 31: gpt-oss on an SGLang line gets its hybrid sliding-window pool, which
/// `--swa-full-tokens-ratio` splits (engines/tests/sglang_swa.rs derives the figures); the
/// flag on a model without such a pool is refused in one line.
#[test]
fn sglang_gpt_oss_splits_its_pool_and_the_ratio_flag_is_modelled() {
    let line = "python -m sglang.launch_server --model-path openai/gpt-oss-20b --swa-full-tokens-ratio 0.5";
    let o = xtask(&["plan", "--format", "json", "--", line]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let j: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    // 55,203,419,442 B of pool over 24,576 + 0.5 x 24,576 B: 1,497,488 full, 748,744 SWA.
    assert_eq!(j["engine"]["kv_cache_tokens"], 1_497_488);
    assert_eq!(j["engine"]["sglang"]["swa_layer_tokens"], 748_744);
    let line = "python -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B-Instruct --swa-full-tokens-ratio 0.5";
    let o = xtask(&["plan", "--", line]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        stderr(&o).trim_end(),
        "error: --swa-full-tokens-ratio 0.5: sglang 0.5.23 builds LlamaForCausalLM no hybrid sliding-window pool (its windows get a full KV cache), so the ratio changes no byte"
    );
}

/// `cargo xtask pack --out` writes each buffer of the file back with its own id, lifetime and
/// size, in the file's order, and an offset that the packer's validator accepts (the rows are
/// rebuilt from the ids and buffers kept through the solve, the file's text and rows dropped).
#[test]
fn pack_out_writes_every_row_back_with_its_offset() {
    let csv = "id,lower,upper,size\n7,0,3,4\n3,1,2,8\n9,2,5,4\n";
    let input = temp("pack-in.csv", csv);
    let out = input.with_file_name("pack-out.csv");
    let o = xtask(&[
        "pack",
        "--minimize",
        input.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("height:      12\n"));
    // Step 1 holds 7 and 3 (4 + 8 = 12, the bound): 3 at 0, 7 above it at 8; 9 starts at step
    // 2, where 3 has ended, and shares it with 7 only: at 0.
    assert_eq!(
        std::fs::read_to_string(&out).unwrap(),
        "id,lower,upper,size,offset\n7,0,3,4,8\n3,1,2,8,0\n9,2,5,4,0\n"
    );
}
