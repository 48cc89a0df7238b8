//! `cargo xtask`: the planner's command line and the project's benchmarks. The only crate that
//! reads files, the clock or the terminal; every error reaches the user as one line and exit 1.

mod bench;
mod check_log;
mod engine;
mod example;
mod inputs;
mod out;
mod pack;
mod parallel;
mod plan;
mod render;
mod sglang;
mod sglang_log;

use std::ffi::OsString;
use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Subcommand};

/// The circuit memory planner.
#[derive(Debug, clap::Parser)]
#[command(name = "cargo xtask", bin_name = "cargo xtask", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Plan the memory of a circuit (with no arguments: the embedded Llama-3.1-8B example).
    Plan(Box<inputs::flags::PlanArgs>),
    /// Pack the buffers of a MiniMalloc CSV file into an arena.
    Pack(pack::PackArgs),
    /// Measure the planner's speed.
    Bench(bench::BenchArgs),
    /// Check an engine's start-up log against the prediction for the same settings: every
    /// figure it printed, predicted and printed, with the error.
    CheckLog(check_log::CheckLogArgs),
}

/// An error for the user: its Display is the whole message, one line.
pub type CliError = Box<dyn std::error::Error>;

/// vLLM's single-dash flags of more than one letter (`vllm serve -tp 4`, engine/arg_utils.py),
/// which clap's one-character shorts cannot declare, as the long flags they stand for.
const VLLM_SHORT_FLAGS: &[(&str, &str)] = &[
    ("-tp", "--tensor-parallel-size"),
    ("-pp", "--pipeline-parallel-size"),
    ("-dp", "--data-parallel-size"),
    ("-ep", "--enable-expert-parallel"),
    ("-q", "--quantization"),
];

/// The command line with vLLM's short flags spelled long (also as `-tp=4`), after `plan` only
/// and before a `--` (a serve line after it is read as its engine reads it), so `cargo xtask
/// plan --hf-config F -tp 4` reads as vLLM users type it.
fn with_vllm_short_flags(args: impl IntoIterator<Item = OsString>) -> Vec<OsString> {
    let mut in_plan = false;
    let mut after_dash = false;
    args.into_iter()
        .map(|arg| {
            let Some(text) = arg.to_str() else {
                return arg;
            };
            if !in_plan || after_dash {
                in_plan = in_plan || text == "plan";
                return arg;
            }
            if text == "--" {
                after_dash = true;
                return arg;
            }
            let (flag, value) = match text.split_once('=') {
                Some((flag, value)) => (flag, Some(value)),
                None => (text, None),
            };
            match VLLM_SHORT_FLAGS.iter().find(|(short, _)| *short == flag) {
                Some((_, long)) => match value {
                    Some(value) => OsString::from(format!("{long}={value}")),
                    None => OsString::from(*long),
                },
                None => arg,
            }
        })
        .collect()
}

/// A serve line given after `plan` without the `--` that marks it: clap would refuse its first
/// word as an unexpected argument; this says what to write instead.
fn serve_line_without_dash(args: &[OsString]) -> Option<String> {
    if args.get(1).is_none_or(|a| a != "plan") || args.iter().any(|a| a == "--") {
        return None;
    }
    let words: Vec<&str> = args.iter().filter_map(|a| a.to_str()).collect();
    let at = words.windows(2).position(|w| {
        (w[0].rsplit('/').next() == Some("vllm") && w[1] == "serve")
            || (w[0]
                .rsplit('/')
                .next()
                .is_some_and(|p| p.starts_with("python"))
                && w[1] == "-m")
    })?;
    Some(format!(
        "a serve line goes after `--`: cargo xtask plan {}-- {}",
        words[2..at]
            .iter()
            .map(|w| format!("{w} "))
            .collect::<String>(),
        words[at..].join(" ")
    ))
}

fn main() -> ExitCode {
    let argv = with_vllm_short_flags(std::env::args_os());
    if let Some(hint) = serve_line_without_dash(&argv) {
        eprintln!("error: {}", circuit_ir::one_line(&hint));
        return ExitCode::from(2);
    }
    let matches = Cli::command().get_matches_from(argv.clone());
    let mut cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    if let (Command::Plan(args), Some(("plan", plan))) = (&mut cli.command, matches.subcommand()) {
        args.given = inputs::modes::given(plan);
    }
    let result = out::check_open().and_then(|()| match cli.command {
        Command::Plan(args) => {
            let sources = inputs::model::ModelSources::from_env(&[]);
            inputs::serve_line::apply(*args, &argv, &sources).and_then(|args| plan::run(&args))
        }
        Command::Pack(args) => pack::run(&args),
        Command::Bench(args) => bench::run(&args),
        Command::CheckLog(args) => check_log::run(&args),
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        // The reader closed standard output (`| head`): it has what it wanted.
        Err(e) if e.is::<out::Closed>() => ExitCode::SUCCESS,
        Err(e) => {
            // One line whatever the message quotes (a flag's value may hold a newline).
            eprintln!("error: {}", circuit_ir::one_line(&e.to_string()));
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::{ArgAction, CommandFactory};

    #[test]
    fn vllm_short_flags_after_plan_read_as_their_long_flags() {
        let args = [
            "xtask", "plan", "-tp", "4", "-pp=2", "-q", "fp8", "--out", "-tp.json",
        ];
        let got = super::with_vllm_short_flags(args.map(std::ffi::OsString::from));
        let want = [
            "xtask",
            "plan",
            "--tensor-parallel-size",
            "4",
            "--pipeline-parallel-size=2",
            "--quantization",
            "fp8",
            "--out",
            "-tp.json",
        ];
        assert_eq!(got, want.map(std::ffi::OsString::from));
        // Before `plan` nothing is rewritten (a subcommand without these flags keeps its error).
        let args = ["xtask", "pack", "-tp"];
        let got = super::with_vllm_short_flags(args.map(std::ffi::OsString::from));
        assert_eq!(got, args.map(std::ffi::OsString::from));
        // Nor after `--`: the serve line is read as its engine reads it.
        let args = ["xtask", "plan", "--", "vllm", "serve", "m", "-tp", "2"];
        let got = super::with_vllm_short_flags(args.map(std::ffi::OsString::from));
        assert_eq!(got, args.map(std::ffi::OsString::from));
    }

    #[test]
    fn a_serve_line_without_its_dash_says_where_it_goes() {
        let hint = |args: &[&str]| {
            super::serve_line_without_dash(
                &args
                    .iter()
                    .map(std::ffi::OsString::from)
                    .collect::<Vec<_>>(),
            )
        };
        assert_eq!(
            hint(&["xtask", "plan", "--format", "json", "vllm", "serve", "m", "--port", "1"]),
            Some("a serve line goes after `--`: cargo xtask plan --format json -- vllm serve m --port 1".into())
        );
        assert_eq!(hint(&["xtask", "plan", "--", "vllm", "serve", "m"]), None);
        assert_eq!(hint(&["xtask", "plan", "--device", "h100"]), None);
    }

    /// The flags come from clap itself, so a new flag is checked without being typed twice:
    /// `plan --help` names each, and each that takes a value shows an example of it.
    #[test]
    fn plan_help_names_every_flag_and_shows_an_example_of_each_value() {
        let mut cli = super::Cli::command();
        let plan = cli.find_subcommand_mut("plan").expect("a plan subcommand");
        let help = plan.render_long_help().to_string();
        let mut with_values = 0;
        for arg in plan.get_arguments() {
            let Some(long) = arg.get_long() else { continue };
            assert!(help.contains(&format!("--{long}")), "--help omits --{long}");
            let takes_value = !matches!(
                arg.get_action(),
                ArgAction::SetTrue | ArgAction::Help | ArgAction::HelpLong | ArgAction::Version
            );
            if takes_value {
                with_values += 1;
                let text = arg
                    .get_long_help()
                    .or(arg.get_help())
                    .map(|h| h.to_string());
                let text = text.unwrap_or_default();
                assert!(
                    text.contains("Example"),
                    "--{long} shows no example: {text}"
                );
            }
        }
        assert!(with_values >= 16, "{with_values} flags with values");
    }
}
