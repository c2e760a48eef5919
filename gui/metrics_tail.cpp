// MetricsTail: see metrics_tail.h.
#include "gui/metrics_tail.h"

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "shared/errors.h"

namespace shardcast::gui {

MetricsTail::Batch MetricsTail::poll() {
  Batch b;
  std::error_code ec;
  const auto size = std::filesystem::file_size(path_, ec);
  if (ec) return b;  // not written yet
  if (size < offset_) {
    offset_ = 0;
    line_ = 0;
  }
  if (size == offset_) return b;
  std::ifstream in(path_, std::ios::binary);
  if (!in) return b;
  in.seekg(std::streamoff(offset_));
  std::string chunk(size_t(size - offset_), '\0');
  in.read(chunk.data(), std::streamsize(chunk.size()));
  chunk.resize(size_t(in.gcount()));
  size_t start = 0;
  for (size_t nl; (nl = chunk.find('\n', start)) != std::string::npos; start = nl + 1) {
    ++line_;
    const std::string line = chunk.substr(start, nl - start);
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    try {
      b.steps.push_back(nlohmann::json::parse(line).get<StepMetrics>());
    } catch (const std::exception& e) {
      b.errors.push_back(path_ + ":" + std::to_string(line_) + ": " + e.what());
    }
  }
  offset_ += start;
  return b;
}

std::vector<StepMetrics> read_metrics_jsonl(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError("cannot read " + path);
  std::vector<StepMetrics> out;
  int n = 0;
  for (std::string line; std::getline(in, line);) {
    ++n;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    try {
      out.push_back(nlohmann::json::parse(line).get<StepMetrics>());
    } catch (const std::exception& e) {
      throw InputError(path + ":" + std::to_string(n) + ": " + e.what());
    }
  }
  return out;
}

}  // namespace shardcast::gui
