// Helpers for the planner tests: one Linear op and its time, presets from the source tree (SHARDCAST_CONFIG_DIR is set by
// ctest), a TrainConfig built in code, a memory component of a Prediction, and a published
// CSV validated as `validate --published` does.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <sstream>
#include <string>

#include "planner/model/ops.h"
#include "planner/evidence/published_csv.h"
#include "planner/evidence/validate.h"
#include "shared/config_io.h"
#include "shared/prediction.h"
#include "shared/train_config.h"

namespace shardcast::planner::test {

// `--a.b=v` / `--k=v` lines into {"a.b": "v"}; a line of any other shape fails the test. With
// `tyro` (torchtitan's overrides): `--a.b` is {"a.b": "true"}, `--a.no-b` {"a.b": "false"} (a
// boolean's flags) and `--a.b x y` {"a.b": "x,y"} (a list of choices).
inline std::map<std::string, std::string> parse_args(const std::string& text, bool tyro = false) {
  std::map<std::string, std::string> m;
  std::istringstream lines(text);
  for (std::string l; std::getline(lines, l);) {
    if (l.empty() || l[0] == '#') continue;
    const size_t eq = l.find('=');
    std::string key, value;
    if (eq != std::string::npos) {
      key = l.substr(2, eq - 2);
      value = l.substr(eq + 1);
    } else if (tyro && l.rfind("--", 0) == 0) {
      std::istringstream words(l.substr(2));
      words >> key;
      for (std::string w; words >> w;) value += (value.empty() ? "" : ",") + w;
      const size_t dot = key.rfind('.');
      const bool negated = key.compare(dot + 1, 3, "no-") == 0;
      if (negated) {
        key = key.substr(0, dot + 1) + key.substr(dot + 4);
        std::replace(key.begin() + std::ptrdiff_t(dot), key.end(), '-', '_');
      }
      if (value.empty()) value = negated ? "false" : "true";
      else EXPECT_FALSE(negated) << l;
    }
    EXPECT_TRUE(l.rfind("--", 0) == 0 && !key.empty()) << "not --key=value: " << l;
    if (key.empty()) continue;
    EXPECT_TRUE(m.emplace(key, value).second) << "repeated: " << l;
  }
  return m;
}


// A Linear y = x·Wᵀ as the planner's op: x of M×K, W of N×K, bf16 operands.
inline Op linear(double M, double K, double N) {
  Op op;
  op.kind = OpKind::matmul;
  op.m = M, op.k = K, op.n = N;
  op.flops = 2.0 * M * K * N;
  op.bytes = 2.0 * (M * K + K * N + M * N);
  return op;
}
// Its forward + backward time.  // s
inline double step(const Op& op, const ComputeContext& c) { return op_forward_time(op, c) + op_backward_time(op, c); }

inline TrainConfig make_config(const std::string& model, const std::string& gpu, int gpus,
                               ShardingStrategy s, AcMode ac, int micro_batch, int seq_len,
                               int grad_accum = 1) {
  TrainConfig c;
  c.model = load_model(model);
  c.model_preset = model;
  const HardwareSpec hw = load_hardware(gpu);
  c.cluster.hardware = gpu;
  c.cluster.gpus_per_node = std::min(gpus, hw.node.gpus_per_node);
  c.cluster.nodes = gpus / c.cluster.gpus_per_node;
  c.parallelism.sharding_strategy = s;
  c.activation_checkpointing.mode = ac;
  c.training.micro_batch = micro_batch;
  c.training.seq_len = seq_len;
  c.training.grad_accum = grad_accum;
  return c;
}

// Bytes of the named memory component; a test failure when the prediction has none.
inline double component(const Prediction& p, const std::string& name) {
  for (const auto& m : p.memory)
    if (m.name == name) return m.bytes;
  ADD_FAILURE() << "no component " << name;
  return 0;
}

// validate --published CSV_PATH [--annotations ANNOTATIONS_PATH] ("" = none), as a result.
inline ValidationResult validate_published_file(const std::string& csv_path,
                                                const std::string& annotations_path = "") {
  std::vector<Annotation> ann;
  if (!annotations_path.empty()) ann = read_annotations(annotations_path);
  auto rows = read_published_csv(csv_path, ann);
  HardwareSet hw;
  const auto cases = resolve_cases(rows, hw);
  return validate_cases(rows, cases, hw);
}

}  // namespace shardcast::planner::test
