// The key schema of run.toml (TrainConfig) and of hardware presets (HardwareSpec).
//
// What it is: one row per TOML key, its full path ("training.micro_batch"), its type as
// docs/configuration.md writes it, and an accessor into the struct. The TrainConfig rows of
// plain tables drive parse_train_config and write_train_config (config_io.cpp); the HardwareSpec
// rows drive parse_hardware_toml, with the datasheet unit → SI factor. The tests check that
// docs/configuration.md lists exactly these keys (tests/shared/config_schema_test.cpp).
// Rows marked `special` ([model] fields, [prediction], model.preset) are read by hand-written
// code in config_io.cpp and are listed here so that the schema stays the complete list.
// To add a key: one row here (and its struct field); the parser, writer and docs test follow.
// What it is not: validation of values (train_config.cpp validate()). Static tables; the
// functions return references to them and are thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "shared/hardware_spec.h"
#include "shared/train_config.h"

namespace shardcast {

// A string key with a fixed set of values, stored as an enum (or checked string) in the struct.
struct TrainEnumAccess {
  std::string (*get)(const TrainConfig&);
  bool (*set)(TrainConfig&, const std::string&);  // false = not one of `allowed`
  const char* allowed;                            // "full_shard | shard_grad_op | ..."
};

using TrainAccess = std::variant<std::monostate,  // special: read by hand-written code
                                 int& (*)(TrainConfig&), uint64_t& (*)(TrainConfig&),
                                 double& (*)(TrainConfig&), bool& (*)(TrainConfig&),
                                 std::string& (*)(TrainConfig&), TrainEnumAccess,
                                 // a bool key that may be absent (absent: not written)
                                 std::optional<bool>& (*)(TrainConfig&)>;

struct TrainConfigKey {
  const char* path;  // "runtime", "cluster.nodes", ...
  TrainAccess access;
  bool special() const { return std::holds_alternative<std::monostate>(access); }
  std::string table() const;  // "cluster"; "" for a top-level key
  std::string key() const;    // "nodes"
};

// Every key of run.toml, in the order write_train_config writes them.
const std::vector<TrainConfigKey>& train_config_schema();

// One plain (non-special) key of the table above, its value in `cfg` as write_train_config (config_io.h)
// writes it but unquoted (`quoted`, when given, says whether run.toml quotes it: strings and enum
// names); nullopt for an optional key that is absent (not written). Special keys: nullopt.
std::optional<std::string> train_config_value(const TrainConfigKey& key, const TrainConfig& cfg,
                                              bool* quoted = nullptr);

struct HardwareKey {
  const char* path;  // "gpu.bf16_tflops"
  // Exactly one of the accessors below is set.
  std::string& (*str)(HardwareSpec&);
  double& (*num)(HardwareSpec&);
  int& (*integer)(HardwareSpec&);
  double to_si;  // TOML value · to_si = struct value (TFLOP/s → FLOP/s: 1e12)
};

// Every key of a hardware preset except [efficiency] (kEfficiencyKeys), in file order.
const std::vector<HardwareKey>& hardware_schema();

}  // namespace shardcast
