// Shared by the libFuzzer targets: every parser must turn bad input into one of the
// documented exceptions (shardcast errors), never crash, hang or throw anything else. An
// exception of another type escapes LLVMFuzzerTestOneInput and libFuzzer reports it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "shared/errors.h"

#define SHARDCAST_FUZZ_EXPECTED_ERRORS             \
  catch (const shardcast::ConfigError&) {         \
  }                                                \
  catch (const shardcast::ConfigErrors&) {        \
  }                                                \
  catch (const shardcast::InputError&) {          \
  }

inline std::string fuzz_text(const uint8_t* data, size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}
