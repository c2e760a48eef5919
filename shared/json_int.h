// json_int: an int read from parsed JSON with its range checked.
//
// What it is: nlohmann's get<int>() converts any number, and a float outside int's range
// (e.g. "schema": 8.9e114) is undefined behaviour there (found by tests/fuzz/fuzz_run_report).
// This reads integers only, within int's range, and otherwise throws the same
// nlohmann::json exception family the other accessors throw (callers already turn those into
// InputError with the file name). What it is not: a schema validator. Header-only, reentrant.
#pragma once

#include <limits>
#include <string>

#include <nlohmann/json.hpp>

namespace shardcast {

inline int json_int(const nlohmann::json& v) {
  if (v.is_number_integer()) {
    const auto x = v.get<int64_t>();
    if (x >= std::numeric_limits<int>::min() && x <= std::numeric_limits<int>::max()) return int(x);
  } else if (v.is_number_unsigned()) {
    const auto x = v.get<uint64_t>();
    if (x <= uint64_t(std::numeric_limits<int>::max())) return int(x);
  } else if (!v.is_number()) {
    throw nlohmann::json::type_error::create(302, "expected an integer, got " + std::string(v.type_name()), nullptr);
  }
  throw nlohmann::json::out_of_range::create(406, "integer " + v.dump() + " is out of range", nullptr);
}

}  // namespace shardcast
