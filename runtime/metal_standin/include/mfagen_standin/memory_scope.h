// Metal stand-in: metal::thread_scope, the memory scope of atomics and
// fences (MSL 3.2). Apple's compiler declares it with no include: MLX's
// fence.metal names `metal::thread_scope` before its first #include and is
// built by plain `xcrun metal -c` (MLX's kernels/CMakeLists.txt). It is
// therefore included from abi.h, which the cpu backend's compile
// force-includes, as well as from atomic.h.
#pragma once

namespace metal {
enum thread_scope {
  thread_scope_thread = 0,
  thread_scope_simdgroup = 1,
  thread_scope_threadgroup = 2,
  thread_scope_device = 3
};
}  // namespace metal
