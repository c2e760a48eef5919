// Pareto front of memory against throughput: the candidates no other candidate beats on both.
//
// What it is: a sort-and-sweep over (memory needed, tokens/s/GPU) pairs — lower memory and
// higher throughput are better. What it is not: ranking or filtering (search.h does those).
// Pure function, thread-safe.
#pragma once

#include <cstddef>
#include <vector>

namespace shardcast::planner {

// Indices of the non-dominated points, by increasing memory (and so increasing throughput).
// A point is dominated when another has memory <= and throughput >= with one strictly better;
// of exact duplicates the lowest index is kept. memory.size() must equal throughput.size().
std::vector<size_t> pareto_front(const std::vector<double>& memory,
                                 const std::vector<double>& throughput);

}  // namespace shardcast::planner
