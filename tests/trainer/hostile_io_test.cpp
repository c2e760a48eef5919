// Issue 52's data-loss and rendezvous cases on the torch-free pieces, table by table: the
// metrics append never leaves part of a line and names the errno, one trainer per run
// directory (two processes), the checkpoint manifest's own checksum, and the store's bind.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "shared/config_io.h"
#include "shared/errors.h"
#include "trainer/checkpoint/manifest.h"
#include "trainer/launch/dist_env.h"
#include "trainer/launch/run_lock.h"
#include "trainer/launch/store_bind.h"
#include "trainer/train/metrics_log.h"
#include "trainer/validation/validation.h"

namespace shardcast::trainer {
namespace {

namespace fs = std::filesystem;

fs::path fresh_dir(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / ("shardcast_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

// A full device: nothing goes out, and the error names the errno.
TEST(MetricsAppend, FullDeviceNamesTheErrno) {
  const int fd = ::open("/dev/full", O_WRONLY | O_APPEND);
  if (fd < 0) GTEST_SKIP() << "no /dev/full on this machine";
  try {
    append_line(fd, "{\"step\": 1}\n", "metrics.jsonl");
    ADD_FAILURE() << "a write to /dev/full succeeded";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "metrics.jsonl: cannot append a record: No space left on device");
  }
  ::close(fd);
}

// A write that goes out in part (RLIMIT_FSIZE: the first write stops at the limit, the next
// fails with EFBIG, as a disk that fills mid-line) is cut back to the last whole line.
TEST(MetricsAppend, ShortWriteIsCutBackToTheLastWholeLine) {
  const fs::path dir = fresh_dir("metrics_short");
  const fs::path file = dir / "metrics.jsonl";
  const std::string first = "{\"step\": 1}\n";
  { std::ofstream(file) << first; }
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {  // the limit stays in the child
    std::signal(SIGXFSZ, SIG_IGN);
    struct rlimit rl {64, 64};
    ::setrlimit(RLIMIT_FSIZE, &rl);
    const int fd = ::open(file.c_str(), O_WRONLY | O_APPEND);
    int code = 3;
    try {
      append_line(fd, "{\"step\": 2, \"padding\": \"" + std::string(200, 'x') + "\"}\n", file.string());
    } catch (const InputError& e) {
      code = std::string(e.what()).find("cannot append a record: File too large") != std::string::npos ? 0 : 2;
    }
    ::_exit(code);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "1 = accepted, 2 = another message, 3 = no error";
  EXPECT_EQ(slurp(file), first);  // no partial second line
  fs::remove_all(dir);
}

// Two processes on one run directory: the second is refused, naming the holder's PID; the
// lock goes with the holder (a later run takes it).
TEST(RunDirLock, SecondProcessIsRefusedNamingTheHolder) {
  const fs::path dir = fresh_dir("run_lock");
  int ready[2], release[2];
  ASSERT_EQ(::pipe(ready), 0);
  ASSERT_EQ(::pipe(release), 0);
  const pid_t holder = ::fork();
  ASSERT_GE(holder, 0);
  if (holder == 0) {
    RunDirLock lock(dir, "run.toml", "metrics.dir");
    char c = 1;
    (void)!::write(ready[1], &c, 1);
    (void)!::read(release[0], &c, 1);  // hold until told
    ::_exit(0);
  }
  char c = 0;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  try {
    RunDirLock second(dir, "run.toml", "metrics.dir");
    ADD_FAILURE() << "a second lock on the same directory was granted";
  } catch (const ConfigError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("run.toml: metrics.dir: " + dir.string() + " is in use by another shardcast-train (PID " +
                       std::to_string(holder) + ","),
              std::string::npos)
        << msg;
  }
  (void)!::write(release[1], &c, 1);
  int status = 0;
  ::waitpid(holder, &status, 0);
  EXPECT_NO_THROW(RunDirLock again(dir, "run.toml", "metrics.dir"));  // released with its holder
  EXPECT_EQ(slurp(dir / kRunLockName), std::to_string(::getpid()) + "\n");
  // A link planted as the lock file is refused, not followed.
  const fs::path other = fresh_dir("run_lock_link");
  fs::create_symlink(dir / "victim", other / kRunLockName);
  EXPECT_THROW(RunDirLock linked(other, "run.toml", "metrics.dir"), ConfigError);
  EXPECT_FALSE(fs::exists(dir / "victim"));
  fs::remove_all(dir);
  fs::remove_all(other);
}

ckpt::Manifest small_manifest() {
  ckpt::Manifest m;
  m.model = "tiny";
  m.spec.n_layers = 1;
  m.spec.d_model = 4;
  m.spec.n_heads = 2;
  m.spec.n_kv_heads = 1;
  m.spec.ffn_dim = 8;
  m.spec.vocab = 16;
  m.spec.max_seq_len = 8;
  m.sharding_strategy = "full_shard";
  m.shard_size = 2;
  m.optimizer_steps = 8;
  m.data = {8, 7, 384, 2, 2, 32, 1};
  m.rng_state_hex = "00ff";
  m.units = {{5, 6, {{"a", {5}, 5}}}, {6, 6, {{"b", {2, 3}, 6}}}};
  m.files = {{0, "shard_00000.bin", 72, 1}, {1, "shard_00001.bin", 72, 2}};
  return m;
}

// Edits that keep the manifest well-formed are seen by its own checksum; a version-1 manifest
// (no checksum) is refused, saying why.
TEST(ManifestChecksum, EditedManifestsAreRefusedByName) {
  const std::string good = ckpt::manifest_to_json(small_manifest());
  EXPECT_EQ(ckpt::parse_manifest(good, "m.json").optimizer_steps, 8);
  // Whitespace and key order are not content: the same manifest re-dumped still reads.
  EXPECT_NO_THROW(ckpt::parse_manifest(nlohmann::json::parse(good).dump(4), "m.json"));
  struct Edit {
    const char* what;
    std::function<void(nlohmann::json&)> edit;
    std::string expect;
  };
  const Edit edits[] = {
      {"optimizer_steps 8 -> 3", [](nlohmann::json& j) { j["optimizer_steps"] = 3; },
       "m.json: manifest_crc32: the manifest's own checksum"},
      {"data.step 8 -> 3", [](nlohmann::json& j) { j["data"]["step"] = 3; }, "manifest_crc32: the manifest's own checksum"},
      {"a shard's crc32", [](nlohmann::json& j) { j["files"][0]["crc32"] = 7; }, "manifest_crc32: the manifest's own checksum"},
      {"checksum removed", [](nlohmann::json& j) { j.erase("manifest_crc32"); }, "m.json: manifest_crc32: missing"},
      {"checksum not a string", [](nlohmann::json& j) { j["manifest_crc32"] = 5; }, "manifest_crc32: expected a string"},
      {"version 1", [](nlohmann::json& j) { j["format"] = 1; j.erase("manifest_crc32"); },
       "m.json: format: version 1 (written before a manifest carried its own checksum) is not read any more"},
  };
  for (const Edit& e : edits) {
    nlohmann::json j = nlohmann::json::parse(good);
    e.edit(j);
    try {
      ckpt::parse_manifest(j.dump(1), "m.json");
      ADD_FAILURE() << e.what << ": accepted";
    } catch (const InputError& err) {
      EXPECT_NE(std::string(err.what()).find(e.expect), std::string::npos) << e.what << ": " << err.what();
    }
  }
}

// Files a run reads back are bounded (found by a trust audit): a manifest or metrics.jsonl far
// over its limit (sparse: no disk) is refused naming the limit before it is read, not read into
// memory (2.26 GB before) nor, for metrics.jsonl, silently replaced by a new file.
TEST(BoundedReads, HugeManifestAndMetricsAreRefusedUnread) {
  const fs::path dir = fs::temp_directory_path() / ("shardcast_bounded_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "ckpt");
  auto sparse = [](const fs::path& p, uint64_t bytes) {
    const int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::ftruncate(fd, off_t(bytes)), 0);
    ::close(fd);
  };
  sparse(dir / "ckpt" / "manifest.json", uint64_t(16) << 30);
  try {
    (void)ckpt::read_manifest(dir / "ckpt");
    ADD_FAILURE() << "a 16 GiB manifest was read";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("over the limit"), std::string::npos) << e.what();
  }
  sparse(dir / "metrics.jsonl", uint64_t(16) << 30);
  try {
    MetricsLog log(dir, 1);
    ADD_FAILURE() << "a 16 GiB metrics.jsonl was read";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("over the limit"), std::string::npos) << e.what();
  }
  EXPECT_EQ(fs::file_size(dir / "metrics.jsonl"), uint64_t(16) << 30);  // left as it was
  fs::remove_all(dir);
}

// The records a resumed run trains again are kept beside the log, each time under a name of its
// own: a second resume from the same step keeps the first's (found by a review: the second wrote
// over the first's side file).
TEST(MetricsResume, ReplacedRecordsAreKeptEachTime) {
  const fs::path dir = fs::temp_directory_path() / ("shardcast_aside_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  auto log_steps = [&](int from, int to) {
    std::ofstream out(dir / "metrics.jsonl", std::ios::app);
    for (int s = from; s <= to; ++s) {
      StepMetrics m;
      m.step = s;
      m.loss = 10.0 - s;
      out << nlohmann::json(m).dump() << "\n";
    }
  };
  log_steps(1, 6);
  { MetricsLog first(dir, 3); }  // steps 3..6 moved aside
  log_steps(3, 4);
  { MetricsLog second(dir, 3); }  // steps 3..4 of the first resume moved aside too
  auto lines = [](const fs::path& p) {
    std::ifstream in(p);
    int n = 0;
    for (std::string l; std::getline(in, l);) n += !l.empty();
    return n;
  };
  EXPECT_EQ(lines(dir / "metrics.replaced_from_step_00000003.jsonl"), 4);
  EXPECT_EQ(lines(dir / "metrics.replaced_from_step_00000003.2.jsonl"), 2);
  EXPECT_EQ(lines(dir / "metrics.jsonl"), 2);
  fs::remove_all(dir);
}

// A re-save of step 4 killed between its renames (checkpoint.cpp): without step_4 the aside
// copy, a complete checkpoint, comes back under its name (the interrupted .tmp is prune's); with
// step_4 complete the aside copy goes. A stray name or a lone step is left as it is.
TEST(CheckpointResave, InterruptedResavesAreFinishedAtTheNextStart) {
  const fs::path root = fresh_dir("resave");
  auto checkpoint = [&](const std::string& name, const std::string& tag) {
    fs::create_directories(root / name);
    std::ofstream(root / name / ckpt::kManifestName) << tag;
  };
  checkpoint("step_00000004.replaced", "old 4");  // killed after step_4 was moved aside
  checkpoint("step_00000004.tmp", "new 4");
  checkpoint("step_00000006", "new 6");           // killed after the new step_6 was renamed in
  checkpoint("step_00000006.replaced", "old 6");
  checkpoint("step_00000002", "2");
  fs::create_directories(root / "notes.replaced");
  const auto done = ckpt::finish_interrupted_resaves(root);
  EXPECT_EQ(done.size(), 2u);
  EXPECT_EQ(slurp(root / "step_00000004" / ckpt::kManifestName), "old 4");
  EXPECT_FALSE(fs::exists(root / "step_00000004.replaced"));
  EXPECT_EQ(slurp(root / "step_00000006" / ckpt::kManifestName), "new 6");
  EXPECT_FALSE(fs::exists(root / "step_00000006.replaced"));
  EXPECT_TRUE(fs::exists(root / "notes.replaced"));
  EXPECT_TRUE(fs::exists(root / "step_00000002"));
  const auto latest = ckpt::list_complete(root);
  ASSERT_EQ(latest.size(), 3u);
  EXPECT_EQ(latest.back().filename(), "step_00000006");
  ckpt::prune(root, 3);  // the interrupted .tmp goes
  EXPECT_FALSE(fs::exists(root / "step_00000004.tmp"));
  EXPECT_TRUE(ckpt::finish_interrupted_resaves(root).empty());
  fs::remove_all(root);
}

// A run directory records a hardware file given relative to where the run started as an absolute
// path, so `shardcast validate RUN_DIR` finds it from any directory (found by a docs audit:
// `--hardware build/local.toml`, then validate from elsewhere, "no such file"); a user's own
// run.toml there with the relative path still holds the run (train_loop.cpp's check).
TEST(RunDirRecord, RelativeHardwareFileIsRecordedAbsolute) {
  const fs::path dir = fresh_dir("record");
  fs::create_directories(dir / "hw");
  fs::copy_file(config_dir() / "hardware" / "cpu.toml", dir / "hw" / "local.toml");
  TrainConfig cfg = read_train_config((config_dir() / "train" / "tiny-2rank.toml").string());
  cfg.cluster.hardware = fs::relative(dir / "hw" / "local.toml").string();
  ASSERT_TRUE(fs::path(cfg.cluster.hardware).is_relative());
  write_validation(dir, ValidationReport{}, cfg);
  const std::string text = slurp(dir / "run.toml");
  EXPECT_NE(text.find("hardware = \"" + fs::absolute(cfg.cluster.hardware).string() + "\""), std::string::npos) << text;
  EXPECT_TRUE(run_toml_holds(dir / "run.toml", cfg));  // the recorded form
  TrainConfig as_given = cfg;
  as_given.runtime = "shardcast-train";
  write_file_atomic(dir / "given.toml", write_train_config(as_given));
  EXPECT_TRUE(run_toml_holds(dir / "given.toml", cfg));  // the relative form, as a user wrote it
  cfg.training.steps += 1;
  EXPECT_FALSE(run_toml_holds(dir / "run.toml", cfg));
  fs::remove_all(dir);
}

// MASTER_ADDR on loopback binds Gloo to that loopback address, never to what the host name
// resolves to (found by a trust audit: only "127.0.0.1" and "localhost" counted as loopback).
TEST(LoopbackBind, EveryLoopbackAddressBindsItself) {
  EXPECT_EQ(loopback_bind_address("127.0.0.1"), "127.0.0.1");
  EXPECT_EQ(loopback_bind_address("127.0.0.2"), "127.0.0.2");
  EXPECT_EQ(loopback_bind_address("127.255.1.9"), "127.255.1.9");
  EXPECT_EQ(loopback_bind_address("::1"), "::1");
  EXPECT_EQ(loopback_bind_address("localhost"), "127.0.0.1");
  for (const char* other : {"10.0.0.1", "128.0.0.1", "127.0.0", "127.0.0.1.5", "127.0.0.256", "node01", "", "127..0.1"})
    EXPECT_EQ(loopback_bind_address(other), "") << other;
}

// While armed, a wildcard bind to the store's port becomes MASTER_ADDR's address (as c10d's
// server socket does it: IPv6 dual-stack first); other ports and unarmed binds are unchanged.
TEST(StoreBind, WildcardBindOnThePortBecomesMasterAddr) {
  auto listen_any6 = [](int port, sockaddr_in6* bound) {
    const int fd = ::socket(AF_INET6, SOCK_STREAM, 0);
    if (fd < 0) return -1;
    int off = 0;
    ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof off);
    sockaddr_in6 a{};
    a.sin6_family = AF_INET6;
    a.sin6_addr = in6addr_any;
    a.sin6_port = htons(uint16_t(port));
    if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
      ::close(fd);
      return -1;
    }
    socklen_t len = sizeof *bound;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(bound), &len);
    return fd;
  };
  // A free port: bind 0 on loopback and read it back.
  const int probe = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in p{};
  p.sin_family = AF_INET;
  p.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(probe, reinterpret_cast<sockaddr*>(&p), sizeof p), 0);
  socklen_t plen = sizeof p;
  ::getsockname(probe, reinterpret_cast<sockaddr*>(&p), &plen);
  const int port = ntohs(p.sin_port);
  ::close(probe);

  sockaddr_in6 bound{};
  int fd = -1;
  {
    StoreBindScope scope("127.0.0.1", port);
    EXPECT_EQ(scope.address(), "127.0.0.1");
    fd = listen_any6(port, &bound);
  }
  if (fd < 0) GTEST_SKIP() << "no IPv6 sockets here";
  char text[INET6_ADDRSTRLEN] = {};
  ::inet_ntop(AF_INET6, &bound.sin6_addr, text, sizeof text);
  EXPECT_STREQ(text, "::ffff:127.0.0.1");
  EXPECT_EQ(ntohs(bound.sin6_port), port);
  ::close(fd);
  // Unarmed: the wildcard stays the wildcard.
  fd = listen_any6(port, &bound);
  ASSERT_GE(fd, 0);
  ::inet_ntop(AF_INET6, &bound.sin6_addr, text, sizeof text);
  EXPECT_STREQ(text, "::");
  ::close(fd);
  EXPECT_THROW(StoreBindScope("no-such-host.invalid", port), std::runtime_error);
}

}  // namespace
}  // namespace shardcast::trainer
