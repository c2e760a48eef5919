#!/usr/bin/env python3
"""Writes the DeepSpeed / HF Trainer log fixtures of tests/planner/deepspeed_test.cpp.

Each line is made with the print statement of the code at the commit named (the format copied
from its source), with made-up but self-consistent numbers: Llama-2 7B, seq_len 4096,
micro-batch 2, 8 GPUs (train_batch_size 16), ZeRO stage 3. Run it from this directory.
"""

def ds_prefix(sec, where):
    # deepspeed/utils/logging.py LoggerFactory.create_logger @38327e07f:
    # "[%(asctime)s] [%(levelname)s] [%(filename)s:%(lineno)d:%(funcName)s] %(message)s"
    return f"[2025-02-24 10:{sec // 60:02d}:{sec % 60:02d},123] [INFO] [{where}] "

def timer_line(sec, epoch, micro, step, avg, curr, alloc, max_alloc):
    # deepspeed/utils/timer.py ThroughputTimer.stop @38327e07f (self.logging = logger.info, line 264)
    return ds_prefix(sec, "timer.py:264:stop") + (
        "epoch={}/micro_step={}/global_step={}, RunningAvgSamplesPerSec={}, CurrSamplesPerSec={}, "
        "MemAllocated={}GB, MaxMemAllocated={}GB".format(epoch, micro, step, avg, curr, round(alloc, 2),
                                                           round(max_alloc, 2)))

def see_memory_usage(sec, message, ma, max_ma, ca, max_ca):
    # deepspeed/runtime/utils.py see_memory_usage @38327e07f (lines 781-785): the f-string's
    # backslash continuations keep the next lines' indentation inside the message
    return [ds_prefix(sec, "utils.py:781:see_memory_usage") + message,
            ds_prefix(sec, "utils.py:782:see_memory_usage") +
            f"MA {round(ma, 2)} GB \
        Max_MA {round(max_ma, 2)} GB \
        CA {round(ca, 2)} GB \
        Max_CA {round(max_ca)} GB "]

def hf_log(d):
    # transformers ProgressCallback.on_log: self.training_bar.write(str(logs))
    return str(d)

curr = {10: 5.4712, 20: 5.4891, 30: 5.4803, 40: 5.4950, 50: 5.4877}
loss = {10: 1.9811, 20: 1.7456, 30: 1.6634, 40: 1.6012, 50: 1.5703}

lines = ["[2025-02-24 10:00:01,001] [INFO] [real_accelerator.py:222:get_accelerator] Setting ds_accelerator to cuda (auto detect)"]
lines += see_memory_usage(5, "After initializing optimizer states", 3.46, 3.46, 3.6, 4)
lines.append("{'loss': 2.4102, 'grad_norm': 3.2, 'learning_rate': 3e-05, 'epoch': 0.0}")  # before any throughput line
avg = 0.0
for i, step in enumerate(sorted(curr)):
    avg = sum(curr[s] for s in sorted(curr)[: i + 1]) / (i + 1)
    lines.append(timer_line(30 * (i + 1), 0, step, step, avg, curr[step], 21.37 + 0.01 * i, 38.52 + 0.02 * i))
    lines.append(f"\r {2 * step}%|██        | {step}/50 [01:23<05:32,  2.92s/it]")  # tqdm's bar
    lines.append(hf_log({"loss": loss[step], "grad_norm": 0.9123, "learning_rate": 0.0003, "epoch": round(step / 500, 2)}))
lines += see_memory_usage(300, "after step 50", 21.4, 39.1, 43.02, 46)
lines.append(hf_log({"train_runtime": 155.3, "train_samples_per_second": 5.151, "train_steps_per_second": 0.322,
                     "train_loss": 1.8012, "epoch": 0.1}))
with open("deepspeed_zero3_hf.log", "w") as f:
    f.write("\n".join(lines) + "\n")

# steps_per_print above max_steps: no throughput line; the HF Trainer's dicts only.
lines = [hf_log({"loss": loss[s], "grad_norm": 0.9123, "learning_rate": 0.0003, "epoch": round(s / 500, 2)}) for s in sorted(curr)]
lines.append(hf_log({"train_runtime": 155.3, "train_samples_per_second": 5.151, "train_steps_per_second": 0.322,
                     "train_loss": 1.8012, "epoch": 0.1}))
with open("deepspeed_hf_summary_only.log", "w") as f:
    f.write("\n".join(lines) + "\n")
