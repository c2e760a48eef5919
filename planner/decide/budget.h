// budget(): the capacity-planning question the other way round — train T tokens by a deadline:
// which GPU type, how many, which configuration, how many GPU-hours (and what cost, given
// prices), and how sure the date is.
//
// What it is: one scale() (scale.h) per GPU type over the same GPU counts, with goodput
// (goodput.h) so that days include interruptions, checkpoint saves and restarts; the 1σ error
// band of the prediction (Prediction::error_band_rel, relative error of tokens/s) carried to
// the date; the rows that meet the deadline ranked by cost (when every type has a price) or
// GPU-hours; the smallest cluster that meets it; by how much the fastest row misses it when
// none does; and per type the first count where the batch forces micro-batch 1 or exceeds the
// target, where communication stops hiding, and where goodput falls below the threshold.
// What it is not: a price list (prices are user input only) or output formatting (cmd_scale.cpp).
// Threading: the searches use worker threads; progress is called from the calling thread.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "planner/decide/scale.h"

namespace shardcast::planner {

struct BudgetOptions {
  // Model, axes, counts, token budget, global batch, reliability and thresholds; the hardware
  // (space.hardware and the HardwareSpec) is replaced per GPU type.
  ScaleOptions scale;
  std::vector<std::string> gpu_types;                // hardware presets, at least one
  // Price per GPU-hour by GPU type (any currency). Empty: rank by GPU-hours. Otherwise every
  // type needs one (UsageError naming the missing type).
  std::map<std::string, double> price_per_gpu_hour;
  double deadline_days = 0;                          // wall-clock days, > 0
  // Rows in `ranked` (the cheapest first); 0 = all that meet the deadline.
  size_t top = 0;
};

struct BudgetRow {
  std::string gpu_type;
  ScalePoint point;              // the count's winner, goodput, days (ideal), flags
  double days_ideal = 0;         // no failures  // days
  double days = 0;               // with failures (days_ideal / goodput)  // days
  double days_lo = 0, days_hi = 0;  // 1σ band of `days` from error_band_rel  // days
  double gpu_hours = 0;          // gpus · wall hours with failures (what is paid for)
  double cost = -1;              // gpu_hours · price; -1 without prices
  bool meets_deadline = false;   // days <= deadline
  bool meets_at_1sigma = false;  // days_hi <= deadline
};

// First GPU count (0 = none in the range) where each limit is reached, for one GPU type.
struct BudgetBreaks {
  std::string gpu_type;
  int mb1_at = 0;              // the global batch leaves one sequence per GPU
  int batch_over_at = 0;       // no layout meets the target within tolerance (batch>target, batch<target)
  int comm_exposed_at = 0;     // exposed communication > exposed_threshold of the step
  int goodput_low_at = 0;      // goodput < goodput_threshold
};

struct BudgetResult {
  std::vector<BudgetRow> rows;      // every (type, count): types in the given order, counts ascending
  bool by_cost = false;             // ranked by cost (all prices given), else by GPU-hours
  std::vector<size_t> ranked;       // indices of rows meeting the deadline, cheapest first (ties: fewer days)
  long smallest = -1;               // the row meeting the deadline with the fewest GPUs (ties: cheaper); -1 none
  std::vector<long> cheapest_per_type;  // per GPU type (opt.gpu_types order): its cheapest row meeting the deadline, -1 none
  long fastest = -1;                // the feasible row with the fewest days (with failures); -1 none
  double shortfall_days = 0;        // when nothing meets it: fastest days − deadline (> 0)
  std::vector<BudgetBreaks> breaks; // one per GPU type
  int64_t n_candidates = 0;         // configurations searched over all rows
  double seconds = 0;               // wall time  // s
};

// "TYPE=PRICE" items (e.g. from --price H100-80GB-SXM=2.5,B200=5) as a map. UsageError naming
// `what` for an item that is not TYPE=NUMBER or a type given twice.
std::map<std::string, double> parse_prices(const std::vector<std::string>& items, const std::string& what);

// The ranking criterion of a row: cost when by_cost, else GPU-hours.
double budget_criterion(const BudgetRow& r, bool by_cost);

// Throws UsageError for no GPU type, a deadline <= 0, a price for an unknown type, a missing
// price when some are given, or a price <= 0; ConfigError for an unknown hardware preset.
BudgetResult budget(const BudgetOptions& opt, const std::function<void(double)>& progress = {});
// The same with the hardware given: hw[i] is the profile of opt.gpu_types[i] (e.g. a GUI
// session's custom profile). UsageError when the sizes differ.
BudgetResult budget(const BudgetOptions& opt, const std::vector<HardwareSpec>& hw,
                    const std::function<void(double)>& progress = {});

}  // namespace shardcast::planner
