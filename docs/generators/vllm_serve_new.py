#!/usr/bin/env python3
"""Writes engines/vllm-<folder>/serve_flags.toml for 0.20 .. 0.34: what differs from the
folder it extends, from vllm_flags.py's extraction of each release ($VLLM_FLAG_DUMPS/v<rel>.json)."""
import json, os, re, sys
exec(open(os.path.join(os.path.dirname(os.path.abspath(__file__)), 'vllm_flag_diff.py')).read().split('pairs=')[0])
IG, R = "ignored", "refused"
C = {}
def c(n, cls, why=None, no_byte=None, **kw):
    C[n] = dict(cls=cls, why=why, no_byte=no_byte, **kw)
NB_F = [False]
# 0.20
c("--enable-flash-late-interaction", IG)
c("--enable-mamba-cache-stochastic-rounding", R, "stochastic rounding of the recurrent state is not modelled", NB_F)
c("--ir-op-priority", R, "the kernel settings are vLLM's defaults")
c("--mamba-backend", R, "the recurrent state's backend is the one vLLM chooses by default", ["triton"])
c("--mamba-cache-philox-rounds", IG)  # read only with stochastic rounding, which is refused
c("--numa-bind", IG); c("--numa-bind-cpus", IG); c("--numa-bind-nodes", IG)
# 0.21
c("--fingerprint-mode", IG); c("--fingerprint-value", IG)
c("--mm-encoder-attn-dtype", R, "an fp8 encoder attention is not modelled")
c("--mm-encoder-fp8-scale-path", IG); c("--mm-encoder-fp8-scale-save-margin", IG); c("--mm-encoder-fp8-scale-save-path", IG)
c("--safetensors-prefetch-block-size", IG); c("--safetensors-prefetch-num-threads", IG)
# 0.22
c("--cpu-distributed-timeout-seconds", IG); c("--data-parallel-multi-port-external-lb", IG)
c("--data-parallel-supervisor-port", IG); c("--dp-supervisor-probe-failure-threshold", IG)
c("--dp-supervisor-probe-interval-s", IG); c("--dp-supervisor-probe-timeout-s", IG)
c("--enable-cumem-allocator", R, "the CuMem allocator is not modelled", NB_F)
c("--enable-mixed-moe-lora-format", IG)  # LoRA settings are read only with --enable-lora, refused
c("--linear-backend", R, "the linear layers' backend is the one vLLM chooses by default", ["auto"])
c("--quantization-config", R, "a quantization configuration of one's own is not modelled")
c("--spec-method", R, "speculative decoding's draft model and its KV cache are not modelled")
c("--spec-model", R, "speculative decoding's draft model and its KV cache are not modelled")
c("--spec-tokens", R, "speculative decoding's draft model and its KV cache are not modelled")
c("--use-fp64-gumbel", R, "the sampler's float64 noise is not modelled", NB_F)
# 0.24
c("--device-ids", IG); c("--diffusion-config", R, "diffusion models are not modelled")
c("--jit-monitor-verbose", IG); c("--prefill-schedule-interval", IG); c("--watermark", IG)
# 0.25
c("--enable-per-request-metrics", IG); c("--jit-monitor-mode", IG)
c("--mm-ipc-gpu-memory-gb", R, "GPU memory set aside for multimodal inputs is not modelled", [0])
c("--model-class-overrides", R, "another model class is not modelled", ["{}"])
# 0.26
c("--enable-bf16x3-router-gemm", R, "another router GEMM kernel is not modelled", NB_F)
c("--enable-moe-shared-loras", IG)
c("--max-num-scheduled-tokens", R, "a scheduled-token cap of one's own is not modelled")
c("--prefix-match-unit", R, "a prefix-match unit of one's own is not modelled")
# 0.27
c("--cohere-format", IG); c("--cohere-is-reasoning-model", IG)
c("--enable-fault-tolerance", R, "fault tolerance is not modelled", NB_F)
c("--fault-tolerance-config", R, "fault tolerance is not modelled")
c("--kda-prefill-backend", R, "the KDA prefill backend is the one vLLM chooses by default")
c("--mamba-ssu-algorithm", R, "the recurrent state update algorithm is the one vLLM chooses by default")
c("--mm-hasher-algorithm", IG)
c("--replayssm-buffer-len", IG)  # read only with --use-replayssm, refused
c("--use-replayssm", R, "ReplaySSM's state buffers are not modelled", NB_F)
c("--video-pruning-method", IG)
# 0.28
c("--ec-manager-config", R, "the encoder-cache manager's settings are vLLM's defaults")
c("--mm-device-do-normalize", R, "normalising multimodal inputs on the GPU is not modelled")
c("--mm-processor-device", R, "a multimodal processor on the GPU is not modelled", ["auto", "cpu"])
c("--return-sampling-mask", R, "the sampling mask output is not modelled", NB_F)
# 0.29
c("--dcp-q-replicate", IG)  # read only with decode context parallelism, refused
c("--enable-batch-sharded-sampling", R, "sampling sharded over the batch is not modelled", NB_F)
c("--enable-trace-replay", R, "trace replay is not modelled", NB_F)
c("--max-num-queued-reqs", IG); c("--max-num-queued-tokens", IG); c("--per-request-spec-decode-metrics", IG)
c("--prefix-cache-retention-interval", IG); c("--sse-keep-alive-interval", IG)
# 0.30
c("--dp-sync-interval", IG); c("--elastic-ep-max-dp-size", IG)  # read only with elastic EP, refused
c("--enable-mamba-fine-grained-prefix-cache", R, "recurrent state kept per block (prefix caching of the state) is not modelled", NB_F)
c("--enable-nccl-comm-suspend", R, "suspending NCCL communicators is not modelled", NB_F)
c("--enable-scale-out", IG); c("--engram-config", R, "Engram modules are not modelled")
c("--kda-decode-backend", R, "the KDA decode backend is the one vLLM chooses by default")
c("--sparse-indexer-topk-backend", R, "the sparse indexer's top-k backend is the one vLLM chooses by default")
c("--watermark-config", R, "output watermarking is not modelled")
# 0.31
c("--anthropic-disabled-thinking-effort", IG)
c("--aux-output-config", R, "auxiliary outputs are not modelled")
c("--enable-mamba-shared-prefix-checkpoint", R, "recurrent state checkpoints of shared prefixes are not modelled", NB_F)
c("--log-level", IG); c("--logging-config", IG); c("--long-prefill-token-threshold-adaptive", IG)
c("--max-lora-cls-labels", IG)
c("--max-num-active-seqs", R, "an active-sequence cap of one's own is not modelled")
c("--sleep-preserve-parameter-names", IG)  # read only with sleep mode, refused
c("--swa-bounded-replay", R, "bounded replay of sliding-window layers is not modelled", NB_F)
c("--tool-strict-level", IG); c("--trust-request-mm-kwargs", IG)
# 0.32
c("--custom-histogram-buckets", IG)
c("--enable-hc-sp", R, "sequence parallelism is not modelled", NB_F)
c("--enable-shm-tensor-arena", IG); c("--grpc-port", IG)
c("--sleep-mode-offload-cudagraph", IG)  # read only with sleep mode, refused
# 0.33
c("--monokernel", R, "the monokernel is not modelled", NB_F)
c("--reasoning-effort-map", IG); c("--sleep-mode-backend", IG); c("--watchdog-config", IG)
# 0.34
c("--cache-aware-admission-threshold", IG); c("--cache-aware-admission-window", IG)
c("--checkpoint-prepare-on-startup", IG)
c("--enable-extensible-kv-cache", R, "an extensible KV cache is not modelled", NB_F)
c("--headless-client-handshake-address", IG); c("--max-num-inflight-kv-loads", IG)
c("--shuffle-safetensors-files", IG)

def kind(x):
    e = x.get("explicit", {}); a = (x.get("annotation") or "").strip()
    act = e.get("action", "")
    if "store_true" in act: return "none", None, False
    if "BooleanOptionalAction" in act or a.startswith("bool"): return "bool", None, False
    if "choices" in e or "lambda" in e.get("type", "") or a.startswith("Literal") : return "one", "str", False
    none = "| None" in a or "Optional" in a
    base = a.replace("| None", "").strip()
    if base.startswith("list["):
        return "list", ("int" if base.startswith("list[int") else "str"), False
    if base == "int": return "one", "int", none
    if base == "float": return "one", "float", none
    if base.startswith("dict") or base.endswith("Config") or "Config " in base or x.get("config","").startswith("VllmConfig") or "kwargs" in x.get("config", ""):
        return "one", "json", False
    return "one", "str", False

def val(v):
    if isinstance(v, bool): return "true" if v else "false"
    if isinstance(v, (int, float)): return repr(v)
    if isinstance(v, list): return "[" + ", ".join(val(i) for i in v) + "]"
    return json.dumps(v)

def entry(n, x, extra=None):
    e = dict(C[n]); e.update(extra or {})
    takes, ty, none = kind(x)
    if n == "--logging-config" or n == "--linear-backend" or n == "--sparse-indexer-topk-backend":
        takes, ty, none = ("one", "json", False) if n == "--logging-config" else ("one", "str", False)
    parts = [f'class = "{e["cls"]}"', f'takes = "{takes}"']
    if ty: parts.append(f'type = "{ty}"')
    others = [s for s in x["names"] if s != n]
    if others: parts.append(f"short = {val(others)}")
    if e.get("no_byte") is not None: parts.append(f"no_byte = {val(e['no_byte'])}")
    if none: parts.append("none = true")
    if e.get("why"): parts.append(f"why = {val(e['why'])}")
    for k in ("since", "until"):
        if e.get(k): parts.append(f'{k} = "{e[k]}"')
    parts.append(f'at = "{x["at"]}"')
    return f'"{n}" = {{ {", ".join(parts)} }}'

FOLDERS = [("vllm-0.20", ["0.20.0", "0.20.1", "0.20.2"], "0.19.1"),
 ("vllm-0.21", ["0.21.0"], "0.20.2"), ("vllm-0.22", ["0.22.0", "0.22.1"], "0.21.0"),
 ("vllm-0.23", ["0.23.0"], "0.22.1"), ("vllm-0.24", ["0.24.0"], "0.23.0"),
 ("vllm-0.25", ["0.25.0", "0.25.1"], "0.24.0"), ("vllm-0.26", ["0.26.0"], "0.25.1"),
 ("vllm-0.27", ["0.27.0", "0.27.1"], "0.26.0"), ("vllm-0.28", ["0.28.0"], "0.27.1"),
 ("vllm-0.29", ["0.29.0", "0.30.0"], "0.28.0"), ("vllm-0.31", ["0.31.0", "0.32.0"], "0.30.0"),
 ("vllm-0.33", ["0.33.0"], "0.32.0"), ("vllm-0.34", ["0.34.0"], "0.33.0")]

def literals(expanded):
    return sorted(set(re.findall(r"'([A-Za-z0-9_]+)'", expanded)))

def restated(n, x, rels):
    """The flags whose parsing changed in a way the table says: restated whole."""
    if n == "--kv-cache-dtype":
        ann = x.get("expanded") or ""
        parts = ['class = "modelled"', 'takes = "one"', 'type = "str"', 'to = "--kv-cache-dtype"',
                 'values = ["auto", "fp8", "fp8_e4m3", "fp8_e5m2"]']
        if not ann.rstrip().endswith("| str"):
            parts.append(f"choices = {val(literals(ann))}")
        parts += ['why = "only auto and the one-byte fp8 caches are modelled"', f'at = "{x["at"]}"']
        return f'"{n}" = {{ {", ".join(parts)} }}'
    if n == "--gpu-memory-utilization":
        others = [s for s in x["names"] if s != n]
        parts = ['class = "modelled"', 'takes = "one"', 'type = "float"', 'to = "--gpu-memory-utilization"']
        if others: parts.append(f"short = {val(others)}")
        if "None" in (x.get("annotation") or ""): parts.append("none = true")
        parts.append(f'at = "{x["at"]}"')
        return f'"{n}" = {{ {", ".join(parts)} }}'
    return None

def main(root):
    for folder, rels, base in FOLDERS:
        B = names(base); Rs = [names(r) for r in rels]
        allnames = sorted(set().union(*Rs), key=lambda n: n.lstrip("-"))
        lines, absent, notes = [], {}, []
        for n in allnames:
            have = [r for r, t in zip(rels, Rs) if n in t]
            x = next(t[n] for t in Rs if n in t)
            extra = {}
            if have[0] != rels[0]: extra["since"] = have[0]
            if have[-1] != rels[-1]: extra["until"] = have[-1]
            if n not in B:
                if n not in C: sys.exit(f"{folder}: {n} not classified")
                lines.append(entry(n, x, extra))
            else:
                r = restated(n, x, rels)
                b = B[n]
                if r and sig(b) != sig(x):
                    if extra: sys.exit(f"{folder}: {n} restated with since/until")
                    lines.append(r)
                elif extra and n in C and "since" not in extra:
                    lines.append(entry(n, x, extra))
                elif extra:
                    sys.exit(f"{folder}: {n} of the base with since/until: {extra}")
        for n in sorted(set(B) - set(Rs[0]), key=lambda n: n.lstrip("-")):
            absent[n] = base
        title = ", ".join(rels)
        out = [f"# `vllm serve` in vLLM {title}: what differs from the folder this one extends (whose",
               "# table, with its own changes, holds for every flag not named here). Format and rules:",
               "# engines/vllm-0.19/serve_flags.toml and docs/engines.md, \"A serve line\". Read from the sources",
               f"# of {title} (paths under vllm/): the add_argument calls of engine/arg_utils.py and the",
               "# frontend fields of the server's cli_args.py; every release listed registers the flags of this",
               "# table (a flag with `since` from that release on, with `until` up to that release). `at` cites",
               "# the sources of the first release listed that registers the flag; a flag not named here keeps the",
               "# `at` of the file that last states it, in that release's sources."
               , f'releases = [{", ".join(json.dumps(r) for r in rels)}]', ""]
        if lines:
            out += ["[flags]"] + lines + [""]
        if absent:
            out += [f"# Flags vLLM {base} had that {rels[0]} no longer registers (argparse refuses them).", "[absent]"]
            out += [f'"{n}" = "{v}"' for n, v in absent.items()] + [""]
        open(f"{root}/engines/{folder}/serve_flags.toml", "w").write("\n".join(out))
        print(folder, len(lines), "flags,", len(absent), "absent")
main(sys.argv[1])
