//! Developer commands for the workspace: `cargo xtask <command>`.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod bench;
mod pack;

#[derive(Parser)]
#[command(name = "xtask", about = "Developer commands for the memory planner")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Pack the buffers of a MiniMalloc CSV file into an arena.
    Pack(pack::PackArgs),
    /// Benchmarks.
    Bench {
        #[command(subcommand)]
        which: BenchCommand,
    },
}

#[derive(Subcommand)]
enum BenchCommand {
    /// The arena packer on the MiniMalloc benchmark and on synthetic large workloads.
    Pack(bench::pack::BenchPackArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Pack(args) => pack::run(&args),
        Command::Bench {
            which: BenchCommand::Pack(args),
        } => bench::pack::run(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}
