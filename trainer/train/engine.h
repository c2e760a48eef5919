// Engine and TrainLoop: one optimizer step of either the plain reference path or FSDP.
//
// What it is: Engine is the small interface the loop drives (forward to a loss, backward is
// plain autograd, clip, AdamW step, zero_grad, reductions of scalars over data-parallel
// ranks); ReferenceEngine wraps ReferenceModel (no sharding code, the oracle), FsdpEngine
// wraps FsdpModel. TrainLoop::step runs micro-steps of gradient accumulation (FSDP
// communicates only on the last), clipping, the optimizer and the per-step metrics, with a
// hook after backward (tests read gradients there; checkpoints hang off the step
// boundary, and the data position is just the step: see data/token_file.h).
// What it is not: process setup, files or the CLI (train_loop.h).
// Threading: an Engine and its TrainLoop belong to one rank's thread.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <ATen/ATen.h>

#include "shared/run_report.h"
#include "shared/train_config.h"
#include "trainer/comm/collectives.h"
#include "trainer/data/token_file.h"
#include "trainer/fsdp/fsdp.h"

namespace shardcast::trainer {

class Engine {
 public:
  virtual ~Engine() = default;
  // Mean token loss of this micro-batch (scalar fp32, with graph). `sync` = last micro-step
  // of the optimizer step (FSDP with sync_every_micro_step = false reduces gradients only then).
  virtual at::Tensor forward_loss(const at::Tensor& tokens, const at::Tensor& targets, bool sync) = 0;
  virtual void zero_grad() = 0;
  virtual double clip_grad_norm(double max_norm) = 0;   // returns the norm before clipping
  virtual void optimizer_step(const OptimizerConfig& o, double lr) = 0;
  virtual std::vector<std::pair<std::string, at::Tensor>> full_parameters() = 0;
  virtual std::vector<std::pair<std::string, at::Tensor>> full_gradients() = 0;
  virtual StateBytes state_bytes() const = 0;
  // Element-wise sum / max of small vectors over all data-parallel ranks (in place).
  virtual void reduce_sum(std::vector<double>& v) = 0;
  virtual void reduce_max(std::vector<double>& v) = 0;
  virtual int world_size() const = 0;
  virtual int rank() const = 0;
};

std::unique_ptr<Engine> make_reference_engine(const TrainConfig& cfg);
std::unique_ptr<Engine> make_fsdp_engine(const TrainConfig& cfg, ProcessGroups groups,
                                         at::Device device = at::kCPU);
// With FsdpOptions given in full (tests and benchmarks that set a runtime-only option);
// cfg supplies the model and the step's settings.
std::unique_ptr<Engine> make_fsdp_engine(const TrainConfig& cfg, ProcessGroups groups, const FsdpOptions& opts);
FsdpOptions fsdp_options(const TrainConfig& cfg);
FsdpModel* fsdp_model_of(Engine& e);  // nullptr for the reference engine

// Which data-parallel ranks' sequences this process trains on: an FSDP rank reads its
// data-parallel rank's (the ranks of a tp group read the same ones); the reference reads all
// `world` data-parallel ranks' sequences, i.e. the same global batch.
struct DataSlice {
  int first_rank = 0;
  int n_ranks = 1;
  int world = 1;     // data-parallel ranks
  int sharers = 1;   // ranks computing each of these sequences together (tp)
};

// Peak live tensor bytes per phase of the last step (counting allocator; 0 if not installed).
struct PhasePeaks {
  int64_t forward = 0, backward = 0, optimizer = 0;  // bytes
};

class TrainLoop {
 public:
  // peak_flops: per-rank peak for MFU/HFU (0 = do not compute).  // FLOP/s
  TrainLoop(const TrainConfig& cfg, Engine& engine, const TokenFile& data, DataSlice slice,
            double peak_flops);
  struct Hooks {
    std::function<void(int step)> after_backward;  // gradients reduced, not yet clipped
  };
  StepMetrics step(int step, const Hooks& hooks = {});   // step counts from 1
  const PhasePeaks& phase_peaks() const { return peaks_; }

 private:
  const TrainConfig& cfg_;
  Engine& engine_;
  const TokenFile& data_;
  DataSlice slice_;
  double peak_flops_;
  PhasePeaks peaks_;
  at::Tensor batch_;   // (n_ranks·micro_batch, seq_len+1) int64
};

}  // namespace shardcast::trainer
