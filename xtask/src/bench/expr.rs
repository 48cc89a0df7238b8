//! Expression evaluation speed: a split-KV-style workspace expression, parsed and compiled once
//! against Llama-like dims and an H100's SM count, evaluated at a new `n` every call.

use std::hint::black_box;
use std::time::Duration;

use circuit_ir::{Binding, Expr};

use crate::CliError;
use crate::out::outln;

const TEXT: &str = "max(n * k * 4, ceil_div(2 * sm_count, n) * heads * head_dim * 4)";

pub fn run() -> Result<(), CliError> {
    let expr = Expr::parse(TEXT)?;
    let scope = |name: &str| match name {
        "n" => Some(Binding::Slot(0)),
        "k" => Some(Binding::Slot(1)),
        "sm_count" => Some(Binding::Value(132)),
        "heads" => Some(Binding::Value(32)),
        "head_dim" => Some(Binding::Value(128)),
        _ => None,
    };
    let program = expr.compile(&scope)?;
    // Sanity: the value at n = 1, k = 4096 (max(16 KiB, 264 * 16 KiB)).
    assert_eq!(program.eval(&[1, 4096])?, 4_325_376);
    let mut sink = 0u64;
    let per_call = super::median_per_call(5, Duration::from_millis(400), |i| {
        let n = black_box((i & 8191) + 1);
        sink ^= program.eval(black_box(&[n, 4096])).unwrap_or(0);
    });
    black_box(sink);
    let per_second = 1.0 / per_call.as_secs_f64();
    outln!("expression   {TEXT}");
    outln!("compiled to  dims and sm_count folded; n and k read per call");
    outln!(
        "speed        {:.1} M evaluations/s on one thread ({:.1} ns each; target >= 50 M/s)",
        per_second / 1e6,
        per_call.as_secs_f64() * 1e9
    );
    Ok(())
}
