// Which GPUs run the Blackwell block-scaled number formats (precision.fp8 = mxfp8 | nvfp4), and
// the fp4 tensor cores' rate.
//
// What it is: the refusal of a block-scaled recipe on a GPU without the format, by name, and the
// fp4 peak over the fp8 one that times nvfp4's GEMMs. MXFP8 and NVFP4 GEMMs need the block-scaled
// tensor cores of compute capability 10.0 and up: torchtitan refuses both elsewhere
// (pytorch/torchtitan@b5bcd76c6 torchtitan/components/quantization/mx.py MXFP8LinearConverter:
// `if not has_cuda_capability(10, 0): raise ValueError("MXFP8 is only supported on SM100 or later
// architectures")`; nvfp4.py NVFP4LinearConverter: the same check). What it is not: which runtime
// generation runs a recipe (the runtime term fp8_recipes; runtime.h runtime_refusal) or the
// recipes' costs (fp8_recipe.h). Pure functions, thread-safe.
#pragma once

#include <string>

#include "shared/hardware_spec.h"
#include "shared/train_config.h"

namespace shardcast::planner {

// A block-scaled recipe (mxfp8, nvfp4): runs only on compute capability 10.0 and up.
constexpr bool is_block_scaled(Fp8Recipe r) { return r == Fp8Recipe::mxfp8 || r == Fp8Recipe::nvfp4; }

// The compute capability "MAJOR.MINOR" as a number (10.3 for "10.3"); 0 when empty or not one
// (the AMD and CPU profiles state none).
double compute_capability_number(const std::string& cc);

// Why `runtime` cannot run recipe r on hw ("" = it can): a block-scaled recipe on a profile whose
// gpu.compute_capability is below 10.0 or not stated, e.g. "precision.fp8 = \"mxfp8\" needs a GPU
// of compute capability 10.0 or later (Blackwell): H100-80GB-SXM is 9.0".
std::string fp8_format_refusal(const std::string& runtime, Fp8Recipe r, const HardwareSpec& hw);

// The dense fp4 tensor-core peak over the dense fp8 one on compute capability cc (torchao
// torchao/testing/training/roofline_utils.py @36027d82d: B200 and GB200 fp4_peak_tops 9.0e15 over
// fp8_peak_tops 4.5e15, from NVIDIA's Blackwell architecture paper p. 19; B300 "SXM6 AC" 14e15
// over 4.5e15, from the Blackwell Ultra datasheet): 2 on 10.0, 14/4.5 on 10.3; 1 elsewhere
// (refused by fp8_format_refusal before a plan asks).
double fp4_over_fp8_peak(const std::string& cc);

}  // namespace shardcast::planner
