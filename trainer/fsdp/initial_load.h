// Initial weights for a model from Hugging Face safetensors (checkpoint.initial_load_path),
// read by rank 0 and broadcast one FSDP unit at a time.
//
// What it is: load_initial_weights() fills the fp32 master shard of every FlatUnit of an
// FsdpModel from a directory holding model.safetensors + config.json (the layout
// `shardcast-train export` writes; HF Llama names, F32 or BF16). Global rank 0 alone opens
// the file and validates it against the model (config.json fields, every tensor's name and
// shape, no extra tensors: safetensors_reader.h). Then, for each unit in order, rank 0 reads
// the unit's parameters into one flat padded fp32 buffer (padded_numel, the FlatUnit layout:
// parameters in unit order, then zero padding), broadcasts it over the world group (so
// hybrid_shard's replicas get it too), and every rank copies its shard slice out; the next
// unit overwrites the same buffer (sized for the largest unit, freed after the last). No rank
// ever holds more than one unit unsharded. Values are copied bit for bit (BF16 widened
// exactly).
// Failures: rank 0's outcome (validation, then each unit's read) is broadcast before the
// data, so a bad file raises the same InputError (naming the file and tensor or field) on
// every rank instead of a hang.
// load_initial_weights_unsharded() is the same check and read for the reference engine's
// plain parameters (one process, no collectives).
// What it is not: a resume (checkpoint.h restores shards, optimizer state and data position;
// this loads parameters only, optimizer state starts at zero) and not the file format
// (safetensors_reader.h).
// Threading: collective over groups.world; every rank calls it once, from its training
// thread, with the same model. The units' shards must already be allocated.
#pragma once

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include <ATen/ATen.h>

#include "shared/model_spec.h"
#include "trainer/comm/collectives.h"
#include "trainer/fsdp/flat_unit.h"

namespace shardcast::trainer {

void load_initial_weights(const std::filesystem::path& dir, const ModelSpec& m, std::vector<FlatUnit>& units,
                          const ProcessGroups& groups);

// `params`: (HF name, fp32 contiguous CPU tensor) in unit order, filled in place.
void load_initial_weights_unsharded(const std::filesystem::path& dir, const ModelSpec& m,
                                    const std::vector<std::pair<std::string, at::Tensor>>& params);

}  // namespace shardcast::trainer
