// The measured kernel table's one format: its row, its header, its column / op / header-key
// tables, and its CSV writer and strict reader.
//
// What it is: the file `shardcast-train microbench --gpu` writes (trainer/microbench/
// gpu_kernels.h times the cases of trainer/microbench/kernel_table.h) and the planner reads
// (planner/model/kernel_table.h, where a hardware preset names one: `[gpu] kernel_table`). Format:
// the header comment lines `# gpu: …`, `# driver: …`, `# torch: …`, `# cuda: …`, `# date: …`,
// `# command: …` (all required, each once, in any order), then the column header
// `op,dtype,m,n,k,batch,seq_len,heads,kv_heads,head_dim,bytes,flop,seconds` and one line per
// measurement, an empty cell where a column does not apply; op ∈ gemm | sdpa_fwd | sdpa_bwd |
// rmsnorm_fwd | rmsnorm_bwd | swiglu_fwd | swiglu_bwd | cross_entropy_fwd | cross_entropy_bwd |
// copy | adamw_fused_clip; a gemm row's flop is 2·m·n·k; an rmsnorm or swiglu row is m rows of
// width n (m, n > 0); an adamw_fused_clip row is one optimizer step over m elements in k tensors
// (m, k, bytes > 0). The tables below (kKernelColumns, kKernelOps, kKernelHeaderKeys) are the format;
// writer and reader both walk them.
// What it is not: which cases are timed (the trainer's kernel_cases), the timing, or the
// planner's queries on a table (best GEMM rate, SDPA rate, copy bandwidth). No LibTorch.
// Plain value types and pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace shardcast {

// One measurement (or, with seconds < 0, one case still to time). Integer columns: 0 = empty
// cell. bytes / flop / seconds: < 0 = empty cell.
struct KernelRow {
  std::string op;        // gemm | sdpa_fwd | sdpa_bwd | rmsnorm_fwd | rmsnorm_bwd | swiglu_fwd |
                         // swiglu_bwd | cross_entropy_fwd | cross_entropy_bwd | copy | adamw_fused_clip
  std::string dtype = "bf16";
  int64_t m = 0, n = 0, k = 0;   // gemm: C(m×n) = A(m×k)·B(k×n); norms, SwiGLU, loss: rows m, width n;
                                 // adamw_fused_clip: m elements in k tensors
  int64_t batch = 0, seq_len = 0, heads = 0, kv_heads = 0, head_dim = 0;   // sdpa
  double bytes = -1;     // fewest bytes read + written (memory-bound ops)  // bytes
  double flop = -1;      // floating-point operations (gemm, sdpa)          // FLOP
  double seconds = -1;   // median time per call; < 0 until timed           // s
};
bool operator==(const KernelRow& a, const KernelRow& b);  // every field
inline bool operator!=(const KernelRow& a, const KernelRow& b) { return !(a == b); }

// The `# key: value` comment lines above the column header.
struct KernelTableHeader {
  std::string gpu, driver, torch, cuda, date, command;
};

// A column of the CSV, in file order, and how its cell is written and read.
enum class KernelCell {
  text,     // written as is; op must be one of kKernelOps, dtype non-empty
  count,    // int64, "" when 0; read as an integer >= 0
  amount,   // double written "{:.0f}" (integral counts: bytes, FLOP), "" when < 0; read >= 0
  seconds,  // double written "{:.6g}", "" when < 0; read >= 0
};
struct KernelColumn {
  const char* name;
  KernelCell cell;
  std::string KernelRow::*text;  // set for KernelCell::text
  int64_t KernelRow::*count;     // set for KernelCell::count
  double KernelRow::*real;       // set for KernelCell::amount and ::seconds
};
extern const KernelColumn kKernelColumns[13];

extern const char* const kKernelOps[11];  // gemm … adamw_fused_clip, as above
// An op whose rows are m rows of width n (rmsnorm_fwd / _bwd, swiglu_fwd / _bwd): m, n > 0.
bool is_rows_by_width_op(const std::string& op);

struct KernelHeaderKey {
  const char* key;
  std::string KernelTableHeader::*field;
};
extern const KernelHeaderKey kKernelHeaderKeys[6];  // gpu, driver, torch, cuda, date, command

// A table as read from a file.
struct KernelTableFile {
  std::string file;  // the name errors use
  KernelTableHeader header;
  std::vector<KernelRow> rows;
};

// The CSV: the six header comment lines, the column header, one line per row (empty cells per
// the row's conventions above). seconds keep 6 significant digits.
std::string format_kernel_csv(const KernelTableHeader& h, const std::vector<KernelRow>& rows);

// Reads CSV text (what format_kernel_csv writes; blank lines and CRLF tolerated). InputError
// naming `file`, the line and the column for anything malformed: an unknown, repeated or
// missing header key, a wrong column header, a wrong field count, an unknown op, an empty
// dtype, a cell that is not a number >= 0 (an integer for the integer columns), seconds not
// > 0, a gemm row without m, n, k > 0 or whose flop is not 2·m·n·k, an sdpa row without
// seq_len, head_dim and flop > 0, a copy row without bytes > 0.
KernelTableFile parse_kernel_csv(const std::string& text, const std::string& file);

}  // namespace shardcast
