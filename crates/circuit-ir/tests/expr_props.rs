//! Random expressions against an independent i128 reference, and canonical text round trips.

use circuit_ir::expr::{BinOp, Func, Tree};
use circuit_ir::{Binding, Expr, ExprError};
use proptest::prelude::*;

fn leaf() -> impl Strategy<Value = Tree> {
    prop_oneof![
        prop_oneof![
            0u64..16,
            Just(u64::MAX),
            Just(1 << 32),
            Just(1 << 63),
            any::<u64>()
        ]
        .prop_map(Tree::Lit),
        prop_oneof![Just("a"), Just("b"), Just("c")].prop_map(|n| Tree::Name(n.into())),
    ]
}

fn tree() -> impl Strategy<Value = Tree> {
    leaf().prop_recursive(5, 40, 4, |inner| {
        prop_oneof![
            (
                prop_oneof![
                    Just(BinOp::Add),
                    Just(BinOp::Sub),
                    Just(BinOp::Mul),
                    Just(BinOp::Div),
                    Just(BinOp::Rem)
                ],
                inner.clone(),
                inner.clone()
            )
                .prop_map(|(op, l, r)| Tree::binary(op, l, r)),
            (
                prop_oneof![Just(Func::CeilDiv), Just(Func::RoundUp), Just(Func::Lcm)],
                inner.clone(),
                inner.clone()
            )
                .prop_map(|(func, a, b)| Tree::Call {
                    func,
                    args: vec![a, b]
                }),
            inner.clone().prop_map(|a| Tree::Call {
                func: Func::NextPow2,
                args: vec![a]
            }),
            (
                prop_oneof![Just(Func::Min), Just(Func::Max)],
                prop::collection::vec(inner, 1..4)
            )
                .prop_map(|(func, args)| Tree::Call { func, args }),
        ]
    })
}

/// Text for a tree with every binary node parenthesised and irregular spacing: a different
/// spelling from the canonical one that must parse to the same tree.
fn loose_text(t: &Tree) -> String {
    match t {
        Tree::Lit(v) => v.to_string(),
        Tree::Name(n) => n.to_string(),
        // Every step of a chain in its own parentheses: `((a + b) + c)` is the chain `a + b + c`.
        Tree::Chain { first, rest } => rest.iter().fold(loose_text(first), |acc, (op, rhs)| {
            let sym = match op {
                BinOp::Add => "+",
                BinOp::Sub => "-",
                BinOp::Mul => "*",
                BinOp::Div => "/",
                BinOp::Rem => "%",
            };
            format!("( {acc}{sym}  {})", loose_text(rhs))
        }),
        Tree::Call { func, args } => {
            let args: Vec<String> = args.iter().map(loose_text).collect();
            format!("{} (\t{} )", func.name(), args.join(" ,"))
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fault {
    Overflow,
    Negative,
    DivZero,
    ModZero,
}

/// The reference: i128 arithmetic, range-checked after every step. Records the fault of every
/// step that fails with valid operands (any of them may be the one reported first).
fn reference(t: &Tree, env: &[(&str, u64)], faults: &mut Vec<Fault>) -> Option<i128> {
    let step = |r: Result<i128, Fault>, faults: &mut Vec<Fault>| match r {
        Ok(v) if v < 0 => {
            faults.push(Fault::Negative);
            None
        }
        Ok(v) if v > i128::from(u64::MAX) => {
            faults.push(Fault::Overflow);
            None
        }
        Ok(v) => Some(v),
        Err(f) => {
            faults.push(f);
            None
        }
    };
    match t {
        Tree::Lit(v) => Some(i128::from(*v)),
        Tree::Name(n) => env
            .iter()
            .find(|(k, _)| k == &&**n)
            .map(|&(_, v)| i128::from(v)),
        Tree::Chain { first, rest } => {
            // Every operand is evaluated (its faults recorded) even after an earlier failure.
            let mut acc = reference(first, env, faults);
            for (op, rhs) in rest {
                let r = reference(rhs, env, faults);
                acc = match (acc, r) {
                    (Some(a), Some(b)) => {
                        let v = match op {
                            BinOp::Add => Ok(a + b),
                            BinOp::Sub => Ok(a - b),
                            // Operands are at most 2^64 - 1, so a product beyond i128 is
                            // beyond u64 too.
                            BinOp::Mul => Ok(a.checked_mul(b).unwrap_or(i128::MAX)),
                            BinOp::Div if b == 0 => Err(Fault::DivZero),
                            BinOp::Div => Ok(a / b),
                            BinOp::Rem if b == 0 => Err(Fault::ModZero),
                            BinOp::Rem => Ok(a % b),
                        };
                        step(v, faults)
                    }
                    _ => None,
                };
            }
            acc
        }
        Tree::Call { func, args } => {
            let vals: Vec<Option<i128>> = args.iter().map(|a| reference(a, env, faults)).collect();
            let vals: Vec<i128> = vals.into_iter().collect::<Option<_>>()?;
            let v = match func {
                Func::CeilDiv if vals[1] == 0 => Err(Fault::DivZero),
                Func::CeilDiv => Ok((vals[0] + vals[1] - 1) / vals[1]),
                Func::RoundUp if vals[1] == 0 => Err(Fault::DivZero),
                Func::RoundUp => Ok((vals[0] + vals[1] - 1) / vals[1] * vals[1]),
                Func::Min => Ok(*vals.iter().min().unwrap()),
                Func::Max => Ok(*vals.iter().max().unwrap()),
                // Python's math.lcm: 0 when either is 0, else a / gcd(a, b) x b, in u128 (at
                // most (2^64 - 1)^2, past i128), saturated so the range check sees overflow.
                Func::Lcm if vals[0] == 0 || vals[1] == 0 => Ok(0),
                Func::Lcm => {
                    let (a, b) = (vals[0] as u128, vals[1] as u128);
                    let (mut x, mut y) = (a, b);
                    while y != 0 {
                        (x, y) = (y, x % y);
                    }
                    Ok(i128::try_from(a / x * b).unwrap_or(i128::MAX))
                }
                // The smallest power of two >= the value (1 for 0), by doubling in i128.
                Func::NextPow2 => {
                    let mut p = 1i128;
                    while p < vals[0] {
                        p *= 2;
                    }
                    Ok(p)
                }
            };
            step(v, faults)
        }
    }
}

fn value() -> impl Strategy<Value = u64> {
    prop_oneof![0u64..20, Just(u64::MAX), Just(1 << 32), any::<u64>()]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn matches_the_i128_reference(t in tree(), a in value(), b in value(), c in value()) {
        let text = loose_text(&t);
        let expr = Expr::parse(&text).unwrap();
        prop_assert_eq!(expr.tree(), &t);
        // `a` and `b` are slots read at evaluation, `c` a value folded at compile time.
        let scope = |name: &str| match name {
            "a" => Some(Binding::Slot(0)),
            "b" => Some(Binding::Slot(1)),
            "c" => Some(Binding::Value(c)),
            _ => None,
        };
        let got = expr.compile(&scope).and_then(|p| p.eval(&[a, b]));
        let mut faults = Vec::new();
        let want = reference(&t, &[("a", a), ("b", b), ("c", c)], &mut faults);
        match (got, want) {
            (Ok(v), Some(w)) => prop_assert_eq!(i128::from(v), w),
            (Err(ExprError::Eval { fault, .. }), None) => {
                let fault = match fault {
                    circuit_ir::expr::Fault::Overflow => Fault::Overflow,
                    circuit_ir::expr::Fault::Negative => Fault::Negative,
                    circuit_ir::expr::Fault::DivisionByZero => Fault::DivZero,
                    circuit_ir::expr::Fault::ModuloByZero => Fault::ModZero,
                    other => panic!("unexpected fault {other:?}"),
                };
                prop_assert!(faults.contains(&fault), "{:?} not among {:?}", fault, faults);
            }
            (got, want) => prop_assert!(false, "`{}`: program {:?}, reference {:?}", text, got, want),
        }
    }

    #[test]
    fn canonical_text_reparses_to_the_same_tree(t in tree()) {
        let expr = Expr::parse(&loose_text(&t)).unwrap();
        let canonical = expr.canonical();
        let again = Expr::parse(&canonical).unwrap();
        prop_assert_eq!(again.tree(), &t);
        prop_assert_eq!(again.canonical(), canonical);
    }

    #[test]
    fn arbitrary_text_never_panics(text in "\\PC{0,40}") {
        let _ = Expr::parse(&text);
    }

    #[test]
    fn expression_like_text_never_panics(text in "[a-c0-9_+*/%(), -]{0,60}") {
        if let Ok(e) = Expr::parse(&text) {
            let _ = e.eval_with(|_| Some(7));
            prop_assert_eq!(Expr::parse(&e.canonical()).unwrap(), e);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    /// `trend_in` is sound: where it claims a direction, values move that way.
    #[test]
    fn trends_are_sound(t in tree(), a1 in 0u64..5000, a2 in 0u64..5000, b in value(), c in value()) {
        let expr = Expr::parse(&loose_text(&t)).unwrap();
        let (lo, hi) = (a1.min(a2), a1.max(a2));
        let at = |a: u64| expr.eval_with(|n| match n { "a" => Some(a), "b" => Some(b), "c" => Some(c), _ => None });
        if let (Ok(v_lo), Ok(v_hi)) = (at(lo), at(hi)) {
            match expr.trend_in("a") {
                circuit_ir::Trend::Constant => prop_assert_eq!(v_lo, v_hi),
                circuit_ir::Trend::Nondecreasing => prop_assert!(v_lo <= v_hi),
                circuit_ir::Trend::Nonincreasing => prop_assert!(v_lo >= v_hi),
                circuit_ir::Trend::Unknown => {}
            }
        }
    }
}
