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
    "--kv-cache-dtype": "--kv-cache-dtype",
    "--swa-full-tokens-ratio": "--swa-full-tokens-ratio",
    "--disable-hybrid-swa-memory": "--disable-hybrid-swa-memory",
}
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
    r"^--config$", r"^--enable-cache-report$", r"^--watermark-config$",
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

def classify(opt):
    if opt in MODEL: return ("model", None)
    if opt in MODELLED: return ("modelled", None)
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
    cls, why = classify(long)
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
    parts.append(f'at = "{locate(long, x["dest"])}"')
    return long, "{ " + ", ".join(parts) + " }"

out = {}
for x in flags:
    k, v = entry(x)
    out[k] = v
if __name__ == "__main__":
    for k in sorted(out):
        print(f"{q(k)} = {out[k]}")
