//! `cargo xtask plan --engine sglang` (SGLang's start-up) and `--engine vllm,sglang` (both
//! engines side by side on one model, device and layout): imports and predicts through
//! `engine.rs`, with SGLang's flags (`inputs/sglang.rs`), and hands the start-ups to
//! `render/sglang.rs`.
//!
//! Invariants: the model of the engine is in engine-profile (`src/sglang/`) and the engine
//! folders, never here.

use crate::CliError;
use crate::engine::Predicted as Prepared;
use crate::inputs::flags::{OutputFormat, PlanArgs};
use crate::inputs::sglang::{self as flags, engines_named, is_sglang};
use crate::out::outln;
use crate::render::engine::{Budget, add_budget};
use crate::render::sglang::{detail, json, print_budget, print_side_by_side, print_table};

/// Runs `--engine` when it names SGLang or more than one engine; None: vLLM alone (the
/// caller's path).
pub fn run_plan(
    args: &PlanArgs,
    spec: &str,
    options: circuit_hf::ImportOptions,
) -> Option<Result<(), CliError>> {
    let named = engines_named(spec);
    if named.len() == 1 && !is_sglang(named[0]) {
        return None;
    }
    Some(run(args, &named, options))
}

fn run(
    args: &PlanArgs,
    named: &[&str],
    options: circuit_hf::ImportOptions,
) -> Result<(), CliError> {
    if let Some(names) = &args.engine.devices {
        let [one] = named else {
            return Err(format!(
                "--devices with --engine {}: ask the cross-device table of one engine at a time",
                named.join(",")
            )
            .into());
        };
        return devices(args, one, names, options);
    }
    if let [one] = named {
        let prepared = prepare_sglang(args, one, options)?;
        let budget = crate::engine::budget(
            &prepared.profile,
            &args.engine,
            &prepared.circuits,
            (&prepared.files, &prepared.options),
            &prepared.run,
        )
        .map_err(|e| crate::engine::with_flags(e, &args.engine, args))?;
        return print_one(args, &prepared, &budget);
    }
    if named.len() != 2 || named.iter().filter(|e| is_sglang(e)).count() != 1 {
        return Err(format!(
            "--engine {}: compare two engines, one of them SGLang (--engine vllm,sglang)",
            named.join(",")
        )
        .into());
    }
    let mut columns = Vec::new();
    for name in named {
        let prepared = if is_sglang(name) {
            prepare_sglang(args, name, options)?
        } else {
            let layout = flags::layout(args);
            crate::engine::prepare(args, &args.engine, name, layout, options, Ok)?
        };
        columns.push(prepared.startup);
    }
    print_side_by_side(args, &columns)
}

/// `--devices` for SGLang: the smallest `--tp-size` that starts on each device, with
/// SGLang's flags as given.
fn devices(
    args: &PlanArgs,
    name: &str,
    names: &[String],
    options: circuit_hf::ImportOptions,
) -> Result<(), CliError> {
    let (profile, files, options, stages) =
        crate::engine::load(args, name, flags::layout(args), options)?;
    let asked = crate::engine::Devices {
        names,
        tp_flag: "--tp-size",
    };
    crate::engine::run_devices(
        args,
        &args.engine,
        &profile,
        (&files, &options),
        &asked,
        (stages.circuits, stages.model),
        &|run| flags::apply(args, run),
    )
}

pub(crate) fn prepare_sglang(
    args: &PlanArgs,
    name: &str,
    mut options: circuit_hf::ImportOptions,
) -> Result<Prepared, CliError> {
    let layout = flags::layout(args);
    options.experts = flags::experts(args);
    crate::engine::prepare(args, &args.engine, name, layout, options, |run| {
        flags::apply(args, run)
    })
}

fn print_one(args: &PlanArgs, p: &Prepared, budget: &Budget) -> Result<(), CliError> {
    let s = &p.startup;
    let d = detail(s)?;
    match args.format {
        OutputFormat::Table => {
            if let Some(serve) = &args.serve {
                crate::render::serve_line::print(serve)?;
            }
            print_table(&p.files.origin, &p.quantization, s, d)?;
            print_budget(budget)?;
        }
        OutputFormat::Json => {
            let mut j = json(s, d);
            add_budget(&mut j["engine"], budget);
            if let Some(serve) = &args.serve {
                j["serve_line"] = crate::render::serve_line::json(serve);
            }
            outln!("{}", serde_json::to_string_pretty(&j)?)
        }
        OutputFormat::Jsonl | OutputFormat::Csv => {
            let settings = crate::render::sglang::inputs(args, d, s);
            crate::render::sglang::print_rows(
                args.format,
                &p.files.origin,
                s,
                d,
                budget,
                &settings,
                args.serve.as_ref(),
            )?;
        }
    }
    Ok(())
}
