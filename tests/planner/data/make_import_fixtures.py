#!/usr/bin/env python3
"""Writes the training-log fixtures of tests/planner/import_test.cpp.

Each line is produced with the very format string of the trainer at the commit named (copied
from its source), with made-up but self-consistent numbers: Llama 3.1 8B (torchtitan flavor
"8B"), seq_len 8192, local_batch_size 1, on H100 SXM (torchtitan's peak 989 TFLOP/s), so
tflops = tps * 57.914e9 / 1e12 as torchtitan computes it. Run it from this directory.
"""

# torchtitan/tools/utils.py Color (pytorch/torchtitan@b5bcd76c6; the same codes since 2024).
class C:
    red = "\033[31m"; green = "\033[32m"; yellow = "\033[33m"; blue = "\033[34m"
    magenta = "\033[35m"; cyan = "\033[36m"; reset = "\033[39m"
    orange = "\033[38;2;180;60;0m"; turquoise = "\033[38;2;54;234;195m"

FPT = 6 * (8030261248 - 128256 * 4096) + 12 * 32 * 4096 * 8192  # torchtitan FLOPs per token
PEAK = 989e12
GIB = 1 << 30
steps = [1, 10, 20, 30, 40, 50]
tps_of = {1: 1203.4, 10: 5790.2, 20: 5850.9, 30: 5862.3, 40: 5855.6, 50: 5871.1}
loss_of = {1: 12.2514, 10: 9.81234, 20: 7.5521, 30: 6.90147, 40: 6.5219, 50: 6.3307}
mem = (61.37 * GIB, 77.58)

def prefix(ts, name="root"):
    return f"[titan] 2025-01-10 10:{ts:02d}:00,123 - {name} - INFO - "

def prefix_2024(ts, day="2024-04-16"):
    # torchtitan/logging_utils.py init_logger at pytorch/torchtitan@a10262aeb (and torchtrain/
    # logging_utils.py before the rename): "%(asctime)s - %(name)s - %(levelname)s - %(message)s"
    return f"{day} 10:{ts:02d}:00,123 - root - INFO - "

def gen_2024_03_12(step, color=C):
    # train.py:308-311 at pytorch/torchtitan@7cd272573 (2024-03-12, "improve logging") .. 9f5a56d67^:
    # wps, and the reserved peak in % of the device only (torchtrain/metrics.py: round(100 * v / total, 2))
    tps = tps_of[step]
    return (f"{color.cyan}step: {step:2}  "
            f"{color.green}loss: {loss_of[step]:7.4f}  "
            f"{color.blue}wps: {round(tps):7,}  "
            f"{color.yellow}peak_memory: {mem[1]:5}%{color.reset}")

def gen_2024_03_15(step):
    # train.py:321-327 at pytorch/torchtitan@9f5a56d67 (2024-03-15) .. e5d1b8915^: the uncoloured
    # branch (`else: logger.info(...)`, logging off a local terminal), memory in GiB, wps, no mfu
    tps = tps_of[step]
    return (f"step: {step:2}  "
            f"loss: {loss_of[step]:7.4f}  "
            f"memory: {mem[0] / GIB:5.2f}GiB"
            f"({mem[1]:.2f}%)  "
            f"wps: {round(tps):,}")

def gen_2024_04(step, color=C):
    # train.py:363-368 at pytorch/torchtitan@a10262aeb (2024-04-15, the first public release;
    # mfu since e5d1b8915 2024-03-20, the same line until 4d182a13e^ 2024-11-22 renamed wps to tps)
    tps = tps_of[step]; mfu = 100 * FPT * tps / PEAK
    return (f"{color.cyan}step: {step:2}  "
            f"{color.green}loss: {loss_of[step]:7.4f}  "
            f"{color.yellow}memory: {mem[0] / GIB:5.2f}GiB"
            f"({mem[1]:.2f}%)  "
            f"{color.blue}wps: {round(tps):,}  "
            f"{color.magenta}mfu: {mfu:.2f}%{color.reset}")

def gen_2024(step, color=C):
    # train.py:393-400 at pytorch/torchtitan@4d182a13e (2024-11-23, wps renamed tps) .. 4e3266374^ (2025-02-18)
    tps = tps_of[step]; mfu = 100 * FPT * tps / PEAK
    return (f"{color.cyan}step: {step:2}  "
            f"{color.green}loss: {loss_of[step]:7.4f}  "
            f"{color.yellow}memory: {mem[0] / GIB:5.2f}GiB"
            f"({mem[1]:.2f}%)  "
            f"{color.blue}tps: {round(tps):,}  "
            f"{color.magenta}mfu: {mfu:.2f}%{color.reset}")

def gen_2025_03(step, color=C):
    # torchtitan/components/metrics.py at pytorch/torchtitan@a85e2a536^ (tflops since 4e3266374)
    tps = tps_of[step]; tflops = FPT * tps / 1e12; mfu = 100 * FPT * tps / PEAK
    return (f"{color.red}step: {step:2}  "
            f"{color.green}loss: {loss_of[step]:7.4f}  "
            f"{color.yellow}memory: {mem[0] / GIB:5.2f}GiB"
            f"({mem[1]:.2f}%)  "
            f"{color.blue}tps: {round(tps):,}  "
            f"{color.cyan}tflops: {tflops:,.2f}  "
            f"{color.magenta}mfu: {mfu:.2f}%{color.reset}")

def gen_2025_07(step, color=C, gn=1.2345):
    # torchtitan/components/metrics.py at pytorch/torchtitan@a85e2a536 (grad_norm added)
    tps = tps_of[step]; tflops = FPT * tps / 1e12; mfu = 100 * FPT * tps / PEAK
    return (f"{color.red}step: {step:2}  "
            f"{color.green}loss: {loss_of[step]:7.4f}  "
            f"{color.orange}grad_norm: {gn:7.4f}  "
            f"{color.yellow}memory: {mem[0] / GIB:5.2f}GiB"
            f"({mem[1]:.2f}%)  "
            f"{color.blue}tps: {round(tps):,}  "
            f"{color.cyan}tflops: {tflops:,.2f}  "
            f"{color.magenta}mfu: {mfu:.2f}%{color.reset}")

def gen_2026(step, color=C, gn=0.8319, tps_scale=1.0, quantized=False):
    # torchtitan/components/metrics.py at pytorch/torchtitan@c13b9d66b (HEAD b5bcd76c6)
    tps = tps_of[step] * tps_scale; tflops = FPT * tps / 1e12
    mfu = None if quantized else 100 * FPT * tps / PEAK
    mfu_str = f"{mfu:.2f}%" if mfu is not None else "N/A"
    return (f"{color.red}step: {step:2}  "
            f"{color.green}loss: {loss_of[step]:8.5f}  "
            f"{color.orange}grad_norm: {gn:7.4f}  "
            f"{color.turquoise}memory: {mem[0] / GIB:5.2f}GiB"
            f"({mem[1]:.2f}%)  "
            f"{color.blue}tps: {round(tps):,}  "
            f"{color.cyan}tflops: {tflops:,.2f}  "
            f"{color.magenta}mfu: {mfu_str}{color.reset}")

with open("torchtitan_2024_03_12.log", "w") as f:
    for i, s in enumerate(steps):
        f.write("[rank0]:" + prefix_2024(i + 1, "2024-03-12") + gen_2024_03_12(s) + "\n")

with open("torchtitan_2024_03_15.log", "w") as f:  # no torchrun prefix
    for i, s in enumerate(steps):
        f.write(prefix_2024(i + 1, "2024-03-15") + gen_2024_03_15(s) + "\n")

with open("torchtitan_2024_04.log", "w") as f:
    f.write("[rank0]:" + prefix_2024(0) + "Building llama3 8B with ModelArgs(dim=4096, n_layers=32)\n")
    for i, s in enumerate(steps):
        f.write("[rank0]:" + prefix_2024(i + 1) + gen_2024_04(s) + "\n")

with open("torchtitan_2024.log", "w") as f:
    f.write("[rank0]:" + prefix(0) + "Building llama3 8B with TransformerModelArgs(dim=4096, n_layers=32)\n")
    f.write("[rank0]:" + prefix(0) + "CUDA capacity: NVIDIA H100 80GB HBM3 with 79.11GiB memory\n")
    for i, s in enumerate(steps):
        f.write("[rank0]:" + prefix(i + 1) + gen_2024(s) + "\n")
    f.write("[rank0]:" + prefix(9) + "Training completed\n")

with open("torchtitan_2025_03.log", "w") as f:  # no torchrun prefix (a single-node srun log)
    f.write(prefix(0) + "Training starts at step 1.\n")
    for i, s in enumerate(steps):
        f.write(prefix(i + 1) + gen_2025_03(s) + "\n")
        if s == 20:
            f.write(prefix(i + 1) + "[GC] Peforming periodical GC collection. 0.06 seconds.\n")

with open("torchtitan_2025_07.log", "w") as f:
    for i, s in enumerate(steps):
        f.write("[rank0]:" + prefix(i + 1) + gen_2025_07(s) + "\n")

with open("torchtitan_2026_08.log", "w") as f:  # LOG_RANK=0,1: two ranks, validation lines
    for i, s in enumerate(steps):
        f.write("[rank0]:" + prefix(i + 1, "torchtitan.trainer") + gen_2026(s) + "\n")
        f.write("[rank1]:" + prefix(i + 1, "torchtitan.trainer") + gen_2026(s, tps_scale=0.98) + "\n")
        if s == 50:
            f.write("[rank0]:" + prefix(i + 1, "torchtitan.components.validate") +
                    f"{C.yellow}validate step: {s:2}  {C.green}loss: 6.4000  {C.turquoise}memory: 61.37GiB(77.58%)  "
                    f"{C.blue}tps: 15,311{C.reset}\n")

with open("torchtitan_2026_fp8.log", "w") as f:  # fp8: mfu N/A since f113706c4
    for i, s in enumerate(steps):
        f.write("[rank0]:" + prefix(i + 1, "torchtitan.trainer") + gen_2026(s, tps_scale=1.3, quantized=True) + "\n")

# fms-fsdp: fms_fsdp/utils/train_utils.py train(), print("key:", value) per line.
def fms_block_2024_04(step, t_step, tps, reserved, allocated):
    # fms_fsdp/utils/train_utils.py:132-143 at foundation-model-stack/fms-fsdp@0e43c6a (2024-04-08) .. 5a296af (2025-07-10)
    lines = [("step:", step), ("loss:", 3.1234 - step * 1e-4), ("LR:", 3e-04), ("tokens seen:", step * 128 * 4096),
             ("gradient norm:", 0.53125), ("reserved memory:", reserved), ("allocated memory:", allocated),
             ("current step time:", t_step), ("overall step time:", t_step * 1.01),
             ("current token per gpu per sec:", tps), ("overall token per gpu per sec:", int(tps * 0.99)),
             ("overall token per day:", int(tps * 128 * 86400))]
    return "".join(" ".join(str(x) for x in l) + "\n" for l in lines)

def fms_block_2024_03(step, t_step, reserved, allocated):
    # fms_fsdp/utils/train_utils.py:76-98 at foundation-model-stack/fms-fsdp@9137d48 (2024-03-14,
    # LR = get_last_lr()[0]) .. 91300d1^
    lines = [("step:", step), ("tokens seen:", step * 128 * 4096), ("loss:", 3.5 - step * 1e-4),
             ("gradient norm:", 0.75), ("speed for these 100 steps:", t_step), ("overall speed:", t_step * 1.02),
             ("LR:", 0.0003), ("reserved memory:", reserved), ("active memory:", allocated),
             ("overall token per gpu per sec:", int(4096 * 2 / t_step * 0.98)), ("token per day:", 123456789012)]
    return "".join(" ".join(str(x) for x in l) + "\n" for l in lines)

def fms_block_2024_02_06(step, t_step, reserved, active):
    # pretraining/utils/train_utils.py:65-86 at foundation-model-stack/fms-fsdp@7c926a1 (2024-02-06,
    # the first code) .. 8f266f7^: no gradient norm; LR is scheduler.get_last_lr(), a list
    lines = [("step:", step), ("tokens seen:", step * 128 * 4096), ("loss:", 3.9 - step * 1e-4),
             ("speed for these 100 steps:", t_step), ("overall speed:", t_step * 1.02),
             ("LR:", [6e-05]), ("reserved memory:", reserved), ("active memory:", active),
             ("overall token per gpu per sec:", int(4096 * 2 / t_step * 0.98)), ("token per day:", 123456789012)]
    return "".join(" ".join(str(x) for x in l) + "\n" for l in lines)

def fms_block_2024_02(step, t_step, reserved, active):
    # fms_fsdp/utils/train_utils.py:75-97 at foundation-model-stack/fms-fsdp@9137d48^ (8f266f7
    # 2024-02-07 .. 2024-03-14): gradient norm after loss; LR still a list (two param groups here)
    lines = [("step:", step), ("tokens seen:", step * 128 * 4096), ("loss:", 3.7 - step * 1e-4),
             ("gradient norm:", 0.8125), ("speed for these 100 steps:", t_step), ("overall speed:", t_step * 1.02),
             ("LR:", [6e-05, 6e-05]), ("reserved memory:", reserved), ("active memory:", active),
             ("overall token per gpu per sec:", int(4096 * 2 / t_step * 0.98)), ("token per day:", 123456789012)]
    return "".join(" ".join(str(x) for x in l) + "\n" for l in lines)

def fms_block_2024_03_15(step, t_step, reserved, allocated):
    # fms_fsdp/utils/train_utils.py:105-118 at foundation-model-stack/fms-fsdp@91300d1 (2024-03-15)
    # .. d5de8a8^: "allocated memory" for "active memory", LR a number
    lines = [("step:", step), ("tokens seen:", step * 128 * 4096), ("loss:", 3.4 - step * 1e-4),
             ("gradient norm:", 0.625), ("speed for these 100 steps:", t_step), ("overall speed:", t_step * 1.02),
             ("LR:", 0.0003), ("reserved memory:", reserved), ("allocated memory:", allocated),
             ("overall token per gpu per sec:", int(4096 * 2 / t_step * 0.98)), ("token per day:", 123456789012)]
    return "".join(" ".join(str(x) for x in l) + "\n" for l in lines)

def fms_block_2024_04_07(step, t_step, tps, reserved, allocated):
    # fms_fsdp/utils/train_utils.py:127-141 at foundation-model-stack/fms-fsdp@d5de8a8 (2024-04-07)
    # .. 0e43c6a^: adds the current rate; "overall token per day"
    lines = [("step:", step), ("tokens seen:", step * 128 * 4096), ("loss:", 3.3 - step * 1e-4),
             ("gradient norm:", 0.5), ("speed for these 100 steps:", t_step), ("overall speed:", t_step * 1.02),
             ("LR:", 0.0003), ("reserved memory:", reserved), ("allocated memory:", allocated),
             ("current token per gpu per sec:", tps), ("overall token per gpu per sec:", int(tps * 0.99)),
             ("overall token per day:", int(tps * 128 * 86400))]
    return "".join(" ".join(str(x) for x in l) + "\n" for l in lines)

with open("fms_fsdp_2024_04.log", "w") as f:
    f.write("Sharding strategy = fsdp\nbFloat16 enabled for mixed precision - using bfSixteen policy\n")
    for i, s in enumerate([100, 200, 300, 400]):
        t = [3.812, 3.4051, 3.4102, 3.3987][i]
        f.write(fms_block_2024_04(s, t, int(2 * 4096 / t), 71940702208 + i * 2097152, 60129542144 + i * 1048576))

with open("fms_fsdp_2024_03.log", "w") as f:
    for i, s in enumerate([100, 200, 300]):
        t = [1.25, 1.0, 1.02][i]
        f.write(fms_block_2024_03(s, t, 40802189312, 35433480192))

with open("fms_fsdp_2024_02_06.log", "w") as f:
    for i, s in enumerate([100, 200, 300]):
        t = [1.25, 1.0, 1.02][i]
        f.write(fms_block_2024_02_06(s, t, 40802189312, 35433480192))

with open("fms_fsdp_2024_02.log", "w") as f:
    for i, s in enumerate([100, 200, 300]):
        t = [1.25, 1.0, 1.02][i]
        f.write(fms_block_2024_02(s, t, 40802189312, 35433480192))

with open("fms_fsdp_2024_03_15.log", "w") as f:
    for i, s in enumerate([100, 200, 300]):
        t = [1.25, 1.0, 1.02][i]
        f.write(fms_block_2024_03_15(s, t, 40802189312, 35433480192))

with open("fms_fsdp_2024_04_07.log", "w") as f:
    for i, s in enumerate([100, 200, 300, 400]):
        t = [3.812, 3.4051, 3.4102, 3.3987][i]
        f.write(fms_block_2024_04_07(s, t, int(2 * 4096 / t), 71940702208 + i * 2097152, 60129542144 + i * 1048576))

# A torchtitan run of a mesh: Llama 3.1 70B (flavor "70B"), seq_len 8192, local_batch_size 8 per
# data-parallel rank, 64 GPUs as tensor_parallel_degree 8 x data_parallel_shard_degree 8
# (torchtitan_llama3_70b_tp8_v0.2.toml). tps is torchtitan's per-GPU value (metrics.py divides
# by non_data_parallel_size), about the 829 of the Dec-2024 benchmark's 70B FSDP 32 x TP 8 row.
FPT_70B = 6 * (70553706496 - 128256 * 8192) + 12 * 80 * 8192 * 8192
tps_70b = {1: 190.2, 10: 801.7, 20: 809.3, 30: 812.0, 40: 806.4, 50: 810.9}
with open("torchtitan_2025_07_70b_tp8.log", "w") as f:
    for i, s in enumerate(steps):
        tps = tps_70b[s]; tflops = FPT_70B * tps / 1e12; mfu = 100 * FPT_70B * tps / PEAK
        f.write("[rank0]:" + prefix(i + 1) +
                f"{C.red}step: {s:2}  {C.green}loss: {loss_of[s]:7.4f}  {C.orange}grad_norm: {1.2345:7.4f}  "
                f"{C.yellow}memory: {58.20:5.2f}GiB({73.57:.2f}%)  {C.blue}tps: {round(tps):,}  "
                f"{C.cyan}tflops: {tflops:,.2f}  {C.magenta}mfu: {mfu:.2f}%{C.reset}\n")
