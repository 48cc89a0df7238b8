//! The Llama-3.1-8B example against the published checkpoint.

use circuit_ir::{Circuit, Op};

const EXAMPLE: &str = include_str!("../../../examples/llama-3.1-8b/circuit.toml");

fn llama() -> Circuit {
    Circuit::from_toml(EXAMPLE, "examples/llama-3.1-8b/circuit.toml").unwrap()
}

#[test]
fn weights_match_the_published_bf16_checkpoint() {
    // model.safetensors.index.json total_size of meta-llama/Llama-3.1-8B.
    assert_eq!(llama().weight_bytes(), 16_060_522_496);
}

#[test]
fn kv_cache_is_128_kib_per_token() {
    let c = llama();
    assert_eq!(c.state_bytes(1, 0).unwrap(), 131_072);
    assert_eq!(c.state_bytes(1000, 7).unwrap(), 131_072_000);
}

#[test]
fn shape_of_the_graph() {
    let c = llama();
    assert_eq!(c.nodes().len(), 1 + 32 * 15 + 2);
    assert_eq!(c.tensors().len(), 1 + 32 * 9 + 2);
    assert_eq!(c.states().len(), 32);
    assert_eq!(c.instances().len(), 34);
    let attn = c.find_node("layer.7.attention").unwrap();
    assert_eq!(c.nodes()[attn].op, Op::Attention);
    assert_eq!(c.node_k(attn), 4096);
    // The layer's stream input is the previous layer's output.
    let norm = c.find_node("layer.7.attn_norm").unwrap();
    let x = c.nodes()[norm].inputs[0];
    assert_eq!(c.edges()[x].id, "layer.6.y");
    let first = c.find_node("layer.0.attn_norm").unwrap();
    assert_eq!(c.edges()[c.nodes()[first].inputs[0]].id, "embed.x");
    let logits = c.find_edge("head.logits").unwrap();
    assert!(c.edges()[logits].output);
    assert_eq!(c.edges()[logits].bytes_at(3).unwrap(), 3 * 128_256 * 2);
    // Producer -> reader arcs plus writer -> reader arcs for every KV state.
    let reads: usize = c
        .edges()
        .values()
        .filter(|e| e.producer.is_some())
        .map(|e| e.readers.len())
        .sum();
    assert_eq!(c.graph().edge_count(), reads + 32);
    assert!(petgraph::algo::toposort(c.graph(), None).is_ok());
}

#[test]
fn declarations_round_trip_through_toml() {
    let c = llama();
    let text = c.to_toml().unwrap();
    let again = Circuit::from_toml(&text, "written").unwrap();
    assert_eq!(again, c);
    assert_eq!(again.weight_bytes(), c.weight_bytes());
}
