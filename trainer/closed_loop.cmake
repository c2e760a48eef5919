# Included from trainer/CMakeLists.txt: checkpoint/, export/, validation/, microbench/.
#
# shardcast_trainer_io: torch-free (checkpoint manifest + durable files, safetensors export,
#   validation.json) — fast to compile, and what the fuzz targets and the planner-side tests need.
# shardcast_trainer_ckpt: the two LibTorch translation units (sharded save/load over FsdpModel,
#   micro-benchmarks); they reuse shardcast_trainer's precompiled header.
add_library(shardcast_trainer_io STATIC
  checkpoint/manifest.cpp
  export/safetensors.cpp
  validation/validation.cpp)
target_link_libraries(shardcast_trainer_io PUBLIC shardcast_shared fmt::fmt nlohmann_json::nlohmann_json)
target_include_directories(shardcast_trainer_io PUBLIC ${PROJECT_SOURCE_DIR})

add_library(shardcast_trainer_ckpt STATIC
  checkpoint/checkpoint.cpp
  microbench/microbench.cpp
  microbench/subcommands.cpp)
target_link_libraries(shardcast_trainer_ckpt PUBLIC shardcast_trainer shardcast_trainer_io CLI11::CLI11)
target_compile_options(shardcast_trainer_ckpt PRIVATE -Wno-unused-parameter)
target_precompile_headers(shardcast_trainer_ckpt REUSE_FROM shardcast_trainer)

target_link_libraries(shardcast-train PRIVATE shardcast_trainer_ckpt)
