//! `cargo xtask plan`: loads a circuit (a file, or the embedded example) and reports it.

use std::fs;
use std::path::PathBuf;

use circuit_ir::Circuit;

use crate::CliError;
use crate::example;

/// Arguments of `cargo xtask plan`.
#[derive(Debug, clap::Args)]
pub struct PlanArgs {
    /// Circuit TOML file (default: the embedded Llama-3.1-8B example).
    ///
    /// Example: --circuit examples/llama-3.1-8b/circuit.toml
    #[arg(long, value_name = "FILE")]
    pub circuit: Option<PathBuf>,
}

/// Reads a file the user named, with an error that names it.
pub fn read_file(path: &PathBuf) -> Result<String, CliError> {
    fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()).into())
}

pub fn run(args: &PlanArgs) -> Result<(), CliError> {
    let circuit = match &args.circuit {
        Some(path) => Circuit::from_toml(&read_file(path)?, &path.display().to_string())?,
        None => Circuit::from_toml(example::CIRCUIT, example::CIRCUIT_ORIGIN)?,
    };
    let kv_per_token = circuit.state_bytes(1, 0)?;
    println!("circuit      {}", circuit.name());
    println!("nodes        {}", circuit.nodes().len());
    println!("edges        {}", circuit.edges().len());
    println!("tensors      {}", circuit.tensors().len());
    println!("weights      {} bytes", circuit.weight_bytes());
    println!("kv per token {kv_per_token} bytes");
    Ok(())
}
