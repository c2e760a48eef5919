# Included from trainer/CMakeLists.txt: checkpoint/, export/, validation/, microbench/.
#
# shardcast_trainer_io: torch-free (checkpoint manifest + durable files, safetensors export,
#   validation.json) — fast to compile, and what the fuzz targets need.
# The LibTorch translation units (sharded save/load + the loop's CheckpointHook,
#   micro-benchmarks) join shardcast_trainer itself: train_loop.cpp calls them, and they share
#   its precompiled header.
add_library(shardcast_trainer_io STATIC
  checkpoint/manifest.cpp
  export/safetensors.cpp
  validation/validation.cpp)
target_link_libraries(shardcast_trainer_io PUBLIC shardcast_shared fmt::fmt nlohmann_json::nlohmann_json)
target_include_directories(shardcast_trainer_io PUBLIC ${PROJECT_SOURCE_DIR})

target_sources(shardcast_trainer PRIVATE
  checkpoint/checkpoint.cpp
  comm/liveness.cpp
  microbench/microbench.cpp
  microbench/subcommands.cpp)
target_link_libraries(shardcast_trainer PUBLIC shardcast_trainer_io CLI11::CLI11)

# What the issue-6 tests link (kept as a name so tests need not know the split above).
add_library(shardcast_trainer_ckpt INTERFACE)
target_link_libraries(shardcast_trainer_ckpt INTERFACE shardcast_trainer)
