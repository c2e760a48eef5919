// split_csv_fields: the fields of one CSV line, split at every comma; and the reading the small
// published tables share (for_each_csv_row: comments, the header, a row's field count; a
// positive number; a positive whole number).
//
// What it is: the line splitter of the small tables that never quote a field (the measured
// kernel table, shared/kernel_table.h; the published flash-attention rates,
// planner/model/kernel_rates.h; the float8 Linear speed-ups, planner/model/fp8_linear_table.h). Fields are
// returned as written (no trimming); the checks throw InputError naming the file, the line and
// the column. What it is not: the published-runs reader (planner/evidence/published_csv.h), whose fields
// may be quoted. Header-only, pure.
#pragma once

#include <cmath>
#include <cstdlib>
#include <cstddef>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "shared/errors.h"
#include "shared/decimal_text.h"

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

// The column names joined with commas, as a header line writes them.
template <size_t N>
std::string csv_column_names(const char* const (&columns)[N]) {
  std::string names;
  for (const char* c : columns) names += (names.empty() ? "" : ",") + std::string(c);
  return names;
}

// The header line `f` must be exactly `columns`, in order.
template <size_t N>
void check_csv_header(const std::vector<std::string>& f, const char* const (&columns)[N], const std::string& file,
                      int line) {
  if (f.size() != N)
    throw InputError(fmt::format("{}:{}: header has {} columns, expected {} ({})", file, line, f.size(), N,
                                 csv_column_names(columns)));
  for (size_t i = 0; i < N; ++i)
    if (f[i] != columns[i])
      throw InputError(fmt::format("{}:{}: column {} is '{}', expected '{}'", file, line, i + 1, f[i], columns[i]));
}

// A data row must have `n` fields.
inline void check_csv_field_count(const std::vector<std::string>& f, size_t n, const std::string& file, int line) {
  if (f.size() != n) throw InputError(fmt::format("{}:{}: {} fields, expected {}", file, line, f.size(), n));
}

// The field of `column` as a finite number > 0.
inline double positive_csv_number(const std::string& field, const char* column, const std::string& file, int line) {
  const double x = parse_decimal(field).value_or(0);  // 0: not a decimal number
  if (x <= 0)
    throw InputError(fmt::format("{}:{}: column '{}': '{}' is not a positive number", file, line, column, field));
  return x;
}

// The field of `column` as a whole number in [1, max_value], written as digits only.
inline int positive_csv_integer(const std::string& field, const char* column, const std::string& file, int line,
                                int max_value) {
  const bool digits = !field.empty() && field.size() <= 9 &&
                      field.find_first_not_of("0123456789") == std::string::npos;
  const long x = digits ? std::strtol(field.c_str(), nullptr, 10) : 0;
  if (!digits || x < 1 || x > max_value)
    throw InputError(fmt::format("{}:{}: column '{}': '{}' is not a whole number in 1 … {}", file, line, column,
                                 field, max_value));
  return int(x);
}

// Reads a small table: blank lines and `#` lines are skipped (a trailing \r dropped), the first
// other line must be the header `columns`, and `row(fields, line)` is called for every line
// after it, its field count checked. InputError when the text has no header line.
template <size_t N, class Row>
void for_each_csv_row(const std::string& text, const char* const (&columns)[N], const std::string& file, Row row) {
  std::istringstream in(text);
  std::string line;
  int line_no = 0;
  bool header = false;
  while (std::getline(in, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    const std::vector<std::string> f = split_csv_fields(line);
    if (!header) {
      check_csv_header(f, columns, file, line_no);
      header = true;
      continue;
    }
    check_csv_field_count(f, N, file, line_no);
    row(f, line_no);
  }
  if (!header) throw InputError(fmt::format("{}: no header line ({})", file, csv_column_names(columns)));
}

}  // namespace shardcast
