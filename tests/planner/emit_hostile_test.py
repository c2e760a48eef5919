#!/usr/bin/env python3
"""Hostile strings through every emitted file, read back with each target's own rules.

What it is: the ctest `emit_hostile`. It writes run.toml inputs whose model.name,
checkpoint.dir and data.path hold quotes, backslashes, spaces, $(...), backticks, TOML table
headers, Python statement breaks and non-ASCII text, runs `shardcast emit` (torchtitan 0.2 and
current) and `shardcast-train slurm` on them, and reads every file back as its tool would:
tomllib for TOML (the values round-trip exactly, no table appears that the writer did not
write), ast.parse for torchtitan_recipe.py (only imports and the one function; the string
constants equal the input), bash -n and a run with stub srun / scontrol / torchrun on PATH in a
temporary directory that must create no file, shlex.split (and the documented bash `eval
"args=(...)"`) for the argument files (the values round-trip). A line break, tab, NUL or other
control character in a name, or a line break outside ASCII (U+0085, U+2028, U+2029: YAML and
Python end lines there), is refused: exit 2 naming the key, nothing written.
What it is not: a test of the settings' meaning (emit_test.cpp, emit_torchtitan_test.cpp).

Usage: emit_hostile_test.py SHARDCAST [SHARDCAST_TRAIN]
"""
import ast
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import tomllib

SC = os.path.abspath(sys.argv[1])
SCT = os.path.abspath(sys.argv[2]) if len(sys.argv) > 2 else None

# One-line strings: each must be written so that its tool reads it back unchanged.
HOSTILE = [
    "plain-name",
    "it's",
    'say "hi"',
    "back\\slash\\",
    "two  spaces",
    "$(touch X)",
    "`touch X`",
    "${HOME}",
    "$HOME",
    "; touch X;",
    "| touch X",
    "&& touch X #",
    "> X",
    "'\"'\"'",
    "'; touch X; echo '",
    '"; touch X; echo "',
    '"] [job] dump_folder = "/etc/cron.d" #',
    "[job]",
    "[[checkpoint]]",
    'a = "b"',
    "# comment",
    'x"); __import__("os").system("touch pwned"); ("',
    "x'); __import__('os').system('touch pwned'); ('",
    '""" + __import__("os").system("touch pwned") + """',
    "\\n\\u0041\\x00",
    "--flag=value",
    "-",
    "*",
    "~",
    "%x-%j",
    "#SBATCH --nodes=99",
    "é ünïcode ☃",
    "\U0001F600 emoji",
    "\\",
    '\\"',
]
# Strings with a line break or another control character: refused by name, exit 2.
REFUSED = [
    "a\nb",
    '"]\n[job]\ndump_folder = "/etc/cron.d"',
    "x\n$(touch X)",
    "a\rb",
    "a\tb",
    "a\x00b",
    "a\x1bb",
    "a\x7fb",
    # Line breaks of YAML (accelerate's fsdp_config.yaml comments) and Python outside ASCII.
    "m\u2028main_process_ip: 203.0.113.7\u2028#",
    "m\u2029x",
    "m\x85main_process_ip: 203.0.113.7",
]
FIELDS = ["model.name", "checkpoint.dir", "data.path"]

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
    return cond


def toml_str(s):
    """A TOML basic string for s (the test's own writer, independent of the one under test)."""
    out = '"'
    for ch in s:
        if ch == '"':
            out += '\\"'
        elif ch == "\\":
            out += "\\\\"
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out += "\\u%04x" % ord(ch)
        else:
            out += ch
    return out + '"'


def values_for(s):
    """The three strings a case writes: the model name, the checkpoint folder, the data file."""
    return {"model.name": s, "checkpoint.dir": "ck/" + s, "data.path": "data/" + s + ".bin"}


def input_toml(v, runtime="shardcast-train", compile_=False, reduce="fp32"):
    """A run.toml: 8 layers of Llama-3-8B's width (no torchtitan or fms-fsdp flavor: the name
    is written as the flavor / model_variant) on 2 nodes x 8 H100. torchtitan reduces in fp32
    only, accelerate in the parameters' dtype only: `reduce` picks which of them gets a file."""
    ck = "" if v.get("checkpoint.dir") is None else "dir = %s\ninterval = 100\n" % toml_str(v["checkpoint.dir"])
    data = "" if v.get("data.path") is None else "path = %s\n" % toml_str(v["data.path"])
    return f"""runtime = "{runtime}"

[model]
name = {toml_str(v["model.name"])}
n_layers = 8
d_model = 4096
n_heads = 32
n_kv_heads = 8
ffn_dim = 14336
vocab = 128256
max_seq_len = 8192
norm_eps = 1e-5
rope_theta = 500000.0
tied_embeddings = false
mlp_type = "swiglu"

[cluster]
hardware = "H100-80GB-SXM"
nodes = 2
gpus_per_node = 8

[parallelism]
sharding_strategy = "full_shard"

[training]
micro_batch = 1
seq_len = 4096
steps = 100

[activation_checkpointing]
mode = "full"

[precision]
param_dtype = "bf16"
reduce_dtype = "{reduce}"
compile = {"true" if compile_ else "false"}

[data]
{data}
[checkpoint]
{ck}"""


def run(args, cwd, env=None, timeout=60):
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL)


def listing(root):
    out = set()
    for d, dirs, files in os.walk(root):
        for n in dirs + files:
            out.add(os.path.relpath(os.path.join(d, n), root))
    return out


def make_stubs(root):
    """srun (drops its options, runs the command), scontrol, torchrun and the trainer: each
    prints its arguments, one per line, and writes nothing."""
    stubs = os.path.join(root, "stubs")
    os.mkdir(stubs)
    scripts = {
        "srun": '#!/bin/bash\nwhile [[ "$1" == --* ]]; do shift; done\nexec "$@"\n',
        # A long host list (past the pipe buffer): the script must read it whole under pipefail.
        "scontrol": "#!/bin/bash\nseq -f 'node%g' 1 20000\n",
        "torchrun": '#!/bin/bash\necho TORCHRUN\nprintf "%s\\n" "$@"\n',
        "stub-train": '#!/bin/bash\necho TRAIN\nprintf "%s\\n" "$@"\n',
    }
    for name, text in scripts.items():
        p = os.path.join(stubs, name)
        with open(p, "w") as f:
            f.write(text)
        os.chmod(p, 0o755)
    return stubs


def run_script_with_stubs(script, stubs, tag, expect_args, config):
    """bash -n, then a run in a fresh directory holding the script and `config` (the file it
    was written for: its cksum guard checks it) with the stubs on PATH: exit 0, the launcher
    reached with `expect_args`, no file created anywhere under the directory."""
    r = run(["bash", "-n", script], cwd=os.path.dirname(script))
    if not check(r.returncode == 0, f"{tag}: bash -n failed: {r.stderr.decode()}"):
        return
    with tempfile.TemporaryDirectory() as rd:
        shutil.copy(script, rd)
        shutil.copy(config, rd)
        before = listing(rd)
        env = {
            "PATH": stubs + ":/usr/bin:/bin",
            "HOME": rd,
            "SLURM_SUBMIT_DIR": rd,
            "SLURM_JOB_NODELIST": "node[1-2]",
            "SLURM_NTASKS": "16",
            "SLURM_NTASKS_PER_NODE": "8",
            "SLURM_JOB_ID": "7",
            "SLURM_PROCID": "0",
            "SLURM_LOCALID": "0",
            "SHARDCAST_TRAIN": "stub-train",
            "MASTER_ADDR": "127.0.0.1",
            "NODE_RANK": "0",
        }
        r = run(["bash", os.path.join(rd, os.path.basename(script))], cwd=rd, env=env)
        out = r.stdout.decode()
        check(r.returncode == 0, f"{tag}: exit {r.returncode}: {r.stderr.decode()}")
        check(expect_args in out, f"{tag}: launcher not reached with {expect_args!r}: {out!r}")
        check(listing(rd) == before, f"{tag}: created {sorted(listing(rd) - before)}")


def sbatch_options(text):
    """The #SBATCH options Slurm reads: those before the first command line."""
    opts = []
    for line in text.splitlines()[1:]:
        if line.startswith("#SBATCH"):
            opts.append(line.split()[1].split("=")[0])
        elif line.strip() and not line.startswith("#"):
            break
    return opts


def check_sbatch(path, tag, stubs):
    text = open(path).read()
    want = ["--job-name", "--nodes", "--ntasks-per-node", "--gpus-per-node", "--exclusive", "--time", "--output"]
    check(sbatch_options(text) == want, f"{tag}: #SBATCH options {sbatch_options(text)}")
    for line in text.splitlines():
        if line.startswith("#SBATCH --job-name="):
            job = line.split("=", 1)[1]
            check(all(c.isascii() and (c.isalnum() or c in "._+-") for c in job), f"{tag}: job name {job!r}")
    run_script_with_stubs(path, stubs, tag, "TRAIN\nrun\nrun.toml", os.path.join(os.path.dirname(path), "run.toml"))


def word_file(path, tag):
    """The arguments of a one-shell-word-per-line file, by shlex.split and by the bash usage
    its header documents (eval "args=($(grep ...))"), which must agree and create no file."""
    text = open(path).read()
    try:
        words = shlex.split(text, comments=True)
        for line in text.splitlines():
            if line and not line.startswith("#"):
                check(len(shlex.split(line)) == 1, f"{tag}: line is not one word: {line!r}")
    except ValueError as e:
        check(False, f"{tag}: shlex.split: {e}")
        return []
    usage = f"eval \"args=($(grep -v '^#' {os.path.basename(path)}))\""
    check(usage in text, f"{tag}: usage line missing")
    with tempfile.TemporaryDirectory() as rd:
        shutil.copy(path, rd)
        before = listing(rd)
        cmd = usage + "; printf '%s\\0' \"${args[@]}\""
        r = run(["bash", "-c", cmd], cwd=rd, env={"PATH": "/usr/bin:/bin", "HOME": rd})
        check(r.returncode == 0, f"{tag}: bash eval: {r.stderr.decode()}")
        got = r.stdout.decode().split("\0")[:-1]
        check(got == words, f"{tag}: bash reads {got} but shlex {words}")
        check(listing(rd) == before, f"{tag}: bash eval created {sorted(listing(rd) - before)}")
    return words


def check_toml_file(path, tag, expect, tables):
    text = open(path).read()
    try:
        t = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        check(False, f"{tag}: tomllib: {e}")
        return None
    extra = set(t) - tables
    check(not extra, f"{tag}: tables the writer did not write: {extra}")
    for dotted, want in expect.items():
        node = t
        for k in dotted.split("."):
            node = node.get(k) if isinstance(node, dict) else None
        check(node == want, f"{tag}: {dotted} reads back {node!r}, want {want!r}")
    return t


ALLOWED_CALLS = {"model_registry", "CompileConfig", "ParamGroupConfig", "Config", "llama3_8b"}


def check_recipe(path, tag, v):
    text = open(path).read()
    try:
        tree = ast.parse(text)
    except SyntaxError as e:
        check(False, f"{tag}: ast.parse: {e}")
        return
    # Only imports and the one function at module level; in it only assignments and the return.
    kinds = [type(n).__name__ for n in tree.body]
    check(set(kinds) <= {"ImportFrom", "FunctionDef"} and kinds.count("FunctionDef") == 1, f"{tag}: module {kinds}")
    fn = [n for n in tree.body if isinstance(n, ast.FunctionDef)][0]
    body = [type(n).__name__ for n in fn.body]
    check(set(body) <= {"Assign", "Return"}, f"{tag}: statements {body}")
    calls = {n.func.id if isinstance(n.func, ast.Name) else n.func.attr for n in ast.walk(tree) if isinstance(n, ast.Call)}
    check(calls <= ALLOWED_CALLS, f"{tag}: calls {calls - ALLOWED_CALLS}")
    assigned = {}
    for n in fn.body:
        if isinstance(n, ast.Assign):
            assigned[ast.unparse(n.targets[0])] = n.value
    spec = assigned.get("config.model_spec")
    check(isinstance(spec, ast.Call) and isinstance(spec.args[0], ast.Constant) and spec.args[0].value == v["model.name"],
          f"{tag}: model_registry name {ast.unparse(spec) if spec else None}")
    folder = assigned.get("config.checkpoint.folder")
    check(isinstance(folder, ast.Constant) and folder.value == v["checkpoint.dir"],
          f"{tag}: checkpoint.folder {ast.unparse(folder) if folder else None}")
    # The multi-node launch line sets the PYTHONPATH the single-node one does; CUDA graphs said.
    check("#   PYTHONPATH=/path/to/this/dir PYTORCH_ALLOC_CONF=" in text, f"{tag}: multi-node launch without PYTHONPATH")
    check("CUDA graph" in text, f"{tag}: recipe says nothing of CUDA graphs")


def yaml_body(path):
    return [l for l in open(path).read().splitlines() if not l.startswith("#")]


TT_TABLES = {"model", "quantize", "optimizer", "lr_scheduler", "training", "parallelism", "activation_checkpoint",
             "compile", "checkpoint", "metrics", "comm", "debug"}
RUN_TABLES = {"runtime", "model", "cluster", "parallelism", "training", "activation_checkpointing", "precision",
              "optimizer", "lr_schedule", "data", "checkpoint", "metrics", "comm", "prediction"}


def emit_case(work, stubs, s, reference_yaml):
    v = values_for(s)
    case = tempfile.mkdtemp(dir=work)
    for tv, reduce in [("0.2", "fp32"), ("current", "fp32"), ("0.2", "bf16")]:
        name = f"in-{reduce}.toml"
        with open(os.path.join(case, name), "w") as f:
            f.write(input_toml(v, reduce=reduce))
        out = os.path.join(case, f"out-{tv}-{reduce}")
        tag = f"{s!r} emit --torchtitan-version {tv} (reduce {reduce})"
        r = run([SC, "emit", name, "--out", out, "--torchtitan-version", tv], cwd=case)
        if not check(r.returncode == 0, f"{tag}: exit {r.returncode}: {r.stderr.decode()}"):
            continue
        files = set(os.listdir(out))
        want = {"run.toml", "launch.sbatch", "launch_torchrun.sh", "fms_fsdp_args.txt"}
        if reduce == "bf16":
            want |= {"fsdp_config.yaml"}
        else:
            want |= {"torchtitan.toml", "torchtitan_overrides.txt"} if tv == "0.2" else {"torchtitan_recipe.py"}
        check(files == want, f"{tag}: files {sorted(files)}")
        p = lambda n: os.path.join(out, n)  # noqa: E731
        check_toml_file(p("run.toml"), tag + " run.toml", v, RUN_TABLES)
        check_sbatch(p("launch.sbatch"), tag + " launch.sbatch", stubs)
        run_script_with_stubs(p("launch_torchrun.sh"), stubs, tag + " launch_torchrun.sh", "run\nrun.toml", p("run.toml"))
        fms = word_file(p("fms_fsdp_args.txt"), tag + " fms_fsdp_args.txt")
        for arg in ["--model_variant=" + v["model.name"], "--ckpt_save_path=" + v["checkpoint.dir"],
                    "--ckpt_load_path=" + v["checkpoint.dir"]]:
            check(arg in fms, f"{tag} fms_fsdp_args.txt: {arg!r} not among {fms}")
        check(not any("/fsx" in w for w in fms), f"{tag} fms_fsdp_args.txt: an /fsx default written")
        if "fsdp_config.yaml" in files:
            check(yaml_body(p("fsdp_config.yaml")) == reference_yaml, f"{tag} fsdp_config.yaml: body depends on the name")
        if "torchtitan.toml" in files:
            check_toml_file(p("torchtitan.toml"), tag + " torchtitan.toml",
                            {"model.flavor": v["model.name"], "checkpoint.folder": v["checkpoint.dir"]}, TT_TABLES)
            ov = word_file(p("torchtitan_overrides.txt"), tag + " torchtitan_overrides.txt")
            for arg in ["--model.flavor=" + v["model.name"], "--checkpoint.folder=" + v["checkpoint.dir"]]:
                check(arg in ov, f"{tag} torchtitan_overrides.txt: {arg!r} not among {ov}")
        if "torchtitan_recipe.py" in files:
            check_recipe(p("torchtitan_recipe.py"), tag + " torchtitan_recipe.py", v)
        if SCT and tv == "0.2" and reduce == "fp32":
            slurm_case(case, out, name, stubs, tag)
    for bad in ["X", "pwned"]:
        check(not os.path.exists(os.path.join(case, bad)), f"{s!r}: {bad} created")


def slurm_case(case, out, input_name, stubs, tag):
    """shardcast-train slurm on the emitted run.toml ([prediction] gives the time) and on the
    input (--time): the script is as safe as emit's."""
    for cfg, extra in [("run.toml", []), (input_name, ["--time", "01:00:00"])]:
        d = tempfile.mkdtemp(dir=case)
        shutil.copy(os.path.join(out if cfg == "run.toml" else case, cfg), d)
        r = run([SCT, "slurm", cfg, "--out", "job.sbatch"] + extra, cwd=d)
        t = f"{tag}: shardcast-train slurm {cfg}"
        if check(r.returncode == 0, f"{t}: exit {r.returncode}: {r.stderr.decode()}"):
            text = open(os.path.join(d, "job.sbatch")).read()
            check(sbatch_options(text)[0] == "--job-name", f"{t}: #SBATCH lines broken")
            with tempfile.TemporaryDirectory() as rd:
                shutil.copy(os.path.join(d, "job.sbatch"), rd)
                run_script_with_stubs(os.path.join(rd, "job.sbatch"), stubs, t, f"TRAIN\nrun\n{cfg}",
                                      os.path.join(d, cfg))


def refused_case(work, s, field):
    v = values_for("plain")
    v[field] = s
    case = tempfile.mkdtemp(dir=work)
    with open(os.path.join(case, "in.toml"), "w") as f:
        f.write(input_toml(v))
    tag = f"{field} = {s!r}"
    r = run([SC, "emit", "in.toml", "--out", "out"], cwd=case)
    err = r.stderr.decode()
    check(r.returncode == 2, f"{tag}: emit exit {r.returncode}, want 2: {err}")
    check(field in err and ("control character" in err or "line-breaking character" in err),
          f"{tag}: emit's error does not name {field}: {err}")
    check(not os.path.exists(os.path.join(case, "out")), f"{tag}: emit wrote {os.path.join(case, 'out')}")
    if SCT:
        r = run([SCT, "slurm", "in.toml", "--out", "job.sbatch", "--time", "01:00:00"], cwd=case)
        err = r.stderr.decode()
        check(r.returncode == 2, f"{tag}: shardcast-train slurm exit {r.returncode}, want 2: {err}")
        check(field in err, f"{tag}: slurm's error does not name {field}: {err}")
        check(not os.path.exists(os.path.join(case, "job.sbatch")), f"{tag}: slurm wrote job.sbatch")


def data_flag_case(work):
    """emit --data with a line break is refused as data.path, nothing written."""
    case = tempfile.mkdtemp(dir=work)
    v = values_for("plain")
    del v["data.path"]
    with open(os.path.join(case, "in.toml"), "w") as f:
        f.write(input_toml({**v, "data.path": None}))
    r = run([SC, "emit", "in.toml", "--out", "out", "--data", "x\n$(touch X)"], cwd=case)
    check(r.returncode == 2 and "data.path" in r.stderr.decode(), f"--data with a newline: exit {r.returncode}")
    check(not os.path.exists(os.path.join(case, "out")), "--data with a newline: out written")


def fms_defaults_case(work):
    """No data and no checkpoint folder: fms_fsdp_args.txt writes no /fsx path (no data arguments;
    its save and load folder the run's own fms_ckpt, as fms-fsdp cannot turn saving off), says so
    in the file and emit says so on stderr."""
    case = tempfile.mkdtemp(dir=work)
    with open(os.path.join(case, "in.toml"), "w") as f:
        f.write(input_toml({"model.name": "m", "checkpoint.dir": None, "data.path": None}))
    r = run([SC, "emit", "in.toml", "--out", "out"], cwd=case)
    err = r.stderr.decode()
    if not check(r.returncode == 0, f"fms defaults: exit {r.returncode}: {err}"):
        return
    words = word_file(os.path.join(case, "out", "fms_fsdp_args.txt"), "fms defaults")
    check(not any("/fsx" in w or "data_path" in w for w in words), f"fms defaults: {words}")
    check("--ckpt_save_path=fms_ckpt" in words and "--ckpt_load_path=fms_ckpt" in words,
          f"fms defaults: the save and load folder is not fms_ckpt: {words}")
    text = open(os.path.join(case, "out", "fms_fsdp_args.txt")).read()
    for what in ["no data arguments", "the plan has no checkpoint folder"]:
        check(f"# NOTE: {what}" in text, f"fms defaults: file does not say {what!r}")
        check(f"emit: note: fms_fsdp_args.txt: {what}" in err, f"fms defaults: stderr does not say {what!r}: {err}")


def compile_case(work):
    """--compile.components as torchtitan v0.2.1+ reads a list[str]: one comma-separated value."""
    case = tempfile.mkdtemp(dir=work)
    with open(os.path.join(case, "in.toml"), "w") as f:
        f.write(input_toml(values_for("m"), runtime="torchtitan", compile_=True))
    r = run([SC, "emit", "in.toml", "--out", "out"], cwd=case)
    if not check(r.returncode == 0, f"compile: exit {r.returncode}: {r.stderr.decode()}"):
        return
    words = word_file(os.path.join(case, "out", "torchtitan_overrides.txt"), "compile overrides")
    comp = [w for w in words if w.startswith("--compile.components")]
    check(comp == ["--compile.components=model,loss"], f"compile: {comp}")
    # manager.py list_str_rule: the one value split on commas.
    check(len(comp) == 1 and comp[0].partition("=")[2].split(",") == ["model", "loss"], "compile: list rule")
    t = tomllib.loads(open(os.path.join(case, "out", "torchtitan.toml")).read())
    check(t["compile"]["components"] == ["model", "loss"], f"compile: TOML {t['compile']}")


def main():
    with tempfile.TemporaryDirectory() as work:
        stubs = make_stubs(work)
        ref = tempfile.mkdtemp(dir=work)
        with open(os.path.join(ref, "in.toml"), "w") as f:
            f.write(input_toml(values_for("reference"), reduce="bf16"))
        r = run([SC, "emit", "in.toml", "--out", "out"], cwd=ref)
        if r.returncode != 0:
            print("reference emit failed:", r.stderr.decode())
            return 1
        reference_yaml = yaml_body(os.path.join(ref, "out", "fsdp_config.yaml"))
        for s in HOSTILE:
            emit_case(work, stubs, s, reference_yaml)
        for s in REFUSED:
            for field in FIELDS:
                refused_case(work, s, field)
        data_flag_case(work)
        fms_defaults_case(work)
        compile_case(work)
    if not SCT:
        print("emit_hostile: shardcast-train not built: `shardcast-train slurm` cases not run")
    for f in failures:
        print("FAIL:", f)
    n = len(HOSTILE) * 3 + len(REFUSED) * len(FIELDS) + 3
    print(f"emit_hostile: {len(HOSTILE)} hostile strings x 3 emits, {len(REFUSED)} refused x "
          f"{len(FIELDS)} keys, 3 more cases ({n}): {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
