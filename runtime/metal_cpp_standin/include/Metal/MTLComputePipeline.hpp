// Stand-in for metal-cpp's MTL::ComputePipelineState: a compiled kernel
// (with its function constant values compiled in) and its limits.
#pragma once

#include <Metal/MTLTypes.hpp>

namespace MTL {

class Device;

class ComputePipelineState : public NS::Referencing<ComputePipelineState> {
 public:
  NS::UInteger maxTotalThreadsPerThreadgroup() const;
  NS::UInteger threadExecutionWidth() const;
  Device* device() const;

 protected:
  ComputePipelineState() = default;
};

}  // namespace MTL
