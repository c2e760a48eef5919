#!/usr/bin/env python3
"""Lists the ds_config.json keys a DeepSpeed commit reads (tests/planner/data/deepspeed_keys.txt).

usage: extract_deepspeed_keys.py DEEPSPEED_GIT_DIR COMMIT
Top-level keys and their sub-keys: every string constant of deepspeed/runtime/constants.py that
deepspeed/runtime/config.py (or zero/config.py get_zero_config) reads from the parsed JSON (param_dict[K], param_dict[K][K2],
param_dict.get(K), K in param_dict, get_scalar_param(param_dict or param_dict[K], K2, DEFAULT)),
with the JSON kind of the default where the call names one ("int", "float", "bool", "str",
"any" otherwise). zero_optimization: the fields of DeepSpeedZeroConfig
(deepspeed/runtime/zero/config.py, a pydantic model with extra="forbid"), by their alias where
they have one, with the annotation. Output lines: "KEY KIND", "KEY.SUBKEY KIND",
"zero_optimization.FIELD ANNOTATION".
"""
import ast, subprocess, sys

def src(repo, commit, path):
    return subprocess.check_output(["git", "-C", repo, "show", f"{commit}:{path}"], text=True)

def constants(tree):
    out = {}
    for n in tree.body:
        if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name):
            try:
                out[n.targets[0].id] = ast.literal_eval(n.value)
            except Exception:
                pass
    return out

def kind(v):
    if isinstance(v, bool): return "bool"
    if isinstance(v, int): return "int"
    if isinstance(v, float): return "float"
    if isinstance(v, str): return "str"
    return "any"

def config_keys(repo, commit):
    consts = constants(ast.parse(src(repo, commit, "deepspeed/runtime/constants.py")))
    # config.py, and zero/config.py's get_zero_config (param_dict[ZERO_OPTIMIZATION]).
    tree = ast.Module(body=[], type_ignores=[])
    for path in ("deepspeed/runtime/config.py", "deepspeed/runtime/zero/config.py"):
        t = ast.parse(src(repo, commit, path))
        consts.update({k: v for k, v in constants(t).items() if k not in consts})
        tree.body.extend(t.body)
    keys = {}
    # Names that stand for constants: `for key in [BFLOAT16, BFLOAT16_OLD]` and a parameter's
    # default (`def get_communication_data_type(param_dict, comm_type=COMMUNICATION_DATA_TYPE, ...)`).
    bound = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.For) and isinstance(node.target, ast.Name) and isinstance(node.iter, (ast.List, ast.Tuple)):
            bound.setdefault(node.target.id, []).extend(e.id for e in node.iter.elts if isinstance(e, ast.Name))
        if isinstance(node, ast.FunctionDef):
            a = node.args
            for arg, d in zip(a.args[len(a.args) - len(a.defaults):], a.defaults):
                if isinstance(d, ast.Name): bound.setdefault(arg.arg, []).append(d.id)
    def keys_of(node):  # the strings a key expression stands for
        if isinstance(node, ast.Constant) and isinstance(node.value, str): return [node.value]
        if isinstance(node, ast.Name):
            names = bound.get(node.id, [node.id])
            return [consts[n] for n in names if isinstance(consts.get(n), str)]
        return []
    def paths_of(node):  # param_dict, param_dict[K], param_dict[K][K2] -> [[]] / [[K]] / [[K, K2]]
        if isinstance(node, ast.Name) and node.id == "param_dict": return [[]]
        if isinstance(node, ast.Subscript):
            return [b + [k] for b in paths_of(node.value) for k in keys_of(node.slice)]
        return []
    def add(path, k="any"):
        name = ".".join(path)
        if keys.get(name, "any") == "any": keys[name] = k
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript):
            for p in paths_of(node): add(p)
        elif isinstance(node, ast.Call):
            f = node.func
            if isinstance(f, ast.Name) and f.id == "get_scalar_param" and len(node.args) >= 2:
                d = node.args[2] if len(node.args) > 2 else None
                dv = consts.get(d.id) if isinstance(d, ast.Name) else (d.value if isinstance(d, ast.Constant) else None)
                for b in paths_of(node.args[0]):
                    for k in keys_of(node.args[1]): add(b + [k], kind(dv) if dv is not None else "any")
            elif isinstance(f, ast.Attribute) and f.attr == "get" and node.args:
                for b in paths_of(f.value):
                    for k in keys_of(node.args[0]): add(b + [k])
        elif isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], ast.In):
            right = node.comparators[0]
            if isinstance(right, ast.Call) and isinstance(right.func, ast.Attribute) and right.func.attr == "keys":
                right = right.func.value
            for b in paths_of(right):
                for k in keys_of(node.left): add(b + [k])
    return keys

def zero_fields(repo, commit):
    tree = ast.parse(src(repo, commit, "deepspeed/runtime/zero/config.py"))
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "DeepSpeedZeroConfig")
    out = []
    for n in cls.body:
        if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name):
            name = n.target.id
            if isinstance(n.value, ast.Call):
                for kw in n.value.keywords:
                    if kw.arg == "alias": name = kw.value.value
            out.append((name, ast.unparse(n.annotation).replace(" ", "")))
    return out

if __name__ == "__main__":
    repo, commit = sys.argv[1], sys.argv[2]
    full = subprocess.check_output(["git", "-C", repo, "rev-parse", commit], text=True).strip()
    print(f"# ds_config.json keys read by microsoft/DeepSpeed@{full}")
    print("# (deepspeed/runtime/config.py, runtime/constants.py, runtime/zero/config.py DeepSpeedZeroConfig),")
    print("# written by tests/planner/data/extract_deepspeed_keys.py. Top-level keys are read leniently by")
    print("# DeepSpeedConfig; zero_optimization is a pydantic model with extra=\"forbid\": an unknown key fails.")
    for k, v in sorted(config_keys(repo, commit).items()):
        if not k.startswith("zero_optimization."):
            print(k, v)
    for name, ann in sorted(zero_fields(repo, commit)):
        print(f"zero_optimization.{name} {ann}")
