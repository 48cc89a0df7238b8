#!/usr/bin/env python3
"""Static extraction of `vllm serve`'s flags from a vLLM source tree (no import: torch is
absent). For each add_argument call in engine/arg_utils.py, entrypoints/openai/cli_args.py and
entrypoints/cli/serve.py, and each field of the frontend dataclasses that cli_args.py registers
as `--field-name`: the option strings, the file:line, the explicit kwargs (action, type, nargs,
const) and, for `**group_kwargs["field"]`, the config class field's annotation, from which
vLLM's get_kwargs derives the argparse kind (engine/arg_utils.py `_compute_kwargs`).

usage: vllm_flags.py SRC_ROOT > $VLLM_FLAG_DUMPS/v<release>.json
"""

import ast
import json
import sys
from pathlib import Path

root = Path(sys.argv[1]) / "vllm"


def parse(path):
    return ast.parse(path.read_text(), filename=str(path))


# Every class in the vllm tree that might be a config dataclass: name -> (path, ClassDef)
classes = {}
aliases = {}
for path in list((root / "config").glob("*.py")) + [
    root / "config.py",
    root / "config" / "__init__.py",
    root / "entrypoints" / "openai" / "cli_args.py",
    root / "entrypoints" / "launchers" / "cli_args.py",
    root / "entrypoints" / "common" / "cli_args.py",
    root / "engine" / "arg_utils.py",
]:
    if not path.is_file():
        continue
    tree = parse(path)
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            classes.setdefault(node.name, (path, node))
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            t = node.targets[0]
            if isinstance(t, ast.Name):
                aliases.setdefault(t.id, ast.unparse(node.value))
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            # `X: TypeAlias = Literal[...]`
            if node.value is not None and "TypeAlias" in ast.unparse(node.annotation):
                aliases.setdefault(node.target.id, ast.unparse(node.value))


def field_annotation(cls_name, field):
    seen = set()
    while cls_name and cls_name not in seen:
        seen.add(cls_name)
        if cls_name not in classes:
            return None
        path, cls = classes[cls_name]
        for stmt in cls.body:
            if (
                isinstance(stmt, ast.AnnAssign)
                and isinstance(stmt.target, ast.Name)
                and stmt.target.id == field
            ):
                return ast.unparse(stmt.annotation), f"{path.relative_to(root)}:{stmt.lineno}"
        bases = [ast.unparse(b) for b in cls.bases]
        cls_name = bases[0] if bases else None
    return None


def expand(annotation, depth=0):
    """Replace alias names by their definitions, a few levels deep."""
    if depth > 4:
        return annotation
    out = annotation
    for name, value in aliases.items():
        if name in out and (name + "[") not in out:
            import re

            out = re.sub(rf"\b{name}\b", f"({value})", out)
    return out if out == annotation else expand(out, depth + 1)


def call_info(call, path, kwvars):
    names = [
        a.value
        for a in call.args
        if isinstance(a, ast.Constant) and isinstance(a.value, str)
    ]
    fstrings = [ast.unparse(a) for a in call.args if isinstance(a, ast.JoinedStr)]
    explicit = {}
    spread = None
    for kw in call.keywords:
        if kw.arg is None:
            v = kw.value
            # **model_kwargs["x"] or **{**cache_kwargs["x"], "default": None}
            if isinstance(v, ast.Dict):
                for k, vv in zip(v.keys, v.values):
                    if k is None:
                        v = vv
                    else:
                        explicit[ast.unparse(k).strip("'\"")] = ast.unparse(vv)
            if isinstance(v, ast.Subscript) and isinstance(v.value, ast.Name):
                var = v.value.id
                key = ast.unparse(v.slice).strip("'\"")
                spread = (kwvars.get(var), key)
            else:
                spread = ("?", ast.unparse(v))
        else:
            explicit[kw.arg] = ast.unparse(kw.value)
    info = {
        "names": names,
        "fstrings": fstrings,
        "at": f"{path.relative_to(root)}:{call.lineno}",
        "explicit": explicit,
    }
    if spread:
        cls, key = spread
        info["config"] = f"{cls}.{key}"
        ann = field_annotation(cls, key) if cls and cls != "?" else None
        if ann:
            info["annotation"] = ann[0]
            info["expanded"] = expand(ann[0])
            info["field_at"] = ann[1]
    return info


out = []
for rel in [
    "engine/arg_utils.py",
    "entrypoints/openai/cli_args.py",
    "entrypoints/launchers/cli_args.py",
    "entrypoints/common/cli_args.py",
    "entrypoints/cli/serve.py",
]:
    path = root / rel
    if not path.is_file():
        continue
    tree = parse(path)
    kwvars = {}
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and isinstance(node.value, ast.Call)
            and ast.unparse(node.value.func) == "get_kwargs"
            and node.value.args
        ):
            kwvars[node.targets[0].id] = ast.unparse(node.value.args[0])
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "add_argument"
        ):
            out.append(call_info(node, path, kwvars))

# Frontend dataclasses registered field by field (`f"--{key.replace('_', '-')}"`).
cli = root / "entrypoints/openai/cli_args.py"
if not cli.is_file():
    cli = root / "entrypoints/launchers/cli_args.py"
if not cli.is_file():
    cli = root / "entrypoints/common/cli_args.py"
if cli.is_file():
    for cname in ["BaseFrontendArgs", "FrontendArgs"]:
        if cname not in classes or classes[cname][0] != cli:
            continue
        path, cls = classes[cname]
        for stmt in cls.body:
            if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                f = stmt.target.id
                if f.startswith("_"):
                    continue
                ann = ast.unparse(stmt.annotation)
                out.append(
                    {
                        "names": ["--" + f.replace("_", "-")],
                        "at": f"{path.relative_to(root)}:{stmt.lineno}",
                        "explicit": {},
                        "config": f"{cname}.{f}",
                        "annotation": ann,
                        "expanded": expand(ann),
                        "frontend": True,
                    }
                )
json.dump(out, sys.stdout, indent=1)
