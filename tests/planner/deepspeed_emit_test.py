#!/usr/bin/env python3
"""ds_config.json and launch_deepspeed.sh read back by DeepSpeed's and the HF Trainer's own rules.

What it is: the ctest `deepspeed_emit`. It runs `shardcast emit --runtime deepspeed` on stage 3,
stage 2 and stage 1 plans (one node and two, bf16 and fp32 reduction, a checkpoint folder holding a
quote, a backslash and a space) and checks each file as its reader would:
- ds_config.json: every key is one DeepSpeed reads at the commit of
  tests/planner/data/deepspeed_keys.txt, with the kind its reader takes; where DEEPSPEED_GIT_DIR
  names a DeepSpeed git directory (e.g. the mirror of microsoft/DeepSpeed), zero_optimization
  is validated by DeepSpeed's own pydantic model DeepSpeedZeroConfig (extra="forbid") loaded
  from that commit with a stub torch (needs pydantic 2; DeepSpeed's code is read, not kept here);
- DeepSpeed's batch rule (runtime/config.py _batch_assertion: train_batch_size =
  micro · accumulation · world size);
- launch_deepspeed.sh: bash -n; its arguments by shlex.split; the HF Trainer's matching rule
  (transformers integrations/deepspeed.py trainer_config_process @02348331b: a ds value that is not
  "auto" must equal the Trainer argument) for every key it checks; the output folder round-trips.
What it is not: a run of DeepSpeed (no torch here).

Usage: deepspeed_emit_test.py SHARDCAST
"""
import importlib.util
import json
import os
import shlex
import subprocess
import sys
import tempfile
import types

SC = os.path.abspath(sys.argv[1])
DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
failures = []


def check(cond, msg):
    if not cond:
        failures.append(msg)


def key_list():
    keys, commit = {}, None
    for line in open(os.path.join(DATA, "deepspeed_keys.txt")):
        if line.startswith("# ds_config.json keys read by microsoft/DeepSpeed@"):
            commit = line.split("@")[1].strip()
        if line.startswith("#") or not line.strip():
            continue
        k, kind = line.split()
        keys[k] = kind
    return keys, commit


KEYS, COMMIT = key_list()


def kind_ok(v, kind):
    return {
        "any": True,
        "bool": isinstance(v, bool),
        "Optional[bool]": v is None or isinstance(v, bool),
        "int": isinstance(v, int) and not isinstance(v, bool),
        "float": isinstance(v, (int, float)) and not isinstance(v, bool),
        "ZeroStageEnum": isinstance(v, int) and 0 <= v <= 3,
    }.get(kind, False)


def check_keys(obj, prefix, where):
    for k, v in obj.items():
        key = prefix + k
        check(key in KEYS, f"{where}: {key} is not a key DeepSpeed@{COMMIT[:9]} reads")
        if key in KEYS:
            check(kind_ok(v, KEYS[key]), f"{where}: {key} = {v!r} is not {KEYS[key]}")
        if isinstance(v, dict) and key != "optimizer.params":
            check_keys(v, key + ".", where)


def deepspeed_zero_model():
    """DeepSpeedZeroConfig from DEEPSPEED_GIT_DIR at COMMIT, or None when not given."""
    git = os.environ.get("DEEPSPEED_GIT_DIR")
    if not git:
        return None
    show = lambda p: subprocess.check_output(["git", "-C", git, "show", f"{COMMIT}:{p}"], text=True)
    torch = types.ModuleType("torch")
    torch.dtype = type("dtype", (), {})
    sys.modules["torch"] = torch
    for name in ["deepspeed", "deepspeed.runtime", "deepspeed.runtime.zero", "deepspeed.utils"]:
        m = types.ModuleType(name)
        m.__path__ = []
        sys.modules[name] = m
    import logging
    sys.modules["deepspeed.utils"].logger = logging.getLogger("deepspeed")
    for mod, path in [("deepspeed.runtime.config_utils", "deepspeed/runtime/config_utils.py"),
                      ("deepspeed.runtime.zero.offload_config", "deepspeed/runtime/zero/offload_config.py"),
                      ("deepspeed.runtime.zero.config", "deepspeed/runtime/zero/config.py")]:
        m = types.ModuleType(mod)
        m.__package__ = mod.rsplit(".", 1)[0]
        sys.modules[mod] = m
        exec(compile(show(path), f"DeepSpeed@{COMMIT[:9]}:{path}", "exec"), m.__dict__)
    return sys.modules["deepspeed.runtime.zero.config"].DeepSpeedZeroConfig


ZeroConfig = deepspeed_zero_model()


def launch_args(sh):
    """The words after the launcher's script argument, with the environment's values as placeholders."""
    text = sh.replace("\\\n", " ")
    line = next(l for l in text.splitlines() if l.startswith("exec deepspeed "))
    words = shlex.split(line)
    launcher = {}
    i = 2
    while words[i].startswith("--"):
        launcher[words[i]] = words[i + 1]
        i += 2
    args, j = {}, i + 1
    while j < len(words):
        if j + 1 < len(words) and not words[j + 1].startswith("--"):
            args[words[j]] = words[j + 1]
            j += 2
        else:
            args[words[j]] = True
            j += 1
    return launcher, args


def hf_matches(ds, args, world):
    """transformers trainer_config_process: each checked ds value equals its Trainer argument."""
    mb = int(args["--per_device_train_batch_size"])
    ga = int(args["--gradient_accumulation_steps"])
    pairs = [
        ("train_micro_batch_size_per_gpu", ds["train_micro_batch_size_per_gpu"], mb),
        ("gradient_accumulation_steps", ds["gradient_accumulation_steps"], ga),
        ("train_batch_size", ds["train_batch_size"], world * mb * ga),
        ("gradient_clipping", ds["gradient_clipping"], float(args["--max_grad_norm"])),
        ("optimizer.params.lr", ds["optimizer"]["params"]["lr"], float(args["--learning_rate"])),
        ("optimizer.params.betas", ds["optimizer"]["params"]["betas"],
         [float(args["--adam_beta1"]), float(args["--adam_beta2"])]),
        ("optimizer.params.eps", ds["optimizer"]["params"]["eps"], float(args["--adam_epsilon"])),
        ("optimizer.params.weight_decay", ds["optimizer"]["params"]["weight_decay"], float(args["--weight_decay"])),
        ("bf16.enabled", ds["bf16"]["enabled"], "--bf16" in args),
        ("fp16.enabled", ds["fp16"]["enabled"], "--fp16" in args),
    ]
    return [f"ds {k}={a} vs hf {b}" for k, a, b in pairs if a != b]


CASES = [
    ("stage3-1node", ["--strategy", "full_shard", "--gpus", "8"], 3, None),
    ("stage2-1node-fp32", ["--strategy", "shard_grad_op", "--gpus", "8", "--reduce-dtype", "fp32"], 2, None),
    ("stage3-2nodes-ga", ["--strategy", "full_shard", "--gpus", "16", "--gpus-per-node", "8", "--grad-accum", "4"], 3, None),
    ("stage3-ckpt", None, 3, "ck/it's a \\ dir"),
    ("stage1-1node", ["--strategy", "shard_optimizer", "--gpus", "8"], 1, None),
    ("stage1-2nodes-ga", ["--strategy", "shard_optimizer", "--gpus", "16", "--gpus-per-node", "8", "--grad-accum", "4"], 1,
     None),
]


def run_case(tmp, name, flags, stage, ckpt):
    out = os.path.join(tmp, name)
    if ckpt is None:
        cmd = [SC, "emit", "--model", "llama2-7b", "--hardware", "A100-80GB-SXM", "--micro-batch", "2", "--seq-len", "4096",
               "--ac", "full", "--runtime", "deepspeed", "--out", out] + flags
    else:
        # A run.toml with the folder (emit's own run.toml, with checkpoint.dir set by a JSON string: TOML reads it).
        base = os.path.join(tmp, name + "-base")
        subprocess.run([SC, "emit", "--model", "llama2-7b", "--hardware", "A100-80GB-SXM", "--gpus", "8", "--micro-batch", "2",
                        "--seq-len", "4096", "--ac", "full", "--runtime", "deepspeed", "--out", base],
                       check=True, capture_output=True)
        text = open(os.path.join(base, "run.toml")).read()
        text = text.replace('runtime = "shardcast-train"', 'runtime = "deepspeed"', 1)
        text = text.replace('[checkpoint]\ndir = ""', "[checkpoint]\ndir = " + json.dumps(ckpt), 1)
        text = text.split("\n[prediction]")[0] + "\n"
        path = os.path.join(tmp, name + ".toml")
        open(path, "w").write(text)
        cmd = [SC, "emit", path, "--out", out]
    r = subprocess.run(cmd, capture_output=True, text=True)
    check(r.returncode == 0, f"{name}: emit exit {r.returncode}: {r.stderr[-800:]}")
    if r.returncode != 0:
        return
    ds = json.load(open(os.path.join(out, "ds_config.json")))
    check_keys(ds, "", name)
    check(ds["zero_optimization"]["stage"] == stage, f"{name}: stage {ds['zero_optimization']['stage']} != {stage}")
    if ZeroConfig is not None:
        try:
            ZeroConfig(**ds["zero_optimization"])
        except Exception as e:  # pydantic's ValidationError: a key or value DeepSpeed refuses
            failures.append(f"{name}: DeepSpeedZeroConfig refuses zero_optimization: {e}")
    sh_path = os.path.join(out, "launch_deepspeed.sh")
    check(subprocess.run(["bash", "-n", sh_path]).returncode == 0, f"{name}: bash -n fails")
    launcher, args = launch_args(open(sh_path).read())
    world = int(launcher["--num_gpus"]) * int(launcher.get("--num_nodes", "1"))
    check(ds["train_batch_size"] == world * ds["train_micro_batch_size_per_gpu"] * ds["gradient_accumulation_steps"],
          f"{name}: DeepSpeed's batch rule fails")
    for m in hf_matches(ds, args, world):
        failures.append(f"{name}: the HF Trainer refuses: {m}")
    check(args.get("--deepspeed") == "ds_config.json", f"{name}: no --deepspeed ds_config.json")
    # It runs in its own folder (where ds_config.json is), by the launchers' one line
    # (shared/emitted_text.h kCdToScriptFolder; trainer.emit_launch_e2e runs it).
    check('CDPATH= cd -- "$folder"' in open(sh_path).read(), f"{name}: does not change into its folder")
    if ckpt is not None:
        check(args.get("--output_dir") == ckpt, f"{name}: --output_dir {args.get('--output_dir')!r} != {ckpt!r}")


with tempfile.TemporaryDirectory() as tmp:
    for case in CASES:
        run_case(tmp, *case)
    # A strategy DeepSpeed does not run: refused by name, nothing written for it.
    r = subprocess.run([SC, "emit", "--model", "llama2-7b", "--hardware", "A100-80GB-SXM", "--gpus", "16", "--gpus-per-node", "8",
                        "--strategy", "hybrid_shard", "--micro-batch", "1", "--seq-len", "4096", "--ac", "full",
                        "--runtime", "deepspeed", "--out", os.path.join(tmp, "hsdp")], capture_output=True, text=True)
    check(r.returncode != 0 and "hybrid_shard" in r.stderr, f"hybrid_shard: exit {r.returncode}: {r.stderr[-400:]}")
    check(not os.path.exists(os.path.join(tmp, "hsdp", "ds_config.json")), "hybrid_shard: ds_config.json written")
    # ZeRO stage 1 under an FSDP runtime: refused by name, exit 2, nothing written.
    for rt in ["accelerate", "torchtitan"]:
        out = os.path.join(tmp, "zero1-" + rt)
        r = subprocess.run([SC, "emit", "--model", "llama2-7b", "--hardware", "A100-80GB-SXM", "--gpus", "8",
                            "--strategy", "shard_optimizer", "--micro-batch", "1", "--seq-len", "4096", "--ac", "full",
                            "--runtime", rt, "--out", out], capture_output=True, text=True)
        check(r.returncode == 2 and "shard_optimizer" in r.stderr and "deepspeed" in r.stderr,
              f"shard_optimizer under {rt}: exit {r.returncode}: {r.stderr[-400:]}")
        check(not os.path.exists(out) or not os.listdir(out), f"shard_optimizer under {rt}: files written")

print("DeepSpeedZeroConfig: " + ("validated with DeepSpeed@" + COMMIT[:9] if ZeroConfig else "not loaded (DEEPSPEED_GIT_DIR unset)"))
for f in failures:
    print("FAIL", f)
print(f"{len(CASES) + 3} cases, {len(failures)} failures")
sys.exit(1 if failures else 0)
