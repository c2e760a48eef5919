// The measured kernel table's CSV, written and read through its column tables. See kernel_table.h.
#include "shared/kernel_table.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <sstream>

#include <fmt/format.h>

#include "shared/csv_fields.h"
#include "shared/errors.h"
#include "shared/decimal_text.h"

namespace shardcast {

const KernelColumn kKernelColumns[13] = {
    {"op", KernelCell::text, &KernelRow::op, nullptr, nullptr},
    {"dtype", KernelCell::text, &KernelRow::dtype, nullptr, nullptr},
    {"m", KernelCell::count, nullptr, &KernelRow::m, nullptr},
    {"n", KernelCell::count, nullptr, &KernelRow::n, nullptr},
    {"k", KernelCell::count, nullptr, &KernelRow::k, nullptr},
    {"batch", KernelCell::count, nullptr, &KernelRow::batch, nullptr},
    {"seq_len", KernelCell::count, nullptr, &KernelRow::seq_len, nullptr},
    {"heads", KernelCell::count, nullptr, &KernelRow::heads, nullptr},
    {"kv_heads", KernelCell::count, nullptr, &KernelRow::kv_heads, nullptr},
    {"head_dim", KernelCell::count, nullptr, &KernelRow::head_dim, nullptr},
    {"bytes", KernelCell::amount, nullptr, nullptr, &KernelRow::bytes},
    {"flop", KernelCell::amount, nullptr, nullptr, &KernelRow::flop},
    {"seconds", KernelCell::seconds, nullptr, nullptr, &KernelRow::seconds},
};

const char* const kKernelOps[11] = {"gemm",       "sdpa_fwd",          "sdpa_bwd",          "rmsnorm_fwd",
                                    "rmsnorm_bwd", "swiglu_fwd",        "swiglu_bwd",        "cross_entropy_fwd",
                                    "cross_entropy_bwd", "copy",        "adamw_fused_clip"};

bool is_rows_by_width_op(const std::string& op) {
  return op == "rmsnorm_fwd" || op == "rmsnorm_bwd" || op == "swiglu_fwd" || op == "swiglu_bwd";
}

const KernelHeaderKey kKernelHeaderKeys[6] = {
    {"gpu", &KernelTableHeader::gpu},     {"driver", &KernelTableHeader::driver},
    {"torch", &KernelTableHeader::torch}, {"cuda", &KernelTableHeader::cuda},
    {"date", &KernelTableHeader::date},   {"command", &KernelTableHeader::command},
};

bool operator==(const KernelRow& a, const KernelRow& b) {
  for (const KernelColumn& c : kKernelColumns) {
    const bool same = c.text ? a.*c.text == b.*c.text : c.count ? a.*c.count == b.*c.count : a.*c.real == b.*c.real;
    if (!same) return false;
  }
  return true;
}

namespace {

std::string trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t"), b = s.find_last_not_of(" \t");
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

// "a, b, c" of a table's names.
template <class T, size_t N, class Name>
std::string names(const T (&table)[N], Name name, const char* sep) {
  std::string s;
  for (size_t i = 0; i < N; ++i) s += (i ? sep : "") + std::string(name(table[i]));
  return s;
}
std::string column_names() { return names(kKernelColumns, [](const KernelColumn& c) { return c.name; }, ","); }
std::string op_names() { return names(kKernelOps, [](const char* o) { return o; }, " | "); }
std::string header_key_names() {
  return names(kKernelHeaderKeys, [](const KernelHeaderKey& k) { return k.key; }, ", ");
}

std::string write_cell(const KernelColumn& c, const KernelRow& r) {
  switch (c.cell) {
    case KernelCell::text: return r.*c.text;
    case KernelCell::count: return r.*c.count > 0 ? std::to_string(r.*c.count) : "";
    case KernelCell::amount: return r.*c.real >= 0 ? fmt::format("{:.0f}", r.*c.real) : "";
    case KernelCell::seconds: return r.*c.real >= 0 ? fmt::format("{:.6g}", r.*c.real) : "";
  }
  return "";
}

// Reads one non-empty cell into the row; InputError naming file:line and the column.
void read_cell(const KernelColumn& c, const std::string& f, KernelRow& r, const std::string& file, int no) {
  switch (c.cell) {
    case KernelCell::text:
      r.*c.text = f;
      return;
    case KernelCell::count: {
      int64_t v = 0;
      const auto [end, ec] = std::from_chars(f.data(), f.data() + f.size(), v);
      if (ec != std::errc() || end != f.data() + f.size() || v < 0)
        throw InputError(fmt::format("{}:{}: column '{}': '{}' is not an integer >= 0", file, no, c.name, f));
      r.*c.count = v;
      return;
    }
    case KernelCell::amount:
    case KernelCell::seconds: {
      const std::optional<double> parsed = parse_decimal(f);
      const double x = parsed.value_or(-1);  // -1: not a decimal number
      if (x < 0)
        throw InputError(fmt::format("{}:{}: column '{}': '{}' is not a number >= 0", file, no, c.name, f));
      r.*c.real = x;
      return;
    }
  }
}

// The per-op rules of a parsed row.
void check_row(const KernelRow& r, const std::string& file, int no) {
  if (std::find_if(std::begin(kKernelOps), std::end(kKernelOps), [&](const char* o) { return r.op == o; }) ==
      std::end(kKernelOps))
    throw InputError(fmt::format("{}:{}: column 'op': '{}' is not {}", file, no, r.op, op_names()));
  if (r.dtype.empty()) throw InputError(fmt::format("{}:{}: column 'dtype' is empty", file, no));
  if (!(r.seconds > 0)) throw InputError(fmt::format("{}:{}: column 'seconds' must be > 0", file, no));
  if (r.op == "gemm") {
    if (!(r.m > 0 && r.n > 0 && r.k > 0))
      throw InputError(fmt::format("{}:{}: column 'm': a gemm row needs m, n, k > 0", file, no));
    const double want = 2.0 * double(r.m) * double(r.n) * double(r.k);
    if (std::fabs(r.flop - want) > 1e-9 * want)
      throw InputError(fmt::format("{}:{}: column 'flop': {} is not 2·m·n·k = {}", file, no, r.flop, want));
  } else if (r.op == "sdpa_fwd" || r.op == "sdpa_bwd") {
    if (!(r.seq_len > 0 && r.head_dim > 0 && r.flop > 0))
      throw InputError(
          fmt::format("{}:{}: column 'seq_len': an sdpa row needs seq_len, head_dim and flop > 0", file, no));
  } else if (is_rows_by_width_op(r.op)) {
    if (!(r.m > 0 && r.n > 0))
      throw InputError(fmt::format("{}:{}: column 'm': an {} row needs m (rows) and n (width) > 0", file, no, r.op));
  } else if (r.op == "copy") {
    if (!(r.bytes > 0)) throw InputError(fmt::format("{}:{}: column 'bytes': a copy row needs bytes > 0", file, no));
  } else if (r.op == "adamw_fused_clip") {
    if (!(r.m > 0 && r.k > 0 && r.bytes > 0))
      throw InputError(fmt::format("{}:{}: column 'm': an adamw_fused_clip row needs m (elements), k (tensors) and "
                                   "bytes > 0", file, no));
  }
}

}  // namespace

std::string format_kernel_csv(const KernelTableHeader& h, const std::vector<KernelRow>& rows) {
  std::string s;
  for (const KernelHeaderKey& k : kKernelHeaderKeys) s += fmt::format("# {}: {}\n", k.key, h.*k.field);
  s += column_names() + "\n";
  for (const KernelRow& r : rows) {
    for (size_t i = 0; i < std::size(kKernelColumns); ++i) s += (i ? "," : "") + write_cell(kKernelColumns[i], r);
    s += "\n";
  }
  return s;
}

KernelTableFile parse_kernel_csv(const std::string& text, const std::string& file) {
  KernelTableFile t;
  t.file = file;
  bool seen[std::size(kKernelHeaderKeys)] = {};
  std::istringstream in(text);
  std::string line;
  int no = 0;
  bool have_columns = false;
  while (std::getline(in, line)) {
    ++no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (trim(line).empty()) continue;
    if (line[0] == '#') {
      if (have_columns) throw InputError(fmt::format("{}:{}: a '# key: value' line after the column header", file, no));
      const size_t colon = line.find(':');
      if (colon == std::string::npos)
        throw InputError(fmt::format("{}:{}: header comment must be '# key: value'", file, no));
      const std::string key = trim(line.substr(1, colon - 1));
      const auto* k = std::find_if(std::begin(kKernelHeaderKeys), std::end(kKernelHeaderKeys),
                                   [&](const KernelHeaderKey& h) { return key == h.key; });
      if (k == std::end(kKernelHeaderKeys))
        throw InputError(
            fmt::format("{}:{}: header key '{}' is not one of {}", file, no, key, header_key_names()));
      bool& once = seen[k - std::begin(kKernelHeaderKeys)];
      if (once) throw InputError(fmt::format("{}:{}: header key '{}' given twice", file, no, key));
      once = true;
      t.header.*k->field = trim(line.substr(colon + 1));
      continue;
    }
    std::vector<std::string> f = split_csv_fields(line);
    for (std::string& field : f) field = trim(field);
    if (!have_columns) {
      for (size_t i = 0; i < std::size(kKernelHeaderKeys); ++i)
        if (!seen[i])
          throw InputError(fmt::format("{}: missing header comment '# {}: ...' (required: {})", file,
                                       kKernelHeaderKeys[i].key, header_key_names()));
      if (f.size() != std::size(kKernelColumns))
        throw InputError(fmt::format("{}:{}: {} columns, expected {} ({})", file, no, f.size(),
                                     std::size(kKernelColumns), column_names()));
      for (size_t i = 0; i < f.size(); ++i)
        if (f[i] != kKernelColumns[i].name)
          throw InputError(
              fmt::format("{}:{}: column {} is '{}', expected '{}'", file, no, i + 1, f[i], kKernelColumns[i].name));
      have_columns = true;
      continue;
    }
    if (f.size() != std::size(kKernelColumns))
      throw InputError(fmt::format("{}:{}: {} fields, expected {}", file, no, f.size(), std::size(kKernelColumns)));
    KernelRow r;
    r.dtype.clear();  // as the file says: an empty dtype cell is an error, not bf16
    for (size_t c = 0; c < f.size(); ++c)
      if (!f[c].empty()) read_cell(kKernelColumns[c], f[c], r, file, no);  // empty: a column the op does not use
    check_row(r, file, no);
    t.rows.push_back(r);
  }
  if (!have_columns) throw InputError(fmt::format("{}: no column header ({})", file, column_names()));
  return t;
}

}  // namespace shardcast
