// split_csv_fields: the fields of one CSV line, split at every comma.
//
// What it is: the line splitter of the small tables that never quote a field (the measured
// kernel table, shared/kernel_table.h; the published flash-attention rates,
// planner/kernel_rates.h). Fields are returned as written (no trimming). What it is not: the
// published-runs reader (planner/published_csv.h), whose fields may be quoted.
// Header-only, pure.
#pragma once

#include <string>
#include <vector>

namespace shardcast {

inline std::vector<std::string> split_csv_fields(const std::string& line) {
  std::vector<std::string> f;
  std::string::size_type start = 0;
  for (;;) {
    const std::string::size_type comma = line.find(',', start);
    if (comma == std::string::npos) {
      f.push_back(line.substr(start));
      return f;
    }
    f.push_back(line.substr(start, comma - start));
    start = comma + 1;
  }
}

}  // namespace shardcast
