"""Write engines/sglang-*/serve_flags.toml for every SGLang folder older than 0.5.23: each states
what differs from the folder it extends (flags restated when their kind/class differs, `not_yet`
for the newer flags it lacks, `since`/`until` within the folder), and the base's [absent]."""
import json, re, sys, os
sys.argv = ["gen.py", "0.5.23"]
import importlib.util
spec = importlib.util.spec_from_file_location("gen", "gen.py")

WT = os.environ.get("ENGINES_DIR", os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../../engines"))
def vkey(v): return [int(x) if x.isdigit() else -1 for x in re.split(r"[.]|post", v) if x != ""]
def vkey(v):
    parts = []
    for p in v.split("."):
        m = re.fullmatch(r"(\d+)(?:post(\d+))?", p)
        if m: parts.append(int(m.group(1))); parts.append(int(m.group(2) or -1) if m.group(2) else -1)
        else: parts += [int(p[4:]), 0] if p.startswith("post") else [0]
    return parts
def vkey(v):
    base, _, post = v.partition(".post")
    return [int(x) for x in base.split(".")] + [int(post) if post else -1]

folders = {}
for d in sorted(os.listdir(WT)):
    if not d.startswith("sglang-"): continue
    t = open(f"{WT}/{d}/engine.toml").read()
    rel = re.search(r"releases\s*=\s*\[([^\]]*)\]", t, re.S).group(1)
    rels = re.findall(r'"([^"]+)"', rel)
    ext = re.search(r'^extends\s*=\s*"([^"]+)"', t, re.M)
    folders[d] = (rels, ext.group(1) if ext else None)

def load_gen(v):
    sys.argv = ["gen.py", v]
    g = {}
    src = open("gen.py").read().replace('if __name__ == "__main__":', "if False:")
    exec(compile(src, "gen.py", "exec"), g)
    return g

base_keys = set(load_gen("0.5.23")["out"].keys())
def entries(v):
    g = load_gen(v)
    flags = json.load(open(f"p-{v}.json"))
    out = {}
    for x in flags:
        opts = x["opts"]
        key = next((o for o in opts if o in base_keys), opts[0])
        x2 = dict(x); x2["opts"] = [key] + [o for o in opts if o != key]
        k, e = g["entry"](x2)
        out[k] = e
    return out

all_versions = sorted({r for rs, _ in folders.values() for r in rs}, key=vkey)
E = {v: entries(v) for v in all_versions}
def strip_at(e): return re.sub(r', at = "[^"]*"', "", e)

# The base's [absent]: flags of earlier releases 0.5.23 lacks -> the last release with each.
absent = {}
for v in all_versions:
    if v == "0.5.23": continue
    for k in E[v]:
        if k not in E["0.5.23"]:
            absent[k] = v if k not in absent or vkey(v) > vkey(absent[k]) else absent[k]

# Walk from the newest folder down: the merged table a folder's overlay applies to.
order = sorted(folders, key=lambda d: vkey(folders[d][0][-1]), reverse=True)
assert order[0] == "sglang-0.5.23"
merged = {k: strip_at(e) for k, e in E["0.5.23"].items()}
outputs = {}
for d in order[1:]:
    rels = sorted(folders[d][0], key=vkey)
    union = {}
    for v in rels:
        for k, e in E[v].items():
            union[k] = e  # the newest release of the folder that has it
    lines = []
    restated = {}
    for k in sorted(union):
        have = [v for v in rels if k in E[v]]
        e = union[k]
        # A folder states one class per flag: releases of a folder that class a flag apart
        # need folders of their own.
        classes = {re.search(r'class = "([a-z]+)"', E[v][k]).group(1) for v in have}
        if len(classes) > 1:
            raise SystemExit(f"{d}: {k} is {sorted(classes)} across {have}: split the folder")
        extra = []
        if have[0] != rels[0]: extra.append(f'since = "{have[0]}"')
        if have[-1] != rels[-1]: extra.append(f'until = "{have[-1]}"')
        if extra: e = e[:-2] + ", " + ", ".join(extra) + " }"
        if k not in merged or strip_at(e) != merged[k]:
            restated[k] = e
    not_yet = {}
    for k in merged:
        if k not in union:
            first = next(v for v in all_versions if vkey(v) > vkey(rels[-1]) and k in E[v])
            not_yet[k] = first
    # Where these releases register each flag they share with the newer folders unchanged
    # (the newest of them that has it): the file's [at].
    ats = {}
    for k in union:
        if k in restated:
            continue
        newest = max((v for v in rels if k in E[v]), key=vkey)
        ats[k] = re.search(r'at = "([^"]*)"', E[newest][k]).group(1)
    outputs[d] = (rels, restated, not_yet, ats)
    for k in not_yet: merged.pop(k)
    for k, e in restated.items(): merged[k] = strip_at(e)
json.dump({"absent": absent, "outputs": {d: list(o) for d, o in outputs.items()}}, open("overlays.json", "w"), indent=1)
for d, (r, s, n, _) in outputs.items():
    print(d, len(r), "restated", len(s), "not_yet", len(n))
print("absent", len(absent))
