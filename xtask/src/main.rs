//! `cargo xtask`: the planner's command line and the project's benchmarks. The only crate that
//! reads files, the clock or the terminal; every error reaches the user as one line and exit 1.

mod args;
mod bench;
mod example;
mod out;
mod pack;
mod plan;
mod report;
mod svg;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// The circuit memory planner.
#[derive(Debug, Parser)]
#[command(name = "cargo xtask", bin_name = "cargo xtask", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Plan the memory of a circuit (with no arguments: the embedded Llama-3.1-8B example).
    Plan(Box<plan::PlanArgs>),
    /// Pack the buffers of a MiniMalloc CSV file into an arena.
    Pack(pack::PackArgs),
    /// Measure the planner's speed.
    Bench(bench::BenchArgs),
}

/// An error for the user: its Display is the whole message, one line.
pub type CliError = Box<dyn std::error::Error>;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Plan(args) => plan::run(&args),
        Command::Pack(args) => pack::run(&args),
        Command::Bench(args) => bench::run(&args),
    };
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
