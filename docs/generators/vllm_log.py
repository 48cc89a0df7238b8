#!/usr/bin/env python3
"""Finds, in each vLLM release's source, the logger calls whose lines check-log reads, and
writes engines/<folder>/log.toml for a folder's releases (every release of the folder must
print the same lines). usage: vllm_log.py FOLDER OUT REL...  (wheel sources unpacked in $VLLM_SOURCES/vllm-<release>/)."""
import os, re, sys
from pathlib import Path
SRC = Path(os.environ["VLLM_SOURCES"])
W = ["v1/worker/gpu_worker.py"]
MR = ["v1/worker/gpu_model_runner.py", "v1/worker/gpu/model_runner.py"]
KV = ["v1/core/kv_cache_utils.py"]
EP = ["entrypoints/utils.py", "entrypoints/serve/utils/api_utils.py", "entrypoints/common/startup.py"]
# (pattern, regex on the source line of the format string, files in order, logger line regex or None)
SPECS = [
 [("non-default args: {args}", r'"non-default args: %s"', EP)],
 [("Resolved architecture: {architecture}", r'"Resolved architecture: %s"', ["config/model.py", "config/__init__.py", "config.py"])],
 [("Defaulting max_num_batched_tokens to {max_num_batched_tokens} for {} usage context.", r'"Defaulting max_num_batched_tokens to %d for %s usage context."', ["engine/arg_utils.py"]),
  ("Setting max_num_batched_tokens to {max_num_batched_tokens} for {} usage context.", r'"Setting max_num_batched_tokens to %d for %s usage context."', ["engine/arg_utils.py"])],
 [("Defaulting max_num_seqs to {max_num_seqs} for {} usage context.", r'"Defaulting max_num_seqs to %d for %s usage context."', ["engine/arg_utils.py"]),
  ("Setting max_num_seqs to {max_num_seqs} for {} usage context.", r'"Setting max_num_seqs to %d for %s usage context."', ["engine/arg_utils.py"])],
 [("Chunked prefill is enabled with max_num_batched_tokens={max_num_batched_tokens}.", r'"Chunked prefill is enabled with max_num_batched_tokens=%d\."', ["config/scheduler.py", "config.py"])],
 [("worker init memory snapshot: {}total_memory={device_total}GiB", r'"worker init memory snapshot: %r"', W)],
 [("worker requested memory: {requested}GiB", r'"worker requested memory: %sGiB"', W)],
 [("Model loading took {weights} GiB memory and {} seconds", r'"Model loading took (%s|%\.4f) GiB memory and %\.6f seconds"', MR),
  ("Model loading took {weights} GiB and {} seconds", r'"Model loading took %\.4f GiB and %\.6f seconds"', MR)],
 [("Memory profiling takes {} seconds. Total non KV cache memory: {non_kv}GiB; torch peak memory increase: {activation_peak}GiB; non-torch forward increase memory: {non_torch}GiB; weights memory: {weights}GiB.", r'logger\.debug\(profile_result\)', W),
 ],
 [("Available KV cache memory: {kv_cache} GiB", r'"Available KV cache memory: (%s|%\.2f) GiB"', W)],
 [("Profiling CUDA graph memory: {cuda_graph_captures}", r'"Profiling CUDA graph memory: %s"', MR)],
 [("Estimated CUDA graph memory: {cuda_graph_estimate} GiB total", r'"Estimated CUDA graph memory: %\.2f GiB total"', MR)],
 [("GPU KV cache size: {kv_cache_tokens} tokens", r'"GPU KV cache size: %s tokens"[,)]', KV),
  ("KV cache size: {kv_cache_tokens} tokens, Maximum concurrency for {max_model_len} tokens per request: {max_concurrency}x", r'"(GPU|%s) KV cache size: %s tokens, "$', KV)],
 [("Maximum concurrency for {max_model_len} tokens per request: {max_concurrency}x", r'^\s*(logger\.info(_once)?\()?"Maximum concurrency for %s tokens per request: %\.2fx",', KV)],
 [("Graph capturing finished in {} secs, took {cuda_graph_actual} GiB", r'"Graph capturing finished in %\.0f secs, took %\.2f GiB"', MR)],
 [("device_name={device_name}", r'return f"E=\{E\},N=\{N\},device_name=\{device_name\}', ["model_executor/layers/fused_moe/fused_moe.py"])],
]
MEMREPR = {
 "non_torch": (r'f"non-torch forward increase memory: "', "Memory profiling takes {} seconds. Total non KV cache memory: {non_kv}GiB; torch peak memory increase: {activation_peak}GiB; non-torch forward increase memory: {non_torch}GiB; weights memory: {weights}GiB."),
 "consumed": (r'f"total consumed \(from mem_get_info\): "', "Memory profiling takes {} seconds. Total non KV cache memory: {non_kv}GiB; torch peak memory increase: {activation_peak}GiB; total consumed (from mem_get_info): {}GiB; weights memory: {weights}GiB."),
}
def find(rel, spec):
    root = SRC / f"vllm-{rel}" / "vllm"
    for pat, rx, files in spec:
        for f in files:
            p = root / f
            if not p.is_file(): continue
            lines = p.read_text().splitlines()
            for i, l in enumerate(lines):
                if re.search(rx, l):
                    # the logger call: this line or one of the three above
                    at = i
                    for j in range(i, max(i - 4, -1), -1):
                        if "logger." in lines[j]: at = j; break
                    else:
                        if "logger." not in l and "return f" not in l: continue
                    call = lines[at]
                    level = "DEBUG" if "logger.debug" in call else None
                    if pat.startswith("Memory profiling"):
                        mu = root / "utils/mem_utils.py"
                        if not mu.is_file(): mu = root / "utils/__init__.py"
                        t = mu.read_text()
                        ms = [k for k, (r, _) in MEMREPR.items() if re.search(r, t)]
                        if len(ms) != 1: return None
                        pat = MEMREPR[ms[0]][1]
                        m = next(k for k, ln in enumerate(t.splitlines()) if "Memory profiling takes" in ln)
                        return pat, f"{f}:{at+1}", level, f"{mu.relative_to(root)}:{m+1}"
                    if pat.startswith("worker init memory snapshot"):
                        mu = root / "utils/mem_utils.py"
                        if 'f"total_memory={format_gib(self.total_memory)}GiB, "' not in mu.read_text(): return None
                    return pat, f"{f}:{at+1}", level, None
    return None
folder, out, rels = sys.argv[1], sys.argv[2], sys.argv[3:]
res = []
for spec in SPECS:
    got = [find(r, spec) for r in rels]
    pats = {g[0] if g else None for g in got}
    if len(pats) != 1:
        sys.exit(f"{folder}: releases differ on {spec[0][0][:40]}: {got}")
    res.append((spec[0][0], got[0]))
one_line = any(g and g[0].startswith("KV cache size: ") for _, g in res)
w = open(out, "w").write
title = ", ".join(rels)
w(f"""# What vLLM {title} print{'s' if len(rels) == 1 else ''} at start-up (DEBUG and INFO levels): the lines `cargo xtask
# check-log` reads. Format and rules: engines/vllm-0.19/log.toml and docs/engines.md, "Checking a
# start-up log". Read from each release's own sources (paths under
# vllm/): every logger call below was found, with the same format string, in every release listed;
# `at` cites the first one's. A line 0.19 reads that these releases do not print is left out
# (named at the end).
schema = 1
releases = [{", ".join(f'"{r}"' for r in rels)}]
""")
for first, g in res:
    if g is None or (one_line and first.startswith("Maximum concurrency")):
        continue
    pat, at, level, fmt = g
    w("\n[[line]]\n")
    w(f"pattern = {pat!r}\n".replace("'", '"') if '"' not in pat else f"pattern = '{pat}'\n")
    w(f'at = "{at}"\n')
    if level: w(f'level = "{level}"\n')
    if fmt: w(f"# the result's __repr__: {fmt}\n")

gone = [first for first, g in res if g is None]
if one_line:
    w("\n# The KV cache's tokens and the concurrency print on one line (the logger call above).\n")
if gone:
    w("\n# Not printed by these releases (no logger call with the format string 0.19 prints):\n")
    for first in gone:
        w(f"# {first}\n")
