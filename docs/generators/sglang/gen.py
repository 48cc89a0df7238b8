"""Generate engines/sglang-<folder>/serve_flags.toml from the parser dumped by dump.py.

python3 gen.py VERSION [BASE_VERSION] > serve_flags.toml
Classification rules below (CLASS); every flag of the parser gets a class, an arity, a type and
the file:line (under sglang/srt/) that registers it."""
import json, re, sys, os, glob

V = sys.argv[1]
SRC = os.environ.get("SGLANG_SOURCES", ".") + f"/sglang-{V}/sglang/srt"
flags = json.load(open(f"p-{V}.json"))

def locate(opt, dest):
    """The line that registers `opt`: its add_argument call in server_args.py's add_cli_args,
    or from 0.5.15 (add_cli_args_from_dataclass registers the rest) the dataclass field of its
    destination (arg_groups/fields/*.py, or ServerArgs's own in server_args.py)."""
    sa = f"{SRC}/server_args.py"
    text = open(sa).read()
    lines = text.split("\n")
    start = next(i for i, l in enumerate(lines) if "def add_cli_args" in l)
    def field():
        for f in sorted(glob.glob(f"{SRC}/arg_groups/fields/*.py")) + [sa]:
            for i, line in enumerate(open(f), 1):
                if re.match(rf"\s+{re.escape(dest)}\s*:", line):
                    if "no_cli=True" in line:
                        return None
                    return f"{os.path.relpath(f, SRC)}:{i}"
        return None
    # An option string of an add_argument call: `"--x",` on its own line or the call's first
    # argument (not a `new_flag="--x"` or a help text naming it).
    option = re.compile(rf'^\s*(parser\.add_argument\(\s*)?"{re.escape(opt)}"\s*[,)]')
    def call():
        for i in range(start, len(lines)):
            if option.search(lines[i]):
                return f"server_args.py:{i + 1}"
        return None
    order = (call, field)
    for find in order:
        at = find()
        if at:
            return at
    raise SystemExit(f"no source line for {opt}")

# ---- the classification ----------------------------------------------------------------
MODELLED = {
    "--tp-size": "--tp-size", "--pp-size": "--pp-size", "--dp-size": "--dp-size",
    "--ep-size": "--ep-size", "--mem-fraction-static": "--mem-fraction-static",
    "--context-length": "--context-length", "--chunked-prefill-size": "--chunked-prefill-size",
    "--max-running-requests": "--max-running-requests", "--max-total-tokens": "--max-total-tokens",
    "--page-size": "--page-size", "--cuda-graph-max-bs": "--cuda-graph-max-bs",
    "--disable-cuda-graph": "--disable-cuda-graph", "--dtype": "--dtype",
    "--kv-cache-dtype": "--kv-cache-dtype", "--enable-ep-moe": "--enable-ep-moe",
    "--disable-radix-cache": "--disable-radix-cache", "--quantization": "--quantization",
    "--mamba-full-memory-ratio": "--mamba-full-memory-ratio",
    "--max-mamba-cache-size": "--max-mamba-cache-size",
    "--swa-full-tokens-ratio": "--swa-full-tokens-ratio",
    "--disable-hybrid-swa-memory": "--disable-hybrid-swa-memory",
}
# What `--chunked-prefill-size` at or below 0 does (serve_flags.toml `negative`).
CHUNKED_NEGATIVE = ("a value at or below 0 disables chunked prefill, which SGLang takes; what the "
                    "reserve and the prefill graphs then read (--max-prefill-tokens) is not modelled")
# Modelled flags whose default a start-up log's resolved settings always print: `no_byte` holds
# it, so check-log reads the printed default as the flag not given (a model without recurrent
# state refuses the flag itself). From 0.5.20 the parser's default is None and the field
# resolves to its `fallback` (0.5.23 arg_groups/fields/schedule.py:220-227: 0.9).
MODELLED_DEFAULT = {"--mamba-full-memory-ratio": "0.9"}
MODEL = {"--model-path": "name", "--revision": "revision", "--download-dir": "download_dir"}
# No byte of the start-up depends on these (serving, logging, metrics, tokenizer processes,
# networking, parsers of the API's output, timeouts, request-level behaviour).
IGNORED_RE = [
    r"^--tokenizer", r"^--detokenizer", r"^--skip-tokenizer-init$", r"^--trust-remote-code$",
    r"^--host$", r"^--port$", r"^--api-key$", r"^--admin-api-key$", r"^--served-model-name$",
    r"^--weight-version$", r"^--chat-template$", r"^--trust-request-chat-template$",
    r"^--hf-chat-template-name$", r"^--completion-template$", r"^--file-storage-path$",
    r"^--enable-cache-report$", r"^--return-input-ids$", r"^--return-output-ids$",
    r"^--default-chat-template-kwargs$", r"^--strip-thinking-cache$", r"^--enable-strict-thinking$",
    r"^--tool-server$", r"^--sampling-defaults$", r"^--preferred-sampling-params$",
    r"^--allow-auto-truncate$", r"^--stream-interval$", r"^--batch-notify-size$",
    r"^--stream-response-default-include-usage$", r"^--incremental-streaming-output$",
    r"^--log-", r"^--uvicorn-", r"^--crash-dump-folder$", r"^--show-time-cost$",
    r"^--enable-metrics", r"^--smg-http-sidecar-port$", r"^--enable-mfu-metrics$",
    r"^--load-snapshot-publish-interval$", r"^--extra-metric-labels$", r"^--bucket-",
    r"^--prompt-tokens-buckets$", r"^--generation-tokens-buckets$", r"^--gc-warning-threshold-secs$",
    r"^--decode-log-interval$", r"^--enable-request-time-stats-logging$", r"^--kv-events-config$",
    r"^--load-publish-endpoint$", r"^--enable-forward-pass-metrics$", r"^--forward-pass-metrics-",
    r"^--enable-trace$", r"^--trace-modules$", r"^--otlp-", r"^--export-metrics-to-file",
    r"^--constrained-json-", r"^--grammar-backend$", r"^--reasoning-parser$",
    r"^--tool-call-parser$", r"^--ssl-", r"^--enable-ssl-refresh$", r"^--enable-http2$",
    r"^--http2-", r"^--fastapi-root-path$", r"^--nccl-port$", r"^--dist-timeout$",
    r"^--dist-init-addr$", r"^--gated-launch-port$", r"^--node-rank$",
    r"^--watchdog-timeout$", r"^--soft-watchdog-timeout$", r"^--random-seed$",
    r"^--sleep-on-idle$", r"^--gc-threshold$", r"^--skip-server-warmup$", r"^--warmups$",
    r"^--max-queued-requests$", r"^--schedule-policy$", r"^--enable-priority-scheduling$",
    r"^--disable-priority-preemption$", r"^--default-priority-value$",
    r"^--abort-on-priority-when-disabled$", r"^--schedule-low-priority-values-first$",
    r"^--priority-scheduling-preemption-threshold$", r"^--retraction-policy$",
    r"^--schedule-conservativeness$", r"^--radix-eviction-policy", r"^--scheduler-recv-interval$",
    r"^--base-gpu-id$", r"^--gpu-id-step$", r"^--grpc-port$", r"^--grpc-response-timeout-secs$",
    r"^--enable-http-worker-reuseport$", r"^--allowed-media-domains$",
    r"^--media-url-max-file-size-mb$", r"^--trust-mm-content-hashes$", r"^--enable-response-store$",
    r"^--enable-custom-logit-processor$", r"^--disable-outlines-disk-cache$",
    r"^--tokenizer-metrics-", r"^--enable-tokenizer-batch-encode$", r"^--disable-tokenizer-batch-decode$",
    r"^--enable-dynamic-batch-tokenizer$", r"^--dynamic-batch-tokenizer-", r"^--spec-trace-dir$",
    r"^--mlx-enable-sampling$", r"^--model-checksum$", r"^--sampling-backend$",
    r"^--kv-canary-sweep-interval$", r"^--asr-max-", r"^--prefill-delayer-.*-buckets$",
    r"^--disable-fast-image-processor$", r"^--image-processor-backend$", r"^--mm-processor-worker-num$",
    r"^--mm-io-worker-num$", r"^--engine-info-bootstrap-port$", 
    r"^--debug-tensor-dump-", r"^--msprobe-dump-config$",
    
    
    
    r"^--enable-layerwise-nvtx-marker$", r"^--enable-profile-cuda-graph$", r"^--debug-cuda-graph$",
    r"^--weight-loader-disable-mmap$", r"^--weight-loader-prefetch-", r"^--weight-loader-drop-cache-after-load$",
    r"^--delete-ckpt-after-loading$", r"^--checkpoint-engine-wait-weights-before-ready$",
    r"^--load-balance-method$", r"^--enable-p2p-check$",
    r"^--enable-cache-report$", r"^--watermark-config$",
    r"^--enable-watermark$", r"^--smg-grpc-mode$", r"^--grpc-mode$", r"^--use-ray$",
]
# Refused: memory depends on them and they are not modelled. (pattern, why), first match wins.
REFUSED = [
    (r"^--enable-memory-saver$|^--enable-deterministic-inference$|^--rl-on-policy-target$|^--startup-weight-load-mode$|^--sidecar", "it changes how SGLang allocates, loads or which kernels it runs; not modelled"),
    (r"^--enable-return-hidden-states$|^--return-hidden-states-mode$|^--enable-return-routed-experts$|^--enable-return-indexer-topk$", "the buffers that capture hidden states, routed experts or indexer picks are not modelled"),
    (r"^--decrypted-config-file$", "the model's config then comes from the decrypted file; give that config with --hf-config and drop the flag"),
    (r"^--disable-radix-cache$", "without the radix cache SGLang sizes the pool otherwise (mem_cache/kv_cache_configurator.py:3063-3080 in 0.5.23), not modelled"),
    (r"^--disable-overlap-schedule$", "the overlap scheduler's setting changes how SGLang sizes the pool and the requests (mem_cache/kv_cache_configurator.py:3073-3080 in 0.5.23), not modelled"),
    (r"^--nnodes$", "a launch over several nodes is not modelled (SGLang then asserts that the GPUs divide among the nodes and refuses data-parallel replicas across nodes: 0.5.23 arg_groups/validation_hook.py:179, 199; 0.4.6 server_args.py:1222-1227)"),
    (r"^--device$", "only CUDA GPUs are modelled (the GPU itself is named by the planner's --device before `--`)"),
    (r"^--speculative-|^--enable-multi-layer-eagle|^--decoupled-spec-|^--uno-lora-path", "speculative decoding's draft model and its KV cache are not modelled"),
    (r"lora|^--experts-shared-outer-loras", "LoRA adapters' weights and buffers are not modelled"),
    (r"^--hicache-|^--enable-hierarchical-cache|^--enable-unified-cache-external-linker|^--unified-cache-external-linker|^--enable-linker-mla-dedup", "the hierarchical (host) cache is not modelled"),
    (r"^--mamba-|^--max-mamba-cache-size|mamba|^--linear-attn|linear-replayssm", "the recurrent-state pools of hybrid models are not modelled"),
    (r"^--swa-|swa", "its sliding-window setting (bounded replay, SWA prefix tails) is not modelled"),
    (r"cuda-graph|^--torch-compile-max-bs|^--enable-cudagraph-gc", "the CUDA-graph settings are SGLang's defaults; other backends and sizes are not modelled"),
    (r"^--enable-torch-compile", "torch.compile's buffers are not modelled"),
    (r"attention-backend|^--attention-backend|^--dsa-|^--dsv4-|^--enable-lean-attention|^--triton-attention|^--flashinfer-mla|^--qsa-", "the attention backend is chosen as SGLang chooses it by default; another one's workspaces are not modelled"),
    (r"gemm-backend|^--moe-runner-backend|^--moe-a2a-backend|^--flashinfer-mxfp4|^--fp4|^--fp8", "the kernel backends are SGLang's defaults; others' workspaces are not modelled"),
    (r"^--enable-dp-attention$", "attention data parallelism is not modelled (attention TP = tp / dp: each rank holds the attention weights and KV heads of tp / dp ranks, the reserve adds max_bs x dp x 3 MB and --max-running-requests divides by dp); plain --dp-size replicas are"),
    (r"^--enable-dp-lm-head$|^--moe-dense-tp-size$", "it shards the head or the dense MLPs over the attention-TP group of attention data parallelism, which is not modelled"),
    (r"^--ep-|^--eplb|^--enable-eplb|^--init-expert-location|^--expert-distribution|^--expert-balancedness|^--deepep|^--fuseep|^--elastic-ep|^--enable-elastic|^--max-ep-size|^--mooncake|^--enable-waterfill|^--moe-dense-tp-size|^--moe-dp-size|^--flashinfer-a2a|^--enable-paged-experts|^--paged-experts", "expert parallelism's buffers and redundant experts are not modelled"),
    (r"^--disaggregation|^--num-reserved-decode-tokens|^--optimistic-prefill|^--encoder-|^--enable-adaptive-dispatch|^--encoder-only|^--language-only|^--enable-pd", "prefill/decode or encoder disaggregation is not modelled"),
    (r"^--cpu-offload|^--offload-|^--ple-offload|^--enable-weights-cpu-backup|^--enable-draft-weights-cpu-backup|^--kt-", "weights offloaded to the CPU are not modelled"),
    (r"^--enable-lmcache|^--lmcache|^--enable-flexkv|^--flexkv", "an external KV-cache connector is not modelled"),
    (r"^--dllm", "diffusion language models are not modelled"),
    (r"^--quantization", "the checkpoint's own quantization is read from its config; a method applied while loading is not modelled for SGLang"),
    (r"^--load-format|^--model-loader-extra-config|^--custom-weight-loader|^--remote-instance|^--modelexpress|^--weight-cache|^--decrypted-draft", "a load format or loader that changes what is loaded is not modelled"),
    (r"^--json-model-override-args", "overrides of the model's config; edit the config.json given to --hf-config instead"),
    (r"^--is-embedding|^--enable-multimodal|^--model-impl|^--model-config-parser|^--language-model-only|^--mm-|^--enable-broadcast-mm|^--enable-prefix-mm-cache|^--limit-mm-data|^--enable-mm-global|^--mm-global", "multimodal and embedding models, and other model implementations, are not modelled for SGLang"),
    (r"^--enable-dp-attention|^--attn-dp-size|^--attn-cp-size|^--dcp-|^--enable-prefill-cp|^--cp-strategy|^--dwdp-size|^--enable-kv-cache-sharding|^--enable-dsa-cache|^--enable-cp-decode|^--enable-dp-lm-head|^--enable-tp-lm-head|^--enable-attn-tp|^--enable-shared-experts-attn-tp|^--shared-experts-tp-size|^--enable-dense-mlp-attn-tp|^--enable-layernorm-sp|^--disable-attn-tp-gather|^--enable-dp-attention-local|^--pp-max-micro-batch-size|^--pp-async-batch-depth|^--enable-megamoe|^--enable-two-batch-overlap|^--enable-single-batch-overlap|^--tbo-", "this parallel or overlap scheme's buffers and sharding are not modelled"),
    (r"allreduce|all-reduce|^--enable-nccl-nvls|^--enable-symm-mem|^--enable-mscclpp|^--enable-torch-symm-mem|^--pre-warm-nccl|^--boundary-reduction|^--enable-quant-communications|^--enable-scattered-sconv", "the communicators' buffers are SGLang's defaults (custom all-reduce on); others are not modelled"),
]
REFUSED_DEFAULT = "its effect on memory is not modelled"

# ---- flags classed one by one -----------------------------------------------------------
# Each was read where the release uses its value. `why` cites the release's own line: the
# first line of each (file under sglang/srt/, pattern) found in that release's sources, the
# alternatives tried in order; a release where none matches stops the generator, so a use
# that moved is read again rather than cited stale. `unread` flags are checked instead: no
# code of the release reads the field beyond its declaration and the parser.
def cite(path, pattern):
    f = f"{SRC}/{path}"
    if not os.path.exists(f):
        return None
    for i, line in enumerate(open(f), 1):
        if re.search(pattern, line):
            return f"{path}:{i}"
    return None

_SOURCES = []
def readers(dest):
    """The lines of the release that read `dest` (the field's declaration, the parser's
    registration and the field lists excluded)."""
    if not _SOURCES:
        for f in sorted(glob.glob(f"{SRC}/**/*.py", recursive=True)):
            rel = os.path.relpath(f, SRC)
            if not (rel.startswith("arg_groups/fields/") or rel == "arg_groups/field_order.py"):
                _SOURCES.append((rel, open(f).read().split("\n")))
    word = re.compile(rf"\b{dest}\b")
    out = []
    for rel, lines in _SOURCES:
        for i, line in enumerate(lines, 1):
            if word.search(line) and not re.match(rf"\s+{dest}\s*:", line) \
                    and "default=ServerArgs." not in line:
                out.append(f"{rel}:{i}")
    return out

# Each flag: its alternatives, tried in order; the first that holds for the release classes
# it. `cite`: (file, pattern) pairs, the first found cited as {0}; `only`: the class holds
# when every line that reads the field matches this pattern (a release that reads it anywhere
# else falls through to the next alternative), the first of them cited as {0}.
SCHEDULER_ONLY = (r"^(managers/(scheduler|scheduler_[a-z_]+|schedule_policy|tp_worker|tp_worker_overlap_thread"
                  r"|tokenizer_manager|scheduler_components/[a-z_]+)\.py|entrypoints/.*|disaggregation/.*|dllm/.*)$")
PER_FLAG = {
    # ignored: read only where requests are scheduled, threads bound or kernels' precision set.
    "--enable-mixed-chunk": [dict(cls="ignored", why="a prefill batch takes the running decode requests in at run time ({0}); no pool size, default or buffer of the start-up reads it",
        cite=[("managers/scheduler.py", r"(server_args|get_schedule\(\))\.enable_mixed_chunk\s*$")])],
    "--enable-tf32-matmul": [dict(cls="ignored", why="it sets torch's float32 matmul precision ({0}); no tensor is allocated by it",
        cite=[("model_executor/model_runner.py", r"set_float32_matmul_precision")])],
    "--numa-node": [dict(cls="ignored", why="it binds the scheduler process's CPU threads and host memory to a NUMA node ({0}); no GPU byte depends on it",
        cite=[("managers/scheduler.py", r"numa_bind_to_node\(")])],
    "--num-continuous-decode-steps": [dict(cls="ignored", why="no code of the release reads it beyond its own field and flag", only=r"^$")],
    # A prefill batch's token budget: the scheduler's alone until the mem_fraction_static
    # default reserves activations for it with chunked prefill off.
    "--max-prefill-tokens": [
        dict(cls="ignored", why="only the scheduler reads it, as a prefill batch's token budget at run time ({0}; disaggregation's readers run only in a disaggregated mode, refused)",
             only=SCHEDULER_ONLY, cite=[("managers/scheduler.py", r"self\.max_prefill_tokens,")]),
        dict(cls="refused", why="it sizes mem_fraction_static's activation reserve when chunked prefill is off ({0}) and the prefill workspaces some attention and MoE backends take, which are not modelled",
             cite=[("arg_groups/memory_hook.py", r"activation_tokens = max\(cfg\.max_prefill_tokens"),
                   ("server_args.py", r"max\(self\.max_prefill_tokens, 2048\)")])],
    # refused, precisely.
    "--config": [dict(cls="refused", why="SGLang merges the YAML file's options into the line ({0}, prepare_server_args), which the planner does not read: write them on the line instead",
        cite=[("server_args.py", r'"--config" in argv')])],
}

def per_flag(opt, dest):
    if opt not in PER_FLAG:
        return None
    for alt in PER_FLAG[opt]:
        at = None
        if "only" in alt:
            found = readers(dest)
            if any(not re.match(alt["only"], r.split(":")[0]) for r in found):
                continue
            at = found[0] if found else None
        for path, pattern in alt.get("cite", []):
            at = cite(path, pattern) or at
            if at and at.startswith(path):
                break
        if "{0}" in alt["why"] and not at:
            continue
        return (alt["cls"], alt["why"].format(at))
    raise SystemExit(f"{opt}: no alternative holds for {V}: read it again")

def classify(opt, dest=None):
    if opt in MODEL: return ("model", None)
    if opt in MODELLED: return ("modelled", None)
    got = per_flag(opt, dest)
    if got: return got
    for r in IGNORED_RE:
        if re.search(r, opt): return ("ignored", None)
    for r, why in REFUSED:
        if re.search(r, opt): return ("refused", why)
    return ("refused", REFUSED_DEFAULT)

TYPES = {"str": "str", "nullable_str": "str", "int": "int", "float": "float", "loads": "json",
         "json_list_type": "json", "human_readable_int": "si_iec_int",
         "parse_cuda_graph_backend_arg": "str", "parse_cuda_graph_config_arg": "json", None: "str"}

def q(s): return json.dumps(s)

def literal_default(x):
    d = x["default"]
    if d == "'{}'": return q("{}")
    if d in ("None", "[]", "{}", "''"): return None
    if re.fullmatch(r"-?\d+", d): return d
    if re.fullmatch(r"-?\d+\.\d+(e-?\d+)?", d): return d
    m = re.fullmatch(r"'([^']*)'", d)
    if m: return q(m.group(1))
    return None

def entry(x):
    opts = x["opts"]; long = opts[0]
    shorts = [o for o in opts[1:] if not o.startswith("--no-")]
    cls, why = classify(long, x["dest"])
    a, nargs = x["action"], x["nargs"]
    if a == "BooleanOptionalAction": takes = "bool"
    elif nargs == 0: takes = "none"
    elif nargs == "+": takes = "list"
    elif nargs == "*": takes = "any"
    elif nargs == "?": takes = "optional"
    else: takes = "one"
    parts = [f'class = "{cls}"', f'takes = "{takes}"']
    if takes not in ("none", "bool"):
        parts.append(f'type = "{TYPES[x["type"]]}"')
        if x["type"] == "nullable_str": parts.append("none = true")
    if shorts: parts.append("short = [" + ", ".join(q(s) for s in shorts) + "]")
    if cls == "model": parts.append(f'role = "{MODEL[long]}"')
    if cls == "modelled":
        parts.append(f'to = "{MODELLED[long]}"')
        if long == "--kv-cache-dtype":
            parts.append('values = ["auto", "fp8_e4m3", "fp8_e5m2"]')
            parts.append('why = "only auto and the one-byte fp8 caches are modelled"')
        if long == "--dtype":
            parts.append('rename = { half = "float16", float = "float32" }')
        if long == "--chunked-prefill-size":
            # SGLang takes a value at or below 0 (schedule.py:52-55 in 0.5.23), unlike a
            # negative count it refuses; the refusal names what is not modelled.
            parts.append(f"negative = {q(CHUNKED_NEGATIVE)}")
        if long in MODELLED_DEFAULT:
            d = literal_default(x) or MODELLED_DEFAULT[long]
            parts.append(f"no_byte = [{d}]")
        if long == "--device":
            parts.append('values = ["cuda"]')
            parts.append('why = "only CUDA devices are modelled"')
    if x["choices"] and x["type"] is not None or (x["choices"] and takes == "one"):
        parts.append("choices = [" + ", ".join(q(c) for c in x["choices"]) + "]")
    if cls == "refused":
        if takes == "bool":
            d = x["default"]
            nb = {"True": "[true]", "False": "[false]", "None": "[false]"}.get(d)
            if nb: parts.append(f"no_byte = {nb}")
        elif takes not in ("none",):
            d = literal_default(x)
            if long == "--device": d = q("cuda")
            if d is not None and TYPES[x["type"]] not in ("json",): parts.append(f"no_byte = [{d}]")
        parts.append(f"why = {q(why)}")
    elif why:
        # An ignored flag classed one by one says where its release reads it.
        parts.append(f"why = {q(why)}")
    parts.append(f'at = "{locate(long, x["dest"])}"')
    return long, "{ " + ", ".join(parts) + " }"

out = {}
for x in flags:
    k, v = entry(x)
    out[k] = v
if __name__ == "__main__":
    for k in sorted(out):
        print(f"{q(k)} = {out[k]}")
