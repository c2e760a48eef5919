// glibc heap settings for a rank. See host_malloc.h.
#include "trainer/train/host_malloc.h"

#include <stdexcept>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace shardcast::trainer {

bool keep_freed_host_memory() {
#if defined(__GLIBC__)
  if (mallopt(M_MMAP_THRESHOLD, int(kHostMallocKeepBytes)) != 1 ||
      mallopt(M_TRIM_THRESHOLD, int(kHostMallocKeepBytes)) != 1)
    throw std::runtime_error("glibc refused mallopt(M_MMAP_THRESHOLD / M_TRIM_THRESHOLD, 1 GiB)");
  return true;
#else
  return false;
#endif
}

}  // namespace shardcast::trainer
