# Included from trainer/CMakeLists.txt: checkpoint/, export/, validation/, microbench/.
#
# shardcast_trainer_io: torch-free (checkpoint manifest + durable files, safetensors export
#   and reader, validation.json, the GPU kernel table's cases and CSV) — fast to compile, and what the fuzz targets need.
# The LibTorch translation units (sharded save/load + the loop's CheckpointHook,
#   micro-benchmarks) join shardcast_trainer itself: train_loop.cpp calls them, and they share
#   its precompiled header.
add_library(shardcast_trainer_io STATIC
  checkpoint/manifest.cpp
  export/safetensors.cpp
  export/safetensors_reader.cpp
  microbench/kernel_table.cpp
  validation/validation.cpp)
target_link_libraries(shardcast_trainer_io PUBLIC shardcast_shared fmt::fmt nlohmann_json::nlohmann_json)
target_include_directories(shardcast_trainer_io PUBLIC ${PROJECT_SOURCE_DIR})

target_sources(shardcast_trainer PRIVATE
  checkpoint/checkpoint.cpp
  comm/liveness.cpp
  microbench/gpu_kernels.cpp
  microbench/microbench.cpp
  microbench/subcommands.cpp)
target_link_libraries(shardcast_trainer PUBLIC shardcast_trainer_io CLI11::CLI11)

# What the checkpoint, export and validation tests link (kept as a name so tests need not know
# the split above).
add_library(shardcast_trainer_ckpt INTERFACE)
target_link_libraries(shardcast_trainer_ckpt INTERFACE shardcast_trainer)

# Per-block memory of the CPU trainer, counted (feeds the planner's CPU terms; prints a table).
add_executable(bench_block_memory microbench/bench_block_memory.cpp)
target_link_libraries(bench_block_memory PRIVATE shardcast_trainer)
target_compile_options(bench_block_memory PRIVATE -Wno-unused-parameter)
target_precompile_headers(bench_block_memory REUSE_FROM shardcast_trainer)
add_dependencies(bench bench_block_memory)

# One block's forward + backward on the fused or the reference RMSNorm and rotary (paired timing).
add_executable(bench_fused_ops microbench/bench_fused_ops.cpp)
target_link_libraries(bench_fused_ops PRIVATE shardcast_trainer)
target_compile_options(bench_fused_ops PRIVATE -Wno-unused-parameter)
target_precompile_headers(bench_fused_ops REUSE_FROM shardcast_trainer)
add_dependencies(bench bench_fused_ops)
