// Small formatting helpers shared by the CLI subcommands (human-readable counts and sizes).
//
// What it is: pure functions returning strings. What it is not: a table layout engine (fmt
// does the padding). Thread-safe.
#pragma once

#include <string>

#include <fmt/format.h>

#include "shared/train_config.h"

namespace shardcast::cli {

// hybrid_shard's " (shard group N, R replicas)" from the resolved mesh: data-parallel ranks a
// parameter is sharded over and replicas of that group (with tp, cp or pp they are not the world
// size's); "" for the other strategies.
inline std::string hsdp_groups(const TrainConfig& c) {
  if (c.parallelism.sharding_strategy != ShardingStrategy::hybrid_shard) return "";
  const Mesh m = resolve_mesh(c.parallelism, c.world_size(), c.cluster.gpus_per_node);
  return fmt::format(" (shard group {}, {} replica{})", m.dp_shard, m.dp_replicate, m.dp_replicate == 1 ? "" : "s");
}

// 6738415616 -> "6.74B", 218103808 -> "218.1M".
inline std::string human_count(double n) {
  if (n >= 1e12) return fmt::format("{:.2f}T", n / 1e12);
  if (n >= 1e9) return fmt::format("{:.2f}B", n / 1e9);
  if (n >= 1e6) return fmt::format("{:.1f}M", n / 1e6);
  if (n >= 1e3) return fmt::format("{:.1f}K", n / 1e3);
  return fmt::format("{:.0f}", n);
}

// bytes -> "1.23 GiB" / "416.0 MiB" / "12.0 KiB".
inline std::string human_bytes(double b) {
  const double kib = 1024.0, mib = kib * 1024, gib = mib * 1024;
  if (b >= gib) return fmt::format("{:.2f} GiB", b / gib);
  if (b >= mib) return fmt::format("{:.1f} MiB", b / mib);
  if (b >= kib) return fmt::format("{:.1f} KiB", b / kib);
  return fmt::format("{:.0f} B", b);
}

}  // namespace shardcast::cli
