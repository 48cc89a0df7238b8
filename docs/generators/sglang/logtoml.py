import json, re, os, glob
WT = os.environ.get("ENGINES_DIR", os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../../engines"))
def vkey(v):
    base, _, post = v.partition(".post")
    return [int(x) for x in base.split(".")] + [int(post) if post else -1]
d = json.load(open("overlays.json"))["outputs"]
def find(v, globs, needle):
    root = os.environ.get("SGLANG_SOURCES", ".") + f"/sglang-{v}/sglang/srt"
    for g in globs:
        for f in sorted(glob.glob(f"{root}/{g}")):
            for i, line in enumerate(open(f), 1):
                if any(n in line for n in needle.split("|")):
                    return f"{os.path.relpath(f, root)}:{i}"
    raise SystemExit(f"{v}: {needle} not found")
LINES = [
    ("server_args={args}", ["entrypoints/engine.py"], "logger.info(f\"{server_args=}\")|logger.info(f\"server_args={"),
    ("Load weight end. {}mem usage={weights} GB.", ["model_executor/model_runner.py"], '"Load weight end. "'),
    ("KV Cache is allocated. {}K size: {k_cache} GB, V size: {v_cache} GB", ["mem_cache/memory_pool.py"], "K size: {k_size"),
    ("KV Cache is allocated. {}KV size: {kv_cache} GB", ["mem_cache/memory_pool.py"], "KV size: {kv_size"),
    ("max_total_num_tokens={kv_cache_tokens}, chunked_prefill_size={max_num_batched_tokens}, max_prefill_tokens={}, max_running_requests={max_num_seqs}, context_len={max_model_len}, available_gpu_mem={available_memory} GB", ["managers/scheduler.py"], 'f"max_total_num_tokens={self.max_total_num_tokens}, "'),
    ("Capture {} end. {}mem usage={cuda_graph_actual} GB", ["model_executor/model_runner.py", "model_executor/model_runner_components/cuda_graph_setup.py"], "mem usage={"),
]
for folder, (rels, *_) in d.items():
    newest = max(rels, key=vkey)
    out = [f"# What SGLang {', '.join(rels)} prints at start-up: the lines `cargo xtask check-log --engine",
           f"# sglang==X` reads, as engines/sglang-0.5.23/log.toml (format, prefix, units); `at` is the",
           f"# format string in SGLang {newest}'s sources (paths under sglang/srt/). `server_args=` prints the",
           f"# dataclass's repr, `ServerArgs(model_path=..., ...)`, before 0.5.19 (entrypoints/engine.py,",
           f"# `logger.info(f\"{{server_args=}}\")`), a dict of every resolved field from 0.5.19.",
           "schema = 1", f"releases = [{', '.join(json.dumps(r) for r in rels)}]", ""]
    sched = open(os.environ.get("SGLANG_SOURCES", ".") + f"/sglang-{newest}/sglang/srt/managers/scheduler.py").read()
    block = sched[sched.index('f"max_total_num_tokens={self.max_total_num_tokens}, "'):][:600]
    for pattern, globs, needle in LINES:
        if pattern.startswith("max_total_num_tokens=") and "available_gpu_mem" not in block.split(")")[0]:
            # Before 0.4.6.post4 the line ends at context_len.
            pattern = pattern[: pattern.index(", available_gpu_mem=")]
        if "mem usage={" == needle:
            # The capture line: the `mem usage=` a few lines after "graph end".
            root = os.environ.get("SGLANG_SOURCES", ".") + f"/sglang-{newest}/sglang/srt"
            at = None
            for g in globs:
                f = f"{root}/{g}"
                if not os.path.exists(f): continue
                ls = open(f).read().split("\n")
                for i, l in enumerate(ls):
                    if "Capture" in l and (" end. " in l or "graph end" in l) and "f\"" in l and "begin" not in l and "logger" not in l:
                        at = f"{os.path.relpath(f, root)}:{i+1}"; break
                if at: break
            assert at, (folder, "capture")
        else:
            at = find(newest, globs, needle)
        out += ["[[line]]", f"pattern = {json.dumps(pattern)}", f'at = "{at}"', ""]
    open(f"{WT}/{folder}/log.toml", "w").write("\n".join(out).rstrip() + "\n")
    print(folder, newest, "ok")
