// An Xcode-style app that vendors mfagen's output: Kernels/generated/ holds
// the .metal files and manifest.json checked into the app (add them to the
// target's "Compile Sources" so Xcode builds default.metallib, or let the
// runtime compile the sources at first use), and this host code drives them
// with metal-cpp through mfagen's runtime and Metal backend.
//
// APPLE ONLY, NOT BUILT OR RUN where mfagen is developed (no Apple GPU).
// Build: link mfagen::runtime and mfagen_runtime_metal (metal-cpp), see README.md.
#define NS_PRIVATE_IMPLEMENTATION
#define MTL_PRIVATE_IMPLEMENTATION
#include <Foundation/Foundation.hpp>
#include <Metal/Metal.hpp>

#include <cstdio>
#include <cstring>
#include <map>

#include "mfagen/library.h"
#include "mfagen/metal_backend.h"

int main() {
  NS::AutoreleasePool* pool = NS::AutoreleasePool::alloc()->init();
  MTL::Device* device = MTL::CreateSystemDefaultDevice();
  const mfagen::Library library = mfagen::Library::load("Kernels/generated/manifest.json");
  mfagen::MetalBackend backend(device);

  // One decode step: 1 new token, 32 query heads over 8 kv heads, 4096 cached keys.
  mfagen::AttentionQuery query;
  query.dtype = mfagen::ElementType::float16;
  query.head_dim = query.head_dim_v = 128;
  query.causal = mfagen::CausalMode::bottom_right;
  query.shape = {1, 32, 8, 1, 4096};
  // The decode kernel; capabilities(): what this GPU offers (TensorOps kernels only where supported).
  const mfagen::KernelEntry& kernel = library.select(query, backend.capabilities());
  mfagen::ForwardCall call;
  call.shape = query.shape;
  call.strides = mfagen::contiguous_bhsd(call.shape, 128, 128);
  const mfagen::DispatchPlan plan = mfagen::Library::plan(kernel, call);

  // The app's tensors live in shared MTL::Buffers (zero copy on Apple silicon).
  std::map<uint32_t, MTL::Buffer*> buffers;
  for (const mfagen::BufferRequirement& b : plan.buffers) {
    if (b.scratch || b.index == mfagen::kForwardParams) continue;
    buffers[b.index] = device->newBuffer(b.bytes, MTL::ResourceStorageModeShared);
    std::memset(buffers[b.index]->contents(), 0, b.bytes);  // fill q, k, v from the model instead
  }
  const mfagen::RunStats stats = backend.run_buffers(library, kernel, plan, buffers);
  std::printf("%s: %zu launches in %.3f ms on the GPU\n", kernel.name.c_str(), plan.launches.size(),
              stats.seconds * 1e3);
  for (auto& [index, buffer] : buffers) buffer->release();
  device->release();
  pool->release();
  return 0;
}
