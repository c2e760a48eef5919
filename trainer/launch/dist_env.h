// The torchrun environment of one rank, read and checked before any rendezvous.
//
// What it is: read_dist_env() reads RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE,
// MASTER_ADDR and MASTER_PORT (the variables torchrun, `shardcast-train launch` and the Slurm
// script set) and checks each one: an integer where one is expected (the whole string, not a
// prefix), RANK in [0, WORLD_SIZE−1], LOCAL_WORLD_SIZE in [1, WORLD_SIZE], LOCAL_RANK in
// [0, LOCAL_WORLD_SIZE−1], MASTER_PORT in [1, 65535], MASTER_ADDR a name or address that
// resolves. A bad value throws UsageError naming the variable, its value and the allowed
// range (exit 2), instead of a rendezvous that times out without saying why.
// Absent variables mean a single process: WORLD_SIZE 1, RANK 0, LOCAL_WORLD_SIZE =
// WORLD_SIZE, LOCAL_RANK = RANK mod LOCAL_WORLD_SIZE, MASTER_ADDR 127.0.0.1, MASTER_PORT 29500 (torchrun's
// default port). What it is not: the rendezvous itself (comm/collectives.h make_tcp_store).
// No LibTorch. Reentrant (reads the process environment only).
#pragma once

#include <string>

namespace shardcast::trainer {

struct DistEnv {
  int rank = 0;
  int local_rank = 0;
  int world_size = 1;
  int local_world_size = 1;
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
};

DistEnv read_dist_env();

// The address the Gloo device binds when MASTER_ADDR is a loopback address: any 127.x.x.x as
// given, "::1", and "localhost" as 127.0.0.1; "" for another address (Gloo then binds the
// address the host name resolves to). A run on loopback never listens beyond the machine.
std::string loopback_bind_address(const std::string& master_addr);

}  // namespace shardcast::trainer
