// keep_freed_host_memory (trainer/train/host_malloc.h): a big buffer comes from the heap, not
// from its own mapping, and freeing it keeps its pages in the process (no trim). With glibc's
// defaults a 64 MiB buffer is mmapped (above the dynamic threshold's 32 MiB ceiling) and
// unmapped on free, so both checks fail without the setting.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "trainer/train/host_malloc.h"

namespace shardcast::trainer {
namespace {

TEST(HostMalloc, FreedBuffersStayInTheProcess) {
#if defined(__GLIBC__)
  ASSERT_TRUE(keep_freed_host_memory());
  constexpr size_t kBytes = size_t(64) << 20;
  const size_t mapped_before = mallinfo2().hblkhd;  // bytes in mmapped chunks
  // volatile: the compiler may otherwise drop a malloc/memset/free it can see through.
  char* volatile p = static_cast<char*>(std::malloc(kBytes));
  ASSERT_NE(p, nullptr);
  std::memset(p, 1, kBytes);
  ASSERT_EQ(p[kBytes - 1], 1);
  EXPECT_LT(mallinfo2().hblkhd, mapped_before + kBytes);  // not a mapping of its own
  std::free(p);
  EXPECT_GE(mallinfo2().fordblks, kBytes);  // free bytes kept in the heap, not trimmed
#else
  EXPECT_FALSE(keep_freed_host_memory());
#endif
}

}  // namespace
}  // namespace shardcast::trainer
