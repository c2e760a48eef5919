// TableReader: strict, key-tracking access to one toml++ table.
//
// What it is: typed getters that record which keys were read, so that finish() can reject
// every unknown key with the closest valid one suggested; every error names the file and the
// full key path. What it is not: a schema language or a writer. Borrows the table (the caller
// keeps it alive); single-threaded use.
#pragma once

#include <string>
#include <vector>

#include <toml++/toml.h>

namespace shardcast {

// Parse TOML text; a syntax error is a ConfigError naming the file, line and column.
toml::table parse_toml(const std::string& text, const std::string& file);

class TableReader {
 public:
  TableReader(const toml::table& table, std::string file, std::string prefix);

  // Each getter leaves `out` unchanged when the key is absent and returns whether it was set.
  bool get(const std::string& key, int& out);
  bool get(const std::string& key, int64_t& out);
  bool get(const std::string& key, uint64_t& out);
  bool get(const std::string& key, double& out);
  bool get(const std::string& key, bool& out);
  bool get(const std::string& key, std::string& out);
  bool get(const std::string& key, std::vector<std::string>& out);  // an array of strings
  // A sub-table; nullptr when absent; throws when the key is not a table.
  const toml::table* table(const std::string& key);
  bool has(const std::string& key) const { return table_.contains(key); }
  // Marks a key as known without reading it (e.g. a table read by another reader).
  void allow(const std::string& key) { known_.push_back(key); }
  // Another tool's name for one of this table's keys (torchtitan's tensor_parallel_degree for tp):
  // finish() refuses it as unknown and names the key to write instead.
  void alias(const std::string& foreign, const std::string& key, const std::string& tool) {
    aliases_.push_back({foreign, key, tool});
  }

  // Throws ConfigError for the first key that was never read or allowed.
  void finish() const;
  std::string path(const std::string& key) const { return prefix_ + key; }
  const std::string& file() const { return file_; }

 private:
  const toml::node* lookup(const std::string& key);
  [[noreturn]] void type_error(const std::string& key, const char* want, const toml::node& n) const;

  const toml::table& table_;
  std::string file_;
  std::string prefix_;  // "training." etc.
  std::vector<std::string> known_;
  struct Alias {
    std::string foreign, key, tool;
  };
  std::vector<Alias> aliases_;
};

}  // namespace shardcast
