//! Property tests (issue 7) over random circuits (chains, diamonds, residual skips, attention
//! with a KV state, repeated blocks) with random families and rules that cover every op,
//! through fuse and plan:
//! - every node is in exactly one launch group;
//! - every arena placement passes an independent validator (no two buffers live at one step
//!   share a byte, offsets aligned, sizes are the edges' aligned bytes, bounds recomputed) and
//!   memory-plan's checker, which re-derives lifetimes and the group order from the circuit;
//! - the per-node table sums to the total, and the total is the sum of its four terms;
//! - `widest` gives the same bytes in any order of the plans;
//! - a sweep gives the same plans on 1, 2 and 4 threads, and the same as planning alone.

use std::collections::{BTreeMap, BTreeSet};

use circuit_ir::decl::{BlockDecl, NodeDecl, OutDecl, StateDecl, WeightDecl};
use circuit_ir::{Circuit, CircuitBuilder};
use fuser::{EdgeState, FuseOptions, Rules, fuse};
use kernel_families::Families;
use memory_plan::{BufferKind, MemoryPlan, PlanConfig, Planner, WorkspaceTerm, widest};
use proptest::prelude::*;

/// memory-plan's independent checker: lifetimes and group order re-derived from the circuit
/// and the group list, not taken from the planner.
#[path = "../../crates/memory-plan/tests/checker/mod.rs"]
mod checker;

const WIDTHS: [u64; 4] = [8, 16, 24, 64];
const FORMATS: [&str; 6] = ["bf16", "f32", "fp8", "fp8/token", "i32", "int4/g8"];
const ROWS: [&str; 4] = ["n", "2 * n", "n + 3", "ceil_div(n, 2)"];
const CHAIN_OPS: [&str; 5] = ["rms_norm", "linear", "silu_mul", "scale", "copy"];
/// Ops run by the host (`torch` emitter, no kernel) rather than a kernel.
const HOST_OPS: [&str; 2] = ["scale", "copy"];
/// Multi-op patterns the generated circuits can contain.
const FUSIONS: [&[&str]; 5] = [
    &["rms_norm", "linear"],
    &["linear", "silu_mul"],
    &["residual_add", "rms_norm"],
    &["linear", "residual_add"],
    &["rms_norm", "linear", "silu_mul"],
];
const WORKSPACES: [&str; 5] = [
    "n * k",
    "64",
    "ceil_div(sm_count, n) * 32",
    "n * 2 + k",
    "k * 4",
];
const NS: [u64; 5] = [1, 3, 8, 64, 100];

/// How one edge is sized: indexes into ROWS, WIDTHS and FORMATS.
#[derive(Debug, Clone, Copy)]
struct Shape(usize, usize, usize);

fn shape() -> impl Strategy<Value = Shape> {
    (0..ROWS.len(), 0..WIDTHS.len(), 0..FORMATS.len()).prop_map(|(r, w, f)| Shape(r, w, f))
}

#[derive(Debug, Clone)]
enum Segment {
    /// A chain of ops, each reading the previous output.
    Chain(Vec<(usize, Shape)>),
    /// `a` feeds `b` and `c`, which a residual add joins.
    Diamond([Shape; 4]),
    /// norm, linear, then an add with the segment's input (a residual skip).
    Residual([Shape; 3]),
    /// A KV write and an attention reading its state (optionally windowed).
    Attention(Shape, Option<u64>),
}

fn segment() -> impl Strategy<Value = Segment> {
    prop_oneof![
        prop::collection::vec((0..CHAIN_OPS.len(), shape()), 1..4).prop_map(Segment::Chain),
        [shape(), shape(), shape(), shape()].prop_map(Segment::Diamond),
        [shape(), shape(), shape()].prop_map(Segment::Residual),
        (shape(), prop::option::of(1u64..50)).prop_map(|(s, w)| Segment::Attention(s, w)),
    ]
}

#[derive(Debug, Clone)]
struct BlockSpec {
    repeat: u64,
    segments: Vec<Segment>,
    last: Shape,
}

#[derive(Debug, Clone)]
struct FamilySpec {
    /// Per op in the circuit: workspaces (expression index, arena).
    workspaces: Vec<Vec<(usize, bool)>>,
}

#[derive(Debug, Clone)]
struct FusionSpec {
    pattern: usize,
    keep_first: bool,
    rows: Option<(u64, u64)>,
    decode_only: bool,
    priority: i64,
    workspace: Option<(usize, bool)>,
}

#[derive(Debug, Clone)]
struct Case {
    blocks: Vec<BlockSpec>,
    families: FamilySpec,
    fusions: Vec<FusionSpec>,
    decode: bool,
    sm_count: u64,
    align: u64,
    kv_tokens: u64,
    sequences: u64,
}

fn case() -> impl Strategy<Value = Case> {
    let block = (1u64..4, prop::collection::vec(segment(), 1..4), shape()).prop_map(
        |(repeat, segments, last)| BlockSpec {
            repeat,
            segments,
            last,
        },
    );
    let ws = prop::collection::vec((0..WORKSPACES.len(), any::<bool>()), 0..3);
    let fusion = (
        0..FUSIONS.len(),
        any::<bool>(),
        prop::option::of(prop_oneof![Just((1, 8)), Just((4, 64)), Just((9, 1000))]),
        any::<bool>(),
        1i64..100,
        prop::option::of((0..WORKSPACES.len(), any::<bool>())),
    )
        .prop_map(
            |(pattern, keep_first, rows, decode_only, priority, workspace)| FusionSpec {
                pattern,
                keep_first,
                rows,
                decode_only,
                priority,
                workspace,
            },
        );
    (
        prop::collection::vec(block, 1..4),
        prop::collection::vec(ws, 9),
        prop::collection::vec(fusion, 0..4),
        any::<bool>(),
        prop_oneof![Just(1u64), Just(7), Just(132)],
        prop_oneof![Just(1u64), Just(8), Just(256)],
        prop_oneof![Just(0u64), Just(100)],
        1u64..4,
    )
        .prop_map(
            |(blocks, ws, fusions, decode, sm_count, align, kv_tokens, sequences)| Case {
                blocks,
                families: FamilySpec { workspaces: ws },
                fusions,
                decode,
                sm_count,
                align,
                kv_tokens,
                sequences,
            },
        )
}

fn out(edge: &str, s: Shape) -> OutDecl {
    OutDecl::new(edge, ROWS[s.0], WIDTHS[s.1], FORMATS[s.2])
}

/// The circuit: input `x`, then the blocks, each streaming `x` to `y`.
fn build_circuit(case: &Case) -> Circuit {
    let mut b = CircuitBuilder::new("random");
    b.dim("h", 16).dim("kv", "2 * h");
    b.input("x", "n", "h", "bf16");
    let mut last_out = String::new();
    for (bi, spec) in case.blocks.iter().enumerate() {
        let name = format!("b{bi}");
        let mut block = BlockDecl::repeated(&name, spec.repeat).stream(Some("x"), Some("y"));
        let mut cur = "x".to_owned();
        for (si, seg) in spec.segments.iter().enumerate() {
            let id = |part: &str| format!("s{si}_{part}");
            match seg {
                Segment::Chain(ops) => {
                    for (oi, &(op, s)) in ops.iter().enumerate() {
                        let node = id(&format!("c{oi}"));
                        let edge = format!("{node}_o");
                        let mut n = NodeDecl::new(&node, CHAIN_OPS[op])
                            .reads([cur.as_str()])
                            .writes(out(&edge, s));
                        if CHAIN_OPS[op] == "linear" {
                            n = n.weight(WeightDecl::new("w", [WIDTHS[s.1], 16], "bf16"));
                        }
                        if CHAIN_OPS[op] == "rms_norm" {
                            // One tensor shared by every instance: stored once.
                            n = n.weight(
                                WeightDecl::new("g", ["h"], "bf16").tensor(format!("{name}.norm")),
                            );
                        }
                        block = block.node(n);
                        cur = edge;
                    }
                }
                Segment::Diamond([sa, sb, sc, sd]) => {
                    let (a, l, r, j) = (id("a"), id("l"), id("r"), id("j"));
                    block = block
                        .node(
                            NodeDecl::new(&a, "rms_norm")
                                .reads([cur.as_str()])
                                .writes(out(&format!("{a}_o"), *sa)),
                        )
                        .node(
                            NodeDecl::new(&l, "linear")
                                .reads([format!("{a}_o")])
                                .writes(out(&format!("{l}_o"), *sb))
                                .weight(
                                    WeightDecl::new("w", [WIDTHS[sb.1], WIDTHS[sa.1]], "fp8")
                                        .count(2),
                                ),
                        )
                        .node(
                            NodeDecl::new(&r, "silu_mul")
                                .reads([format!("{a}_o")])
                                .writes(out(&format!("{r}_o"), *sc)),
                        )
                        .node(
                            NodeDecl::new(&j, "residual_add")
                                .reads([format!("{l}_o"), format!("{r}_o")])
                                .writes(out(&format!("{j}_o"), *sd)),
                        );
                    cur = format!("{j}_o");
                }
                Segment::Residual([sn, sl, sa]) => {
                    let (nn, l, a) = (id("n"), id("l"), id("a"));
                    block = block
                        .node(
                            NodeDecl::new(&nn, "rms_norm")
                                .reads([cur.as_str()])
                                .writes(out(&format!("{nn}_o"), *sn)),
                        )
                        .node(
                            NodeDecl::new(&l, "linear")
                                .reads([format!("{nn}_o")])
                                .writes(out(&format!("{l}_o"), *sl))
                                .weight(WeightDecl::new(
                                    "w",
                                    [WIDTHS[sl.1], WIDTHS[sn.1]],
                                    "int4/g8",
                                )),
                        )
                        .node(
                            NodeDecl::new(&a, "residual_add")
                                .reads([cur.clone(), format!("{l}_o")])
                                .writes(out(&format!("{a}_o"), *sa)),
                        );
                    cur = format!("{a}_o");
                }
                Segment::Attention(s, window) => {
                    let (w, a, st) = (id("kvw"), id("att"), id("kv"));
                    block = block
                        .node(NodeDecl::new(&w, "kv_write").reads([cur.as_str()]))
                        .node(
                            NodeDecl::new(&a, "attention")
                                .reads([cur.as_str()])
                                .writes(out(&format!("{a}_o"), *s)),
                        );
                    let mut state =
                        StateDecl::per_token(&st, "kv", "bf16", &w).read_by([a.as_str()]);
                    if let Some(win) = window {
                        state = state.window(*win);
                    }
                    block = block.state(state);
                    cur = format!("{a}_o");
                }
            }
        }
        block = block.node(
            NodeDecl::new("last", "copy")
                .reads([cur.as_str()])
                .writes(out("y", spec.last)),
        );
        b.block(block);
        last_out = format!("{name}.{}.y", spec.repeat - 1);
    }
    b.output(last_out);
    b.build()
        .unwrap_or_else(|e| panic!("generated circuit: {e}"))
}

/// Families: one per op (kernel `k_<op>`, or the `torch` emitter for host ops) and one per
/// fusion rule (kernel `kf<i>` with the pattern's ops), with random workspaces.
fn families_toml(case: &Case, ops: &[&str]) -> String {
    let mut t = String::from("schema = 1\n");
    let ws = |t: &mut String, list: &[(usize, bool)]| {
        for (i, &(e, arena)) in list.iter().enumerate() {
            t.push_str(&format!(
                "  [[family.workspace]]\n  name = \"w{i}\"\n  bytes = [\"{}\"]\n  arena = {arena}\n  why = \"test\"\n",
                WORKSPACES[e]
            ));
        }
    };
    for (i, f) in case.fusions.iter().enumerate() {
        let pattern: Vec<String> = FUSIONS[f.pattern]
            .iter()
            .map(|o| format!("\"{o}\""))
            .collect();
        t.push_str(&format!(
            "[[family]]\nid = \"fused{i}\"\nkernels = [\"kf{i}\"]\nops = [{}]\n",
            pattern.join(", ")
        ));
        ws(&mut t, f.workspace.as_slice());
    }
    for (i, op) in ops.iter().enumerate() {
        if HOST_OPS.contains(op) {
            t.push_str(&format!(
                "[[family]]\nid = \"host_{op}\"\nemitters = [\"torch\"]\nops = [\"{op}\"]\n"
            ));
        } else {
            t.push_str(&format!(
                "[[family]]\nid = \"f_{op}\"\nkernels = [\"k_{op}\"]\nops = [\"{op}\"]\n"
            ));
        }
        ws(
            &mut t,
            &case.families.workspaces[i % case.families.workspaces.len()],
        );
    }
    t
}

fn rules_toml(case: &Case, ops: &[&str]) -> String {
    let mut t = String::from("schema = 1\n[settings]\nmode = \"prefill\"\n");
    for op in ops {
        if HOST_OPS.contains(op) {
            t.push_str(&format!("[[rule]]\nid = \"one_{op}\"\npattern = [{{ op = \"{op}\" }}]\nemitter = \"torch\"\n"));
        } else {
            t.push_str(&format!(
                "[[rule]]\nid = \"one_{op}\"\npattern = [{{ op = \"{op}\" }}]\nkernels = [\"k_{op}\"]\nemitter = \"cuda\"\n"
            ));
        }
    }
    for (i, f) in case.fusions.iter().enumerate() {
        let elements: Vec<String> = FUSIONS[f.pattern]
            .iter()
            .enumerate()
            .map(|(k, op)| {
                if k == 0 && f.keep_first {
                    format!("{{ op = \"{op}\", keep = true }}")
                } else {
                    format!("{{ op = \"{op}\" }}")
                }
            })
            .collect();
        t.push_str(&format!(
            "[[rule]]\nid = \"fuse{i}\"\npattern = [{}]\nkernels = [\"kf{i}\"]\nemitter = \"cuda\"\npriority = {}\n",
            elements.join(", "),
            f.priority
        ));
        if let Some((lo, hi)) = f.rows {
            t.push_str(&format!("rows = [{lo}, {hi}]\n"));
        }
        if f.decode_only {
            t.push_str("when = { mode = \"decode\" }\n");
        }
    }
    t
}

/// An independent check of one arena layout against the circuit and the plan.
fn check_arena(planner: &Planner<'_>, circuit: &Circuit, plan: &MemoryPlan, n: u64, align: u64) {
    let layout = planner.arena_layout(n).unwrap();
    assert_eq!(layout.slots.len(), layout.offsets.len());
    assert_eq!(layout.slots.len(), layout.sizes.len());
    let fusion = planner.fusion(n).unwrap();
    checker::check(circuit, &fusion, &layout).unwrap_or_else(|e| panic!("n = {n}: {e}"));
    // Every materialized edge has one buffer of its aligned bytes, no fused edge has one.
    let mut edges_seen = BTreeSet::new();
    for (slot, &size) in layout.slots.iter().zip(&layout.sizes) {
        assert!(slot.start <= slot.end && slot.end <= layout.steps);
        assert_eq!(size % align, 0);
        if let BufferKind::Edge { edge } = slot.kind {
            assert!(edges_seen.insert(edge), "edge buffered twice");
            assert_eq!(fusion.edge_state(edge), EdgeState::Materialized);
            let bytes = circuit.edges()[edge].bytes_at(n).unwrap();
            assert_eq!(
                size,
                bytes.div_ceil(align) * align,
                "size of {}",
                circuit.edges()[edge].id
            );
        }
    }
    // A workspace buffer belongs to the first of its term's nodes that runs at its step.
    for slot in &layout.slots {
        if let BufferKind::Workspace { term, step } = slot.kind {
            let nodes = &layout.terms[term].nodes;
            let first = nodes.iter().copied().find(|&n| fusion.step_of(n) == step);
            assert_eq!(
                Some(slot.owner),
                first,
                "owner of term {term} at step {step}"
            );
            assert_eq!((slot.start, slot.end), (step, step + 1));
        }
    }
    for (edge, _) in circuit.edges().iter() {
        if fusion.edge_state(edge) == EdgeState::Materialized {
            assert!(
                edges_seen.contains(&edge),
                "{} has no buffer",
                circuit.edges()[edge].id
            );
        }
    }
    // No two buffers live at one step share a byte.
    let live = |i: usize| layout.sizes[i] > 0 && layout.slots[i].start < layout.slots[i].end;
    let mut height = 0;
    for i in 0..layout.slots.len() {
        assert_eq!(layout.offsets[i] % align, 0);
        height = height.max(layout.offsets[i] + layout.sizes[i]);
        for j in 0..i {
            let (a, b) = (&layout.slots[i], &layout.slots[j]);
            if live(i) && live(j) && a.start < b.end && b.start < a.end {
                let (ao, bo) = (layout.offsets[i], layout.offsets[j]);
                assert!(
                    ao + layout.sizes[i] <= bo || bo + layout.sizes[j] <= ao,
                    "buffers {i} and {j} overlap at n = {n}"
                );
            }
        }
    }
    assert_eq!(height, plan.arena.bytes);
    assert_eq!(layout.summary, plan.arena);
    // Bounds, recomputed.
    let lower = (0..layout.steps)
        .map(|s| {
            (0..layout.slots.len())
                .filter(|&i| layout.slots[i].start <= s && s < layout.slots[i].end)
                .map(|i| layout.sizes[i])
                .sum::<u64>()
        })
        .max()
        .unwrap_or(0);
    assert_eq!(plan.arena.lower_bound, lower);
    assert_eq!(plan.arena.unshared, layout.sizes.iter().sum::<u64>());
    assert!(lower <= height && height <= plan.arena.unshared);
}

fn term_bytes(terms: &[WorkspaceTerm]) -> BTreeMap<(String, String), u64> {
    terms
        .iter()
        .map(|t| ((t.family.to_string(), t.name.to_string()), t.bytes))
        .collect()
}

/// What a case exercised, so a test can show the generator is not vacuous.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Coverage {
    fused_groups: usize,
    host_groups: usize,
    arena_workspaces: usize,
    charged_workspaces: usize,
    states: usize,
}

fn check(case: &Case) -> Coverage {
    let mut cov = Coverage::default();
    let circuit = build_circuit(case);
    let mut ops: Vec<&str> = circuit.nodes().values().map(|n| n.op.name()).collect();
    ops.sort_unstable();
    ops.dedup();
    let families = Families::from_toml(&families_toml(case, &ops), "families.toml")
        .unwrap_or_else(|e| panic!("{e}\n{}", families_toml(case, &ops)));
    assert!(families.check(&circuit).is_empty());
    let rules = Rules::from_toml(&rules_toml(case, &ops), "rules.toml", Some(&families))
        .unwrap_or_else(|e| panic!("{e}\n{}", rules_toml(case, &ops)));
    let mode = if case.decode { "decode" } else { "prefill" };
    let settings = rules.settings([("mode", mode)], "--set").unwrap();

    // Every node in exactly one group.
    let all: Vec<_> = circuit.nodes().keys().collect();
    for n in NS {
        let plan = fuse(&circuit, &rules, &settings, n, FuseOptions::default()).unwrap();
        let mut seen: Vec<_> = plan
            .groups()
            .iter()
            .flat_map(|g| g.nodes.iter().copied())
            .collect();
        seen.sort_unstable();
        assert_eq!(seen, all, "groups do not partition the nodes at n = {n}");
        assert_eq!(plan.placeholders(), 0);
        cov.fused_groups += plan.groups().iter().filter(|g| g.nodes.len() > 1).count();
        cov.host_groups += plan
            .groups()
            .iter()
            .filter(|g| g.kernels.is_empty())
            .count();
    }
    cov.states = circuit.states().len();

    let config = PlanConfig {
        kv_tokens: case.kv_tokens,
        sequences: case.sequences,
        align: case.align,
        search_steps: 2_000,
        ..PlanConfig::new(case.sm_count)
    };
    let planner = Planner::new(&circuit, &families, &rules, settings, config).unwrap();
    let serial: Vec<MemoryPlan> = NS.iter().map(|&n| planner.plan(n).unwrap()).collect();
    for threads in [1, 2, 4] {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        let swept = pool.install(|| planner.sweep(&NS, &|| {})).unwrap();
        assert_eq!(
            swept, serial,
            "a sweep on {threads} threads differs from serial plans"
        );
    }
    let weights = circuit.weight_bytes();
    let states = circuit.state_bytes(case.kv_tokens, case.sequences).unwrap();
    for (plan, &n) in serial.iter().zip(&NS) {
        let t = plan.totals;
        assert_eq!(t.weights, weights);
        assert_eq!(t.states, states);
        assert_eq!(t.activations, plan.arena.bytes);
        let charged: u64 = plan
            .workspaces
            .iter()
            .filter(|w| !w.arena)
            .map(|w| w.bytes)
            .sum();
        assert_eq!(t.workspaces, charged);
        assert_eq!(t.total, t.weights + t.activations + t.workspaces + t.states);

        let table = planner.per_node(n).unwrap();
        assert_eq!(table.total, t.total);
        let rows: u64 = table.nodes.iter().map(|r| r.total()).sum();
        assert_eq!(
            rows + table.fragmentation,
            t.total,
            "per-node sum at n = {n}"
        );
        assert_eq!(table.nodes.iter().map(|r| r.weights).sum::<u64>(), weights);
        assert_eq!(table.nodes.iter().map(|r| r.states).sum::<u64>(), states);
        assert_eq!(
            table.nodes.iter().map(|r| r.workspaces).sum::<u64>(),
            charged
        );
        assert_eq!(
            table.fragmentation,
            plan.arena.bytes - plan.arena.lower_bound
        );

        check_arena(&planner, &circuit, plan, n, case.align);
        cov.arena_workspaces += plan
            .workspaces
            .iter()
            .filter(|w| w.arena && w.bytes > 0)
            .count();
        cov.charged_workspaces += plan
            .workspaces
            .iter()
            .filter(|w| !w.arena && w.bytes > 0)
            .count();
    }

    // widest: the same bytes in any order, each the largest over the plans.
    let terms: Vec<Vec<WorkspaceTerm>> = serial.iter().map(|p| p.workspaces.clone()).collect();
    let forward = term_bytes(&widest(terms.clone()));
    let mut largest: BTreeMap<(String, String), u64> = BTreeMap::new();
    for t in terms.iter().flatten() {
        let e = largest
            .entry((t.family.to_string(), t.name.to_string()))
            .or_default();
        *e = (*e).max(t.bytes);
    }
    assert_eq!(forward, largest);
    for k in 1..terms.len() {
        let mut order = terms.clone();
        order.rotate_left(k);
        assert_eq!(term_bytes(&widest(order.clone())), forward);
        order.reverse();
        assert_eq!(term_bytes(&widest(order)), forward);
    }
    cov
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn random_circuits_fuse_and_plan_consistently(case in case()) {
        check(&case);
    }
}

/// The generator reaches what the properties are about: fused and host groups, workspaces in
/// and out of the arena, states. (Their arenas all pack to the lower bound: the placements are
/// still validated, but the exact search is exercised by memory-plan's own tests.)
#[test]
fn the_generator_is_not_vacuous() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
    let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &[7; 32]);
    let mut runner = TestRunner::new_with_rng(Config::default(), rng);
    let mut total = Coverage::default();
    let mut diamonds = 0;
    for _ in 0..40 {
        let case = case().new_tree(&mut runner).unwrap().current();
        diamonds += case
            .blocks
            .iter()
            .flat_map(|b| &b.segments)
            .filter(|s| matches!(s, Segment::Diamond(_)))
            .count();
        let c = check(&case);
        total.fused_groups += c.fused_groups;
        total.host_groups += c.host_groups;
        total.arena_workspaces += c.arena_workspaces;
        total.charged_workspaces += c.charged_workspaces;
        total.states += c.states;
    }
    assert!(diamonds > 0, "{total:?}");
    assert!(total.fused_groups > 0, "{total:?}");
    assert!(total.host_groups > 0, "{total:?}");
    assert!(total.arena_workspaces > 0, "{total:?}");
    assert!(total.charged_workspaces > 0, "{total:?}");
    assert!(total.states > 0, "{total:?}");
}
