"""What is alive at the torch peak of vLLM 0.19's profile run, tensor by tensor: the measurement
that settles the PP 2 gap (docs/engines.md, "The PP 2 gap"). Needs one H100 and vLLM 0.19.0;
not run here (this workplace has no GPU).

Why one GPU is enough: the engine profile predicts 0.92 GiB for the first stage of Llama-3.1-8B
at PP 2, where vLLM printed 1.10 GiB, and that stage's peak is its forward's. The forward is the
same at TP 1 when the sampler is too small to set the peak: with `--max-num-seqs 8` the sampler
holds about 16 MiB, so the printed "torch peak memory increase" is the forward's. The plan
predicts 0.92 GiB there too:

    cargo xtask plan --hf-config data/models/llama-3.1-8b/config.json --engine vllm \
        --max-num-seqs 8 --gpu-memory-utilization 0.95 --max-model-len 8192

If vLLM prints 1.10 GiB for it, the missing 175-185 MiB belong to every forward, and the
snapshot this script writes names them: each live block at the peak with the Python frame that
allocated it.

The same run answers the two other figures that cannot be settled without a GPU
(docs/engines.md, "Accuracy"): with `--dtype float32` whether the float32 forward misses twice
the bf16 bytes (a missing term in the model dtype) or the same (dtype-independent), and, for
any config, the weights as the caching allocator holds them: `load` prints, after
load_model, `torch.cuda.memory_allocated()` beside the bytes of every parameter and buffer, so
the allocator's rounding (engine-profile's torch_allocator.rs) is measured, not inferred.

The run uses `vllm serve`'s batch defaults, which the logged start-ups had: `LLM()` runs in the
LLM_CLASS usage context, whose defaults on an H100 are 16,384 batched tokens (and 1,024
sequences), not serve's 8,192 (engine/arg_utils.py:2053-2067 get_batch_defaults), so
`--max-num-batched-tokens` (default 8192) is passed explicitly.

Run (weights are dummies: only the config is read, nothing is downloaded):
    pip install vllm==0.19.0
    python docs/experiments/vllm_forward_peak.py run data/models/llama-3.1-8b/config.json \
        --max-num-seqs 8 [--pp 2] [--dtype float32]
    python docs/experiments/vllm_forward_peak.py analyze profile_run-rank0.pickle

A vision-language model (issue 32, class 1: docs/engines.md, "The towers of issue 32") needs
its processor's files beside config.json, since the profile run builds its dummy images or
video with the model's processor: pass the repository's small files as a directory instead
(every file but the weights is copied; the tokenizer is then loaded too), at the context and
sequences the prediction assumes, e.g.

    huggingface-cli download Qwen/Qwen2.5-VL-7B-Instruct --exclude '*.safetensors' \
        --local-dir qwen2.5-vl-7b
    python docs/experiments/vllm_forward_peak.py run qwen2.5-vl-7b --max-num-seqs 1024 \
        --max-model-len 128000 --gpu-memory-utilization 0.9
    cargo xtask plan --hf-config data/models/qwen2.5-vl-7b-instruct/config.json \
        --engine vllm==0.19.0

and the snapshot names what the encoder keeps alive at its peak (the tower's frames).

`run` records torch's allocator history (torch.cuda.memory._record_memory_history) from the
start of GPUModelRunner.profile_run to its end, in every worker (forked, so the patch reaches
them), writes `profile_run-rank<R>.pickle` per worker and analyzes each. `analyze` replays a
snapshot's trace: an allocation counts from its `alloc` to its `free_requested` (where the
caching allocator lowers `allocated_bytes`, the statistic vLLM reads), so the replayed peak is
the printed torch peak increase. `selftest` checks the replay on a made-up trace (no torch).
"""

import argparse
import collections
import os
import pickle
import shutil
import sys
import tempfile

MIB = 1 << 20


def peak_of(trace):
    """(peak bytes, live blocks at the peak) of one device's trace, from the trace's start.

    A block is {addr, size, frames}. Frees of blocks allocated before the recording began are
    ignored: they are not part of the increase.
    """
    live = {}
    total = 0
    peak = 0
    at_peak = {}
    for event in trace:
        action = event["action"]
        if action == "alloc":
            live[event["addr"]] = event
            total += event["size"]
            if total > peak:
                peak = total
                at_peak = dict(live)
        elif action == "free_requested":
            block = live.pop(event["addr"], None)
            if block is not None:
                total -= block["size"]
    return peak, list(at_peak.values())


def where(frames):
    """The innermost frame worth naming: vLLM's or Inductor's generated code, else the first."""
    for frame in frames:
        name = frame.get("filename", "")
        if "/vllm/" in name or "torchinductor" in name or "/_inductor/" in name:
            return f"{name}:{frame.get('line')} {frame.get('name')}"
    if frames:
        f = frames[0]
        return f"{f.get('filename')}:{f.get('line')} {f.get('name')}"
    return "(no frames recorded)"


def report(peak, blocks, out=sys.stdout):
    by_site = collections.defaultdict(lambda: [0, 0])
    for block in blocks:
        site = by_site[where(block.get("frames", []))]
        site[0] += block["size"]
        site[1] += 1
    print(f"peak increase {peak} B = {peak / MIB:.1f} MiB, {len(blocks)} live blocks", file=out)
    for site, (size, count) in sorted(by_site.items(), key=lambda kv: -kv[1][0]):
        print(f"{size / MIB:10.1f} MiB  {count:4d} x  {site}", file=out)


def analyze(path):
    with open(path, "rb") as f:
        snapshot = pickle.load(f)
    for device, trace in enumerate(snapshot["device_traces"]):
        if trace:
            print(f"== {path}, device {device}")
            report(*peak_of(trace))


def selftest():
    def alloc(addr, size, line):
        frames = [{"filename": "/x/vllm/model.py", "line": line, "name": "forward"}]
        return {"action": "alloc", "addr": addr, "size": size, "frames": frames}

    trace = [
        {"action": "free_requested", "addr": 99},  # allocated before the recording
        alloc(1, 100 * MIB, 10),
        alloc(2, 50 * MIB, 11),
        {"action": "free_requested", "addr": 1},
        {"action": "free_completed", "addr": 1},
        alloc(3, 80 * MIB, 12),
    ]
    peak, blocks = peak_of(trace)
    assert peak == 150 * MIB, peak
    assert sorted(b["addr"] for b in blocks) == [1, 2], blocks
    assert where(blocks[0]["frames"]) == "/x/vllm/model.py:10 forward"
    print("selftest: 1 passed, 0 failed")


def held_bytes(model):
    """Bytes of every distinct parameter and buffer storage of `model` on the device."""
    seen = set()
    total = 0
    for t in list(model.parameters()) + list(model.buffers()):
        if t.device.type != "cuda":
            continue
        key = t.untyped_storage().data_ptr()
        if key in seen:
            continue
        seen.add(key)
        total += t.untyped_storage().nbytes()
    return total


def run(config, max_num_seqs, pp, gpu_memory_utilization, max_model_len, max_num_batched_tokens, dtype):
    # Workers are forked so that the patch below is theirs too; one process when PP is 1.
    os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0" if pp == 1 else "1")
    os.environ.setdefault("VLLM_WORKER_MULTIPROC_METHOD", "fork")
    import torch
    from vllm import LLM
    from vllm.v1.worker import gpu_model_runner

    original = gpu_model_runner.GPUModelRunner.profile_run

    def profile_run(self):
        torch.cuda.memory._record_memory_history(max_entries=2_000_000, stacks="python")
        try:
            return original(self)
        finally:
            rank = torch.distributed.get_rank() if torch.distributed.is_initialized() else 0
            path = os.path.abspath(f"profile_run-rank{rank}.pickle")
            torch.cuda.memory._dump_snapshot(path)
            torch.cuda.memory._record_memory_history(enabled=None)
            analyze(path)

    gpu_model_runner.GPUModelRunner.profile_run = profile_run

    original_load = gpu_model_runner.GPUModelRunner.load_model

    def load_model(self, *args, **kwargs):
        before = torch.cuda.memory_allocated()
        result = original_load(self, *args, **kwargs)
        allocated = torch.cuda.memory_allocated() - before
        held = held_bytes(self.model)
        print(
            f"load: allocated {allocated} B, parameters and buffers {held} B, "
            f"allocator blocks beyond them {allocated - held} B"
        )
        return result

    gpu_model_runner.GPUModelRunner.load_model = load_model

    model_dir = tempfile.mkdtemp(prefix="vllm-forward-peak-")
    # A directory: a repository's small files (a multimodal processor needs its own); the
    # weights are dummies, so none is copied.
    weights = (".safetensors", ".bin", ".pt", ".pth", ".gguf")
    with_files = os.path.isdir(config)
    if with_files:
        for name in os.listdir(config):
            path = os.path.join(config, name)
            if os.path.isfile(path) and not name.endswith(weights):
                shutil.copy(path, os.path.join(model_dir, name))
    else:
        shutil.copy(config, os.path.join(model_dir, "config.json"))
    # `LLM()` takes the offline defaults (engine/arg_utils.py get_batch_defaults,
    # UsageContext.LLM_CLASS: 16384 batched tokens on an H100), not `vllm serve`'s 8192, which
    # the logs and the plan's `tokens` are: pass serve's explicitly.
    LLM(
        model=model_dir,
        load_format="dummy",
        skip_tokenizer_init=not with_files,
        max_model_len=max_model_len,
        max_num_batched_tokens=max_num_batched_tokens,
        max_num_seqs=max_num_seqs,
        dtype=dtype,
        pipeline_parallel_size=pp,
        gpu_memory_utilization=gpu_memory_utilization,
        enable_prefix_caching=False,
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="start vLLM on dummy weights and snapshot its profile run")
    r.add_argument(
        "config",
        help="a Hugging Face config.json, or a directory of a repository's files but its weights",
    )
    r.add_argument("--max-num-seqs", type=int, default=8)
    r.add_argument("--pp", type=int, default=1, help="pipeline-parallel size (GPUs)")
    r.add_argument("--gpu-memory-utilization", type=float, default=0.95)
    r.add_argument("--max-model-len", type=int, default=8192)
    r.add_argument(
        "--max-num-batched-tokens",
        type=int,
        default=8192,
        help="vllm serve's default on an H100 (LLM() alone would take 16384)",
    )
    r.add_argument("--dtype", default="auto", help="auto, bfloat16, float16 or float32")
    a = sub.add_parser("analyze", help="the live blocks at the peak of a snapshot")
    a.add_argument("snapshot")
    sub.add_parser("selftest", help="check the trace replay on a made-up trace")
    args = parser.parse_args()
    if args.command == "run":
        run(
            args.config,
            args.max_num_seqs,
            args.pp,
            args.gpu_memory_utilization,
            args.max_model_len,
            args.max_num_batched_tokens,
            args.dtype,
        )
    elif args.command == "analyze":
        analyze(args.snapshot)
    else:
        selftest()


if __name__ == "__main__":
    main()
