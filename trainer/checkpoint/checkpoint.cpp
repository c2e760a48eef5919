// Sharded checkpoint save/load over the FSDP flat units. See checkpoint.h and manifest.h.
#include "trainer/checkpoint/checkpoint.h"
#include "trainer/launch/dist_env.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <map>
#include <thread>

#include <ATen/CPUGeneratorImpl.h>
#include <fmt/format.h>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>

#include "shared/errors.h"

namespace shardcast::trainer {

namespace fs = std::filesystem;

namespace {

// Every rank passes its own outcome; returns the world ranks that failed (same on all).
std::vector<int> failed_ranks(Collectives& world, bool ok) {
  std::vector<double> flags(size_t(world.size()), 0.0);
  if (!ok) flags[size_t(world.rank())] = 1.0;
  all_reduce_host(world, flags);  // staged through the group's device (NCCL: CUDA only)
  std::vector<int> bad;
  for (int r = 0; r < world.size(); ++r)
    if (flags[size_t(r)] > 0) bad.push_back(r);
  return bad;
}

// Throws on every rank when any rank failed: the failing rank with its own message, the
// others naming the failing ranks.
void agree_or_throw(Collectives& world, bool ok, const std::string& my_error, const std::string& what) {
  const auto bad = failed_ranks(world, ok);
  if (bad.empty()) return;
  if (!ok) throw InputError(fmt::format("{}: {}", what, my_error));
  std::string ranks;
  for (int r : bad) ranks += (ranks.empty() ? "" : ", ") + std::to_string(r);
  throw InputError(fmt::format("{}: failed on rank {} (see that rank's error)", what, ranks));
}

std::string to_hex(const at::Tensor& bytes) {
  static const char* d = "0123456789abcdef";
  const auto* p = bytes.data_ptr<uint8_t>();
  std::string s;
  s.reserve(size_t(bytes.numel()) * 2);
  for (int64_t i = 0; i < bytes.numel(); ++i) {
    s.push_back(d[p[i] >> 4]);
    s.push_back(d[p[i] & 15]);
  }
  return s;
}

at::Tensor from_hex(const std::string& s, const std::string& label) {
  if (s.size() % 2) throw InputError(label + ": rng_state_hex has an odd length");
  at::Tensor t = at::empty({int64_t(s.size() / 2)}, at::kByte);
  auto* p = t.data_ptr<uint8_t>();
  auto nib = [&](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    throw InputError(label + ": rng_state_hex is not lower-case hex");
  };
  for (size_t i = 0; i < s.size() / 2; ++i) p[i] = uint8_t(nib(s[2 * i]) << 4 | nib(s[2 * i + 1]));
  return t;
}

int fault_kill_step() {
  const char* v = std::getenv("SHARDCAST_FAULT_KILL_IN_SAVE");
  return (v && *v) ? std::atoi(v) : -1;
}

// The three fp32 tensors of a unit in file order.
std::array<at::Tensor, 3> unit_tensors(const FlatUnit& u) {
  return {u.shard.detach(), u.exp_avg, u.exp_avg_sq};
}

}  // namespace

std::vector<ckpt::UnitLayout> unit_layouts(const FsdpModel& model) {
  std::vector<ckpt::UnitLayout> out;
  for (const auto& u : model.units()) {
    ckpt::UnitLayout l;
    l.numel = u.numel;
    l.padded_numel = u.padded_numel;
    for (const auto& p : u.params) l.params.push_back({p.name, p.shape, p.numel});
    out.push_back(std::move(l));
  }
  return out;
}

namespace {

// One save, taken at a step boundary: the manifest (files filled in after writing) and this
// rank's tensors in file order (per unit: shard, exp_avg, exp_avg_sq; fp32).
struct StagedCheckpoint {
  ckpt::Manifest manifest;
  int step = 0;
  int shard_rank = 0;              // the file index: tp rank · shard_size + shard rank
  bool writer = false;             // first replica group (replicate rank 0)
  std::vector<at::Tensor> tensors;
};

// copy = true: the tensors are private host copies (async: training goes on and changes the
// originals); false: the live tensors themselves (sync: written before training goes on, each
// copied to the host only while it is written).
StagedCheckpoint stage_checkpoint(FsdpModel& model, const TrainConfig& cfg, const CheckpointProgress& p, bool copy) {
  Collectives& world = *model.groups().world;
  StagedCheckpoint st;
  const int S = model.groups().shard->size();
  st.step = p.step;
  st.shard_rank = model.groups().tp_rank() * S + model.groups().shard->rank();
  st.writer = model.groups().replicate->rank() == 0;
  ckpt::Manifest& m = st.manifest;
  m.model = cfg.model.name.empty() ? cfg.model_preset : cfg.model.name;
  m.spec = cfg.model;
  m.sharding_strategy = to_string(cfg.parallelism.sharding_strategy);
  m.shard_size = S;
  m.tp = model.groups().tp_size();
  m.optimizer_steps = model.optimizer_steps();
  m.data = {p.step,
            cfg.training.seed,
            p.tokens_seen,
            world.size(),
            cfg.training.micro_batch,
            cfg.training.seq_len,
            cfg.training.grad_accum};
  m.rng_state_hex = to_hex(at::detail::getDefaultCPUGenerator().get_state());
  m.units = unit_layouts(model);
  if (st.writer)
    for (const auto& u : model.units())
      for (const auto& t : unit_tensors(u))
        st.tensors.push_back(copy ? t.to(at::kCPU, at::kFloat, /*non_blocking=*/false, /*copy=*/true).contiguous() : t);
  return st;
}

// The paths of one save: the step's directory under checkpoint.dir and its temporary twin.
struct SavePaths {
  fs::path root, final_dir, tmp_dir;
  std::string what;  // "checkpoint at step N (DIR)", for messages
};

// 1. Rank 0 checks free space for the whole checkpoint and prepares the temporary directory.
// Collective (every rank learns whether it worked).
void prepare_save(Collectives& world, const ckpt::Manifest& m, const SavePaths& paths) {
  const int S = m.file_count();
  const fs::path &root = paths.root, &tmp_dir = paths.tmp_dir;
  const std::string& what = paths.what;
  bool ok = true;
  std::string err;
  if (world.rank() == 0) {
    try {
      fs::create_directories(root);
      fs::remove_all(tmp_dir);  // a killed save's (a link is removed, not followed)
      // Exact for the data: S shard files + the manifest, each rounded up to the file
      // system's blocks, + one block for the directory (ckpt::checkpoint_disk_bytes).
      const uint64_t block = ckpt::block_bytes(root);
      const uint64_t need = ckpt::checkpoint_disk_bytes(m, block);  // bytes
      const uint64_t have = ckpt::free_bytes(root);
      if (have < need)
        throw InputError(fmt::format("not enough free disk space in {}: need {} bytes ({:.2f} MiB: {} shard file(s) "
                                     "of {} bytes + the manifest, in {}-byte blocks), {} bytes ({:.2f} MiB) available "
                                     "(free space or lower checkpoint.keep)",
                                     root.string(), need, need / 1048576.0, S, m.shard_file_bytes(), block, have,
                                     have / 1048576.0));
      // Made here, or refused: a directory or link that appeared at the name since the removal
      // above is never written into.
      if (::mkdir(tmp_dir.c_str(), 0755) != 0)
        throw InputError(fmt::format("{}: cannot create the checkpoint's temporary directory: {}", tmp_dir.string(),
                                     std::strerror(errno)));
    } catch (const std::exception& e) {
      ok = false;
      err = e.what();
    }
  }
  agree_or_throw(world, ok, err, what);
}

// 2. Writers write their shard file (fsynced); sizes and CRCs are summed over the world: returns
// [bytes, crc32] per file. On a failure anywhere the temporary directory is removed and every
// rank throws. Collective.
std::vector<double> write_shards(Collectives& world, StagedCheckpoint& st, const SavePaths& paths) {
  const int S = st.manifest.file_count();
  const fs::path& tmp_dir = paths.tmp_dir;
  const std::string& what = paths.what;
  bool ok = true;
  std::string err;
  std::vector<double> info(size_t(2 * S), 0.0);  // [bytes, crc32] per file
  if (st.writer) {
    try {
      ckpt::DurableWriter w(tmp_dir / fmt::format("shard_{:05d}.bin", st.shard_rank));
      for (const auto& t : st.tensors) {
        // Host copy first (CUDA shards, sync: one tensor at a time); no copy on the host.
        at::Tensor c = t.to(at::kCPU).contiguous();
        w.write(c.data_ptr<float>(), size_t(c.numel()) * sizeof(float));
      }
      w.close();
      info[size_t(2 * st.shard_rank)] = double(w.bytes());
      info[size_t(2 * st.shard_rank + 1)] = double(w.crc32());
    } catch (const std::exception& e) {
      ok = false;
      err = e.what();
    }
  }
  st.tensors.clear();  // the host copies are no longer needed
  const auto bad = failed_ranks(world, ok);
  if (!bad.empty() && world.rank() == 0) {
    std::error_code ec;
    fs::remove_all(tmp_dir, ec);  // previous checkpoints stay as they are
  }
  if (!bad.empty()) {
    if (!ok) throw InputError(fmt::format("{}: {}", what, err));
    throw InputError(fmt::format("{}: failed on rank {} (see that rank's error)", what, bad.front()));
  }
  all_reduce_host(world, info);
  if (world.rank() == 0 && fault_kill_step() == st.step) ::kill(::getpid(), SIGKILL);  // test hook
  return info;
}

// 3. Rank 0 writes the manifest and commits by rename; then prunes old checkpoints. Collective.
void commit_save(Collectives& world, const TrainConfig& cfg, ckpt::Manifest& m, int step,
                 const std::vector<double>& info, const SavePaths& paths) {
  const int S = m.file_count();
  const fs::path &root = paths.root, &final_dir = paths.final_dir, &tmp_dir = paths.tmp_dir;
  const std::string& what = paths.what;
  bool ok = true;
  std::string err;
  if (world.rank() == 0) {
    try {
      for (int k = 0; k < S; ++k)
        m.files.push_back({k, fmt::format("shard_{:05d}.bin", k), uint64_t(info[size_t(2 * k)]),
                           uint32_t(info[size_t(2 * k + 1)])});
      const std::string text = ckpt::manifest_to_json(m);
      ckpt::DurableWriter w(tmp_dir / ckpt::kManifestName);
      w.write(text.data(), text.size());
      w.close();
      ckpt::fsync_dir(tmp_dir);
      // A re-save of a step (a run resumed from an earlier one): the checkpoint there stays whole
      // until the new one is complete; it is moved aside, the new one renamed in, then removed.
      const fs::path replaced = root / (ckpt::step_dir_name(step) + ckpt::kReplacedSuffix);
      const bool resave = fs::exists(fs::symlink_status(final_dir));
      if (resave) {
        fs::remove_all(replaced);
        fs::rename(final_dir, replaced);
      }
      fs::rename(tmp_dir, final_dir);
      ckpt::fsync_dir(root);
      if (resave) fs::remove_all(replaced);
      ckpt::prune(root, cfg.checkpoint.keep);
    } catch (const std::exception& e) {
      ok = false;
      err = e.what();
      std::error_code ec;
      fs::remove_all(tmp_dir, ec);
    }
  }
  agree_or_throw(world, ok, err, what);
}

// The save protocol over `world` (the training world group, or the async writer's own group
// with the same ranks). Collective.
fs::path write_staged(Collectives& world, const TrainConfig& cfg, StagedCheckpoint& st) {
  SavePaths paths;
  paths.root = cfg.checkpoint.dir;
  paths.final_dir = paths.root / ckpt::step_dir_name(st.step);
  paths.tmp_dir = paths.root / (ckpt::step_dir_name(st.step) + ".tmp");
  paths.what = fmt::format("checkpoint at step {} ({})", st.step, paths.final_dir.string());
  prepare_save(world, st.manifest, paths);
  const std::vector<double> info = write_shards(world, st, paths);
  commit_save(world, cfg, st.manifest, st.step, info, paths);
  return paths.final_dir;
}

}  // namespace

fs::path save_checkpoint(FsdpModel& model, const TrainConfig& cfg, const CheckpointProgress& p) {
  StagedCheckpoint st = stage_checkpoint(model, cfg, p, /*copy=*/false);
  return write_staged(*model.groups().world, cfg, st);
}

namespace {

// The saved checkpoint's files, opened (and checked against the manifest) on first use.
class SavedFiles {
 public:
  SavedFiles(const fs::path& dir, const ckpt::Manifest& m) : dir_(dir), m_(m) {}
  // Elements [lo, hi) of tensor t (0 shard, 1 exp_avg, 2 exp_avg_sq) of the saved flat unit
  // whose section starts at byte unit_off, as saved by tp rank ts, into out.  // fp32
  void read(int ts, int t, uint64_t unit_off, int64_t n_saved, int64_t lo, int64_t hi, float* out) {
    for (int64_t e = lo; e < hi;) {
      const int k = ts * m_.shard_size + int(e / n_saved);
      const int64_t in_off = e % n_saved;
      const int64_t len = std::min<int64_t>(hi - e, n_saved - in_off);
      std::ifstream& in = open(k);
      in.seekg(std::streamoff(unit_off + uint64_t(t * n_saved + in_off) * sizeof(float)));
      in.read(reinterpret_cast<char*>(out + (e - lo)), std::streamsize(len * sizeof(float)));
      if (!in) throw InputError(fmt::format("{}: short read", (dir_ / m_.files[k].file).string()));
      e += len;
    }
  }

 private:
  std::ifstream& open(int k) {
    auto it = files_.find(k);
    if (it != files_.end()) return it->second;
    const fs::path f = dir_ / m_.files[k].file;
    uint64_t bytes = 0;
    const uint32_t crc = ckpt::crc32_file(f, &bytes);
    if (bytes != m_.files[k].bytes)
      throw InputError(fmt::format("{}: {} bytes, the manifest says {} (truncated or replaced file)", f.string(),
                                   bytes, m_.files[k].bytes));
    if (crc != m_.files[k].crc32)
      throw InputError(fmt::format("{}: checksum mismatch (CRC-32 {:08x}, manifest {:08x}): the file is corrupted",
                                   f.string(), crc, m_.files[k].crc32));
    auto& in = files_[k];
    in.open(f, std::ios::binary);
    if (!in) throw InputError(fmt::format("{}: cannot open", f.string()));
    return in;
  }
  fs::path dir_;
  const ckpt::Manifest& m_;
  std::map<int, std::ifstream> files_;
};

// The architecture the shapes do not show: heads (n_heads x head_dim can keep a weight's shape),
// RoPE's base and the norms' epsilon change the function the weights compute, so a checkpoint
// that differs there is another model (an audit resumed tiny-2l with 8 heads and RoPE 5e5 from
// a 4-head, 1e4 checkpoint silently). max_seq_len may differ: it is a limit, not a weight.
void check_spec(const ModelSpec& saved, const ModelSpec& mine) {
  auto differs = [&](const char* key, const std::string& a, const std::string& b) {
    throw InputError(fmt::format("saved with model_spec.{} {}, this run's model.{} is {}: a checkpoint of another "
                                 "model",
                                 key, a, key, b));
  };
  if (saved.n_heads != mine.n_heads) differs("n_heads", fmt::format("{}", saved.n_heads), fmt::format("{}", mine.n_heads));
  if (saved.n_kv_heads != mine.n_kv_heads)
    differs("n_kv_heads", fmt::format("{}", saved.n_kv_heads), fmt::format("{}", mine.n_kv_heads));
  if (saved.rope_theta != mine.rope_theta)
    differs("rope_theta", fmt::format("{}", saved.rope_theta), fmt::format("{}", mine.rope_theta));
  if (saved.norm_eps != mine.norm_eps)
    differs("norm_eps", fmt::format("{}", saved.norm_eps), fmt::format("{}", mine.norm_eps));
  if (saved.mlp_type != mine.mlp_type) differs("mlp_type", to_string(saved.mlp_type), to_string(mine.mlp_type));
  if (saved.tied_embeddings != mine.tied_embeddings)
    differs("tied_embeddings", fmt::format("{}", saved.tied_embeddings), fmt::format("{}", mine.tied_embeddings));
}

// The saved model must be this one: its architecture (check_spec), and the saved layout is what
// this model's parameters look like split over the saved tp degree.
void check_layout(const ckpt::Manifest& m, const FsdpModel& model) {
  check_spec(m.spec, model.spec());
  const auto mine = unit_layouts(model);
  if (m.units.size() != mine.size())
    throw InputError(fmt::format("saved for a model with {} FSDP units, this model has {}", m.units.size(),
                                 mine.size()));
  const ModelSpec& spec = model.spec();
  const bool splits = m.tp == 1 || (spec.n_heads % m.tp == 0 && spec.n_kv_heads % m.tp == 0 &&
                                    spec.ffn_dim % m.tp == 0 && spec.vocab % m.tp == 0);
  const auto saved_shape = splits ? unit_param_infos(spec, m.tp, 0) : std::vector<std::vector<ParamInfo>>{};
  for (size_t i = 0; i < mine.size(); ++i) {
    const auto& a = m.units[i];
    bool same = splits && a.params.size() == saved_shape[i].size();
    for (size_t q = 0; same && q < a.params.size(); ++q)
      same = a.params[q].name == saved_shape[i][q].name && a.params[q].shape == saved_shape[i][q].shape;
    if (!same)
      throw InputError(fmt::format("unit {} differs from this model's (saved {} elements starting with {} at tp {}, "
                                   "this model {} elements): a checkpoint of another model",
                                   i, a.numel, a.params.empty() ? "?" : a.params[0].name, m.tp, mine[i].numel));
  }
}

// Another tp degree: tensor t of unit i as this rank's flat shard (shard_numel), each parameter
// assembled whole from the saved tp ranks' pieces and cut to this rank's piece.
at::Tensor resplit_unit(SavedFiles& files, const ckpt::Manifest& m, const FlatUnit& u, int r, size_t i, int t,
                        uint64_t unit_off, int64_t n_saved, const ModelSpec& spec) {
  std::vector<std::vector<ParamInfo>> saved;
  for (int ts = 0; ts < m.tp; ++ts) saved.push_back(unit_param_infos(spec, m.tp, ts)[i]);
  std::vector<at::Tensor> flat;
  int64_t off = 0;  // element offset of the parameter in the saved flat unit (same for every ts)
  for (size_t q = 0; q < u.params.size(); ++q) {
    const ParamInfo& sp = saved[0][q];
    std::vector<at::Tensor> pieces;
    for (int ts = 0; ts < (sp.tp_dim < 0 ? 1 : m.tp); ++ts) {
      at::Tensor piece = at::empty(sp.shape, at::kFloat);
      files.read(ts, t, unit_off, n_saved, off, off + sp.numel, piece.data_ptr<float>());
      pieces.push_back(piece);
    }
    at::Tensor full = pieces.size() == 1 ? pieces[0] : at::cat(pieces, sp.tp_dim);
    const ParamInfo& mine = u.params[q];
    if (mine.tp_dim >= 0) full = full.narrow(mine.tp_dim, mine.tp_offset, mine.shape[size_t(mine.tp_dim)]);
    flat.push_back(full.reshape({-1}));
    off += sp.numel;
  }
  if (u.padded_numel > u.numel) flat.push_back(at::zeros({u.padded_numel - u.numel}, at::kFloat));
  return at::cat(flat).narrow(0, int64_t(r) * u.shard_numel, u.shard_numel);
}

}  // namespace

ckpt::Manifest load_checkpoint(FsdpModel& model, const fs::path& dir) {
  Collectives& world = *model.groups().world;
  const int r = model.groups().shard->rank();
  const int my_tp = model.groups().tp_rank();
  const std::string what = fmt::format("loading checkpoint {}", dir.string());
  ckpt::Manifest m;
  bool ok = true;
  std::string err;
  try {
    m = ckpt::read_manifest(dir);
    check_layout(m, model);
    SavedFiles files(dir, m);
    const bool same_tp = m.tp == model.tp_size();
    uint64_t unit_off = 0;  // byte offset of the unit's section in every saved file
    at::NoGradGuard no_grad;
    for (size_t i = 0; i < model.units().size(); ++i) {
      const FlatUnit& u = model.units()[i];
      const int64_t n_saved = m.units[i].padded_numel / m.shard_size;
      const int64_t n_new = u.shard_numel;
      const auto dst = unit_tensors(u);
      for (int t = 0; t < 3; ++t) {
        if (!same_tp) {
          dst[t].copy_(resplit_unit(files, m, u, r, i, t, unit_off, n_saved, model.spec()));
          continue;
        }
        // Same tp: my elements [r·n', (r+1)·n') of the unit, clipped to numel, from my tp rank's files.
        at::Tensor buf = at::zeros({n_new}, at::kFloat);  // padding stays zero
        const int64_t lo = int64_t(r) * n_new, hi = std::min<int64_t>(lo + n_new, u.numel);
        if (lo < hi) files.read(my_tp, t, unit_off, n_saved, lo, hi, buf.data_ptr<float>());
        dst[t].copy_(buf);
      }
      unit_off += uint64_t(3 * n_saved) * sizeof(float);
    }
    at::Generator gen = at::detail::getDefaultCPUGenerator();
    gen.set_state(from_hex(m.rng_state_hex, (dir / ckpt::kManifestName).string()));
  } catch (const std::exception& e) {
    ok = false;
    err = e.what();
  }
  agree_or_throw(world, ok, err, what);
  return m;
}

// ---------------------------------------------------------------- the loop's hook

// The background writer of async_mode = "async": one thread, one save in flight.
class AsyncCheckpointer {
 public:
  AsyncCheckpointer(const TrainConfig& cfg, std::shared_ptr<Collectives> group) : cfg_(cfg), group_(std::move(group)) {}
  ~AsyncCheckpointer() {
    try {
      wait();
    } catch (const std::exception& e) {
      fmt::print(stderr, "error: asynchronous {}\n", e.what());
    }
  }
  // Waits for the save in flight (if any) and rethrows its error.
  void wait() {
    if (thread_.joinable()) thread_.join();
    if (error_) {
      auto e = error_;
      error_ = nullptr;
      std::rethrow_exception(e);
    }
  }
  void start(StagedCheckpoint st) {
    thread_ = std::thread([this, st = std::move(st)]() mutable {
      try {
        const fs::path dir = write_staged(*group_, cfg_, st);
        if (group_->rank() == 0) {
          fmt::print("checkpoint: saved {} (written in the background)\n", dir.string());
          std::fflush(stdout);
        }
      } catch (...) {
        error_ = std::current_exception();
      }
    });
  }

 private:
  const TrainConfig& cfg_;
  std::shared_ptr<Collectives> group_;  // own Gloo group: never interleaves with training's
  std::thread thread_;
  std::exception_ptr error_;            // written by the thread, read after join
};

namespace {

// checkpoint.fallback: the newest complete checkpoint under `root` whose files match their
// manifest. Rank 0 verifies (and renames corrupt ones to step_<N>.corrupt, saying so); every
// rank learns its choice. Empty = no complete checkpoint at all. Collective.
fs::path newest_intact(Collectives& world, const fs::path& root) {
  int64_t code = 0;  // 0 = none exist, -1 = all corrupt, else the step of the chosen one
  if (world.rank() == 0) {
    const auto all = ckpt::list_complete(root);
    code = all.empty() ? 0 : -1;
    for (size_t i = all.size(); i-- > 0;) {
      try {
        code = ckpt::verify_checkpoint(all[i]).data.step;
        break;
      } catch (const std::exception& e) {
        fs::path moved = all[i];
        moved += ".corrupt";
        for (int n = 1; fs::exists(moved); ++n) moved = fs::path(all[i].string() + fmt::format(".corrupt.{}", n));
        std::error_code ec;
        fs::rename(all[i], moved, ec);
        fmt::print(stderr, "checkpoint: {} is corrupt: {}; checkpoint.fallback = true: {}, trying the next older "
                           "checkpoint\n", all[i].string(), e.what(),
                   ec ? fmt::format("could not rename it ({})", ec.message())
                      : fmt::format("renamed to {}", moved.string()));
        std::fflush(stderr);
      }
    }
  }
  std::vector<double> v{world.rank() == 0 ? double(code) : 0.0};
  all_reduce_host(world, v);  // rank 0's code to every rank (staged through the group's device)
  code = int64_t(v[0]);
  if (code == -1)
    throw InputError(fmt::format("checkpoint.fallback: every checkpoint under {} is corrupt (rank 0 named each one and "
                                 "renamed it to *.corrupt); nothing to resume from",
                                 root.string()));
  if (code == 0) return {};
  const fs::path dir = root / ckpt::step_dir_name(int(code));
  if (world.rank() == 0) {
    fmt::print("checkpoint: {} verified (sizes and CRC-32s of every file)\n", dir.string());
    std::fflush(stdout);
  }
  return dir;
}

}  // namespace

CheckpointHook::CheckpointHook(const TrainConfig& cfg, Engine& engine, c10::intrusive_ptr<c10d::Store> store)
    : cfg_(cfg), model_(fsdp_model_of(engine)) {
  const auto& c = cfg.checkpoint;
  if (c.dir.empty() && c.resume_from.empty()) return;
  if (!model_)
    throw ConfigError(cfg.source_file, "checkpoint", "checkpoints need the FSDP engine (not --reference)");
  Collectives& world = *model_->groups().world;
  const bool rank0 = world.rank() == 0;
  if (!c.dir.empty() && c.async_mode == "async") {
    if (!store)
      throw std::invalid_argument("checkpoint.async_mode = \"async\" needs the rendezvous store for its process group");
    CommOptions co;
    co.backend = "gloo";  // host buffers; a Gloo group also on GPU builds (as torchtitan)
    co.timeout_seconds = cfg.comm.timeout_seconds;
    const char* addr = std::getenv("MASTER_ADDR");
    const std::string a = addr ? addr : "127.0.0.1";
    co.hostname = loopback_bind_address(a);
    auto prefixed = c10::make_intrusive<c10d::PrefixStore>("shardcast/async_checkpoint/", store);
    auto groups = make_process_groups(prefixed, world.rank(), world.size(), world.size(), co);
    async_ = std::make_unique<AsyncCheckpointer>(cfg, groups.world);
  }
  // A re-save killed between its renames (ckpt::finish_interrupted_resaves): rank 0 puts the
  // step back before any rank lists the checkpoints.
  if (!c.dir.empty()) {
    if (rank0)
      for (const std::string& line : ckpt::finish_interrupted_resaves(c.dir)) fmt::print(stderr, "checkpoint: {}\n", line);
    world.barrier();
  }
  if (c.resume_from.empty()) {
    // A fresh run into a folder holding another run's checkpoints would overwrite its steps and
    // prune the rest (keep), and a later resume_from = "latest" would load that run's weights:
    // refused before anything is trained, with both ways on.
    const std::vector<fs::path> earlier = c.dir.empty() ? std::vector<fs::path>{} : ckpt::list_complete(c.dir);
    if (!earlier.empty())
      throw ConfigError(cfg.source_file, "checkpoint.resume_from",
                        fmt::format("is empty (a fresh run), but checkpoint.dir {} holds {} checkpoint(s) of an "
                                    "earlier run ({}): set resume_from = \"latest\" to go on from them, or give "
                                    "an empty checkpoint.dir (a fresh run there would overwrite and prune them)",
                                    c.dir, earlier.size(), earlier.back().filename().string()));
    return;
  }
  const bool fallback = c.fallback && c.resume_from == "latest";
  const fs::path dir = fallback ? newest_intact(world, c.dir) : ckpt::resolve_checkpoint(c.resume_from, c.dir);
  if (dir.empty()) {
    if (rank0) fmt::print("checkpoint: no complete checkpoint under {} yet; starting at step 1\n", c.dir);
    return;
  }
  ckpt::Manifest m;
  try {
    m = load_checkpoint(*model_, dir);
  } catch (const InputError& e) {
    if (c.resume_from != "latest" || c.fallback) throw;
    throw InputError(fmt::format("{} (checkpoint.fallback = true resumes from the newest intact checkpoint instead)",
                                 e.what()));
  }
  model_->set_optimizer_steps(m.optimizer_steps);
  first_step_ = m.data.step + 1;
  tokens_base_ = m.data.tokens_seen;
  if (rank0) {
    fmt::print("checkpoint: resumed from {} (step {}, {} tokens seen, optimizer step {})\n", dir.string(), m.data.step,
               m.data.tokens_seen, m.optimizer_steps);
    const int W = model_->groups().world->size(), tp = model_->groups().tp_size();
    if (m.data.world_size != W || m.shard_size != model_->groups().shard->size() || m.tp != tp)
      fmt::print("checkpoint: re-sharded from {} ranks (shard group {}, tp {}) to {} ranks (shard group {}, tp {}); "
                 "data position: step {} onward draws each step's global batch of {} sequences from (seed {}, step, "
                 "sequence index), as a fresh {}-rank run would\n",
                 m.data.world_size, m.shard_size, m.tp, W, model_->groups().shard->size(), tp, first_step_,
                 int64_t(model_->groups().dp_size()) * cfg.training.micro_batch * cfg.training.grad_accum,
                 cfg.training.seed, W);
    if (m.data.seed != cfg.training.seed || m.data.seq_len != cfg.training.seq_len)
      fmt::print("checkpoint: note: saved with seed {} / seq_len {}, continuing with seed {} / seq_len {}\n",
                 m.data.seed, m.data.seq_len, cfg.training.seed, cfg.training.seq_len);
  }
  std::fflush(stdout);
}

CheckpointHook::~CheckpointHook() = default;

void CheckpointHook::after_step(int step) {
  const auto& c = cfg_.checkpoint;
  if (c.dir.empty() || !model_) return;
  const bool last = step == cfg_.training.steps;
  if (!last && (c.interval <= 0 || step % c.interval != 0)) return;
  const auto t0 = std::chrono::steady_clock::now();
  const int64_t tokens = tokens_base_ + int64_t(step - first_step_ + 1) * cfg_.tokens_per_step();
  if (async_) {
    async_->wait();  // one save in flight: the previous one must be committed first
    async_->start(stage_checkpoint(*model_, cfg_, {step, tokens}, /*copy=*/true));
  } else {
    const fs::path dir = save_checkpoint(*model_, cfg_, {step, tokens});
    if (model_->groups().world->rank() == 0) {
      fmt::print("checkpoint: saved {}\n", dir.string());
      std::fflush(stdout);
    }
  }
  blocked_s_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void CheckpointHook::finish() {
  if (!async_) return;
  const auto t0 = std::chrono::steady_clock::now();
  async_->wait();
  blocked_s_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace shardcast::trainer
