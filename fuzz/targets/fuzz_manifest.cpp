// manifest.json as apps load it (Library::load_from_memory): a bad manifest
// is a ManifestError; a loaded one answers selection and plans every kernel
// for a small call (or refuses the call with a DispatchError).
#include "fuzz_support.h"
#include "mfagen/library.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace mfagen;
  try {
    const Library library = Library::load_from_memory(fuzz::as_text(data, size), "/nonexistent");
    for (const KernelEntry& kernel : library.kernels()) {
      AttentionQuery query;
      query.kind = kernel.kind;
      query.dtype = kernel.dtype;
      query.head_dim = kernel.info.head_dim;
      query.head_dim_v = kernel.info.head_dim_v;
      query.causal = kernel.causal;
      query.shape = {1, 2, 1, 3, 5};
      (void)library.find(query);  // the baseline device: no TensorOps kernel
      (void)library.find(query, DeviceCapabilities::all());
      try {
        (void)library.select(query, DeviceCapabilities{MetalVersion::v4_0, GpuFamily::apple9, true});
      } catch (const SelectionError& e) {
        fuzz::expect_clear_error(e, "no kernel for ");
      }
      ForwardCall call;
      call.shape = query.shape;
      call.strides = contiguous_bhsd(call.shape, kernel.info.head_dim, kernel.info.head_dim_v);
      try {
        LaunchPlan plan;
        Library::launch_plan(kernel, call, plan);
      } catch (const DispatchError& e) {
        fuzz::expect_clear_error(e, "");
      }
    }
  } catch (const ManifestError& e) {
    fuzz::expect_clear_error(e, "manifest");
  }
  return 0;
}
