//! Every flag of `cargo xtask plan` in every mode (issue 29: no flag is dropped). The flags are
//! the ones `plan --help` lists, which clap writes from its own list (`main.rs` checks that
//! the help names every flag clap declares), so a new flag is walked without being typed here,
//! and fails [`every_flag_has_a_sample`] until it has a sample value. In each mode, each flag
//! either changes the output against the same run without it (standard output, or the file it
//! writes), or is refused: exit 1 with one line that names the flag or its value, or clap's
//! usage error (exit 2) naming it.
//!
//! The modes run small inputs so the whole walk stays a few seconds: a two-layer copy of the
//! example circuit, a two-layer Llama config, a few row counts.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("modes");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn write(name: &str, text: &str) -> String {
    let path = dir().join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

fn xtask(args: &[String]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args(args)
        .current_dir(root())
        .output()
        .expect("the xtask binary runs")
}

/// A two-layer Llama, small enough to plan and predict in a blink.
const TINY: &str = r#"{"model_type": "llama", "architectures": ["LlamaForCausalLM"], "vocab_size": 1024, "hidden_size": 256, "intermediate_size": 512, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 4, "max_position_embeddings": 4096, "torch_dtype": "bfloat16"}"#;

/// The inputs the samples read, written once.
struct Files {
    tiny: String,
    tiny_wider: String,
    circuit: String,
    circuit_deeper: String,
    families: String,
    hf_families: String,
    rules: String,
    hf_rules: String,
}

fn files() -> Files {
    let example = |f: &str| std::fs::read_to_string(root().join("examples").join(f)).unwrap();
    let circuit = example("llama-3.1-8b/circuit.toml");
    // A 16 MiB cuBLAS workspace instead of 32, split-K partials capped at half as much, and
    // FlashAttention's softmax statistics 1024 times wider: every plan's workspaces change,
    // the two-layer model's by megabytes.
    let smaller = |text: String| {
        text.replace("32 * 1024 * 1024", "16 * 1024 * 1024")
            .replace("4 * 64 * 128 * sm_count", "4 * 64 * 64 * sm_count")
            .replace("\"4 * n * heads\"", "\"4 * n * heads * 1024\"")
    };
    // Decode kernels by default: every plan's groups change.
    let decode = |text: String| text.replace("mode = \"prefill\"", "mode = \"decode\"");
    Files {
        tiny: write("tiny.json", TINY),
        tiny_wider: write(
            "tiny-wider.json",
            &TINY.replace("\"hidden_size\": 256", "\"hidden_size\": 512"),
        ),
        circuit: write(
            "circuit.toml",
            &circuit.replace("layers = 32", "layers = 2"),
        ),
        circuit_deeper: write(
            "circuit-deeper.toml",
            &circuit.replace("layers = 32", "layers = 3"),
        ),
        families: write(
            "families.toml",
            &smaller(example("llama-3.1-8b/families.toml")),
        ),
        // The standard families and rules, which --hf-config plans with by default.
        hf_families: write(
            "hf-families.toml",
            &smaller(kernel_families::standard::FAMILIES.to_owned()),
        ),
        rules: write("rules.toml", &decode(example("llama-3.1-8b/rules.toml"))),
        hf_rules: write("hf-rules.toml", &decode(fuser::standard::RULES.to_owned())),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// A circuit file (the example's architecture, two layers).
    Circuit,
    /// --hf-config on one rank.
    Hf,
    /// --hf-config at TP 2.
    Parallel,
    /// --engine.
    Engine,
}

const MODES: [Mode; 4] = [Mode::Circuit, Mode::Hf, Mode::Parallel, Mode::Engine];

fn base(mode: Mode, f: &Files) -> Vec<String> {
    let mut args = vec!["plan".to_owned()];
    let rows = ["--rows", "1,64"];
    let more: Vec<&str> = match mode {
        Mode::Circuit => [&["--circuit", f.circuit.as_str()][..], &rows].concat(),
        Mode::Hf => [&["--hf-config", f.tiny.as_str()][..], &rows].concat(),
        Mode::Parallel => [&["--hf-config", f.tiny.as_str(), "--tp", "2"][..], &rows].concat(),
        Mode::Engine => vec!["--hf-config", &f.tiny, "--engine", "vllm==0.19.0"],
    };
    args.extend(more.into_iter().map(str::to_owned));
    args
}

/// The sample of each flag (its long name), in a mode: the flag and its value.
fn sample(long: &str, mode: Mode, f: &Files) -> Option<Vec<String>> {
    let file = |name: &str| dir().join(name).display().to_string();
    let circuit = mode == Mode::Circuit;
    let v: Vec<String> = match long {
        "circuit" => vec!["--circuit".into(), f.circuit_deeper.clone()],
        "hf-config" => vec!["--hf-config".into(), f.tiny_wider.clone()],
        "dtype" => vec!["--dtype".into(), "float16".into()],
        "kv-cache-dtype" => vec!["--kv-cache-dtype".into(), "fp8".into()],
        "language-model-only" => vec!["--language-model-only".into()],
        "limit-mm-per-prompt" => vec!["--limit-mm-per-prompt".into(), r#"{"image": 0}"#.into()],
        "families" => {
            let path = if circuit { &f.families } else { &f.hf_families };
            vec!["--families".into(), path.clone()]
        }
        "rules" => {
            let path = if circuit { &f.rules } else { &f.hf_rules };
            vec!["--rules".into(), path.clone()]
        }
        "device" => vec!["--device".into(), "a100-80gb".into()],
        "sm-count" => vec!["--sm-count".into(), "64".into()],
        "rows" => vec!["--rows".into(), "1,128".into()],
        "set" => vec!["--set".into(), "mode=decode".into()],
        "kv-tokens" => vec!["--kv-tokens".into(), "1000".into()],
        "sequences" => vec!["--sequences".into(), "4".into()],
        "budget" => vec!["--budget".into(), "0.5".into()],
        "max-model-len" => vec!["--max-model-len".into(), "1024".into()],
        "align" => vec!["--align".into(), "512".into()],
        "format" => vec!["--format".into(), "json".into()],
        "per-node" => vec!["--per-node".into()],
        "svg" => vec!["--svg".into(), file(&format!("chart-{mode:?}.svg"))],
        "arena-svg" => vec!["--arena-svg".into(), file(&format!("arena-{mode:?}.svg"))],
        "placeholders" => vec!["--placeholders".into()],
        "tensor-parallel-size" => vec!["--tensor-parallel-size".into(), "4".into()],
        "pipeline-parallel-size" => vec!["--pipeline-parallel-size".into(), "2".into()],
        "data-parallel-size" => vec!["--data-parallel-size".into(), "2".into()],
        "enable-expert-parallel" => vec!["--enable-expert-parallel".into()],
        "layouts" => vec!["--layouts".into()],
        "engine" => vec!["--engine".into(), "vllm==0.34.0".into()],
        "gpu-memory-utilization" => vec!["--gpu-memory-utilization".into(), "0.5".into()],
        "max-num-batched-tokens" => vec!["--max-num-batched-tokens".into(), "4096".into()],
        "max-num-seqs" => vec!["--max-num-seqs".into(), "64".into()],
        "skip-mm-profiling" => vec!["--skip-mm-profiling".into()],
        "enforce-eager" => vec!["--enforce-eager".into()],
        "block-size" => vec!["--block-size".into(), "32".into()],
        "enable-prefix-caching" => vec!["--enable-prefix-caching".into()],
        "no-enable-prefix-caching" => vec!["--no-enable-prefix-caching".into()],
        "quantization" => vec!["--quantization".into(), "fp8".into()],
        "largest-max-model-len" => vec!["--largest-max-model-len".into()],
        "largest-max-num-seqs" => vec!["--largest-max-num-seqs".into()],
        "smallest-tp" => vec!["--smallest-tp".into()],
        "devices" => vec!["--devices".into(), "h100-sxm,a100-80gb".into()],
        "target-kv-tokens" => vec!["--target-kv-tokens".into(), "100000".into()],
        // SGLang's own flags (each refused without --engine sglang; in SGLang's modes the
        // CLI tests of xtask/tests/cli.rs and inputs/sglang.rs check them).
        "tp-size" => vec!["--tp-size".into(), "2".into()],
        "pp-size" => vec!["--pp-size".into(), "2".into()],
        "dp-size" => vec!["--dp-size".into(), "2".into()],
        "ep-size" => vec!["--ep-size".into(), "2".into()],
        "enable-ep-moe" => vec!["--enable-ep-moe".into()],
        "mem-fraction-static" => vec!["--mem-fraction-static".into(), "0.8".into()],
        "context-length" => vec!["--context-length".into(), "1024".into()],
        "chunked-prefill-size" => vec!["--chunked-prefill-size".into(), "4096".into()],
        "max-running-requests" => vec!["--max-running-requests".into(), "64".into()],
        "max-total-tokens" => vec!["--max-total-tokens".into(), "100000".into()],
        "page-size" => vec!["--page-size".into(), "16".into()],
        "cuda-graph-max-bs" => vec!["--cuda-graph-max-bs".into(), "64".into()],
        "disable-cuda-graph" => vec!["--disable-cuda-graph".into()],
        "disable-radix-cache" => vec!["--disable-radix-cache".into()],
        "mamba-full-memory-ratio" => vec!["--mamba-full-memory-ratio".into(), "0.5".into()],
        "max-mamba-cache-size" => vec!["--max-mamba-cache-size".into(), "600".into()],
        "swa-full-tokens-ratio" => vec!["--swa-full-tokens-ratio".into(), "0.5".into()],
        "disable-hybrid-swa-memory" => vec!["--disable-hybrid-swa-memory".into()],
        "help" => vec!["--help".into()],
        _ => return None,
    };
    Some(v)
}

/// The long flags `plan --help` lists (clap writes it from its own list of arguments).
fn plan_flags() -> Vec<String> {
    let help = xtask(&["plan".to_owned(), "--help".to_owned()]);
    assert!(help.status.success());
    let text = String::from_utf8(help.stdout).unwrap();
    let mut flags: Vec<String> = text
        .lines()
        .filter_map(|line| {
            let line = line.trim_start();
            // `--rows <LIST>`, `-h, --help`.
            let line = line.strip_prefix("-h, ").unwrap_or(line);
            let flag = line.strip_prefix("--")?;
            let end = flag
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
                .unwrap_or(flag.len());
            Some(flag[..end].to_owned())
        })
        .collect();
    flags.sort();
    flags.dedup();
    assert!(flags.len() >= 40, "{flags:?}");
    flags
}

#[test]
fn every_flag_has_a_sample() {
    let f = files();
    let missing: Vec<String> = plan_flags()
        .into_iter()
        .filter(|long| sample(long, Mode::Hf, &f).is_none())
        .collect();
    assert!(
        missing.is_empty(),
        "give each flag a sample value in tests/modes.rs `sample`: {missing:?}"
    );
}

/// The run with `sample` in place of the base's own value of that flag (when the base gives
/// it), else added.
fn with(base: &[String], sample: &[String]) -> Vec<String> {
    let mut args = base.to_vec();
    let flag = &sample[0];
    let aliases = |a: &str| a == flag || (flag == "--tensor-parallel-size" && a == "--tp");
    match args.iter().position(|a| aliases(a)) {
        Some(at) if sample.len() == 2 => args[at + 1] = sample[1].clone(),
        _ => args.extend(sample.iter().cloned()),
    }
    args
}

/// What a flag did in a mode.
#[derive(Debug, PartialEq, Eq)]
enum Outcome {
    Changed,
    Refused(String),
    Unchanged,
    Failed(String),
}

fn outcome(base_out: &Output, args: &[String], sample: &[String]) -> Outcome {
    // A file the flag writes is its output.
    let file = sample
        .get(1)
        .filter(|v| v.ends_with(".svg"))
        .map(PathBuf::from);
    if let Some(path) = &file {
        let _ = std::fs::remove_file(path);
    }
    let o = xtask(args);
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    // A refusal names the flag sampled, its value, or the flag of the mode it clashes with.
    let names = |line: &str| {
        sample.iter().any(|s| line.contains(s.as_str()))
            || args
                .iter()
                .filter(|a| a.starts_with("--"))
                .any(|a| line.contains(a.as_str()))
    };
    match o.status.code() {
        Some(0) => {
            let wrote = file.as_ref().is_some_and(|p| p.is_file());
            if wrote || o.stdout != base_out.stdout {
                Outcome::Changed
            } else {
                Outcome::Unchanged
            }
        }
        Some(1) if err.lines().count() == 1 && !err.contains("panicked") && names(&err) => {
            Outcome::Refused(err.trim_end().to_owned())
        }
        Some(2) if err.lines().next().is_some_and(|l| l.starts_with("error:")) && names(&err) => {
            Outcome::Refused(err.lines().next().unwrap_or("").to_owned())
        }
        code => Outcome::Failed(format!("exit {code:?}: {err}")),
    }
}

/// Each flag in each mode changes the output or is refused in one line; and the matrix itself
/// is pinned for the flags whose place is a decision (refused, or made to work), so a change
/// of mind shows as a diff here.
#[test]
fn every_flag_changes_the_output_or_is_refused_in_every_mode() {
    let f = files();
    let flags = plan_flags();
    let mut faults = Vec::new();
    let mut matrix: BTreeMap<(String, String), String> = BTreeMap::new();
    for mode in MODES {
        let base = base(mode, &f);
        let base_out = xtask(&base);
        assert!(
            base_out.status.success(),
            "{mode:?}: {}",
            String::from_utf8_lossy(&base_out.stderr)
        );
        // Two runs at a time: the binary plans in parallel itself.
        let runs: Vec<(String, Vec<String>, Vec<String>)> = flags
            .iter()
            .filter_map(|long| {
                let sample = sample(long, mode, &f)?;
                Some((long.clone(), with(&base, &sample), sample))
            })
            .collect();
        let results: Vec<(String, Outcome)> = std::thread::scope(|s| {
            let handles: Vec<_> = runs
                .chunks(runs.len().div_ceil(2))
                .map(|chunk| {
                    let base_out = &base_out;
                    s.spawn(move || {
                        chunk
                            .iter()
                            .map(|(long, args, sample)| {
                                (long.clone(), outcome(base_out, args, sample))
                            })
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            handles
                .into_iter()
                .flat_map(|h| h.join().unwrap())
                .collect()
        });
        for (long, result) in results {
            let cell = match &result {
                Outcome::Changed => "changes".to_owned(),
                Outcome::Refused(_) => "refused".to_owned(),
                Outcome::Unchanged | Outcome::Failed(_) => {
                    faults.push(format!("--{long} in {mode:?}: {result:?}"));
                    "FAULT".to_owned()
                }
            };
            matrix.insert((long, format!("{mode:?}")), cell);
        }
    }
    assert!(faults.is_empty(), "{}", faults.join("\n"));
    // The decisions, pinned: what the issue asked to make work in each mode, and what is
    // refused there.
    let cell = |long: &str, mode: &str| matrix[&(long.to_owned(), mode.to_owned())].as_str();
    for (long, want) in [
        ("rows", ["changes", "changes", "changes", "refused"]),
        ("svg", ["changes", "changes", "changes", "changes"]),
        ("arena-svg", ["changes", "changes", "changes", "changes"]),
        ("per-node", ["changes", "changes", "changes", "refused"]),
        (
            "max-model-len",
            ["changes", "changes", "changes", "changes"],
        ),
        ("format", ["changes", "changes", "changes", "changes"]),
        ("budget", ["changes", "changes", "changes", "refused"]),
        ("kv-tokens", ["changes", "changes", "changes", "refused"]),
        ("families", ["changes", "changes", "changes", "refused"]),
        (
            "gpu-memory-utilization",
            ["changes", "changes", "changes", "changes"],
        ),
        ("max-num-seqs", ["refused", "refused", "refused", "changes"]),
        (
            "language-model-only",
            ["refused", "refused", "refused", "refused"],
        ),
        (
            "limit-mm-per-prompt",
            ["refused", "refused", "refused", "refused"],
        ),
        (
            "enable-prefix-caching",
            ["refused", "refused", "refused", "changes"],
        ),
    ] {
        let got: Vec<&str> = ["Circuit", "Hf", "Parallel", "Engine"]
            .iter()
            .map(|m| cell(long, m))
            .collect();
        assert_eq!(got, want, "--{long}");
    }
}
