"""One command that checks the vLLM 0.34.0 profile against a real start-up on one GPU
(docs/engines.md, "Releases after 0.19"): no start-up log of 0.34 is at hand, so every figure
of engines/vllm-0.34 is derived from the source only. Needs one H100 80GB and vLLM 0.34.0; not
run here (this workplace has no GPU).

    pip install vllm==0.34.0
    python docs/experiments/vllm_034_startup.py run data/models/llama-3.1-8b/config.json
    cargo xtask plan --hf-config data/models/llama-3.1-8b/config.json --engine vllm==0.34.0 \
        --max-model-len 8192 --format json > predicted.json
    python docs/experiments/vllm_034_startup.py compare startup-0.34.json predicted.json

`run` starts vLLM on dummy weights (only the config is read, nothing is downloaded) with the
defaults of `vllm serve` passed explicitly: `LLM()` takes the offline defaults of
engine/arg_utils.py get_batch_defaults (UsageContext.LLM_CLASS: 16384 batched tokens on an
H100), not serve's 8192 (OPENAI_API_SERVER), which the prediction assumes. It records, in the
one process (VLLM_ENABLE_V1_MULTIPROCESSING=0):

- torch's allocator history through the V2 runner's profile_run
  (vllm.v1.worker.gpu.model_runner.GPUModelRunner.profile_run, which 0.34 calls as
  `profile_run(randomize_inputs=...)`), replayed into the peak and the live blocks at it, with
  the frame that allocated each: the activation peak and what sets it (forward or sampler);
- vLLM's own lines (DEBUG logging): "Model loading took" (weights), the memory_profiling
  result (torch peak increase, total consumed), "Memory after warmup" (the extensible cache's
  decision: free, committed, transient kept, torch reservation growth, blocks), "GPU KV cache
  size", and "Graph capturing finished ... took" (the graphs' pool);
- the device's free memory before vLLM starts (torch.cuda.mem_get_info, in vLLM's own process:
  multiprocessing is off), which checks the prediction's assumed CUDA context
  (`[kv_cache.measured] cuda_context_bytes`, 0.51 GiB; unsettled `memory_in_use_at_start`).

and writes them to startup-0.34.json. `--no-extensible-kv-cache` runs the estimate-based path
instead (gpu_memory_utilization 0.92, 0.27's budget with the V2 CUDA-graph estimate), which
the profile does not model for 0.34 but whose figures check the shared terms. `compare` puts a
prediction (`cargo xtask plan ... --format json`) beside a recorded start-up, figure by
figure. `selftest` checks the log parsing and the trace replay on made-up input (no torch).
"""

import argparse
import json
import logging
import os
import re
import shutil
import sys
import tempfile

MIB = 1 << 20
GIB = 1 << 30
# The CUDA context the profile assumes in use before the snapshot (engines/vllm-0.34/engine.toml).
CUDA_CONTEXT_BYTES = 547_608_330

# vLLM 0.34's lines, as its source formats them.
PATTERNS = {
    # v1/worker/gpu/model_runner.py: "Model loading took %s GiB and %.6f seconds"
    "weights_gib": r"Model loading took ([0-9.]+) GiB",
    # utils/mem_utils.py MemoryProfilingResult.__repr__
    "torch_peak_increase_gib": r"torch peak memory increase: ([0-9.]+)GiB",
    "total_consumed_gib": r"total consumed \(from mem_get_info\): ([0-9.]+)GiB",
    # v1/worker/extensible_kv_cache.py measure_kv_cache_blocks
    "free_after_warmup_gib": r"Memory after warmup: ([0-9.]+) GiB free",
    "committed_gib": r"GiB free, ([0-9.]+) GiB committed",
    "transient_kept_gib": r"committed to the KV cache, ([0-9.]+) GiB kept",
    "transient_peak_gib": r"\(([0-9.]+) GiB allocated at peak",
    "torch_reserve_growth_gib": r"GiB allocated at peak, ([0-9.]+) GiB of torch reservation",
    "kv_blocks": r"growth\); (\d+) KV cache blocks",
    # v1/core/kv_cache_utils.py: "%s KV cache size: %s tokens, Maximum concurrency ..."
    "kv_cache_tokens": r"KV cache size: ([0-9,]+) tokens",
    # v1/worker/gpu/model_runner.py capture_model: "Graph capturing finished in %.0f secs,
    # took %.2f GiB"
    "cuda_graph_pool_gib": r"Graph capturing finished in [0-9.]+ secs, took ([0-9.]+) GiB",
    # v1/worker/gpu_worker.py (the estimate-based path only)
    "available_kv_gib": r"Available KV cache memory: ([0-9.]+) GiB",
}


def parse(lines):
    """The figures of PATTERNS found in `lines` (the last match of each)."""
    found = {}
    for line in lines:
        for key, pattern in PATTERNS.items():
            m = re.search(pattern, line)
            if m:
                text = m.group(1).replace(",", "")
                found[key] = float(text) if "." in text else int(text)
    return found


def peak_of(trace):
    """(peak bytes, live blocks at the peak) of one device's trace (vllm_forward_peak.py's
    replay: an allocation counts from `alloc` to `free_requested`)."""
    live, total, peak, at_peak = {}, 0, 0, {}
    for event in trace:
        if event["action"] == "alloc":
            live[event["addr"]] = event
            total += event["size"]
            if total > peak:
                peak, at_peak = total, dict(live)
        elif event["action"] == "free_requested":
            block = live.pop(event["addr"], None)
            if block is not None:
                total -= block["size"]
    return peak, list(at_peak.values())


def where(frames):
    for frame in frames:
        name = frame.get("filename", "")
        if "/vllm/" in name or "torchinductor" in name or "/_inductor/" in name:
            return f"{name}:{frame.get('line')} {frame.get('name')}"
    return "(no vLLM frame)"


def sites(blocks):
    out = {}
    for block in blocks:
        key = where(block.get("frames", []))
        out[key] = out.get(key, 0) + block["size"]
    return sorted(out.items(), key=lambda kv: -kv[1])


class Lines(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.lines = []

    def emit(self, record):
        self.lines.append(record.getMessage())


def run(config, max_num_batched_tokens, max_num_seqs, max_model_len, extensible, out):
    os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "DEBUG")
    import pickle

    import torch

    free_at_start, total = torch.cuda.mem_get_info()
    from vllm import LLM
    from vllm.v1.worker.gpu import model_runner

    handler = Lines()
    logging.getLogger("vllm").addHandler(handler)
    original = model_runner.GPUModelRunner.profile_run
    snapshot = {}

    def profile_run(self, *args, **kwargs):
        torch.cuda.memory._record_memory_history(max_entries=2_000_000, stacks="python")
        try:
            return original(self, *args, **kwargs)
        finally:
            path = os.path.abspath("profile_run-0.34.pickle")
            torch.cuda.memory._dump_snapshot(path)
            torch.cuda.memory._record_memory_history(enabled=None)
            with open(path, "rb") as f:
                traces = [t for t in pickle.load(f)["device_traces"] if t]
            if traces:
                peak, blocks = peak_of(traces[0])
                snapshot["profile_peak_bytes"] = peak
                snapshot["live_at_peak"] = [
                    {"site": s, "bytes": b} for s, b in sites(blocks)[:20]
                ]

    model_runner.GPUModelRunner.profile_run = profile_run
    model_dir = tempfile.mkdtemp(prefix="vllm-034-")
    shutil.copy(config, os.path.join(model_dir, "config.json"))
    kwargs = dict(
        model=model_dir,
        load_format="dummy",
        skip_tokenizer_init=True,
        max_model_len=max_model_len,
        max_num_batched_tokens=max_num_batched_tokens,
        max_num_seqs=max_num_seqs,
    )
    if not extensible:
        kwargs["enable_extensible_kv_cache"] = False
    LLM(**kwargs)
    record = {
        "vllm": "0.34.0",
        "config": config,
        "max_num_batched_tokens": max_num_batched_tokens,
        "max_num_seqs": max_num_seqs,
        "max_model_len": max_model_len,
        "extensible_kv_cache": extensible,
        "device_total_bytes": total,
        "memory_in_use_at_start_bytes": total - free_at_start,
        **parse(handler.lines),
        **snapshot,
    }
    with open(out, "w") as f:
        json.dump(record, f, indent=2)
    json.dump(record, sys.stdout, indent=2)
    print()


def compare(recorded_path, predicted_path):
    with open(recorded_path) as f:
        rec = json.load(f)
    with open(predicted_path) as f:
        engine = json.load(f)["engine"]
    w = engine["workers"][0]
    rows = [
        ("weights GiB", w["weights"] / GIB, rec.get("weights_gib")),
        ("activation peak GiB", w["activation_peak"] / GIB, rec.get("torch_peak_increase_gib")),
        ("KV tokens", engine["kv_cache_tokens"], rec.get("kv_cache_tokens")),
        ("KV blocks", engine["kv_blocks"], rec.get("kv_blocks")),
        ("CUDA graph pool GiB", engine["cuda_graph_estimate"] / GIB, rec.get("cuda_graph_pool_gib")),
    ]
    for name, predicted, printed in rows:
        if printed in (None, 0):
            print(f"{name:<24} predicted {predicted:>14,.2f}   vLLM printed nothing")
        else:
            err = (predicted - printed) / printed * 100
            print(f"{name:<24} predicted {predicted:>14,.2f}   vLLM {printed:>14,.2f}   {err:+.2f}%")
    print(
        f"memory in use at start: measured "
        f"{rec.get('memory_in_use_at_start_bytes', 0) / GIB:.2f} GiB, assumed "
        f"{CUDA_CONTEXT_BYTES / GIB:.2f} GiB (engines/vllm-0.34/engine.toml cuda_context_bytes)"
    )


def selftest():
    lines = [
        "Model loading took 14.99 GiB and 3.2 seconds",
        "Memory profiling takes 9.87 seconds. ... torch peak memory increase: 1.02GiB; "
        "non-torch forward increase memory: 0.25GiB; total consumed (from mem_get_info): 16.40GiB",
        "Memory after warmup: 3.10 GiB free, 55.00 GiB committed to the KV cache, 1.30 GiB kept "
        "for transient activations (1.02 GiB allocated at peak, 1.30 GiB of torch reservation "
        "growth); 7040 KV cache blocks (55.00 GiB) fit within the requested 79.19 GiB.",
        "GPU KV cache size: 450,560 tokens, Maximum concurrency for 8,192 tokens per request: 55.00x",
    ]
    got = parse(lines)
    assert got["weights_gib"] == 14.99, got
    assert got["torch_peak_increase_gib"] == 1.02, got
    assert got["total_consumed_gib"] == 16.40, got
    assert got["torch_reserve_growth_gib"] == 1.30, got
    assert got["kv_blocks"] == 7040, got
    assert got["kv_cache_tokens"] == 450560, got
    frames = [{"filename": "/x/vllm/sampler.py", "line": 3, "name": "sample"}]
    trace = [
        {"action": "alloc", "addr": 1, "size": 4 * MIB, "frames": frames},
        {"action": "alloc", "addr": 2, "size": 2 * MIB, "frames": frames},
        {"action": "free_requested", "addr": 1},
    ]
    peak, blocks = peak_of(trace)
    assert peak == 6 * MIB and len(blocks) == 2, (peak, blocks)
    assert sites(blocks) == [("/x/vllm/sampler.py:3 sample", 6 * MIB)]
    print("selftest: 2 passed, 0 failed")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="start vLLM 0.34 on dummy weights and record its start-up")
    r.add_argument("config", help="a Hugging Face config.json")
    r.add_argument("--max-num-batched-tokens", type=int, default=8192, help="serve's on an H100")
    r.add_argument("--max-num-seqs", type=int, default=1024, help="serve's on an H100")
    r.add_argument("--max-model-len", type=int, default=8192)
    r.add_argument("--no-extensible-kv-cache", action="store_true")
    r.add_argument("--out", default="startup-0.34.json")
    c = sub.add_parser("compare", help="a prediction beside a recorded start-up")
    c.add_argument("recorded")
    c.add_argument("predicted", help="cargo xtask plan ... --engine vllm==0.34.0 --format json")
    sub.add_parser("selftest", help="check the parsing and the replay on made-up input")
    args = parser.parse_args()
    if args.command == "run":
        run(
            args.config,
            args.max_num_batched_tokens,
            args.max_num_seqs,
            args.max_model_len,
            not args.no_extensible_kv_cache,
            args.out,
        )
    elif args.command == "compare":
        compare(args.recorded, args.predicted)
    else:
        selftest()


if __name__ == "__main__":
    main()
