//! Size expressions (docs/formats.md, "Expressions"): parsed once into a [`Tree`], printed back
//! as canonical text, and compiled against a [`Scope`] into a flat [`Program`] that is
//! evaluated many times.
//!
//! Invariants:
//! - Every arithmetic step is checked u64 arithmetic: overflow, a negative result and division
//!   or modulo by zero are errors naming the expression and the sub-expression at fault.
//! - A name is resolved when the expression is compiled; a name the scope does not know is an
//!   error, never 0. Names bound to values are folded into constants at compile time.
//! - Evaluating a [`Program`] neither parses nor allocates: it runs a fixed-size stack machine.
//!   Expressions whose evaluation would need a deeper stack than [`MAX_STACK`], or that nest
//!   parentheses and calls deeper than [`MAX_DEPTH`], are refused at parse time, so no input can
//!   exhaust the stack. Operators of one precedence level form one flat [`Tree::Chain`], so a
//!   sum of a million terms is one level deep and every walk over it is a loop.
//! - Parsing, compiling and valuing are linear in the text: a program shares the tree and the
//!   text of its expression (one `Arc` each) and marks each step by the position of its
//!   sub-expression in the tree, rendered only to explain a fault.
//! - Canonical text re-parses to the same tree.

use std::collections::BTreeSet;
use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::error::{one_line, quoted};

/// Deepest nesting of parentheses and function calls the parser accepts; keeps recursion over
/// trees bounded for any input (a flat chain of operators, however long, is one level).
pub const MAX_DEPTH: usize = 200;
/// Deepest evaluation stack a program may need; evaluation uses a fixed array of this size.
pub const MAX_STACK: usize = 32;

/// A binary operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BinOp {
    /// `+`
    Add,
    /// `-` (a negative result is an error)
    Sub,
    /// `*`
    Mul,
    /// `/`, floor division
    Div,
    /// `%`
    Rem,
}

impl BinOp {
    fn symbol(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::Rem => "%",
        }
    }

    fn precedence(self) -> u8 {
        match self {
            BinOp::Add | BinOp::Sub => 1,
            BinOp::Mul | BinOp::Div | BinOp::Rem => 2,
        }
    }
}

/// A built-in function.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Func {
    /// `ceil_div(a, b)`: the smallest q with q * b >= a.
    CeilDiv,
    /// `round_up(a, b)`: the smallest multiple of b that is >= a.
    RoundUp,
    /// `min(a, ...)`: one or more arguments.
    Min,
    /// `max(a, ...)`: one or more arguments.
    Max,
    /// `next_pow2(a)`: the smallest power of two that is >= a (1 for 0).
    NextPow2,
    /// `lcm(a, b)`: the least common multiple (0 when either is 0, as Python's `math.lcm`).
    Lcm,
}

impl Func {
    fn from_name(name: &str) -> Option<Func> {
        Some(match name {
            "ceil_div" => Func::CeilDiv,
            "round_up" => Func::RoundUp,
            "min" => Func::Min,
            "max" => Func::Max,
            "next_pow2" => Func::NextPow2,
            "lcm" => Func::Lcm,
            _ => return None,
        })
    }

    /// The function's name in expression text.
    pub fn name(self) -> &'static str {
        match self {
            Func::CeilDiv => "ceil_div",
            Func::RoundUp => "round_up",
            Func::Min => "min",
            Func::Max => "max",
            Func::NextPow2 => "next_pow2",
            Func::Lcm => "lcm",
        }
    }
}

/// The parsed form of an expression.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Tree {
    /// A decimal literal.
    Lit(u64),
    /// A name, resolved when the expression is compiled.
    Name(Box<str>),
    /// `first op1 t1 op2 t2 ...`: operators of one precedence level, applied left to right.
    ///
    /// The parser keeps chains flat and normal: `rest` is never empty, its operators share one
    /// precedence, and `first` is never itself a chain of that precedence (`(a + b) + c` is the
    /// chain `a + b + c`), so equal expressions have equal trees. An operand in `rest` may be a
    /// chain of the same precedence: `a - (b - c)`.
    Chain {
        /// The leftmost operand.
        first: Box<Tree>,
        /// The operators and their right operands, in order.
        rest: Vec<(BinOp, Tree)>,
    },
    /// `func(args...)`; arity is checked by the parser.
    Call {
        /// The function.
        func: Func,
        /// Its arguments, at least one (exactly two for `ceil_div` and `round_up`).
        args: Vec<Tree>,
    },
}

impl Tree {
    /// `lhs op rhs`, as a chain: appended to `lhs` when it is a chain of the same precedence,
    /// so that the tree stays normal.
    pub fn binary(op: BinOp, lhs: Tree, rhs: Tree) -> Tree {
        match lhs {
            Tree::Chain { first, mut rest }
                if rest.first().map(|(o, _)| o.precedence()) == Some(op.precedence()) =>
            {
                rest.push((op, rhs));
                Tree::Chain { first, rest }
            }
            lhs => Tree::Chain {
                first: Box::new(lhs),
                rest: vec![(op, rhs)],
            },
        }
    }

    fn precedence(&self) -> u8 {
        match self {
            Tree::Chain { rest, .. } => rest.first().map_or(3, |(op, _)| op.precedence()),
            _ => 3,
        }
    }

    /// The direct sub-trees, left to right.
    fn children(&self) -> Vec<&Tree> {
        match self {
            Tree::Lit(_) | Tree::Name(_) => Vec::new(),
            Tree::Chain { first, rest } => std::iter::once(&**first)
                .chain(rest.iter().map(|(_, t)| t))
                .collect(),
            Tree::Call { args, .. } => args.iter().collect(),
        }
    }

    fn collect_names<'a>(&'a self, out: &mut BTreeSet<&'a str>) {
        match self {
            Tree::Lit(_) => {}
            Tree::Name(name) => {
                out.insert(name);
            }
            _ => self
                .children()
                .into_iter()
                .for_each(|c| c.collect_names(out)),
        }
    }

    /// Stack slots a postfix evaluation of this tree needs: the first operand's, and one more
    /// than each later operand's (the values to its left wait on the stack).
    fn stack_need(&self) -> usize {
        match self {
            Tree::Lit(_) | Tree::Name(_) => 1,
            _ => {
                let children = self.children();
                let mut need = children[0].stack_need();
                for c in &children[1..] {
                    need = need.max(c.stack_need() + 1);
                }
                need
            }
        }
    }

    /// The sub-tree at pre-order position `index` (this tree is 0), found with an explicit
    /// stack; `None` past the end.
    fn nth(&self, index: usize) -> Option<&Tree> {
        let mut stack = vec![self];
        let mut seen = 0;
        while let Some(t) = stack.pop() {
            if seen == index {
                return Some(t);
            }
            seen += 1;
            stack.extend(t.children().into_iter().rev());
        }
        None
    }
}

/// Writes a chain's first operand and its first `upto` steps: the whole chain, or the
/// sub-expression a fault at one of its steps is in.
fn write_chain(
    f: &mut fmt::Formatter<'_>,
    first: &Tree,
    rest: &[(BinOp, Tree)],
    upto: usize,
) -> fmt::Result {
    let Some(p) = rest.first().map(|(op, _)| op.precedence()) else {
        return write!(f, "{first}");
    };
    if first.precedence() < p {
        write!(f, "({first})")?;
    } else {
        write!(f, "{first}")?;
    }
    for (op, rhs) in &rest[..upto.min(rest.len())] {
        write!(f, " {} ", op.symbol())?;
        // The operators associate to the left: an operand of equal precedence on the right
        // always gets parentheses.
        if rhs.precedence() <= p {
            write!(f, "({rhs})")?;
        } else {
            write!(f, "{rhs}")?;
        }
    }
    Ok(())
}

impl fmt::Display for Tree {
    /// Canonical text: decimal literals, one space around binary operators, parentheses only
    /// where the tree needs them (a right operand of equal precedence always gets them, since
    /// the operators associate to the left).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Tree::Lit(v) => write!(f, "{v}"),
            Tree::Name(name) => f.write_str(name),
            Tree::Chain { first, rest } => write_chain(f, first, rest, rest.len()),
            Tree::Call { func, args } => {
                write!(f, "{}(", func.name())?;
                for (i, a) in args.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{a}")?;
                }
                f.write_str(")")
            }
        }
    }
}

/// How an expression's value moves when one name grows and every other name stays fixed,
/// wherever it evaluates without a fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Trend {
    /// Does not read the name.
    Constant,
    /// Never decreases as the name grows.
    Nondecreasing,
    /// Never increases as the name grows.
    Nonincreasing,
    /// Not known to be either (e.g. `%`, or a sum of opposite trends).
    Unknown,
}

impl Trend {
    fn flip(self) -> Trend {
        match self {
            Trend::Nondecreasing => Trend::Nonincreasing,
            Trend::Nonincreasing => Trend::Nondecreasing,
            t => t,
        }
    }

    /// The trend of a function nondecreasing in both arguments (sum, product of
    /// non-negative values, min, max).
    fn both_up(self, other: Trend) -> Trend {
        match (self, other) {
            (Trend::Constant, t) | (t, Trend::Constant) => t,
            (a, b) if a == b => a,
            _ => Trend::Unknown,
        }
    }

    fn of(tree: &Tree, name: &str) -> Trend {
        match tree {
            Tree::Lit(_) => Trend::Constant,
            Tree::Name(n) if &**n == name => Trend::Nondecreasing,
            Tree::Name(_) => Trend::Constant,
            Tree::Chain { first, rest } => {
                let mut acc = Trend::of(first, name);
                for (op, rhs) in rest {
                    let r = Trend::of(rhs, name);
                    acc = match op {
                        BinOp::Add | BinOp::Mul => acc.both_up(r),
                        // Falling in the right operand: `a - b`, `a / b`.
                        BinOp::Sub | BinOp::Div => acc.both_up(r.flip()),
                        BinOp::Rem => {
                            if acc == Trend::Constant && r == Trend::Constant {
                                Trend::Constant
                            } else {
                                Trend::Unknown
                            }
                        }
                    };
                }
                acc
            }
            Tree::Call { func, args } => {
                let trends = args.iter().map(|a| Trend::of(a, name));
                match func {
                    // next_pow2 never falls as its argument grows.
                    Func::Min | Func::Max | Func::NextPow2 => {
                        trends.fold(Trend::Constant, Trend::both_up)
                    }
                    Func::CeilDiv => {
                        let (a, b) = (Trend::of(&args[0], name), Trend::of(&args[1], name));
                        a.both_up(b.flip())
                    }
                    // round_up(a, b) grows with a but jumps both ways as b moves.
                    Func::RoundUp => match Trend::of(&args[1], name) {
                        Trend::Constant => Trend::of(&args[0], name),
                        _ => Trend::Unknown,
                    },
                    // lcm(a, b) jumps both ways as either argument moves (lcm(3, 4) = 12,
                    // lcm(4, 4) = 4).
                    Func::Lcm => {
                        let mut each = trends;
                        if each.all(|t| t == Trend::Constant) {
                            Trend::Constant
                        } else {
                            Trend::Unknown
                        }
                    }
                }
            }
        }
    }
}

/// What went wrong while evaluating.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Fault {
    /// A result above `u64::MAX`.
    Overflow,
    /// A subtraction below zero.
    Negative,
    /// `/`, `ceil_div` or `round_up` by zero.
    DivisionByZero,
    /// `%` by zero.
    ModuloByZero,
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Fault::Overflow => "overflow",
            Fault::Negative => "negative result",
            Fault::DivisionByZero => "division by zero",
            Fault::ModuloByZero => "modulo by zero",
        })
    }
}

/// An error parsing, compiling or evaluating an expression; it names the expression.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ExprError {
    /// The text is not an expression.
    #[error(
        "expression `{}`: syntax error at column {}: {}",
        quoted(.expr),
        .column,
        one_line(.message)
    )]
    Syntax {
        /// The expression text.
        expr: String,
        /// 1-based column (in characters).
        column: usize,
        /// What was expected or found.
        message: String,
    },
    /// A name the scope does not define.
    #[error("expression `{}`: unknown name `{}`", quoted(.expr), quoted(.name))]
    UnknownName {
        /// The expression text.
        expr: String,
        /// The name.
        name: String,
    },
    /// A checked arithmetic step failed.
    #[error("expression `{}`: {} in `{}`", quoted(.expr), .fault, quoted(.at))]
    Eval {
        /// The expression text.
        expr: String,
        /// The sub-expression whose step failed, canonical text.
        at: String,
        /// The fault.
        fault: Fault,
    },
    /// The caller gave fewer slot values than the compiled program reads.
    #[error(
        "expression `{}`: evaluated with {} slot values, needs {}",
        quoted(.expr),
        .given,
        .needed
    )]
    MissingSlots {
        /// The expression text.
        expr: String,
        /// Slots the program reads.
        needed: usize,
        /// Slots given.
        given: usize,
    },
}

/// A parsed expression: its source text and its tree.
///
/// Equality compares trees, so `2*n` and `2 * n` are equal.
#[derive(Debug, Clone)]
pub struct Expr {
    source: Arc<str>,
    tree: Arc<Tree>,
}

impl PartialEq for Expr {
    fn eq(&self, other: &Self) -> bool {
        self.tree == other.tree
    }
}

impl Eq for Expr {}

impl Expr {
    /// Parses `text`.
    pub fn parse(text: &str) -> Result<Expr, ExprError> {
        let tree = Parser::new(text).parse()?;
        Ok(Expr {
            source: text.into(),
            tree: Arc::new(tree),
        })
    }

    /// An expression holding one literal.
    pub fn literal(value: u64) -> Expr {
        Expr {
            source: value.to_string().into(),
            tree: Arc::new(Tree::Lit(value)),
        }
    }

    /// The text it was parsed from.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The parsed tree.
    pub fn tree(&self) -> &Tree {
        &self.tree
    }

    /// Canonical text (re-parses to the same tree).
    pub fn canonical(&self) -> String {
        self.tree.to_string()
    }

    /// The names the expression reads, sorted, each once.
    pub fn free_names(&self) -> Vec<&str> {
        let mut names = BTreeSet::new();
        self.tree.collect_names(&mut names);
        names.into_iter().collect()
    }

    /// How the value moves as `name` grows (a sound approximation: `Unknown` when unsure).
    pub fn trend_in(&self, name: &str) -> Trend {
        Trend::of(&self.tree, name)
    }

    /// The value when every name is bound to a value by `lookup`.
    pub fn eval_with(&self, lookup: impl Fn(&str) -> Option<u64>) -> Result<u64, ExprError> {
        let program = self.compile(&|name: &str| lookup(name).map(Binding::Value))?;
        program.eval(&[])
    }

    /// Compiles against `scope`: names bound to values become constants, names bound to slots
    /// read the slot at evaluation, and constant sub-expressions are folded (so a fault in them
    /// is reported here).
    pub fn compile(&self, scope: &dyn Scope) -> Result<Program, ExprError> {
        let mut c = Compiler {
            expr: self,
            scope,
            ops: Vec::new(),
            sites: Vec::new(),
            slot_count: 0,
            next_node: 0,
        };
        if let Some(value) = c.emit_root(&self.tree)? {
            c.push(Op::Const(value), Site::NONE);
        }
        Ok(Program {
            source: self.source.clone(),
            tree: self.tree.clone(),
            ops: c.ops.into_boxed_slice(),
            sites: c.sites.into_boxed_slice(),
            slot_count: c.slot_count,
        })
    }
}

impl fmt::Display for Expr {
    /// The canonical text.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.tree.fmt(f)
    }
}

impl Serialize for Expr {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match *self.tree {
            Tree::Lit(v) => s.serialize_u64(v),
            _ => s.serialize_str(&self.canonical()),
        }
    }
}

impl<'de> Deserialize<'de> for Expr {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Expr, D::Error> {
        let text = ExprText::deserialize(d)?;
        Expr::parse(text.as_str()).map_err(serde::de::Error::custom)
    }
}

/// Expression text as written in a file: a string, or a non-negative integer.
///
/// Declarations keep the text and parse it where an error can name the item it belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ExprText(String);

impl ExprText {
    /// The text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Parses the text.
    pub fn parse(&self) -> Result<Expr, ExprError> {
        Expr::parse(&self.0)
    }
}

impl fmt::Display for ExprText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<&str> for ExprText {
    fn from(s: &str) -> Self {
        ExprText(s.to_owned())
    }
}

impl From<String> for ExprText {
    fn from(s: String) -> Self {
        ExprText(s)
    }
}

impl From<u64> for ExprText {
    fn from(v: u64) -> Self {
        ExprText(v.to_string())
    }
}

impl From<&Expr> for ExprText {
    fn from(e: &Expr) -> Self {
        ExprText(e.canonical())
    }
}

impl Serialize for ExprText {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0.parse::<u64>() {
            Ok(v) if v.to_string() == self.0 => s.serialize_u64(v),
            _ => s.serialize_str(&self.0),
        }
    }
}

impl<'de> Deserialize<'de> for ExprText {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<ExprText, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = ExprText;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(
                    "an expression: a string such as \"2*hidden\" or a non-negative integer",
                )
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<ExprText, E> {
                Ok(ExprText(v.to_string()))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<ExprText, E> {
                u64::try_from(v)
                    .map(|v| ExprText(v.to_string()))
                    .map_err(|_| {
                        E::custom(format!("{v} is negative; sizes are non-negative integers"))
                    })
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<ExprText, E> {
                Ok(ExprText(v.to_owned()))
            }
        }
        d.deserialize_any(Visitor)
    }
}

/// How a scope binds a name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Binding {
    /// A value known at compile time (a dim, a device constant).
    Value(u64),
    /// A value read from `slots[i]` at every evaluation (`n`, `k`).
    Slot(u16),
}

/// The names an expression may read, and how each is bound.
pub trait Scope {
    /// The binding of `name`, or `None` when the name is not readable here.
    fn bind(&self, name: &str) -> Option<Binding>;
}

impl<F: Fn(&str) -> Option<Binding>> Scope for F {
    fn bind(&self, name: &str) -> Option<Binding> {
        self(name)
    }
}

/// A two-operand step: the binary operators and the functions (n-ary `min`/`max` chain).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    Bin(BinOp),
    CeilDiv,
    RoundUp,
    Min,
    Max,
    /// Unary: the right operand is ignored (always `Rhs::Const(0)`).
    NextPow2,
    Lcm,
}

/// Where a step's right operand comes from. Leaves are encoded in the step itself, so a chain
/// like `n * k * 4` runs as three ops instead of five.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Rhs {
    Pop,
    Const(u64),
    Slot(u16),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Const(u64),
    Slot(u16),
    Apply(Step, Rhs),
}

/// Which sub-expression an op completes: the tree node at pre-order position `node` (its
/// first `upto` steps, for a chain). Read only to explain a fault, so a program stores two
/// numbers per op, never text (text per op was quadratic in a long `max(...)`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Site {
    node: usize,
    upto: usize,
}

impl Site {
    /// The site of an op that cannot fail (a push).
    const NONE: Site = Site { node: 0, upto: 0 };
}

/// The text of the sub-expression a site marks.
struct SiteText<'a>(&'a Tree, usize);

impl fmt::Display for SiteText<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Tree::Chain { first, rest } => write_chain(f, first, rest, self.1),
            tree => tree.fmt(f),
        }
    }
}

/// A compiled expression: a postfix program over constants and slots.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Program {
    /// The expression's text and tree, shared with the [`Expr`] it was compiled from.
    source: Arc<str>,
    tree: Arc<Tree>,
    ops: Box<[Op]>,
    /// The sub-expression each op completes, parallel to `ops`.
    sites: Box<[Site]>,
    slot_count: usize,
}

impl Program {
    /// The value, reading `slots[i]` for every name bound to `Slot(i)`.
    ///
    /// Fewer slots than the program reads is reported as an error, not a panic.
    #[inline]
    pub fn eval(&self, slots: &[u64]) -> Result<u64, ExprError> {
        if slots.len() < self.slot_count {
            return Err(self.missing_slots(slots.len()));
        }
        let mut stack = [0u64; MAX_STACK];
        let mut sp = 0usize;
        for (at, op) in self.ops.iter().enumerate() {
            match *op {
                Op::Const(v) => {
                    stack[sp] = v;
                    sp += 1;
                }
                Op::Slot(s) => {
                    stack[sp] = slots[usize::from(s)];
                    sp += 1;
                }
                Op::Apply(step, rhs) => {
                    let b = match rhs {
                        Rhs::Pop => {
                            sp -= 1;
                            stack[sp]
                        }
                        Rhs::Const(c) => c,
                        Rhs::Slot(s) => slots[usize::from(s)],
                    };
                    match apply(step, stack[sp - 1], b) {
                        Ok(v) => stack[sp - 1] = v,
                        Err(fault) => return Err(self.fault(at, fault)),
                    }
                }
            }
        }
        Ok(stack[0])
    }

    /// The value when the program reads no slot (every name was bound to a value).
    pub fn constant(&self) -> Option<u64> {
        match *self.ops {
            [Op::Const(v)] => Some(v),
            _ => None,
        }
    }

    /// The expression text the program was compiled from.
    pub fn source(&self) -> &str {
        &self.source
    }

    #[cold]
    fn fault(&self, at: usize, fault: Fault) -> ExprError {
        let site = self.sites[at];
        ExprError::Eval {
            expr: self.source.to_string(),
            at: self
                .tree
                .nth(site.node)
                .map(|t| SiteText(t, site.upto).to_string())
                .unwrap_or_default(),
            fault,
        }
    }

    #[cold]
    fn missing_slots(&self, given: usize) -> ExprError {
        ExprError::MissingSlots {
            expr: self.source.to_string(),
            needed: self.slot_count,
            given,
        }
    }
}

#[inline(always)]
fn apply(step: Step, a: u64, b: u64) -> Result<u64, Fault> {
    match step {
        Step::Bin(BinOp::Add) => a.checked_add(b).ok_or(Fault::Overflow),
        Step::Bin(BinOp::Sub) => a.checked_sub(b).ok_or(Fault::Negative),
        Step::Bin(BinOp::Mul) => a.checked_mul(b).ok_or(Fault::Overflow),
        Step::Bin(BinOp::Div) => a.checked_div(b).ok_or(Fault::DivisionByZero),
        Step::Bin(BinOp::Rem) => a.checked_rem(b).ok_or(Fault::ModuloByZero),
        Step::CeilDiv => {
            if b == 0 {
                Err(Fault::DivisionByZero)
            } else {
                Ok(a.div_ceil(b))
            }
        }
        Step::RoundUp => {
            if b == 0 {
                Err(Fault::DivisionByZero)
            } else {
                a.div_ceil(b).checked_mul(b).ok_or(Fault::Overflow)
            }
        }
        Step::Min => Ok(a.min(b)),
        Step::Max => Ok(a.max(b)),
        Step::NextPow2 => {
            let _ = b;
            a.checked_next_power_of_two().ok_or(Fault::Overflow)
        }
        Step::Lcm => {
            if a == 0 || b == 0 {
                return Ok(0);
            }
            let (mut x, mut y) = (a, b);
            while y != 0 {
                (x, y) = (y, x % y);
            }
            (a / x).checked_mul(b).ok_or(Fault::Overflow)
        }
    }
}

/// What emitting a sub-tree left behind.
#[derive(Debug, Clone, Copy)]
enum Emitted {
    /// A constant, not emitted yet (folded).
    Const(u64),
    /// A slot read, not emitted yet (it may become a step's inline operand).
    Slot(u16),
    /// A value on the stack.
    Stacked,
}

struct Compiler<'a> {
    expr: &'a Expr,
    scope: &'a dyn Scope,
    ops: Vec<Op>,
    sites: Vec<Site>,
    slot_count: usize,
    /// Pre-order position of the next tree node `emit` enters (the numbering `Tree::nth`
    /// finds a site's node by).
    next_node: usize,
}

impl Compiler<'_> {
    fn emit_root(&mut self, tree: &Tree) -> Result<Option<u64>, ExprError> {
        match self.emit(tree)? {
            Emitted::Const(v) => Ok(Some(v)),
            Emitted::Slot(s) => {
                self.push(Op::Slot(s), Site::NONE);
                Ok(None)
            }
            Emitted::Stacked => Ok(None),
        }
    }

    /// Emits `tree`, entering every node once in pre-order (folded ones too).
    fn emit(&mut self, tree: &Tree) -> Result<Emitted, ExprError> {
        let node = self.next_node;
        self.next_node += 1;
        match tree {
            Tree::Lit(v) => Ok(Emitted::Const(*v)),
            Tree::Name(name) => match self.scope.bind(name) {
                Some(Binding::Value(v)) => Ok(Emitted::Const(v)),
                Some(Binding::Slot(s)) => {
                    self.slot_count = self.slot_count.max(usize::from(s) + 1);
                    Ok(Emitted::Slot(s))
                }
                None => Err(ExprError::UnknownName {
                    expr: self.expr.source.to_string(),
                    name: name.to_string(),
                }),
            },
            Tree::Chain { first, rest } => {
                let mut acc = self.emit(first)?;
                for (i, (op, rhs)) in rest.iter().enumerate() {
                    let site = Site { node, upto: i + 1 };
                    acc = self.combine(Step::Bin(*op), acc, rhs, tree, site)?;
                }
                Ok(acc)
            }
            Tree::Call { func, args } => {
                let step = match func {
                    Func::CeilDiv => Step::CeilDiv,
                    Func::RoundUp => Step::RoundUp,
                    Func::Min => Step::Min,
                    Func::Max => Step::Max,
                    Func::NextPow2 => Step::NextPow2,
                    Func::Lcm => Step::Lcm,
                };
                let site = Site { node, upto: 0 };
                if step == Step::NextPow2 {
                    // One argument (the parser checks).
                    return self.unary(step, &args[0], tree, site);
                }
                let mut acc = self.emit(&args[0])?;
                for arg in &args[1..] {
                    acc = self.combine(step, acc, arg, tree, site)?;
                }
                Ok(acc)
            }
        }
    }

    /// Emits `step(left, right)` where `left` was already emitted (or folded); `tree` and
    /// `site` name the sub-expression the step completes.
    fn combine(
        &mut self,
        step: Step,
        left: Emitted,
        right: &Tree,
        tree: &Tree,
        site: Site,
    ) -> Result<Emitted, ExprError> {
        // A pending left leaf must reach the stack before anything the right side emits. (The
        // insertion below moves only the right operand's ops, and a pending leaf left of a
        // stacked operand costs a stack slot, so the moves are bounded by MAX_STACK times the
        // program: compiling stays linear.)
        let mark = self.ops.len();
        let r = self.emit(right)?;
        if let (Emitted::Const(a), Emitted::Const(b)) = (left, r) {
            return apply(step, a, b)
                .map(Emitted::Const)
                .map_err(|fault| ExprError::Eval {
                    expr: self.expr.source.to_string(),
                    at: SiteText(tree, site.upto).to_string(),
                    fault,
                });
        }
        let left_op = match left {
            Emitted::Const(v) => Some(Op::Const(v)),
            Emitted::Slot(s) => Some(Op::Slot(s)),
            Emitted::Stacked => None,
        };
        if let Some(op) = left_op {
            self.ops.insert(mark, op);
            self.sites.insert(mark, Site::NONE);
        }
        let rhs = match r {
            Emitted::Const(c) => Rhs::Const(c),
            Emitted::Slot(s) => Rhs::Slot(s),
            Emitted::Stacked => Rhs::Pop,
        };
        if let (Rhs::Const(c), Some(Op::Apply(prev, Rhs::Const(p)))) = (rhs, self.ops.last())
            && let Some(merged) = reassociate(step, *prev, *p, c)
        {
            *self.ops.last_mut().expect("checked above") = Op::Apply(step, Rhs::Const(merged));
            *self.sites.last_mut().expect("one site per op") = site;
            return Ok(Emitted::Stacked);
        }
        self.push(Op::Apply(step, rhs), site);
        Ok(Emitted::Stacked)
    }

    /// A one-operand step: folded on a constant, else the operand reaches the stack and the
    /// step applies to it (with an ignored constant right operand).
    fn unary(
        &mut self,
        step: Step,
        arg: &Tree,
        tree: &Tree,
        site: Site,
    ) -> Result<Emitted, ExprError> {
        match self.emit(arg)? {
            Emitted::Const(a) => {
                apply(step, a, 0)
                    .map(Emitted::Const)
                    .map_err(|fault| ExprError::Eval {
                        expr: self.expr.source.to_string(),
                        at: SiteText(tree, site.upto).to_string(),
                        fault,
                    })
            }
            operand => {
                match operand {
                    Emitted::Slot(s) => self.push(Op::Slot(s), Site::NONE),
                    Emitted::Const(_) | Emitted::Stacked => {}
                }
                self.push(Op::Apply(step, Rhs::Const(0)), site);
                Ok(Emitted::Stacked)
            }
        }
    }

    fn push(&mut self, op: Op, site: Site) {
        self.ops.push(op);
        self.sites.push(site);
    }
}

/// `(x step1 p) step2 c` as `x step p'` when that is the same value and fails exactly when the
/// original fails: sums and products of non-negative values never shrink, so no intermediate
/// result exceeds the final one (products only when both constants are at least 1, since
/// `x * p * 0` must still fail when `x * p` overflows).
fn reassociate(step: Step, prev: Step, p: u64, c: u64) -> Option<u64> {
    match (prev, step) {
        (Step::Bin(BinOp::Add), Step::Bin(BinOp::Add)) => p.checked_add(c),
        (Step::Bin(BinOp::Mul), Step::Bin(BinOp::Mul)) if p >= 1 && c >= 1 => p.checked_mul(c),
        _ => None,
    }
}

struct Parser<'a> {
    text: &'a str,
    /// Byte position of the next unread character.
    pos: usize,
}

impl<'a> Parser<'a> {
    fn new(text: &'a str) -> Self {
        Parser { text, pos: 0 }
    }

    fn parse(mut self) -> Result<Tree, ExprError> {
        self.skip_space();
        if self.pos == self.text.len() {
            return Err(self.error_at(self.pos, "empty expression"));
        }
        let tree = self.sum(0)?;
        self.skip_space();
        if let Some(c) = self.peek() {
            let msg = if c == ')' {
                "unmatched `)`".to_owned()
            } else {
                format!("unexpected `{c}` after a complete expression")
            };
            return Err(self.error_at(self.pos, &msg));
        }
        if tree.stack_need() > MAX_STACK {
            return Err(self.error_at(
                0,
                &format!("too deeply nested to evaluate (more than {MAX_STACK} pending operands)"),
            ));
        }
        Ok(tree)
    }

    fn peek(&self) -> Option<char> {
        self.text[self.pos..].chars().next()
    }

    fn skip_space(&mut self) {
        while let Some(c) = self.peek() {
            if c.is_ascii_whitespace() {
                self.pos += 1;
            } else {
                break;
            }
        }
    }

    fn column(&self, byte: usize) -> usize {
        self.text[..byte].chars().count() + 1
    }

    fn error_at(&self, byte: usize, message: &str) -> ExprError {
        ExprError::Syntax {
            expr: self.text.to_owned(),
            column: self.column(byte),
            message: message.to_owned(),
        }
    }

    /// Refuses a nesting level (a parenthesis or a call) beyond [`MAX_DEPTH`].
    fn check_depth(&self, depth: usize, start: usize) -> Result<(), ExprError> {
        if depth > MAX_DEPTH {
            Err(self.error_at(
                start,
                &format!("parentheses and calls nested deeper than {MAX_DEPTH} levels"),
            ))
        } else {
            Ok(())
        }
    }

    /// sum := product (('+' | '-') product)*, one flat chain however long (a loop, no
    /// recursion per term).
    fn sum(&mut self, depth: usize) -> Result<Tree, ExprError> {
        let mut lhs = self.product(depth)?;
        loop {
            self.skip_space();
            let op = match self.peek() {
                Some('+') => BinOp::Add,
                Some('-') => BinOp::Sub,
                _ => return Ok(lhs),
            };
            self.pos += 1;
            let rhs = self.product(depth)?;
            lhs = Tree::binary(op, lhs, rhs);
        }
    }

    /// product := atom (('*' | '/' | '%') atom)*, one flat chain.
    fn product(&mut self, depth: usize) -> Result<Tree, ExprError> {
        let mut lhs = self.atom(depth)?;
        loop {
            self.skip_space();
            let op = match self.peek() {
                Some('*') => BinOp::Mul,
                Some('/') => BinOp::Div,
                Some('%') => BinOp::Rem,
                _ => return Ok(lhs),
            };
            self.pos += 1;
            let rhs = self.atom(depth)?;
            lhs = Tree::binary(op, lhs, rhs);
        }
    }

    /// atom := number | name | name '(' sum (',' sum)* ')' | '(' sum ')'; `depth` is the
    /// nesting of parentheses and calls around it.
    fn atom(&mut self, depth: usize) -> Result<Tree, ExprError> {
        self.skip_space();
        let start = self.pos;
        match self.peek() {
            Some(c) if c.is_ascii_digit() => self.number(),
            Some(c) if c == '_' || c.is_ascii_lowercase() => {
                let name = self.name();
                self.skip_space();
                if self.peek() == Some('(') {
                    self.check_depth(depth + 1, start)?;
                    self.call(name, start, depth + 1)
                } else {
                    Ok(Tree::Name(name.into()))
                }
            }
            Some('(') => {
                self.check_depth(depth + 1, start)?;
                self.pos += 1;
                let inner = self.sum(depth + 1)?;
                self.skip_space();
                if self.peek() == Some(')') {
                    self.pos += 1;
                    Ok(inner)
                } else {
                    Err(self.error_at(self.pos, "expected `)`"))
                }
            }
            Some(c) if c.is_ascii_uppercase() => Err(self.error_at(
                start,
                &format!("unexpected `{c}`: names are lower case ([a-z_][a-z0-9_]*)"),
            )),
            Some(c) => Err(self.error_at(
                start,
                &format!("unexpected `{c}`: expected a number, a name or `(`"),
            )),
            None => Err(self.error_at(start, "unexpected end: expected a number, a name or `(`")),
        }
    }

    fn number(&mut self) -> Result<Tree, ExprError> {
        let start = self.pos;
        let mut value: u64 = 0;
        let mut last_was_digit = false;
        while let Some(c) = self.peek() {
            if let Some(d) = c.to_digit(10) {
                value = value
                    .checked_mul(10)
                    .and_then(|v| v.checked_add(u64::from(d)))
                    .ok_or_else(|| self.error_at(start, "number larger than 2^64 - 1"))?;
                last_was_digit = true;
            } else if c == '_' {
                if !last_was_digit {
                    return Err(self.error_at(self.pos, "`_` must separate digits"));
                }
                last_was_digit = false;
            } else if c.is_ascii_alphabetic() {
                return Err(self.error_at(self.pos, &format!("unexpected `{c}` in a number")));
            } else {
                break;
            }
            self.pos += 1;
        }
        if !last_was_digit {
            return Err(self.error_at(self.pos - 1, "`_` must separate digits"));
        }
        Ok(Tree::Lit(value))
    }

    fn name(&mut self) -> &'a str {
        let start = self.pos;
        while let Some(c) = self.peek() {
            if c == '_' || c.is_ascii_lowercase() || c.is_ascii_digit() {
                self.pos += 1;
            } else {
                break;
            }
        }
        &self.text[start..self.pos]
    }

    fn call(&mut self, name: &str, start: usize, depth: usize) -> Result<Tree, ExprError> {
        let Some(func) = Func::from_name(name) else {
            return Err(self.error_at(
                start,
                &format!(
                    "unknown function `{name}` (known: ceil_div, round_up, min, max, next_pow2)"
                ),
            ));
        };
        self.pos += 1; // '('
        let mut args = Vec::new();
        self.skip_space();
        if self.peek() == Some(')') {
            return Err(self.error_at(self.pos, &format!("`{name}` needs arguments")));
        }
        loop {
            args.push(self.sum(depth)?);
            self.skip_space();
            match self.peek() {
                Some(',') => self.pos += 1,
                Some(')') => {
                    self.pos += 1;
                    break;
                }
                _ => return Err(self.error_at(self.pos, "expected `,` or `)`")),
            }
        }
        let fixed = match func {
            Func::CeilDiv | Func::RoundUp | Func::Lcm => Some(2),
            Func::NextPow2 => Some(1),
            Func::Min | Func::Max => None,
        };
        if let Some(want) = fixed.filter(|&w| w != args.len()) {
            let plural = if want == 1 { "argument" } else { "arguments" };
            return Err(self.error_at(
                start,
                &format!("`{name}` takes {want} {plural}, found {}", args.len()),
            ));
        }
        Ok(Tree::Call { func, args })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scope(name: &str) -> Option<Binding> {
        match name {
            "n" => Some(Binding::Slot(0)),
            "k" => Some(Binding::Slot(1)),
            "hidden" => Some(Binding::Value(4096)),
            "heads" => Some(Binding::Value(32)),
            _ => None,
        }
    }

    fn eval(text: &str, n: u64, k: u64) -> Result<u64, ExprError> {
        Expr::parse(text)?.compile(&scope)?.eval(&[n, k])
    }

    #[test]
    fn next_pow2_rounds_up_to_a_power_of_two() {
        for (n, want) in [
            (0, 1),
            (1, 1),
            (2, 2),
            (3, 4),
            (100, 128),
            (128, 128),
            (129, 256),
        ] {
            assert_eq!(eval("next_pow2(n)", n, 0), Ok(want), "n = {n}");
        }
        // Inside a sum and a min, on a slot and on a stacked operand, and folded.
        assert_eq!(eval("4 * next_pow2(n + 1) + 1", 100, 0), Ok(513));
        assert_eq!(eval("min(next_pow2(min(132, n)), 132)", 100, 0), Ok(128));
        assert_eq!(eval("min(next_pow2(min(132, n)), 132)", 130, 0), Ok(132));
        assert_eq!(eval("k + next_pow2(n)", 5, 3), Ok(11));
        assert_eq!(eval("next_pow2(1000)", 0, 0), Ok(1024));
        assert_eq!(
            Expr::parse("next_pow2( n )").unwrap().to_string(),
            "next_pow2(n)"
        );
        // Above 2^63 there is no power of two in u64.
        let e = eval("next_pow2(n)", (1 << 63) + 1, 0).unwrap_err();
        assert!(e.to_string().contains("next_pow2(n)"), "{e}");
        assert!(eval("next_pow2(9223372036854775809)", 0, 0).is_err());
        // One argument, exactly.
        let e = Expr::parse("next_pow2(n, 2)").unwrap_err().to_string();
        assert!(e.contains("`next_pow2` takes 1 argument, found 2"), "{e}");
        assert_eq!(
            Expr::parse("next_pow2(n) * 2").unwrap().trend_in("n"),
            Trend::Nondecreasing
        );
    }

    #[test]
    fn arithmetic_and_functions() {
        assert_eq!(eval("1 + 2 * 3", 0, 0), Ok(7));
        assert_eq!(eval("(1 + 2) * 3", 0, 0), Ok(9));
        assert_eq!(eval("10 - 3 - 2", 0, 0), Ok(5));
        assert_eq!(eval("100 / 7 / 2", 0, 0), Ok(7));
        assert_eq!(eval("100 % 7", 0, 0), Ok(2));
        assert_eq!(eval("ceil_div(n, 128)", 129, 0), Ok(2));
        assert_eq!(eval("round_up(n, 256)", 257, 0), Ok(512));
        // vLLM's block alignment: lcm(48, 64) = 192, lcm(64, 64) = 64, lcm(0, 64) = 0.
        assert_eq!(eval("lcm(n, 64)", 48, 0), Ok(192));
        assert_eq!(eval("lcm(n, k)", 64, 64), Ok(64));
        assert_eq!(eval("lcm(n, 64)", 0, 0), Ok(0));
        assert_eq!(eval("min(n, k, 3)", 9, 4), Ok(3));
        assert_eq!(eval("max(n)", 9, 4), Ok(9));
        assert_eq!(eval("1_000_000 * n", 3, 0), Ok(3_000_000));
        assert_eq!(eval("n * hidden * 2", 4, 0), Ok(32768));
        assert_eq!(
            eval("max(n*k*4, ceil_div(2*132, n)*heads*128*4)", 1, 4096),
            Ok(4_325_376)
        );
    }

    #[test]
    fn faults_name_the_expression_and_the_step() {
        assert_eq!(
            eval("n - 2", 1, 0).unwrap_err().to_string(),
            "expression `n - 2`: negative result in `n - 2`"
        );
        assert_eq!(
            eval("hidden * (n / k)", 1, 0).unwrap_err().to_string(),
            "expression `hidden * (n / k)`: division by zero in `n / k`"
        );
        assert_eq!(
            eval("n % k", 1, 0).unwrap_err().to_string(),
            "expression `n % k`: modulo by zero in `n % k`"
        );
        assert_eq!(
            eval("ceil_div(n, k)", 1, 0).unwrap_err().to_string(),
            "expression `ceil_div(n, k)`: division by zero in `ceil_div(n, k)`"
        );
        assert_eq!(
            eval("n * n", u64::MAX, 0).unwrap_err().to_string(),
            "expression `n * n`: overflow in `n * n`"
        );
        assert_eq!(
            eval("round_up(n, 256)", u64::MAX, 0)
                .unwrap_err()
                .to_string(),
            "expression `round_up(n, 256)`: overflow in `round_up(n, 256)`"
        );
        assert_eq!(
            eval("lcm(n, k)", u64::MAX, u64::MAX - 1)
                .unwrap_err()
                .to_string(),
            "expression `lcm(n, k)`: overflow in `lcm(n, k)`"
        );
        assert_eq!(
            eval("hidden * layers", 1, 0).unwrap_err().to_string(),
            "expression `hidden * layers`: unknown name `layers`"
        );
        // A constant part is folded at compile time, and its fault is reported there.
        assert_eq!(
            Expr::parse("n + 1 / 0")
                .unwrap()
                .compile(&scope)
                .unwrap_err()
                .to_string(),
            "expression `n + 1 / 0`: division by zero in `1 / 0`"
        );
    }

    #[test]
    fn syntax_errors_give_the_column() {
        let msg = |t: &str| Expr::parse(t).unwrap_err().to_string();
        assert_eq!(
            msg("2 * * n"),
            "expression `2 * * n`: syntax error at column 5: unexpected `*`: expected a number, a name or `(`"
        );
        assert_eq!(
            msg("hidden *"),
            "expression `hidden *`: syntax error at column 9: unexpected end: expected a number, a name or `(`"
        );
        assert_eq!(
            msg("(n + 1"),
            "expression `(n + 1`: syntax error at column 7: expected `)`"
        );
        assert_eq!(
            msg("n + 1)"),
            "expression `n + 1)`: syntax error at column 6: unmatched `)`"
        );
        assert_eq!(
            msg(""),
            "expression ``: syntax error at column 1: empty expression"
        );
        assert_eq!(
            msg("Hidden"),
            "expression `Hidden`: syntax error at column 1: unexpected `H`: names are lower case ([a-z_][a-z0-9_]*)"
        );
        assert_eq!(
            msg("floor(n, 2)"),
            "expression `floor(n, 2)`: syntax error at column 1: unknown function `floor` (known: ceil_div, round_up, min, max, next_pow2)"
        );
        assert_eq!(
            msg("ceil_div(n)"),
            "expression `ceil_div(n)`: syntax error at column 1: `ceil_div` takes 2 arguments, found 1"
        );
        assert_eq!(
            msg("max()"),
            "expression `max()`: syntax error at column 5: `max` needs arguments"
        );
        assert_eq!(
            msg("18446744073709551616"),
            "expression `18446744073709551616`: syntax error at column 1: number larger than 2^64 - 1"
        );
        assert_eq!(
            msg("12ab"),
            "expression `12ab`: syntax error at column 3: unexpected `a` in a number"
        );
        assert_eq!(
            msg("1__0"),
            "expression `1__0`: syntax error at column 3: `_` must separate digits"
        );
        assert_eq!(
            msg("10_"),
            "expression `10_`: syntax error at column 3: `_` must separate digits"
        );
        assert_eq!(
            msg("n ° 2"),
            "expression `n ° 2`: syntax error at column 3: unexpected `°` after a complete expression"
        );
    }

    #[test]
    fn deep_input_is_refused_not_overflowing_the_stack() {
        let deep = format!("{}n{}", "(".repeat(100_000), ")".repeat(100_000));
        assert_eq!(
            Expr::parse(&deep).unwrap_err().to_string(),
            ExprError::Syntax {
                expr: deep.clone(),
                column: 201,
                message: "parentheses and calls nested deeper than 200 levels".to_owned(),
            }
            .to_string()
        );
        // 200 levels of parentheses are fine, and fold away.
        let ok = format!("{}n{}", "(".repeat(200), ")".repeat(200));
        assert_eq!(Expr::parse(&ok).unwrap().canonical(), "n");
        let right_nested = (0..40).fold("n".to_string(), |acc, _| format!("n - ({acc})"));
        assert_eq!(
            Expr::parse(&right_nested).unwrap_err().to_string(),
            format!(
                "expression `{}`: syntax error at column 1: too deeply nested to evaluate (more than 32 pending operands)",
                crate::error::quoted(&right_nested)
            )
        );
        let wide = format!("max({})", vec!["n"; 10_000].join(", "));
        assert_eq!(eval(&wide, 5, 0), Ok(5));
    }

    #[test]
    fn a_long_flat_chain_is_one_level() {
        // Terms are not levels: a sum of 100,000 terms parses (as one flat chain), prints,
        // re-parses, compiles and evaluates.
        let long_sum = vec!["n"; 100_000].join(" + ");
        let e = Expr::parse(&long_sum).unwrap();
        assert_eq!(e.canonical(), long_sum);
        assert_eq!(Expr::parse(&e.canonical()).unwrap(), e);
        assert_eq!(eval(&long_sum, 3, 0), Ok(300_000));
        let mixed = vec!["n * 2 - 1"; 1_000].join(" + ");
        assert_eq!(eval(&mixed, 5, 0), Ok(9_000));
        // `(a + b) + c` is the chain `a + b + c`; `a - (b - c)` keeps its parentheses.
        assert_eq!(
            Expr::parse("((n + 1) + 2) + k").unwrap(),
            Expr::parse("n + 1 + 2 + k").unwrap()
        );
        assert_eq!(
            Expr::parse("n - (k - 1)").unwrap().canonical(),
            "n - (k - 1)"
        );
        assert_eq!(
            Expr::parse("(n * k) + (n * 2)").unwrap().canonical(),
            "n * k + n * 2"
        );
        assert_eq!(
            Expr::parse("(n + k) * 2").unwrap().canonical(),
            "(n + k) * 2"
        );
    }

    #[test]
    fn a_fault_in_a_chain_names_the_steps_up_to_it() {
        assert_eq!(
            eval("n + 1 - k - 5 + hidden", 1, 1)
                .unwrap_err()
                .to_string(),
            "expression `n + 1 - k - 5 + hidden`: negative result in `n + 1 - k - 5`"
        );
        assert_eq!(
            eval("n * k * 4 + 1", u64::MAX, 2).unwrap_err().to_string(),
            "expression `n * k * 4 + 1`: overflow in `n * k`"
        );
        // Merged constant steps name the longest prefix they cover.
        assert_eq!(
            eval("n + 1 + 2", u64::MAX, 0).unwrap_err().to_string(),
            "expression `n + 1 + 2`: overflow in `n + 1 + 2`"
        );
        assert_eq!(
            eval("max(1, n * k, 3)", u64::MAX, 2)
                .unwrap_err()
                .to_string(),
            "expression `max(1, n * k, 3)`: overflow in `n * k`"
        );
    }

    #[test]
    fn canonical_text_and_names() {
        let e =
            Expr::parse("max( n*k*4 , ceil_div(2*sm_count,n) * (heads + 1) - (a - b))").unwrap();
        assert_eq!(
            e.canonical(),
            "max(n * k * 4, ceil_div(2 * sm_count, n) * (heads + 1) - (a - b))"
        );
        assert_eq!(e.free_names(), ["a", "b", "heads", "k", "n", "sm_count"]);
        assert_eq!(Expr::parse(&e.canonical()).unwrap(), e);
        assert_eq!(Expr::parse("1_024").unwrap().canonical(), "1024");
    }

    #[test]
    fn folding_keeps_operand_order() {
        // `2 - n` must not become `n - 2` when the literal is folded.
        assert_eq!(eval("2 - n", 1, 0), Ok(1));
        assert_eq!(eval("hidden / n", 3, 0), Ok(1365));
        assert_eq!(eval("min(hidden, n, heads)", 100, 0), Ok(32));
        assert_eq!(eval("ceil_div(hidden, n)", 3, 0), Ok(1366));
        let p = Expr::parse("hidden * heads")
            .unwrap()
            .compile(&scope)
            .unwrap();
        assert_eq!(p.constant(), Some(131_072));
    }

    #[test]
    fn trends() {
        let t = |text: &str| Expr::parse(text).unwrap().trend_in("n");
        assert_eq!(t("hidden * 2"), Trend::Constant);
        assert_eq!(t("n * hidden * 2"), Trend::Nondecreasing);
        assert_eq!(
            t("max(n * 4, 1024) + round_up(n, 256)"),
            Trend::Nondecreasing
        );
        assert_eq!(t("ceil_div(264, n) * 16384"), Trend::Nonincreasing);
        assert_eq!(t("1000 - n"), Trend::Nonincreasing);
        assert_eq!(t("n * min(ceil_div(264, n * 8), 128)"), Trend::Unknown);
        assert_eq!(t("n % 7"), Trend::Unknown);
        assert_eq!(t("round_up(1000, n)"), Trend::Unknown);
        assert_eq!(t("lcm(n, 64)"), Trend::Unknown);
        assert_eq!(t("lcm(48, 64) * n"), Trend::Nondecreasing);
        assert_eq!(t("n / ceil_div(1000, n)"), Trend::Nondecreasing);
    }

    #[test]
    fn too_few_slots_is_an_error_not_a_panic() {
        let p = Expr::parse("n + k").unwrap().compile(&scope).unwrap();
        assert!(p.eval(&[1]).is_err());
    }
}
