#include "shared/closest_match.h"

#include <algorithm>
#include <string>
#include <vector>

namespace shardcast {

std::string closest_match(const std::string& word, const std::vector<std::string>& candidates) {
  auto dist = [](const std::string& a, const std::string& b) {
    std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
      cur[0] = i;
      for (size_t j = 1; j <= b.size(); ++j)
        cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      std::swap(prev, cur);
    }
    return prev[b.size()];
  };
  // Ties go to the longer common suffix: preset names end in what tells them apart (a size,
  // a generation), so "llama3-405b" is llama3.1-405b, not llama3-70b, at distance 2 from both.
  auto common_suffix = [](const std::string& a, const std::string& b) {
    size_t n = 0;
    while (n < a.size() && n < b.size() && a[a.size() - 1 - n] == b[b.size() - 1 - n]) ++n;
    return n;
  };
  // A word that begins a candidate is that candidate cut short ("H100" of H100-80GB-SXM): the
  // first such, before any by distance.
  if (word.size() >= 2)
    for (const auto& c : candidates)
      if (c.size() > word.size() && c.compare(0, word.size(), word) == 0) return c;
  std::string best;
  size_t best_d = std::max<size_t>(2, word.size() / 3) + 1, best_suffix = 0;
  for (const auto& c : candidates) {
    const size_t d = dist(word, c);
    const size_t suffix = common_suffix(word, c);
    if (d < best_d || (d == best_d && !best.empty() && suffix > best_suffix)) best_d = d, best = c, best_suffix = suffix;
  }
  return best;
}

}  // namespace shardcast
