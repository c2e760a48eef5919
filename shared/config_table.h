// config_table(): the one way the planner reads a table under configs/ (bands.toml,
// decisions.toml, runtime profiles, kernel tables, the float8 and attention grids): read and
// parsed on first use, then kept for the life of the process.
//
// What it is: a cache keyed by what the caller names (a path relative to configs/, an absolute
// path, or a preset name its loader resolves), one cache per call site (each instantiation has
// its own). A failed load throws and caches nothing, so the next call tries again and says the
// same. What it is not: a reader of any format (the caller's parse does that) or a way to see a
// file change on disk (tables are read once; tests that write a table use a new name).
// Threading: thread-safe; the first caller of a key loads it under the cache's lock (later
// callers of that key wait, then share it). The returned reference lives until exit.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "shared/config_io.h"

namespace shardcast {

// load(key) -> T, called once per key.
template <class T, class Load>
const T& config_table(const std::string& key, Load load) {
  static std::mutex mu;
  static std::map<std::string, std::unique_ptr<T>> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(key);
  if (it == cache.end()) it = cache.emplace(key, std::make_unique<T>(load(key))).first;
  return *it->second;
}

// A file under configs/ (or an absolute path) parsed by parse(text, path_for_messages).
template <class T, class Parse>
const T& config_file_table(const std::string& relative_or_absolute, Parse parse) {
  return config_table<T>(relative_or_absolute, [&](const std::string& name) {
    const std::filesystem::path p =
        std::filesystem::path(name).is_absolute() ? std::filesystem::path(name) : config_dir() / name;
    return parse(read_text(p), p.string());
  });
}

}  // namespace shardcast
