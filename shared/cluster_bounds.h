// Bounds of the cluster a plan may describe that are not a preset's.
//
// What it is: constants shared by run.toml's validation (shared/train_config.cpp) and the
// command-line range table (planner/cli/validators.cpp), so a key and its flag allow the same.
// What it is not: hardware presets or their values. Header-only constants, thread-safe.
#pragma once

namespace shardcast {

// The slowest inter-node network a plan may name (cluster.inter_node_gbps, --inter-node-gbps):
// 100 Mb/s Fast Ethernet, the slowest link a node has shipped with for decades. Below it a step's
// communication runs to 1e4 s and beyond, and at 1e-30 Gb/s (5e32 s a step) the simulator's
// timestamps (seconds, double: one ulp of 5e32 is 7e16 s) absorb the whole compute time, which
// then printed as "compute 0 s". At this bound Llama 3.1 8B on two H100 nodes takes 5266 s a
// step against 1.5 s of compute (both printed right): a ratio far inside a double's 1e16.  // Gb/s
inline constexpr double kMinInterNodeGbps = 0.1;

}  // namespace shardcast
