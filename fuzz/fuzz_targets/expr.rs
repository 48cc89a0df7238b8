//! Expressions: parse any text; whatever parses must print canonically, re-parse to the same
//! tree, evaluate like an independent checked reference (constant-folded or through slots), and
//! move with `n` the way `trend_in` claims.
#![no_main]

use circuit_ir::expr::{BinOp, Func, Tree};
use circuit_ir::{Binding, Expr, Trend};
use libfuzzer_sys::fuzz_target;

/// Values a name other than `n` is bound to, chosen by the name's bytes.
const VALUES: [u64; 8] = [0, 1, 2, 3, 7, 4096, 1 << 32, u64::MAX];
/// Values of `n` the expression is evaluated at, increasing.
const NS: [u64; 7] = [0, 1, 2, 3, 64, 1 << 32, u64::MAX];

fn value_of(name: &str) -> u64 {
    let h = name
        .bytes()
        .fold(0usize, |h, b| h.wrapping_mul(31).wrapping_add(b as usize));
    VALUES[h % VALUES.len()]
}

/// The reference: a plain recursive evaluation with checked arithmetic (the tree is at most
/// 200 levels deep, the parser's limit).
fn reference(t: &Tree, n: u64) -> Option<u64> {
    match t {
        Tree::Lit(v) => Some(*v),
        Tree::Name(name) if &**name == "n" => Some(n),
        Tree::Name(name) => Some(value_of(name)),
        Tree::Chain { first, rest } => {
            // Every operand is valued (a fault anywhere is a fault), then folded left to right.
            let operands: Vec<Option<u64>> = rest.iter().map(|(_, t)| reference(t, n)).collect();
            let mut acc = reference(first, n);
            for ((op, _), b) in rest.iter().zip(operands) {
                let (a, b) = (acc?, b?);
                acc = match op {
                    BinOp::Add => a.checked_add(b),
                    BinOp::Sub => a.checked_sub(b),
                    BinOp::Mul => a.checked_mul(b),
                    BinOp::Div => a.checked_div(b),
                    BinOp::Rem => a.checked_rem(b),
                };
            }
            acc
        }
        Tree::Call { func, args } => {
            let vals: Vec<Option<u64>> = args.iter().map(|a| reference(a, n)).collect();
            let vals: Vec<u64> = vals.into_iter().collect::<Option<_>>()?;
            match func {
                Func::Min => vals.iter().copied().min(),
                Func::Max => vals.iter().copied().max(),
                Func::CeilDiv => {
                    let (a, b) = (vals[0], vals[1]);
                    a.checked_div(b).map(|q| q + u64::from(a % b != 0))
                }
                Func::RoundUp => {
                    let (a, b) = (vals[0], vals[1]);
                    match a.checked_rem(b)? {
                        0 => Some(a),
                        _ => (a / b + 1).checked_mul(b),
                    }
                }
                Func::NextPow2 => vals[0].checked_next_power_of_two(),
            }
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(expr) = Expr::parse(text) else {
        return;
    };
    // Canonical text re-parses to the same tree and is a fixed point.
    let canonical = expr.canonical();
    let again = Expr::parse(&canonical).expect("canonical text parses");
    assert_eq!(
        again, expr,
        "canonical `{canonical}` of `{text}` re-parses differently"
    );
    assert_eq!(again.canonical(), canonical);

    // Slot-compiled (n read at evaluation) against constant-folded and the reference.
    let scope = |name: &str| {
        Some(if name == "n" {
            Binding::Slot(0)
        } else {
            Binding::Value(value_of(name))
        })
    };
    let program = expr.compile(&scope);
    let trend = expr.trend_in("n");
    let mut previous: Option<u64> = None;
    for n in NS {
        let want = reference(expr.tree(), n);
        let folded = expr.eval_with(|name| Some(if name == "n" { n } else { value_of(name) }));
        assert_eq!(folded.as_ref().ok().copied(), want, "`{text}` at n = {n}");
        if let Ok(program) = &program {
            let slotted = program.eval(&[n]);
            assert_eq!(
                slotted.as_ref().ok().copied(),
                want,
                "`{text}` slotted at n = {n}"
            );
        } else {
            // Compilation folds constant parts only: a fault there fails at every n.
            assert_eq!(
                want, None,
                "`{text}` failed to compile but evaluates at n = {n}"
            );
        }
        if let Some(v) = want {
            if let Some(p) = previous {
                match trend {
                    Trend::Constant => assert_eq!(v, p, "`{text}` is not constant in n"),
                    Trend::Nondecreasing => assert!(v >= p, "`{text}` decreases in n"),
                    Trend::Nonincreasing => assert!(v <= p, "`{text}` increases in n"),
                    Trend::Unknown => {}
                }
            }
            previous = Some(v);
        }
        // An unbound name is an error, never 0.
        if !expr.free_names().is_empty() {
            assert!(expr.eval_with(|_| None).is_err());
        }
    }
});
