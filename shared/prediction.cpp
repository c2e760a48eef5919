#include "shared/prediction.h"

#include <nlohmann/json.hpp>

#include "shared/json_int.h"
#include "shared/op_category.h"

namespace shardcast {

void to_json(nlohmann::json& j, const TimelineEvent& e) {
  j = {{"name", e.name}, {"lane", e.lane}, {"start_s", e.start_s}, {"duration_s", e.duration_s},
       {"unit", e.unit}};
}

void from_json(const nlohmann::json& j, TimelineEvent& e) {
  j.at("name").get_to(e.name);
  j.at("lane").get_to(e.lane);
  j.at("start_s").get_to(e.start_s);
  j.at("duration_s").get_to(e.duration_s);
  e.unit = j.contains("unit") ? json_int(j.at("unit")) : -1;
}

void to_json(nlohmann::json& j, const Prediction& p) {
  nlohmann::json mem = nlohmann::json::object();
  for (const auto& c : p.memory) mem[c.name] = c.bytes;
  j = {{"schema", p.schema},
       {"runtime", p.runtime},
       {"attention", p.attention},
       {"kernel_table", p.kernel_table},
       {"memory", {{"components_bytes", mem},
                   {"peak_bytes", p.mem_peak_bytes},
                   {"reserved_bytes", p.mem_reserved_bytes},
                   {"device_total_bytes", p.mem_device_total_bytes},
                   {"capacity_bytes", p.mem_capacity_bytes},
                   {"fits", p.fits},
                   {"overflow_component", p.overflow_component}}},
       {"time", {{"step_time_s", p.step_time_s},
                 {"compute_s", p.compute_s},
                 {"comm_s", p.comm_s},
                 {"exposed_comm_s", p.exposed_comm_s},
                 {"optimizer_s", p.optimizer_s},
                 {"host_bound_s", p.host_bound_s}}},
       {"tokens_per_s_per_gpu", p.tokens_per_s_per_gpu},
       {"mfu", p.mfu},
       {"hfu", p.hfu},
       {"flops_per_token", p.flops_per_token},
       {"power", {{"limit_w", p.power_limit_w}, {"board_w", p.board_power_w}, {"clock_scale", p.clock_scale}}},
       {"error_band", {{"rel_1sigma", p.error_band_rel}, {"note", p.error_band_note}}}};
  if (p.reference_level > 0) j["reference_run"] = {{"dir", p.reference_run}, {"level", p.reference_level}};
  if (!p.op_seconds.empty()) {
    nlohmann::json ops = nlohmann::json::object();
    for (const auto& c : op_categories()) ops[std::string(c.name)] = p.op_seconds.at(size_t(c.category));
    j["time"]["ops_s"] = ops;
  }
  if (!p.mesh.empty()) {
    j["mesh"] = {{"degrees", p.mesh},
                 {"dp_replicate", p.dp_replicate},
                 {"dp_shard", p.dp_shard},
                 {"tp", p.tp},
                 {"cp", p.cp},
                 {"pp", p.pp},
                 {"pp_virtual_stages", p.pp_virtual_stages},
                 {"tp_exposed_s", p.tp_exposed_s},
                 {"cp_exposed_s", p.cp_exposed_s},
                 {"pp_bubble_s", p.pp_bubble_s},
                 {"pp_send_s", p.pp_send_s},
                 {"notes", p.mesh_notes}};
    if (p.tp > 1) j["mesh"]["tp_async"] = p.tp_async;
    if (p.pp > 1) j["mesh"]["pp_schedule"] = p.pp_schedule, j["mesh"]["pp_microbatch"] = p.pp_microbatch;
    if (p.cp > 1) j["mesh"]["cp_rotate"] = p.cp_rotate;
  }
  if (!p.pp_stages.empty()) {
    nlohmann::json stages = nlohmann::json::array();
    for (const StageMemory& m : p.pp_stages)
      stages.push_back({{"stage", m.stage},
                        {"peak_bytes", m.peak_bytes},
                        {"reserved_bytes", m.reserved_bytes},
                        {"device_total_bytes", m.device_total_bytes},
                        {"reserved_range_bytes", {m.reserved_range_bytes.first, m.reserved_range_bytes.second}}});
    j["mesh"]["pp_stages"] = stages;
  }
  if (!p.timeline.empty()) j["timeline"] = p.timeline;
}

void from_json(const nlohmann::json& j, Prediction& p) {
  p.schema = json_int(j.at("schema"));
  if (j.contains("runtime")) j.at("runtime").get_to(p.runtime);
  if (j.contains("attention")) j.at("attention").get_to(p.attention);  // absent before it existed
  if (j.contains("kernel_table")) j.at("kernel_table").get_to(p.kernel_table);  // absent before it existed
  const auto& m = j.at("memory");
  p.memory.clear();
  for (auto it = m.at("components_bytes").begin(); it != m.at("components_bytes").end(); ++it)
    p.memory.push_back({it.key(), it.value().get<double>()});
  m.at("peak_bytes").get_to(p.mem_peak_bytes);
  m.at("reserved_bytes").get_to(p.mem_reserved_bytes);
  if (m.contains("device_total_bytes")) m.at("device_total_bytes").get_to(p.mem_device_total_bytes);  // absent before it existed
  m.at("capacity_bytes").get_to(p.mem_capacity_bytes);
  m.at("fits").get_to(p.fits);
  m.at("overflow_component").get_to(p.overflow_component);
  const auto& t = j.at("time");
  t.at("step_time_s").get_to(p.step_time_s);
  t.at("compute_s").get_to(p.compute_s);
  t.at("comm_s").get_to(p.comm_s);
  t.at("exposed_comm_s").get_to(p.exposed_comm_s);
  t.at("optimizer_s").get_to(p.optimizer_s);
  if (t.contains("host_bound_s")) t.at("host_bound_s").get_to(p.host_bound_s);  // absent before it existed
  p.op_seconds.clear();
  if (t.contains("ops_s")) {  // absent before it existed
    p.op_seconds.assign(kOpCategories, 0.0);
    for (const auto& c : op_categories()) t.at("ops_s").at(std::string(c.name)).get_to(p.op_seconds[size_t(c.category)]);
  }
  j.at("tokens_per_s_per_gpu").get_to(p.tokens_per_s_per_gpu);
  j.at("mfu").get_to(p.mfu);
  j.at("hfu").get_to(p.hfu);
  j.at("flops_per_token").get_to(p.flops_per_token);
  if (j.contains("power")) {  // absent before it existed
    j.at("power").at("limit_w").get_to(p.power_limit_w);
    j.at("power").at("board_w").get_to(p.board_power_w);
    j.at("power").at("clock_scale").get_to(p.clock_scale);
  }
  j.at("error_band").at("rel_1sigma").get_to(p.error_band_rel);
  j.at("error_band").at("note").get_to(p.error_band_note);
  p.mesh.clear();
  p.mesh_notes.clear();
  p.pp_stages.clear();
  p.tp_exposed_s = p.cp_exposed_s = p.pp_bubble_s = p.pp_send_s = 0;
  p.dp_replicate = p.dp_shard = p.tp = p.cp = p.pp = p.pp_virtual_stages = p.pp_microbatch = 1;
  p.tp_async = false;
  p.pp_schedule.clear();
  p.cp_rotate.clear();
  if (j.contains("mesh")) {  // only with a mesh
    const auto& mj = j.at("mesh");
    mj.at("degrees").get_to(p.mesh);
    if (mj.contains("tp")) {  // absent before they were written
      p.dp_replicate = json_int(mj.at("dp_replicate"));
      p.dp_shard = json_int(mj.at("dp_shard"));
      p.tp = json_int(mj.at("tp"));
      p.cp = json_int(mj.at("cp"));
      p.pp = json_int(mj.at("pp"));
      p.pp_virtual_stages = json_int(mj.at("pp_virtual_stages"));
    }
    if (mj.contains("tp_async")) mj.at("tp_async").get_to(p.tp_async);  // absent before they were written
    if (mj.contains("pp_schedule")) mj.at("pp_schedule").get_to(p.pp_schedule);
    if (mj.contains("pp_microbatch")) p.pp_microbatch = json_int(mj.at("pp_microbatch"));
    if (mj.contains("cp_rotate")) mj.at("cp_rotate").get_to(p.cp_rotate);
    mj.at("tp_exposed_s").get_to(p.tp_exposed_s);
    mj.at("cp_exposed_s").get_to(p.cp_exposed_s);
    mj.at("pp_bubble_s").get_to(p.pp_bubble_s);
    mj.at("pp_send_s").get_to(p.pp_send_s);
    mj.at("notes").get_to(p.mesh_notes);
    if (mj.contains("pp_stages"))  // only with pp
      for (const auto& sj : mj.at("pp_stages")) {
        const auto& range = sj.at("reserved_range_bytes");
        p.pp_stages.push_back({sj.at("stage").get<std::string>(), sj.at("peak_bytes").get<double>(),
                               sj.at("reserved_bytes").get<double>(), sj.at("device_total_bytes").get<double>(),
                               {range.at(0).get<double>(), range.at(1).get<double>()}});
      }
  }
  p.reference_level = 0;
  p.reference_run.clear();
  if (j.contains("reference_run")) {  // only with a reference run
    j.at("reference_run").at("level").get_to(p.reference_level);
    j.at("reference_run").at("dir").get_to(p.reference_run);
  }
  p.timeline.clear();
  if (j.contains("timeline")) j.at("timeline").get_to(p.timeline);
}

nlohmann::json to_chrome_trace(const std::vector<TimelineEvent>& events) {
  nlohmann::json trace = nlohmann::json::array();
  // Lanes become threads of one process; name them so Perfetto shows readable rows.
  std::vector<std::string> lanes;
  for (const auto& e : events) {
    size_t tid = 0;
    while (tid < lanes.size() && lanes[tid] != e.lane) ++tid;
    if (tid == lanes.size()) {
      lanes.push_back(e.lane);
      trace.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", 0}, {"tid", tid},
                       {"args", {{"name", e.lane}}}});
    }
    trace.push_back({{"name", e.name}, {"ph", "X"}, {"pid", 0}, {"tid", tid},
                     {"ts", e.start_s * 1e6}, {"dur", e.duration_s * 1e6},
                     {"args", {{"unit", e.unit}}}});
  }
  return {{"traceEvents", trace}, {"displayTimeUnit", "ms"}};
}

}  // namespace shardcast
