// The stand-in MPS stream: PyTorch's MPSStream semantics that the bridge
// relies on (one command buffer at a time, one open serial compute encoder
// shared by every kernel encoded onto the stream, commits only through
// synchronize) over the metal-cpp stand-in, whose command buffers run their
// dispatches on the cpu backend when committed.
#include <ATen/mps/MPSStream.h>

#include <Metal/Metal.hpp>

#include <stdexcept>
#include <string>

#include "mfagen/metal_cpp_standin.h"
#include "standin_buffers.h"

namespace at::mps {
namespace {

MTL::CommandBuffer* commands(MPSCommandBuffer_t c) { return static_cast<MTL::CommandBuffer*>(c); }
MTL::ComputeCommandEncoder* encoder(MTLComputeCommandEncoder_t e) { return static_cast<MTL::ComputeCommandEncoder*>(e); }

}  // namespace

MPSStream::MPSStream()
    : device_(mfagen::torch_mps_standin::device()),
      queue_(mfagen::torch_mps_standin::device()->newCommandQueue()),
      serial_queue_(new dispatch_queue_s) {}

MPSStream::~MPSStream() {
  endKernelCoalescing();
  if (command_buffer_) commands(command_buffer_)->release();
  static_cast<MTL::CommandQueue*>(queue_)->release();
  delete serial_queue_;
}

MPSCommandBuffer_t MPSStream::commandBuffer() {
  if (!command_buffer_) command_buffer_ = static_cast<MTL::CommandQueue*>(queue_)->commandBuffer()->retain();
  return command_buffer_;
}

MTLComputeCommandEncoder_t MPSStream::commandEncoder() {
  if (!encoder_) encoder_ = commands(commandBuffer())->computeCommandEncoder()->retain();  // serial, as PyTorch's
  return encoder_;
}

void MPSStream::endKernelCoalescing() {
  if (!encoder_) return;
  encoder(encoder_)->endEncoding();
  encoder(encoder_)->release();
  encoder_ = nullptr;
}

void MPSStream::synchronize(SyncType sync_type) {
  if (sync_type == SyncType::NONE || !command_buffer_) return;
  endKernelCoalescing();
  MTL::CommandBuffer* c = commands(command_buffer_);
  command_buffer_ = nullptr;
  c->commit();
  c->waitUntilCompleted();  // the stand-in runs a command buffer at commit: every sync type waits here
  std::string problems;
  if (c->status() != MTL::CommandBufferStatusCompleted && c->error())
    problems = c->error()->localizedDescription()->utf8String();
  for (const mfagen::metal_standin::Finding& f : mfagen::metal_standin::findings(c)) problems += "\n" + f.to_string();
  c->release();
  if (!problems.empty()) throw std::runtime_error("the stand-in MPS stream's command buffer failed: " + problems);
}

MPSStream* getDefaultMPSStream() {
  static MPSStream* stream = new MPSStream();  // never destroyed, as PyTorch's
  return stream;
}

MPSStream* getCurrentMPSStream() { return getDefaultMPSStream(); }

}  // namespace at::mps
