"""The argparse kind of a flag from vllm_flags.py's record (vLLM's _compute_kwargs, read the same
way for every release): used only to find what CHANGED between two releases."""
import json, re

def strip_skip(a):
    a = a.strip()
    while a.startswith("SkipValidation[") and a.endswith("]"):
        a = a[len("SkipValidation["):-1].strip()
    return a

def literals(expanded):
    m = re.findall(r"Literal\[([^\]]*)\]", expanded or "")
    out = []
    for grp in m:
        for tok in re.findall(r"'([^']*)'|(-?\d+)", grp):
            out.append(tok[0] or tok[1])
    return sorted(set(out))

def kind(x):
    """(takes, type, none)"""
    e = x.get("explicit", {})
    act = e.get("action", "")
    if "store_true" in act:
        return ("none", None, False)
    if "BooleanOptionalAction" in act:
        return ("bool", None, False)
    if e.get("nargs") == "'?'":
        return ("optional", "str", False)
    if e.get("type") in ("int", "str", "float"):
        return ("one", e["type"], False)
    a = strip_skip(x.get("annotation") or "")
    ex = strip_skip(x.get("expanded") or a)
    none = bool(re.search(r"\bNone\b|Optional\[", a))
    core = re.sub(r"\s*\|\s*None\b", "", a)
    m = re.fullmatch(r"Optional\[(.*)\]", core)
    if m:
        core = m.group(1)
    core = strip_skip(core)
    if re.fullmatch(r"bool", core):
        return ("bool", None, False)
    if core.startswith(("list[", "set[")) or core.startswith("Union[list"):
        inner = core.split("[", 1)[1]
        return ("list", "int" if inner.startswith("int") else "str", False)
    if core == "int":
        return ("one", "int", none)
    if core == "float":
        return ("one", "float", none)
    if "Literal[" in ex and not core.startswith("dict"):
        lits = literals(ex)
        # Literal[256, 512]: argparse's type is the literals' (int).
        if lits and all(re.fullmatch(r"-?\d+", v) for v in lits):
            return ("one", "int", none)
        return ("one", "str", none)
    if "dict" in core:
        return ("one", "json", False)
    if core.endswith("Config") or "Config " in core or "Config]" in core:
        return ("one", "json", False)
    return ("one", "str", none)
