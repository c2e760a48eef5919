// Checkpoint manifest JSON, CRC-32 and durable file helpers. See manifest.h.
#include "trainer/checkpoint/manifest.h"

#include <fcntl.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "shared/errors.h"
#include "shared/config_io.h"

namespace shardcast::trainer::ckpt {

namespace fs = std::filesystem;
using nlohmann::json;

uint64_t Manifest::shard_file_bytes() const {
  uint64_t b = 0;
  for (const auto& u : units) b += 3 * uint64_t(u.padded_numel / shard_size) * sizeof(float);
  return b;
}

// ---------------------------------------------------------------- JSON

std::string manifest_to_json(const Manifest& m) {
  json j;
  j["format"] = m.format;
  j["model"] = m.model;
  const ModelSpec& ms = m.spec;
  j["model_spec"] = {{"n_layers", ms.n_layers},       {"d_model", ms.d_model},
                     {"n_heads", ms.n_heads},         {"n_kv_heads", ms.n_kv_heads},
                     {"ffn_dim", ms.ffn_dim},         {"vocab", ms.vocab},
                     {"max_seq_len", ms.max_seq_len}, {"norm_eps", ms.norm_eps},
                     {"rope_theta", ms.rope_theta},   {"tied_embeddings", ms.tied_embeddings},
                     {"mlp_type", to_string(ms.mlp_type)}};
  j["sharding_strategy"] = m.sharding_strategy;
  j["shard_size"] = m.shard_size;
  if (m.tp > 1) j["tp"] = m.tp;  // absent = 1 (every manifest written before tensor parallel)
  j["optimizer_steps"] = m.optimizer_steps;
  j["data"] = {{"step", m.data.step},           {"seed", m.data.seed},
               {"tokens_seen", m.data.tokens_seen}, {"world_size", m.data.world_size},
               {"micro_batch", m.data.micro_batch}, {"seq_len", m.data.seq_len},
               {"grad_accum", m.data.grad_accum}};
  j["rng_state_hex"] = m.rng_state_hex;
  j["units"] = json::array();
  for (const auto& u : m.units) {
    json ju{{"numel", u.numel}, {"padded_numel", u.padded_numel}, {"params", json::array()}};
    for (const auto& p : u.params) ju["params"].push_back({{"name", p.name}, {"shape", p.shape}, {"numel", p.numel}});
    j["units"].push_back(ju);
  }
  j["files"] = json::array();
  for (const auto& f : m.files)
    j["files"].push_back({{"shard_rank", f.shard_rank}, {"file", f.file}, {"bytes", f.bytes}, {"crc32", f.crc32}});
  j[kManifestChecksumKey] = manifest_body_checksum(j);
  return j.dump(1) + "\n";
}

std::string manifest_body_checksum(const nlohmann::json& manifest) {
  nlohmann::json body = manifest;
  body.erase(kManifestChecksumKey);
  const std::string canonical = body.dump();  // keys sorted (std::map), no whitespace
  return fmt::format("{:08x}", crc32_update(0, canonical.data(), canonical.size()));
}

namespace {

struct Reader {
  const std::string& label;
  [[noreturn]] void fail(const std::string& key, const std::string& detail) const {
    throw InputError(fmt::format("{}: {}: {}", label, key, detail));
  }
  const json& get(const json& obj, const std::string& parent, const char* key) const {
    if (!obj.is_object()) fail(parent, "expected an object");
    auto it = obj.find(key);
    if (it == obj.end()) fail(parent.empty() ? key : parent + "." + key, "missing");
    return *it;
  }
  int64_t integer(const json& obj, const std::string& parent, const char* key, int64_t lo, int64_t hi) const {
    const json& v = get(obj, parent, key);
    const std::string k = parent.empty() ? key : parent + "." + key;
    if (!v.is_number_integer()) fail(k, "expected an integer");
    // Unsigned values above INT64_MAX are out of range too.
    if (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(INT64_MAX)) fail(k, "out of range");
    const int64_t x = v.get<int64_t>();
    if (x < lo || x > hi) fail(k, fmt::format("{} is outside [{}, {}]", x, lo, hi));
    return x;
  }
  uint64_t uinteger(const json& obj, const std::string& parent, const char* key) const {
    const json& v = get(obj, parent, key);
    const std::string k = parent.empty() ? key : parent + "." + key;
    if (!v.is_number_unsigned()) fail(k, "expected a non-negative integer");
    return v.get<uint64_t>();
  }
  double number(const json& obj, const std::string& parent, const char* key) const {
    const json& v = get(obj, parent, key);
    if (!v.is_number() || !(v.get<double>() > 0)) fail(parent.empty() ? key : parent + "." + key, "expected a positive number");
    return v.get<double>();
  }
  std::string string(const json& obj, const std::string& parent, const char* key) const {
    const json& v = get(obj, parent, key);
    if (!v.is_string()) fail(parent.empty() ? key : parent + "." + key, "expected a string");
    return v.get<std::string>();
  }
  const json& array(const json& obj, const std::string& parent, const char* key) const {
    const json& v = get(obj, parent, key);
    if (!v.is_array()) fail(parent.empty() ? key : parent + "." + key, "expected an array");
    return v;
  }
};

constexpr int64_t kMaxElems = int64_t(1) << 50;  // far beyond any model; guards overflow

// "model_spec": the model's shape (the trainer rebuilds it from these).
void read_model_spec(const Reader& r, const json& j, Manifest& m) {
  const json& ms = r.get(j, "", "model_spec");
  const std::string k = "model_spec";
  m.spec.name = m.model;
  m.spec.n_layers = int(r.integer(ms, k, "n_layers", 1, 1 << 20));
  m.spec.d_model = int(r.integer(ms, k, "d_model", 1, 1 << 24));
  m.spec.n_heads = int(r.integer(ms, k, "n_heads", 1, 1 << 20));
  m.spec.n_kv_heads = int(r.integer(ms, k, "n_kv_heads", 1, 1 << 20));
  m.spec.ffn_dim = r.integer(ms, k, "ffn_dim", 1, int64_t(1) << 32);
  m.spec.vocab = r.integer(ms, k, "vocab", 1, int64_t(1) << 32);
  m.spec.max_seq_len = int(r.integer(ms, k, "max_seq_len", 1, INT32_MAX));
  m.spec.norm_eps = r.number(ms, k, "norm_eps");
  m.spec.rope_theta = r.number(ms, k, "rope_theta");
  const json& tied = r.get(ms, k, "tied_embeddings");
  if (!tied.is_boolean()) r.fail(k + ".tied_embeddings", "expected true or false");
  m.spec.tied_embeddings = tied.get<bool>();
  const std::string mlp = r.string(ms, k, "mlp_type");
  if (mlp == "swiglu") m.spec.mlp_type = MlpType::swiglu;
  else if (mlp == "gelu") m.spec.mlp_type = MlpType::gelu;
  else r.fail(k + ".mlp_type", "expected \"swiglu\" or \"gelu\"");
  if (m.spec.d_model % m.spec.n_heads != 0 || m.spec.n_heads % m.spec.n_kv_heads != 0)
    r.fail(k, "d_model must divide by n_heads and n_heads by n_kv_heads");
}

// The sharding, the steps taken and the data loader's position.
void read_layout_and_data(const Reader& r, const json& j, Manifest& m) {
  m.sharding_strategy = r.string(j, "", "sharding_strategy");
  m.shard_size = int(r.integer(j, "", "shard_size", 1, 1 << 20));
  if (j.contains("tp")) m.tp = int(r.integer(j, "", "tp", 2, 1 << 20));  // written only when > 1
  m.optimizer_steps = int(r.integer(j, "", "optimizer_steps", 0, INT32_MAX));
  const json& d = r.get(j, "", "data");
  m.data.step = int(r.integer(d, "data", "step", 0, INT32_MAX));
  m.data.seed = r.uinteger(d, "data", "seed");
  m.data.tokens_seen = r.integer(d, "data", "tokens_seen", 0, INT64_MAX);
  m.data.world_size = int(r.integer(d, "data", "world_size", 1, 1 << 20));
  m.data.micro_batch = int(r.integer(d, "data", "micro_batch", 1, INT32_MAX));
  m.data.seq_len = int(r.integer(d, "data", "seq_len", 1, INT32_MAX));
  m.data.grad_accum = int(r.integer(d, "data", "grad_accum", 1, INT32_MAX));
  m.rng_state_hex = r.string(j, "", "rng_state_hex");
}

// units[i] (key k): its element counts, padded to the shard size, and its parameters' shapes,
// whose element counts sum to the unit's.
UnitLayout read_unit(const Reader& r, const json& unit, const std::string& k, int shard_size) {
  UnitLayout u;
  u.numel = r.integer(unit, k, "numel", 1, kMaxElems);
  u.padded_numel = r.integer(unit, k, "padded_numel", 1, kMaxElems);
  if (u.padded_numel < u.numel || u.padded_numel % shard_size != 0 ||
      u.padded_numel - u.numel >= shard_size)
    r.fail(k + ".padded_numel",
           fmt::format("{} is not numel {} rounded up to a multiple of shard_size {}", u.padded_numel, u.numel,
                       shard_size));
  const json& ps = r.array(unit, k, "params");
  int64_t sum = 0;
  for (size_t q = 0; q < ps.size(); ++q) {
    const std::string kp = fmt::format("{}.params[{}]", k, q);
    ParamLayout p;
    p.name = r.string(ps[q], kp, "name");
    p.numel = r.integer(ps[q], kp, "numel", 1, kMaxElems);
    const json& sh = r.array(ps[q], kp, "shape");
    int64_t prod = 1;
    for (const auto& s : sh) {
      if (!s.is_number_integer() || s.get<int64_t>() < 1 || s.get<int64_t>() > kMaxElems)
        r.fail(kp + ".shape", "expected positive integers");
      p.shape.push_back(s.get<int64_t>());
      prod *= p.shape.back();
      if (prod > kMaxElems) r.fail(kp + ".shape", "too large");
    }
    if (sh.empty() || prod != p.numel) r.fail(kp, fmt::format("shape does not have numel {} elements", p.numel));
    sum += p.numel;
    if (sum > u.numel) break;
    u.params.push_back(std::move(p));
  }
  if (sum != u.numel) r.fail(k, fmt::format("parameter numels sum to {}, not numel {}", sum, u.numel));
  return u;
}

// "files": one shard file per shard rank (x tp), each a plain name of the layout's size.
void read_files(const Reader& r, const json& j, Manifest& m) {
  const json& files = r.array(j, "", "files");
  if (int64_t(files.size()) != m.file_count())
    r.fail("files", fmt::format("{} entries for shard_size {} x tp {}", files.size(), m.shard_size, m.tp));
  for (size_t i = 0; i < files.size(); ++i) {
    const std::string k = fmt::format("files[{}]", i);
    ShardFile f;
    f.shard_rank = int(r.integer(files[i], k, "shard_rank", 0, m.file_count() - 1));
    if (f.shard_rank != int(i)) r.fail(k + ".shard_rank", fmt::format("expected {}", i));
    f.file = r.string(files[i], k, "file");
    if (f.file.empty() || f.file.find('/') != std::string::npos || f.file == "." || f.file == "..")
      r.fail(k + ".file", "must be a plain file name inside the checkpoint directory");
    f.bytes = r.uinteger(files[i], k, "bytes");
    const uint64_t crc = r.uinteger(files[i], k, "crc32");
    if (crc > 0xffffffffull) r.fail(k + ".crc32", "exceeds 32 bits");
    f.crc32 = uint32_t(crc);
    m.files.push_back(std::move(f));
  }
  const uint64_t expect = m.shard_file_bytes();
  for (size_t i = 0; i < m.files.size(); ++i)
    if (m.files[i].bytes != expect)
      r.fail(fmt::format("files[{}].bytes", i), fmt::format("{} but the unit layout needs {}", m.files[i].bytes, expect));
}

}  // namespace

Manifest parse_manifest(const std::string& text, const std::string& label) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    throw InputError(fmt::format("{}: not valid JSON: {}", label, e.what()));
  }
  Reader r{label};
  if (!j.is_object()) r.fail("(top level)", "expected an object");
  Manifest m;
  m.format = int(r.integer(j, "", "format", 0, 1000));
  if (m.format == 1)
    r.fail("format", fmt::format("version 1 (written before a manifest carried its own checksum) is not read any "
                                 "more: this build reads version {} only; start the run afresh or resume it with "
                                 "the build that saved it", kFormatVersion));
  if (m.format != kFormatVersion)
    r.fail("format", fmt::format("version {} is not supported (this build reads {})", m.format, kFormatVersion));
  m.model = r.string(j, "", "model");
  read_model_spec(r, j, m);
  read_layout_and_data(r, j, m);
  const json& units = r.array(j, "", "units");
  if (units.empty()) r.fail("units", "is empty");
  for (size_t i = 0; i < units.size(); ++i)
    m.units.push_back(read_unit(r, units[i], fmt::format("units[{}]", i), m.shard_size));
  read_files(r, j, m);
  // Last, so an edit that breaks the structure is named by its key above.
  const std::string recorded = r.string(j, "", kManifestChecksumKey);
  const std::string computed = manifest_body_checksum(j);
  if (recorded != computed)
    r.fail(kManifestChecksumKey, fmt::format("the manifest's own checksum {} does not match its content ({}): the "
                                             "manifest was edited or damaged after it was saved, so this checkpoint "
                                             "is not used", recorded, computed));
  return m;
}

Manifest read_manifest(const fs::path& dir) {
  const fs::path p = dir / kManifestName;
  std::error_code ec;
  if (!fs::is_regular_file(p, ec))
    throw InputError(fmt::format("{}: cannot read the checkpoint manifest (not a complete checkpoint?)", p.string()));
  // Bounded: a manifest names a few entries per unit and rank (kilobytes to megabytes); a huge
  // file is not one, and is refused before it is read into memory.
  return parse_manifest(read_text(p, kMaxInputFileBytes), p.string());
}

// ---------------------------------------------------------------- CRC-32

namespace {
std::array<uint32_t, 256> make_crc_table() {
  std::array<uint32_t, 256> t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    t[i] = c;
  }
  return t;
}
}  // namespace

uint32_t crc32_update(uint32_t crc, const void* data, size_t n) {
  static const std::array<uint32_t, 256> table = make_crc_table();
  const auto* p = static_cast<const unsigned char*>(data);
  uint32_t c = crc ^ 0xFFFFFFFFu;
  for (size_t i = 0; i < n; ++i) c = table[(c ^ p[i]) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

uint32_t crc32_file(const fs::path& file, uint64_t* bytes) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw InputError(fmt::format("{}: cannot read checkpoint file", file.string()));
  std::vector<char> buf(1 << 20);
  uint32_t crc = 0;
  uint64_t total = 0;
  while (in) {
    in.read(buf.data(), std::streamsize(buf.size()));
    const auto n = in.gcount();
    if (n <= 0) break;
    crc = crc32_update(crc, buf.data(), size_t(n));
    total += uint64_t(n);
  }
  if (bytes) *bytes = total;
  return crc;
}

// ---------------------------------------------------------------- durable files

DurableWriter::DurableWriter(const fs::path& file) : file_(file) {
  // A new file, never one that exists nor a link planted at the name (O_EXCL | O_NOFOLLOW): the
  // writers' files are inside a directory just made, or a temporary name removed just before.
  fd_ = ::open(file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd_ < 0) throw InputError(fmt::format("{}: cannot create: {}", file.string(), std::strerror(errno)));
}

DurableWriter::~DurableWriter() {
  if (fd_ >= 0) {  // not closed: an error happened; leave nothing behind
    ::close(fd_);
    std::error_code ec;
    fs::remove(file_, ec);
  }
}

void DurableWriter::write(const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  size_t off = 0;
  while (off < n) {
    const ssize_t w = ::write(fd_, p + off, n - off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      const int err = w < 0 ? errno : ENOSPC;
      throw InputError(fmt::format("{}: write failed after {} bytes: {}", file_.string(), bytes_ + off,
                                   std::strerror(err)));
    }
    off += size_t(w);
  }
  crc_ = crc32_update(crc_, data, n);
  bytes_ += n;
}

void DurableWriter::close() {
  if (::fsync(fd_) != 0)
    throw InputError(fmt::format("{}: fsync failed: {}", file_.string(), std::strerror(errno)));
  const int rc = ::close(fd_);
  fd_ = -1;
  if (rc != 0) {
    const int err = errno;
    std::error_code ec;
    fs::remove(file_, ec);
    throw InputError(fmt::format("{}: close failed: {}", file_.string(), std::strerror(err)));
  }
}

void fsync_dir(const fs::path& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) throw InputError(fmt::format("{}: cannot open directory: {}", dir.string(), std::strerror(errno)));
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  if (rc != 0) throw InputError(fmt::format("{}: fsync failed: {}", dir.string(), std::strerror(err)));
}

uint64_t free_bytes(const fs::path& dir) {
  struct statvfs s {};
  if (::statvfs(dir.c_str(), &s) != 0)
    throw InputError(fmt::format("{}: statvfs failed: {}", dir.string(), std::strerror(errno)));
  return uint64_t(s.f_bavail) * uint64_t(s.f_frsize);
}

uint64_t block_bytes(const fs::path& dir) {
  struct statvfs s {};
  if (::statvfs(dir.c_str(), &s) != 0)
    throw InputError(fmt::format("{}: statvfs failed: {}", dir.string(), std::strerror(errno)));
  return std::max<uint64_t>(1, uint64_t(s.f_frsize));
}

uint64_t checkpoint_disk_bytes(const Manifest& m_without_files, uint64_t block) {
  Manifest m = m_without_files;
  const uint64_t file = m.shard_file_bytes();
  m.files.clear();
  for (int k = 0; k < m.file_count(); ++k)
    m.files.push_back({k, fmt::format("shard_{:05d}.bin", k), file, 0xFFFFFFFFu});  // widest CRC
  const uint64_t manifest = manifest_to_json(m).size();
  auto blocks = [&](uint64_t n) { return (n + block - 1) / block * block; };
  return uint64_t(m.file_count()) * blocks(file) + blocks(manifest) + block;
}

// ---------------------------------------------------------------- directories

std::string step_dir_name(int step) { return fmt::format("step_{:08d}", step); }

namespace {
// Step of a complete checkpoint directory name, or -1.
int parse_step_dir(const std::string& name) {
  if (name.size() != 13 || name.rfind("step_", 0) != 0) return -1;
  int step = 0;
  for (size_t i = 5; i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9') return -1;
    step = step * 10 + (name[i] - '0');
  }
  return step;
}
}  // namespace

std::vector<fs::path> list_complete(const fs::path& root) {
  std::vector<std::pair<int, fs::path>> found;
  std::error_code ec;
  if (!fs::is_directory(root, ec)) return {};
  for (const auto& e : fs::directory_iterator(root)) {
    const int step = parse_step_dir(e.path().filename().string());
    if (step >= 0 && e.is_directory() && fs::exists(e.path() / kManifestName)) found.emplace_back(step, e.path());
  }
  std::sort(found.begin(), found.end());
  std::vector<fs::path> out;
  for (auto& [s, p] : found) out.push_back(p);
  return out;
}

fs::path resolve_checkpoint(const std::string& resume_from, const fs::path& root) {
  if (resume_from == "latest") {
    if (root.empty()) throw InputError("checkpoint.resume_from = \"latest\" needs checkpoint.dir");
    auto all = list_complete(root);
    return all.empty() ? fs::path() : all.back();
  }
  fs::path p(resume_from);
  if (!fs::exists(p / kManifestName))
    throw InputError(fmt::format("checkpoint.resume_from = \"{}\": not a complete checkpoint (no {})", resume_from,
                                 kManifestName));
  return p;
}

std::vector<std::string> finish_interrupted_resaves(const fs::path& root) {
  constexpr std::string_view kSuffix = kReplacedSuffix;
  std::vector<fs::path> aside;
  std::error_code ec;
  if (!fs::is_directory(root, ec)) return {};
  for (const auto& e : fs::directory_iterator(root)) {
    const std::string n = e.path().filename().string();
    if (n.size() > kSuffix.size() && n.compare(n.size() - kSuffix.size(), kSuffix.size(), kSuffix) == 0 &&
        parse_step_dir(n.substr(0, n.size() - kSuffix.size())) >= 0 && e.is_directory())
      aside.push_back(e.path());
  }
  std::vector<std::string> done;
  for (const fs::path& a : aside) {
    const std::string name = a.filename().string();
    const fs::path step = root / name.substr(0, name.size() - kSuffix.size());
    if (fs::exists(step / kManifestName)) {
      fs::remove_all(a);
      done.push_back(fmt::format("{}: removed (the re-save of {} had completed)", a.string(), step.filename().string()));
    } else if (!fs::exists(fs::symlink_status(step))) {
      fs::rename(a, step);
      fsync_dir(root);
      done.push_back(fmt::format("{}: renamed back to {} (its re-save was interrupted)", a.string(), step.string()));
    }
  }
  return done;
}

std::vector<fs::path> prune(const fs::path& root, int keep) {
  std::vector<fs::path> removed;
  auto all = list_complete(root);
  for (size_t i = 0; keep > 0 && i + size_t(keep) < all.size(); ++i) {
    fs::remove_all(all[i]);
    removed.push_back(all[i]);
  }
  std::error_code ec;
  if (fs::is_directory(root, ec))
    for (const auto& e : fs::directory_iterator(root)) {
      const std::string n = e.path().filename().string();
      if (n.size() > 4 && n.compare(n.size() - 4, 4, ".tmp") == 0 && parse_step_dir(n.substr(0, n.size() - 4)) >= 0) {
        fs::remove_all(e.path());
        removed.push_back(e.path());
      }
    }
  return removed;
}

Manifest verify_checkpoint(const fs::path& dir) {
  Manifest m = read_manifest(dir);
  for (const auto& f : m.files) {
    uint64_t bytes = 0;
    const uint32_t crc = crc32_file(dir / f.file, &bytes);
    if (bytes != f.bytes)
      throw InputError(fmt::format("{}: {} bytes, the manifest says {} (truncated or replaced file)",
                                   (dir / f.file).string(), bytes, f.bytes));
    if (crc != f.crc32)
      throw InputError(fmt::format("{}: checksum mismatch (CRC-32 {:08x}, manifest {:08x}): the file is corrupted",
                                   (dir / f.file).string(), crc, f.crc32));
  }
  return m;
}

}  // namespace shardcast::trainer::ckpt
