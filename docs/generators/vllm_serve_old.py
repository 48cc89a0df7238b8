#!/usr/bin/env python3
"""Writes engines/vllm-<folder>/serve_flags.toml for the folders of 0.10.1 .. 0.17.1: what differs
from the folder each extends, from vllm_flags.py's extraction of each release
($VLLM_FLAG_DUMPS/v<rel>.json), plus `[at]`: where THAT release registers each flag it
inherits unchanged. Verifies afterwards that the overlaid table of every release 0.10.1 ..
0.19.1 has exactly the flags that release registers.   usage: gen_old.py WORKTREE"""
import json, os, re, sys, tomllib
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vllm_flag_kinds import kind, literals

V2 = os.environ.get("VLLM_FLAG_DUMPS", "dumps")
def load(v):
    d = json.load(open(f"{V2}/v{v}.json")); s = {}
    for x in d:
        ns = [n for n in x["names"] if n.startswith("-")]
        if not ns: continue
        l = [n for n in ns if n.startswith("--")]
        s[l[0] if l else ns[0]] = x
    return s

IG, R = "ignored", "refused"
C = {}
def c(n, cls, why=None, no_byte=None, none=False, note=None):
    C[n] = dict(cls=cls, why=why, no_byte=no_byte, none=none)
PAR = "(read by V0 only: vLLM's V1 engine, the one modelled, never reads it)"
c("--swap-space", IG)            # CPU swap space (config/cache.py: host memory only, V0's swapping)
c("--use-gpu-for-pooling-score", IG)  # read only for pooling models, refused
c("--disable-log-requests", IG)
c("--logits-processor-pattern", IG)
c("--cuda-graph-sizes", R, "the CUDA-graph sizes are vLLM's defaults; other sizes are not modelled")
c("--disable-mm-preprocessor-cache", IG)  # the processor cache is host memory
c("--enable-multimodal-encoder-data-parallel", R, "the encoder's data-parallel mode is not modelled", [False])
c("--task", R, "only the generate task is modelled (another converts the model to a pooling model)", ["auto", "generate"], none=True)
c("--eplb-log-balancedness", IG); c("--eplb-step-interval", IG); c("--eplb-window-size", IG)  # read only with --enable-eplb, refused
c("--lora-extra-vocab-size", IG)  # read only with --enable-lora, refused
c("--num-lookahead-slots", IG)    # V0's speculative decoding only (no v1/ reader)
c("--num-redundant-experts", R, "the expert load balancer's redundant experts are not modelled", [0])
c("--override-pooler-config", R, "pooling models are not modelled")
c("--enable-lora-bias", IG)       # read only with --enable-lora, refused
c("--rope-scaling", R, "overrides of the model's config; edit the config.json given to --hf-config instead")
c("--rope-theta", R, "overrides of the model's config; edit the config.json given to --hf-config instead")
c("--disable-async-output-proc", IG); c("--guided-decoding-backend", IG)
c("--guided-decoding-disable-additional-properties", IG); c("--guided-decoding-disable-any-whitespace", IG)
c("--guided-decoding-disable-fallback", IG); c("--max-seq-len-to-capture", IG)  # V0's model runner only
c("--preemption-mode", IG); c("--scheduler-delay-factor", IG)  # V0's scheduler only
c("--enable-prompt-adapter", IG)  # "has no effect on vLLM behavior" (its help)
c("--override-neuron-config", IG)  # Neuron devices only

# Folders newest first: (folder, releases, the release its base folder starts with).
FOLDERS = [("vllm-0.17", ["0.17.0", "0.17.1"], "0.18.0"),
 ("vllm-0.15", ["0.15.0", "0.15.1", "0.16.0"], "0.17.0"),
 ("vllm-0.14", ["0.14.0", "0.14.1"], "0.15.0"),
 ("vllm-0.13", ["0.13.0"], "0.14.0"),
 ("vllm-0.12", ["0.12.0"], "0.13.0"),
 ("vllm-0.11.1", ["0.11.1", "0.11.2"], "0.12.0"),
 ("vllm-0.11.0", ["0.11.0"], "0.11.1"),
 ("vllm-0.10.2", ["0.10.2"], "0.11.0"),
 ("vllm-0.10.1", ["0.10.1", "0.10.1.1"], "0.10.2")]
ALL = ["0.10.1", "0.10.1.1", "0.10.2", "0.11.0", "0.11.1", "0.11.2", "0.12.0", "0.13.0", "0.14.0",
       "0.14.1", "0.15.0", "0.15.1", "0.16.0", "0.17.0", "0.17.1", "0.18.0", "0.18.1", "0.19.0", "0.19.1"]
def num(v): return [int(p) for p in v.split(".")]

# Flags whose argparse choices the table states (the others' values are the table's `values`
# or free): restated when a release's choices differ.
CHOICE = {"--convert", "--dtype", "--runner", "--kv-cache-dtype", "--block-size"}

def human(n, v):
    """vLLM's human_readable_int variants (engine/arg_utils.py per release)."""
    if n == "--max-model-len":
        return "human_int_kmg" if num(v) < num("0.13.0") else ("human_int" if num(v) < num("0.14.0") else "human_int_or_auto")
    if n in ("--max-num-batched-tokens", "--kv-cache-memory-bytes"):
        return "human_int_kmg" if num(v) < num("0.13.0") else "human_int"
    return None

def sig(n, x, v):
    k = kind(x)
    ty = human(n, v) or k[1]
    ch = tuple(literals(x.get("expanded") or "")) if n in CHOICE else None
    return (k[0], ty, k[2], tuple(sorted(s for s in x["names"] if s != n)), ch)

def val(v):
    if isinstance(v, bool): return "true" if v else "false"
    if isinstance(v, (int, float)): return repr(v)
    if isinstance(v, list): return "[" + ", ".join(val(i) for i in v) + "]"
    if isinstance(v, dict): return "{ " + ", ".join(f"{k} = {val(w)}" for k, w in v.items()) + " }"
    return json.dumps(v)

ORDER = ["class", "takes", "type", "short", "role", "to", "to_no", "values", "rename", "choices",
         "no_byte", "no_byte_unless", "none", "why", "since", "until", "at"]
def line(n, e):
    parts = [f"{k} = {val(e[k])}" for k in ORDER if k in e and e[k] not in (None, [], {}, False)]
    return f'"{n}" = {{ {", ".join(parts)} }}'

def base_merged():
    """0.19's table overlaid with 0.18's (as serve_table.rs overlays them)."""
    m = {"flags": {}, "absent": {}, "not_yet": {}, "at": {}}
    for f in ["vllm-0.19", "vllm-0.18"]:
        overlay(m, tomllib.load(open(f"{ROOT}/engines/{f}/serve_flags.toml", "rb")))
    return m

def overlay(m, t):
    for key, other in [("absent", "flags"), ("not_yet", "flags"), ("flags", "absent"),
                       ("flags", "not_yet"), ("flags", "flags"), ("flags", "at"), ("absent", "at"), ("not_yet", "at")]:
        for n in t.get(key, {}):
            m[other].pop(n, None)
    for key in ["flags", "absent", "not_yet", "at"]:
        m[key].update(t.get(key, {}))

def table_for(m, v):
    """The flags of release v from merged m: name -> entry (since/until applied, at applied)."""
    out = {}
    for n, e in m["flags"].items():
        if e.get("since") and num(v) < num(e["since"]): continue
        if e.get("until") and num(v) > num(e["until"]): continue
        e = dict(e)
        if n in m["at"]: e["at"] = m["at"][n]
        out[n] = e
    return out

def entry_for(n, x, v, extra):
    """A flag this folder adds that no newer table has: classified by hand (C)."""
    if n not in C: sys.exit(f"{n} ({v}) not classified")
    h = C[n]; k = kind(x)
    e = {"class": h["cls"], "takes": k[0]}
    if k[1]: e["type"] = human(n, v) or k[1]
    shorts = [s for s in x["names"] if s != n]
    if shorts: e["short"] = shorts
    if h["no_byte"] is not None: e["no_byte"] = h["no_byte"]
    if h["none"] or (k[2] and k[1] in ("int", "float")): e["none"] = True
    if h["why"]: e["why"] = h["why"]
    e.update(extra); e["at"] = x["at"]
    return e

def restate(n, merged_e, x, v, extra):
    """A flag of the newer table restated with this release's parsing."""
    e = {k: w for k, w in merged_e.items() if k not in ("since", "until", "at")}
    k = kind(x)
    e["takes"] = k[0]
    if k[1]: e["type"] = human(n, v) or k[1]
    else: e.pop("type", None)
    shorts = [s for s in x["names"] if s != n]
    if shorts: e["short"] = shorts
    else: e.pop("short", None)
    if k[1] in ("int", "float") or n == "--task":
        if k[2]: e["none"] = True
        else: e.pop("none", None)
    if n in CHOICE:
        lit = literals(x.get("expanded") or "")
        if lit: e["choices"] = sorted(lit, key=int) if all(v.isdigit() for v in lit) else lit
        else: e.pop("choices", None)
    e.update(extra); e["at"] = x["at"]
    return e


LAUNCH = lambda cite: [
 f"# `vllm serve --model M` (the flag as its own word) raises ValueError before argparse ({cite});",
 "# `--model=M` passes. The api_server entry point reads `--model` as later releases do.",
 "[[launcher]]", 'words = ["vllm", "serve"]', "positional_model = true", "model_flag = false", "",
 "[[launcher]]", 'words = ["python", "-m", "vllm.entrypoints.openai.api_server"]', "positional_model = false", ""]
HEAD = {
 "vllm-0.12": ["# FlexibleArgumentParser.parse_args (utils/argparse_utils.py:247-270): `-O3` is",
   "# `--optimization-level 3` as in later releases, but `-O.key value` is `-cc.key value` (the",
   "# compilation config's dotted JSON).", "[parser]", 'optimization_dotted = "-cc"', ""],
 "vllm-0.11.1": ["# FlexibleArgumentParser.parse_args (utils/argparse_utils.py:255-267): no --optimization-level",
   "# yet; `-O3`, `-O=3` and `-O 3` are `-O.mode=3`, the compilation config's mode (`-O` is",
   "# --compilation-config), and `-O.key value` is that config's dotted JSON. `-O3` is then the",
   "# default unless --enforce-eager is given (config/vllm.py:440-444: mode VLLM_COMPILE (3) when",
   "# not eager; `{\"level\": 3}` is read as the mode, config/compilation.py:609-618): its `no_byte`",
   "# holds only without --enforce-eager (`no_byte_unless`).", "[parser]",
   'optimization_flag = "-O.mode"', 'optimization_dotted = "-O"', ""],
 "vllm-0.11.0": ["# FlexibleArgumentParser.parse_args (utils/__init__.py:1891-1901): `-O3` is `-O.level=3`, the",
   "# compilation config's level (`-O` is --compilation-config): the default unless --enforce-eager",
   "# is given (config/__init__.py:336-343: PIECEWISE (3) when not eager; 3364-3371 in 0.10.2,",
   "# 3529-3541 in 0.10.1).", "[parser]", 'optimization_flag = "-O.level"', ""]
   + LAUNCH("utils/__init__.py:1856-1864") + [
   "# VLLM_USE_V1 picks the engine: 1, the default, is the V1 engine modelled; 0 is V0 (envs.py:900-901;",
   "# 745-746 in 0.10.2, 729-730 in 0.10.1).", "[env]", 'no_byte = { VLLM_USE_V1 = ["1"] }', ""],
 "vllm-0.17": ["# VLLM_USE_V1 is no longer read (V0 was removed in 0.11.1; envs.py of 0.11.1-0.17.1 has no",
   "# such variable), so from 0.11.1 to 0.17.1 it changes no byte: 0.19's list with it.", "[env]",
   "ignored = [",
   '    "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "VLLM_LOGGING_LEVEL", "VLLM_CONFIGURE_LOGGING",',
   '    "VLLM_LOGGING_PREFIX", "VLLM_DISABLE_LOG_LOGO", "VLLM_NO_USAGE_STATS", "DO_NOT_TRACK",',
   '    "VLLM_HOST_IP", "VLLM_PORT", "VLLM_API_KEY", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN",',
   '    "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_HUB_ENABLE_HF_TRANSFER", "NCCL_DEBUG",',
   '    "PYTHONUNBUFFERED", "OMP_NUM_THREADS", "TOKENIZERS_PARALLELISM", "VLLM_USE_V1",', "]", ""],
 "vllm-0.15": ["# Within this folder 0.16.0 parses two refused flags otherwise than 0.15.0 and 0.15.1, whose",
   "# parsing the entries below state: --convert drops reward and mm_encoder_only (config/model.py:77",
   "# in 0.16.0) and --max-cudagraph-capture-size no longer takes None (config/compilation.py). Both",
   "# are refused either way; only the wording of a refusal differs for 0.16.0.", ""],
 "vllm-0.10.2": ["# The parser rules and launchers are 0.11.0's (the same code at utils/__init__.py:1805-1847).", ""],
 "vllm-0.10.1": ["# The parser rules and launchers are 0.11.0's (the same code at utils/__init__.py:1774-1815 in",
   "# 0.10.1 and 0.10.1.1).", ""],
}
OVERRIDE = {
 # vllm_flags.py reads 0.15.0's ConvertOption wrongly ("(True)"): config/model.py:78-79 there is
 # auto + none, embed, classify, reward, mm_encoder_only (0.16.0 drops the last two: model.py:77).
 ("vllm-0.15", "--convert"): {"choices": ["auto", "classify", "embed", "mm_encoder_only", "none", "reward"]},
 # -O3 is {"mode": 3} (0.11.1-0.11.2; {"level": 3} is read as the mode, config/compilation.py:609-618)
 # or {"level": 3} (0.10.1-0.11.0): VllmConfig's default when --enforce-eager is not given
 # (config/vllm.py:440-444 in 0.11.1, config/__init__.py:3529-3541 in 0.10.1).
 ("vllm-0.11.1", "--compilation-config"): {"no_byte": ['{"mode": 3}', '{"level": 3}'], "no_byte_unless": "--enforce-eager", "why": "the compilation settings are vLLM's defaults; others are not modelled (`-O3`, the compilation mode 3, is the default only without --enforce-eager)"},
 ("vllm-0.11.0", "--compilation-config"): {"no_byte": ['{"level": 3}'], "no_byte_unless": "--enforce-eager", "why": "the compilation settings are vLLM's defaults; others are not modelled (`-O3`, the compilation level 3, is the default only without --enforce-eager)"},
}

ROOT = sys.argv[1]
m = base_merged()
tables = {v: load(v) for v in ALL}
for folder, rels, base in FOLDERS:
    B = tables[base]; Rs = [tables[r] for r in rels]
    Bsig = {n: sig(n, x, base) for n, x in B.items()}
    allnames = sorted(set().union(*Rs), key=lambda n: n.lstrip("-"))
    flags, at, not_yet, absent, notes = {}, {}, {}, {}, []
    for n in allnames:
        have = [r for r, t in zip(rels, Rs) if n in t]
        first = have[0]; x = tables[first][n]
        extra = {}
        if have[0] != rels[0]: extra["since"] = have[0]
        if have[-1] != rels[-1]: extra["until"] = have[-1]
        # the same parsing in every release of the folder that has it?
        sigs = {sig(n, tables[r][n], r) for r in have}
        if len(sigs) > 1:
            notes.append(f"{n}: parsing differs within {rels}: {sigs}")
        cur = m["flags"].get(n)
        if cur is None or n not in B:
            if cur is not None and n not in B and not (cur.get("since")):
                sys.exit(f"{folder}: {n} in the newer table but not in {base}")
            if cur is not None:
                flags[n] = restate(n, cur, x, first, extra)
            else:
                flags[n] = entry_for(n, x, first, extra)
        elif sig(n, x, first) != Bsig[n] or extra or (folder, n) in OVERRIDE:
            flags[n] = restate(n, cur, x, first, extra)
        else:
            at[n] = x["at"]
    # Flags the newer table has that none of these releases registers: not yet.
    later = [v for v in ALL if num(v) > num(rels[-1])]
    for n, e in m["flags"].items():
        if n in flags or n in at: continue
        if any(n in t for t in Rs): continue
        firstv = next(v for v in later if n in tables[v])
        if e.get("since") and e["since"] == firstv and n not in B:
            continue  # the base folder's own `since` says it (serve_table.rs names it)
        not_yet[n] = firstv
    # Flags earlier releases had that this folder's first release lacks: absent.
    earlier = [v for v in ALL if num(v) < num(rels[0])]
    for n in sorted({n for v in earlier for n in tables[v]}):
        if n in Rs[0]: continue
        last = [v for v in earlier if n in tables[v]][-1]
        if m["absent"].get(n) != last and n not in flags:
            absent[n] = last
    for (f, n), o in OVERRIDE.items():
        if f == folder: flags[n].update(o); flags[n]["at"] = flags[n].pop("at")
    out = {"releases": rels, "flags": flags, "at": at, "not_yet": not_yet, "absent": absent}
    # write
    title = ", ".join(rels)
    txt = [f"# `vllm serve` in vLLM {title}: what differs from vLLM {base} (the folder this one",
           "# extends, whose table with its own changes holds for every flag not named under [flags]).",
           "# Format and rules: engines/vllm-0.19/serve_flags.toml and docs/engines.md, \"A serve line\".",
           f"# Read from the sources of {title} (paths under vllm/): engine/arg_utils.py",
           "# EngineArgs.add_cli_args and AsyncEngineArgs.add_cli_args, and entrypoints/openai/cli_args.py",
           "# make_arg_parser with its FrontendArgs fields; every release listed registers the flags of this",
           "# table (a flag with `since` from that release on, with `until` up to that release). `at` cites",
           f"# the sources of the first release listed that registers the flag, and `[at]` cites there each",
           "# flag inherited unchanged, so every flag of these releases is cited in their own sources.",
           f'releases = [{", ".join(json.dumps(r) for r in rels)}]', ""]
    if folder in HEAD: txt += HEAD[folder]
    if flags:
        txt += ["[flags]"] + [line(n, e) for n, e in flags.items()] + [""]
    if not_yet:
        txt += [f"# Flags later releases register that {rels[-1]} does not yet (argparse refuses them): the",
                "# first release with each.", "[not_yet]"]
        txt += [f'"{n}" = "{v}"' for n, v in sorted(not_yet.items(), key=lambda i: i[0].lstrip("-"))] + [""]
    if absent:
        txt += [f"# Flags earlier releases had that {rels[0]} no longer registers: the last release with each.", "[absent]"]
        txt += [f'"{n}" = "{v}"' for n, v in absent.items()] + [""]
    txt += [f"# Where {title} registers each flag this file inherits unchanged (file:line in {rels[0]}'s",
            "# sources, or the first release listed that has it).", "[at]"]
    txt += [f'"{n}" = "{a}"' for n, a in at.items()] + [""]
    open(f"{ROOT}/engines/{folder}/serve_flags.toml", "w").write("\n".join(txt))
    print(folder, len(flags), "flags,", len(not_yet), "not yet,", len(absent), "absent,", len(at), "at")
    for nt in notes: print("  NOTE", nt)
    overlay(m, tomllib.loads("\n".join(txt)))
    # verify every release of the folder
    for r in rels:
        t = table_for(m, r)
        got, want = set(t), set(tables[r])
        if got != want:
            print("  MISMATCH", r, "extra", sorted(got - want), "missing", sorted(want - got))
        # every flag cited where the first release of this folder that has it registers it
        for n in want:
            firstv = next(v for v in rels if n in tables[v])
            if t[n]["at"] != tables[firstv][n]["at"]:
                print("  AT", r, n, t[n]["at"], tables[firstv][n]["at"])
        # every flag of another release named with its last (absent) or first (not yet) release
        nyet = dict(m["not_yet"]); ab = dict(m["absent"])
        for n, e in m["flags"].items():
            if e.get("since") and num(r) < num(e["since"]): nyet[n] = e["since"]
            if e.get("until") and num(r) > num(e["until"]): ab[n] = e["until"]
        for n in {n for v in ALL for n in tables[v]} - want:
            before = [v for v in ALL if num(v) < num(r) and n in tables[v]]
            after = [v for v in ALL if num(v) > num(r) and n in tables[v]]
            if before and ab.get(n) != before[-1] and nyet.get(n) != (after[0] if after else None):
                print("  ABSENT?", r, n, ab.get(n), before[-1])
            if not before and nyet.get(n) != after[0]:
                print("  NOT_YET?", r, n, nyet.get(n), after[0])
