// Command queues and command buffers: commit() runs the recorded dispatches
// on the cpu backend in encoding order; findings make the status an error.
#include <fmt/format.h>

#include "objects.h"

namespace mfagen::metal_standin {

std::string_view to_string(FindingKind kind) {
  switch (kind) {
    case FindingKind::argument_not_bound: return "argument not bound";
    case FindingKind::index_bound_twice: return "index bound twice";
    case FindingKind::threads_above_limit: return "threads above the pipeline's limit";
    case FindingKind::threadgroup_memory_missing: return "threadgroup memory length missing";
    case FindingKind::threadgroup_memory_invalid: return "threadgroup memory length invalid";
    case FindingKind::missing_barrier: return "missing memory barrier";
    case FindingKind::encoder_misuse: return "encoder misuse";
    case FindingKind::kernel_finding: return "kernel finding";
  }
  return "finding";
}

std::string Finding::to_string() const {
  return fmt::format("{}: {}: {}", metal_standin::to_string(kind), call, detail);
}

std::vector<Finding> findings(const MTL::CommandBuffer* commands) {
  return impl<CommandBufferImpl>(commands)->findings;
}

DeviceImpl& CommandBufferImpl::device_impl() const {
  return *impl<DeviceImpl>(impl<QueueImpl>(queue.get())->owner.get());
}

namespace {

// The bytes a binding gives the kernel: the buffer from its offset, or the
// setBytes copy.
std::span<std::byte> bound_bytes(RecordedDispatch::Binding& b) {
  if (!b.buffer) return b.bytes;
  std::vector<std::byte>& bytes = impl<BufferImpl>(b.buffer.get())->bytes;
  return std::span(bytes).subspan(std::min<uint64_t>(b.offset, bytes.size()));
}

}  // namespace

void CommandBufferImpl::run() {
  DeviceImpl& device = device_impl();
  start_seconds = now_seconds();
  for (RecordedDispatch& d : dispatches) {
    if (!d.runnable) continue;
    const PipelineImpl* pipeline = impl<PipelineImpl>(d.pipeline.get());
    cpu::LaunchOptions options;
    options.threadgroups = d.threadgroups;
    options.threads_per_threadgroup = d.threads;
    options.threadgroup_bytes = d.threadgroup_lengths;
    if (!device.options.detectors) options.detectors = {false, false, false, false};
    for (RecordedDispatch::Binding& b : d.bindings) options.buffers.push_back({b.index, bound_bytes(b)});
    try {
      const cpu::LaunchResult result = cpu::launch(*pipeline->module, pipeline->kernel->name, options);
      ++device.dispatches_run;
      for (const cpu::Finding& f : result.findings) findings.push_back({FindingKind::kernel_finding, d.call, f.to_string()});
    } catch (const cpu::LaunchError& e) {
      findings.push_back({FindingKind::encoder_misuse, d.call, e.what()});
    }
  }
  end_seconds = now_seconds();
}

}  // namespace mfagen::metal_standin

namespace MTL {

using namespace mfagen::metal_standin;

CommandBuffer* CommandQueue::commandBuffer() {
  auto* commands = new CommandBufferImpl;
  commands->queue = Owned<CommandQueue>::retained(this);
  return commands->autorelease();
}
Device* CommandQueue::device() const { return impl<QueueImpl>(this)->owner.get(); }

ComputeCommandEncoder* CommandBuffer::computeCommandEncoder() { return computeCommandEncoder(DispatchTypeSerial); }

ComputeCommandEncoder* CommandBuffer::computeCommandEncoder(DispatchType dispatchType) {
  CommandBufferImpl* self = impl<CommandBufferImpl>(this);
  auto* encoder = new EncoderImpl;
  encoder->owner = Owned<CommandBuffer>::retained(this);
  encoder->commands = self;
  encoder->type = dispatchType;
  encoder->name = fmt::format("compute encoder #{}", ++self->encoders);
  if (self->state != CommandBufferStatusNotEnqueued)
    self->findings.push_back({FindingKind::encoder_misuse, "computeCommandEncoder", "the command buffer was committed"});
  if (self->open_encoder)
    self->findings.push_back({FindingKind::encoder_misuse, "computeCommandEncoder",
                              fmt::format("{} has not ended encoding", self->open_encoder->name)});
  self->open_encoder = encoder;
  return encoder->autorelease();
}

void CommandBuffer::commit() {
  CommandBufferImpl* self = impl<CommandBufferImpl>(this);
  if (self->state != CommandBufferStatusNotEnqueued) {
    self->findings.push_back({FindingKind::encoder_misuse, "commit", "the command buffer was already committed"});
    return;
  }
  if (self->open_encoder)
    self->findings.push_back({FindingKind::encoder_misuse, "commit",
                              fmt::format("{} has not ended encoding", self->open_encoder->name)});
  self->state = CommandBufferStatusCommitted;
  ++self->device_impl().command_buffers_committed;
  self->run();
  if (self->findings.empty()) {
    self->state = CommandBufferStatusCompleted;
    return;
  }
  std::string text = fmt::format("{} finding(s) in the command buffer (Metal stand-in):", self->findings.size());
  for (const Finding& f : self->findings) text += "\n  " + f.to_string();
  self->failure = Owned<NS::Error>(new ErrorImpl("MTLCommandBufferErrorDomain", 1, std::move(text)));
  self->state = CommandBufferStatusError;
}

void CommandBuffer::waitUntilCompleted() {
  CommandBufferImpl* self = impl<CommandBufferImpl>(this);
  // On Metal, waiting on a buffer never committed blocks forever.
  if (self->state == CommandBufferStatusNotEnqueued)
    self->findings.push_back({FindingKind::encoder_misuse, "waitUntilCompleted", "the command buffer was never committed"});
}

CommandBufferStatus CommandBuffer::status() const { return impl<CommandBufferImpl>(this)->state; }
NS::Error* CommandBuffer::error() const { return impl<CommandBufferImpl>(this)->failure.get(); }
NS::TimeInterval CommandBuffer::GPUStartTime() const { return impl<CommandBufferImpl>(this)->start_seconds; }
NS::TimeInterval CommandBuffer::GPUEndTime() const { return impl<CommandBufferImpl>(this)->end_seconds; }
Device* CommandBuffer::device() const { return &impl<CommandBufferImpl>(this)->device_impl(); }
CommandQueue* CommandBuffer::commandQueue() const { return impl<CommandBufferImpl>(this)->queue.get(); }

}  // namespace MTL
