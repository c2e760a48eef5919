#include "planner/model/document_mask.h"

#include <cmath>

namespace shardcast::planner {

double document_causal_work(const std::vector<double>& doc_lengths) {
  double w = 0;
  for (double L : doc_lengths) w += L * L;
  return w;
}

std::vector<double> packed_document_lengths(int seq_len, double mean_doc_len) {
  const double s = seq_len;
  if (mean_doc_len <= 0 || mean_doc_len >= s) return {s};
  const double whole = std::floor(s / mean_doc_len);
  std::vector<double> out(size_t(whole), mean_doc_len);
  const double rest = s - whole * mean_doc_len;
  if (rest > 0) out.push_back(rest);
  return out;
}

double document_attention_work(int seq_len, double mean_doc_len) {
  if (seq_len <= 0) return 1.0;
  const double s = seq_len;
  return document_causal_work(packed_document_lengths(seq_len, mean_doc_len)) / (s * s);
}

}  // namespace shardcast::planner
