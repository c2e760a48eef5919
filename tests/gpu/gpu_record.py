#!/usr/bin/env python3
"""What a GPU check's validation.json must say, and the train check's verdict.

What it is: the one writer of the provenance every validation.json of tests/gpu/ carries
(issue 55, "records that prove what they say") and of the `train` check's verdict:
  gpu_record.py stamp FILE [--run-report RUN_REPORT]...
      adds "provenance" to FILE: the GPU(s), driver and memory (nvidia-smi), the torch of
      $PYTHON (python3) and the LibTorch the trainer was built against, the trainer commit, and
      the path the check took (world size, communication backend, optimizer kernel, attention
      backend: FILE's own "path" (gpu_smoke) or each RUN_REPORT's, trainer/train/run_path.h).
      Anything of that it cannot find is listed in "provenance_missing", "passed" becomes
      false, and the exit status is 1: a record that cannot say what ran does not pass.
  gpu_record.py smoke GPU_SMOKE CHECK OUT_DIR
      runs GPU_SMOKE CHECK OUT_DIR (argument vector, no shell), then stamps its validation.json.
  gpu_record.py train NAME DIR
      the verdict of one gpu_train_check.sh run from DIR/plan.json and DIR/run/metrics.jsonl:
      DIR/validation.json with the targets; "passed" only when the run trained, its loss fell
      (mean of the last 20 steps below the first) AND every target is met; then stamped with
      DIR/run/run_report.json. Exit 0 passed, 1 not.
The trainer commit: $SHARDCAST_COMMIT, else `git -C SRC rev-parse HEAD` (with "-dirty" when the
tree differs from it), else the file SRC/.shardcast-commit (tests/gpu/one_command.sh --prepare
writes PREP_DIR/commit, exported as SHARDCAST_COMMIT on the lent machine).
What it is not: the checks themselves (gpu_smoke.cpp, run_gpu_checks.sh, gpu_train_check.sh).
Environment: NVIDIA_SMI (nvidia-smi), PYTHON (python3), SHARDCAST_COMMIT.
"""
import json
import os
import statistics
import subprocess
import sys

SRC = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
PATH_KEYS = ("world_size", "optimizer_kernel", "attention_backend")


def run(argv):
    """stdout of argv (no shell), or None when it cannot run or fails."""
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return r.stdout if r.returncode == 0 else None


def gpus():
    out = run([os.environ.get("NVIDIA_SMI", "nvidia-smi"), "--query-gpu=name,driver_version,memory.total",
               "--format=csv,noheader,nounits"])
    rows = []
    for line in (out or "").splitlines():
        cells = [c.strip() for c in line.split(",")]
        if len(cells) == 3 and cells[0]:
            rows.append({"name": cells[0], "driver": cells[1], "memory_mib": cells[2]})
    return rows


def python_torch():
    out = run([os.environ.get("PYTHON", "python3"), "-c",
               "import torch; print(torch.__version__); print(torch.version.cuda or '')"])
    if not out:
        return None, None
    lines = out.splitlines() + ["", ""]
    return lines[0].strip() or None, lines[1].strip() or None


def commit():
    env = os.environ.get("SHARDCAST_COMMIT", "").strip()
    if env:
        return env, "SHARDCAST_COMMIT"
    head = run(["git", "-C", SRC, "rev-parse", "HEAD"])
    if head:
        dirty = run(["git", "-C", SRC, "status", "--porcelain", "--untracked-files=no"])
        return head.strip() + ("-dirty" if dirty else ""), "git"
    f = os.path.join(SRC, ".shardcast-commit")
    if os.path.isfile(f):
        text = open(f).read().strip()
        if text:
            return text, f
    return None, None


def stamp(file, run_reports):
    record = json.load(open(file))
    paths = []
    if isinstance(record.get("path"), dict) and record["path"]:
        paths.append(record["path"])
    for rr in run_reports:
        try:
            p = json.load(open(rr)).get("path")
        except (OSError, ValueError):
            p = None
        paths.append(p if isinstance(p, dict) else {"missing": rr})
    gpu = gpus()
    torch_version, cuda_version = python_torch()
    sha, sha_from = commit()
    prov = {"gpus": gpu, "torch": torch_version, "torch_cuda": cuda_version, "trainer_commit": sha,
            "trainer_commit_from": sha_from, "paths": paths}
    missing = []
    if not gpu:
        missing.append("gpu (nvidia-smi --query-gpu listed none)")
    if not torch_version:
        missing.append("torch (python3 -c 'import torch' failed)")
    if not sha:
        missing.append("trainer_commit (no SHARDCAST_COMMIT, no git, no .shardcast-commit)")
    if not paths:
        missing.append("path (neither the record nor a run_report.json names one)")
    for i, p in enumerate(paths):
        for k in PATH_KEYS:
            if not p.get(k):
                missing.append(f"paths[{i}].{k}")
    record["provenance"] = prov
    if missing:
        record["provenance_missing"] = missing
        record["passed"] = False
    tmp = file + ".tmp"
    json.dump(record, open(tmp, "w"), indent=2)
    os.replace(tmp, file)
    names = ", ".join(g["name"] for g in gpu) or "no GPU"
    print(f"{record.get('check', file)}: provenance {names}, torch {torch_version}, commit {sha}"
          + (f"; MISSING {', '.join(missing)}: not passed" if missing else ""))
    return 0 if not missing else 1


MIN_STEPS = 300     # issue 55: "a run of >= 300 steps of llama3.2-1b and of the largest 8B-shape"
MIN_MFU_8B = 0.45   # issue 55: "MFU >= 0.45 on the 8B shape"


def train(name, d):
    plan = json.load(open(os.path.join(d, "plan.json")))
    steps = [json.loads(l) for l in open(os.path.join(d, "run", "metrics.jsonl")) if l.strip()]
    warm = min(len(steps) // 5, 5)
    steady = steps[warm:] or steps

    def med(k):
        v = [s[k] for s in steady if k in s]
        return statistics.median(v) if v else None

    def mx(k):
        return max((s[k] for s in steps if k in s), default=None)

    losses = [s["loss"] for s in steps]
    loss_fell = len(losses) >= 21 and statistics.mean(losses[-20:]) < losses[0]
    meas = {"tokens_per_s_per_gpu": med("tokens_per_s_per_gpu"), "mfu": med("mfu"),
            "max_allocated_bytes": mx("mem_peak_bytes"), "max_reserved_bytes": mx("mem_reserved_peak_bytes")}
    pred = {"tokens_per_s_per_gpu": plan["tokens_per_s_per_gpu"], "mfu": plan["mfu"],
            "max_allocated_bytes": plan["memory"]["peak_bytes"], "max_reserved_bytes": plan["memory"]["reserved_bytes"]}

    def err(q):
        return None if not meas[q] else (pred[q] - meas[q]) / meas[q]

    entries = [{"quantity": "loss_first_step", "reference": None, "measured": losses[0] if losses else None,
                "rel_error": None},
               {"quantity": "loss_mean_last_20_steps", "reference": None,
                "measured": statistics.mean(losses[-20:]) if losses else None, "rel_error": None}]
    entries += [{"quantity": q, "reference": pred[q], "measured": meas[q], "rel_error": err(q)} for q in pred]
    e_tps, e_res = err("tokens_per_s_per_gpu"), err("max_reserved_bytes")
    targets = [
        {"target": "the run trained and its loss fell (mean of the last 20 steps below the first step's)",
         "met": loss_fell},
        {"target": "tokens/s within 10% of the plan", "rel_error": e_tps, "met": e_tps is not None and abs(e_tps) <= 0.10},
        {"target": "max reserved within 5% of the plan, the plan never more than 5% under", "rel_error": e_res,
         "met": e_res is not None and -0.05 <= e_res <= 0.05}]
    # Issue 55's run length, and its MFU target on the 8B shape (llama3-8b's widths).
    targets.append({"target": f"at least {MIN_STEPS} steps (issue 55)", "measured": len(steps),
                    "met": len(steps) >= MIN_STEPS})
    if "8b" in name.lower():
        targets.append({"target": f"MFU >= {MIN_MFU_8B} on the 8B shape (issue 55)", "measured": meas["mfu"],
                        "met": meas["mfu"] is not None and meas["mfu"] >= MIN_MFU_8B})
    ok = all(t["met"] for t in targets)
    report = {"schema": 2, "check": "train-" + name, "passed": ok, "tolerance": None,
              "note": "rel_error = (plan - measured) / measured; passed = every target met",
              "steps": len(steps), "steady_steps_from": warm + 1, "entries": entries, "targets": targets,
              "per_step": [{k: s.get(k) for k in ("step", "loss", "tokens_per_s_per_gpu", "mfu", "mem_peak_bytes",
                                                   "mem_reserved_peak_bytes")} for s in steps]}
    out = os.path.join(d, "validation.json")
    json.dump(report, open(out + ".tmp", "w"), indent=2)
    os.replace(out + ".tmp", out)

    def fmt(q, v):
        if v is None:
            return "-"
        return f"{v / 2**30:.2f} GiB" if "bytes" in q else (f"{100 * v:.1f}%" if q == "mfu" else f"{v:.0f}")

    if losses:
        print(f"train-{name}: loss {losses[0]:.3f} -> {statistics.mean(losses[-20:]):.3f} (mean of the last 20 steps)")
    print(f"  {'quantity':<22} {'plan':>12} {'measured':>12} {'plan err':>9}")
    for q in pred:
        e = err(q)
        print(f"  {q:<22} {fmt(q, pred[q]):>12} {fmt(q, meas[q]):>12} {'-' if e is None else f'{100 * e:+.1f}%':>9}")
    for t in targets:
        print(f"  target: {t['target']}: {'MET' if t['met'] else 'NOT MET'}")
    stamped = stamp(out, [os.path.join(d, "run", "run_report.json")])
    # The trainer's own record of the run (its validation.json beside metrics.jsonl) names the
    # machine, torch, commit and path too (issue 55: every validation.json).
    run_record = os.path.join(d, "run", "validation.json")
    if os.path.isfile(run_record):
        stamped += stamp(run_record, [os.path.join(d, "run", "run_report.json")])
    ok = ok and stamped == 0
    print(f"train-{name}: {'PASSED' if ok else 'FAILED'} -> {out}")
    return 0 if ok else 1


def main(argv):
    if len(argv) >= 2 and argv[0] == "stamp":
        reports, rest = [], argv[2:]
        while rest:
            if rest[0] != "--run-report" or len(rest) < 2:
                sys.exit(f"gpu_record.py stamp: unknown argument '{rest[0]}' (--run-report FILE)")
            reports.append(rest[1])
            rest = rest[2:]
        return stamp(argv[1], reports)
    if len(argv) == 4 and argv[0] == "smoke":
        rc = subprocess.run(argv[1:]).returncode
        f = os.path.join(argv[3], "validation.json")
        if not os.path.isfile(f):
            print(f"gpu_record.py: {argv[2]} wrote no {f} (exit {rc})", file=sys.stderr)
            return 1
        return 1 if stamp(f, []) != 0 or rc != 0 else 0
    if len(argv) == 3 and argv[0] == "train":
        return train(argv[1], argv[2])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
