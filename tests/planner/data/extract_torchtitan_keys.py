#!/usr/bin/env python3
"""Lists the configuration keys of a torchtitan commit (tests/planner/data/torchtitan_keys_*.txt).

usage: extract_torchtitan_keys.py TORCHTITAN_GIT_DIR COMMIT {v0.2|current}
v0.2: the dataclass fields of JobConfig (torchtitan/config/job_config.py), nested sections dotted.
current: the fields of the config classes a Trainer.Config holds (see the list below).
"""
import ast, subprocess, sys
REPO = sys.argv[1] if __name__ == "__main__" else ""
def src(commit, path):
    return subprocess.check_output(["git", "-C", REPO, "show", f"{commit}:{path}"], text=True)
def find_class(tree, qual):
    node = tree
    for part in qual.split("."):
        body = node.body
        node = next(n for n in body if isinstance(n, ast.ClassDef) and n.name == part)
    return node
def fields(commit, path, qual):
    c = find_class(ast.parse(src(commit, path)), qual)
    out = []
    for n in c.body:
        if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name):
            out.append((n.target.id, ast.unparse(n.annotation)))
    return out
if __name__ == "__main__":
    commit = sys.argv[2]
    if sys.argv[3] == "v0.2":
        path = "torchtitan/config/job_config.py"
        tree = ast.parse(src(commit, path))
        classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
        def walk(cls, prefix):
            for n in classes[cls].body:
                if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name):
                    t = ast.unparse(n.annotation)
                    if t in classes:
                        walk(t, prefix + n.target.id + ".")
                    else:
                        print(prefix + n.target.id)
        walk("JobConfig", "")
    else:
        for prefix, path, qual in [
            ("training.", "torchtitan/config/configs.py", "TrainingConfig"),
            ("parallelism.", "torchtitan/config/configs.py", "ParallelismConfig"),
            ("compile.", "torchtitan/config/configs.py", "CompileConfig"),
            ("comm.", "torchtitan/config/configs.py", "CommConfig"),
            ("debug.", "torchtitan/config/configs.py", "DebugConfig"),
            ("optimizer.", "torchtitan/components/optimizer/optimizer.py", "OptimizersContainer.Config"),
            ("optimizer.param_groups[].", "torchtitan/components/optimizer/optimizer.py", "ParamGroupConfig"),
            ("lr_scheduler.", "torchtitan/components/optimizer/lr_scheduler.py", "LRSchedulersContainer.Config"),
            ("metrics.", "torchtitan/components/metrics.py", "MetricsProcessor.Config"),
            ("checkpoint.", "torchtitan/components/checkpointer/base.py", "BaseCheckpointManager.Config"),
            ("checkpoint.", "torchtitan/components/checkpointer/dcp.py", "CheckpointManager.Config"),
            ("profiler.", "torchtitan/tools/profiler.py", "Profiler.Config"),
            ("activation-checkpoint:selective.", "torchtitan/distributed/activation_checkpoint.py", "SelectiveAC.Config"),
            ("activation-checkpoint:memory-budget.", "torchtitan/distributed/activation_checkpoint.py", "MemoryBudgetAC.Config"),
            ("quantize.linear.float8.", "torchtitan/components/quantization/__init__.py", "QuantizationConverter.Config"),
            ("quantize.linear.float8.", "torchtitan/components/quantization/float8.py", "Float8LinearConverter.Config"),
            ("quantize.linear.mxfp8.", "torchtitan/components/quantization/__init__.py", "QuantizationConverter.Config"),
            ("quantize.linear.mxfp8.", "torchtitan/components/quantization/mx.py", "MXFP8LinearConverter.Config"),
            ("quantize.linear.nvfp4.", "torchtitan/components/quantization/__init__.py", "QuantizationConverter.Config"),
            ("quantize.linear.nvfp4.", "torchtitan/components/quantization/nvfp4.py", "NVFP4LinearConverter.Config"),
            ("loss.", "torchtitan/components/loss.py", "ChunkedLossWrapper.Config"),
        ]:
            try:
                for f, _ in fields(commit, path, qual):
                    print(prefix + f)
            except Exception as e:
                print(f"# failed {path} {qual}: {e}", file=sys.stderr)
