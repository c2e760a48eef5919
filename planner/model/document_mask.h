// Attention work under per-document causal masks (runtime term attention = "flex_document").
//
// What it is: how much of a sequence's dense causal attention a document mask leaves. torchtitan
// from 169545712 (#3571, 2026-06-09) runs its language models' attention as FlexAttention with a
// block_causal mask built from per-document positions (torchtitan @b5bcd76c6 models/common/
// config_utils.py get_attention_config: "Language models always use block_causal masking (the
// dataloaders always emit per-document positions)"; models/common/attention.py
// get_document_mask_mod): a query attends to the keys of its own document up to itself, and the
// kernel skips the blocks of other documents. A sequence of documents of lengths L_i then does
// Σ L_i² of the s² (query, key) work a dense causal count charges (each term the causal half of
// its square, as ops.cpp charges 2·b·s²·d for the dense one).
// What it is not: the kernel's rate (timed as flash; no published FlexAttention rate is held),
// or the partially masked 128×128 blocks FlexAttention computes whole (at most a 128/L share more
// per document of L tokens: not counted). Pure functions.
#pragma once

#include <vector>

namespace shardcast::planner {

// Σ L_i² over the documents: the causal work of their masks, in (query, key) pairs × 2.
double document_causal_work(const std::vector<double>& doc_lengths);

// The documents torchtitan's ConcatThenSplitPacking leaves in one sequence of seq_len tokens when
// documents average mean_doc_len tokens: floor(seq_len / mean) whole documents of the mean length
// and the remainder as one more (the mean is all the config states of the distribution).
// mean_doc_len = 0 (not stated) or >= seq_len: one document, the whole sequence.
std::vector<double> packed_document_lengths(int seq_len, double mean_doc_len);

// document_causal_work(packed_document_lengths(s, mean)) / s²: the share of dense causal
// attention work the mask leaves, 1 when mean_doc_len is 0 or >= seq_len.
double document_attention_work(int seq_len, double mean_doc_len);

}  // namespace shardcast::planner
