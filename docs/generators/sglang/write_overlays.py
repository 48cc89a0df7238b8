import json, os, re
d = json.load(open("overlays.json"))
WT = os.environ.get("ENGINES_DIR", os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../../engines"))
def vkey(v):
    base, _, post = v.partition(".post")
    return [int(x) for x in base.split(".")] + [int(post) if post else -1]
PY = '[[launcher]]\nwords = ["python", "-m", "sglang.launch_server"]\npositional_model = false\n'
for folder, (rels, restated, not_yet, ats) in d["outputs"].items():
    newest = max(rels, key=vkey)
    first = min(rels, key=vkey)
    base = open(f"{WT}/{folder}/engine.toml").read()
    ext = re.search(r'^extends\s*=\s*"([^"]+)"', base, re.M).group(1)
    out = [f"# `python -m sglang.launch_server` in SGLang {', '.join(rels)}: what differs from engines/{ext}",
           f"# (whose table, overlaid along `extends` up to engines/sglang-0.5.23, holds for every flag not",
           f"# named here). Format and rules: engines/sglang-0.5.23/serve_flags.toml and docs/engines.md,",
           f"# \"A serve line\". Each release's parser was dumped by running its own ServerArgs.add_cli_args",
           f"# (sglang/srt/server_args.py); a flag restated here cites the newest of these releases that",
           f"# has it, and `[at]` cites every other flag where that release registers it.",
           f"releases = [{', '.join(json.dumps(r) for r in rels)}]", ""]
    nk = vkey(newest); fk = vkey(first)
    # Launchers (the wheel's console script `sglang = sglang.cli.main:main` from 0.5.5, its
    # `serve` turning a first positional word into --model-path from 0.5.16).
    if nk < vkey("0.5.5"):
        out += ["# No `sglang` console script before 0.5.5 (no sglang/cli/ in the wheel).", PY]
    elif nk < vkey("0.5.16"):
        since = "" if fk >= vkey("0.5.5") else 'since = "0.5.5"\n'
        out += ["# `sglang serve` (cli/serve.py `serve`: prepare_server_args(extra_argv), so a positional",
                "# word is refused by argparse) from 0.5.5, the first wheel with sglang/cli/.", PY,
                '[[launcher]]\nwords = ["sglang", "serve"]\npositional_model = false\n' + since]
    if restated:
        out.append("[flags]")
        out += [f"{json.dumps(k)} = {restated[k]}" for k in sorted(restated)]
        out.append("")
    if not_yet:
        out.append("# Flags the newer releases register that these do not yet (argparse refuses them): the")
        out.append("# first release with each.")
        out.append("[not_yet]")
        out += [f"{json.dumps(k)} = {json.dumps(v)}" for k, v in sorted(not_yet.items())]
        out.append("")
    if ats:
        out.append("# Where the newest of these releases registers each flag it shares unchanged with the")
        out.append("# newer folders (paths under sglang/srt/).")
        out.append("[at]")
        out += [f"{json.dumps(k)} = {json.dumps(v)}" for k, v in sorted(ats.items())]
        out.append("")
    open(f"{WT}/{folder}/serve_flags.toml", "w").write("\n".join(out).rstrip() + "\n")
# The base's [absent].
p = f"{WT}/sglang-0.5.23/serve_flags.toml"
t = open(p).read().split("\n# Flags of earlier releases")[0].rstrip() + "\n"
t += "\n# Flags of earlier releases (0.4.6 to 0.5.22) that SGLang 0.5.23 no longer has, with the\n# last release that had each: 0.5.23 refuses them.\n[absent]\n"
t += "".join(f"{json.dumps(k)} = {json.dumps(v)}\n" for k, v in sorted(d["absent"].items(), key=lambda kv: kv[0]))
open(p, "w").write(t)
