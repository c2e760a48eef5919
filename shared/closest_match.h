// closest_match(): the known name nearest to a misspelt one, for "did you mean" in error
// messages about keys, presets and flags.
//
// What it is not: a parser or a validator (callers decide what is allowed). Pure, thread-safe;
// a leaf of shared/ (no other shared header), so every reader of names can use it.
#pragma once

#include <string>
#include <vector>

namespace shardcast {

// Closest candidate: the first that `word` begins, else by edit distance ("" if none is within
// a reasonable distance); of equally close ones, the one sharing the longest suffix with
// `word`, then the first.
std::string closest_match(const std::string& word, const std::vector<std::string>& candidates);

}  // namespace shardcast
