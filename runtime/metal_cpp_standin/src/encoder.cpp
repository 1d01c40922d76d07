// The compute command encoder: records dispatches with the encoder state they
// see and checks, as each call is made, what Metal would reject or mishandle.
#include <fmt/format.h>

#include "objects.h"

namespace mfagen::metal_standin {
namespace {

constexpr NS::UInteger kBufferArgumentSlots = 31;  // Metal's buffer argument table

const PipelineImpl* pipeline_of(const EncoderImpl& e) { return impl<PipelineImpl>(e.pipeline.get()); }

// A device argument written through a pointer to non-const: the dispatch may write it.
bool may_write(const cpu::KernelParam& p) { return p.space == cpu::AddressSpace::device && !p.is_const; }

}  // namespace

EncoderImpl::~EncoderImpl() {
  if (!ended && commands) {
    commands->open_encoder = nullptr;
    commands->findings.push_back({FindingKind::encoder_misuse, name, "the encoder was released without endEncoding"});
  }
}

void EncoderImpl::finding(FindingKind kind, std::string call, std::string detail) {
  commands->findings.push_back({kind, std::move(call), std::move(detail)});
}

bool EncoderImpl::usable(std::string_view call) {
  if (!ended) return true;
  finding(FindingKind::encoder_misuse, fmt::format("{} on {}", call, name), "the encoder already ended encoding");
  return false;
}

}  // namespace mfagen::metal_standin

namespace MTL {

using namespace mfagen::metal_standin;

void CommandEncoder::endEncoding() {
  EncoderImpl* self = static_cast<EncoderImpl*>(this);
  if (!self->usable("endEncoding")) return;
  self->ended = true;
  self->commands->open_encoder = nullptr;
}
Device* CommandEncoder::device() const { return &static_cast<const EncoderImpl*>(this)->commands->device_impl(); }

DispatchType ComputeCommandEncoder::dispatchType() const { return impl<EncoderImpl>(this)->type; }

void ComputeCommandEncoder::setComputePipelineState(const ComputePipelineState* state) {
  EncoderImpl* self = impl<EncoderImpl>(this);
  if (!self->usable("setComputePipelineState")) return;
  self->pipeline = Owned<ComputePipelineState>::retained(const_cast<ComputePipelineState*>(state));
}

namespace {

// Records a binding at `index`, or a finding when the index is out of the
// table or was already set since the last dispatch.
EncoderImpl::Bound* bind(EncoderImpl& e, std::string_view call, NS::UInteger index) {
  const std::string where = fmt::format("{}(index {}) on {}", call, index, e.name);
  if (!e.usable(call)) return nullptr;
  if (index >= kBufferArgumentSlots) {
    e.finding(FindingKind::encoder_misuse, where, fmt::format("buffer indices go up to {}", kBufferArgumentSlots - 1));
    return nullptr;
  }
  if (!e.bound_since_dispatch.insert(uint32_t(index)).second)
    e.finding(FindingKind::index_bound_twice, where,
              "this index was already set since the last dispatch; the earlier binding is lost");
  EncoderImpl::Bound& b = e.bound[uint32_t(index)];
  b = {};
  return &b;
}

}  // namespace

void ComputeCommandEncoder::setBytes(const void* bytes, NS::UInteger length, NS::UInteger index) {
  EncoderImpl* self = impl<EncoderImpl>(this);
  if (EncoderImpl::Bound* b = bind(*self, "setBytes", index)) {
    const auto* p = static_cast<const std::byte*>(bytes);
    b->bytes.assign(p, p + length);
    b->inline_bytes = true;
  }
}

void ComputeCommandEncoder::setBuffer(const Buffer* buffer, NS::UInteger offset, NS::UInteger index) {
  EncoderImpl* self = impl<EncoderImpl>(this);
  EncoderImpl::Bound* b = bind(*self, "setBuffer", index);
  if (!b) return;
  if (buffer && offset > buffer->length())
    self->finding(FindingKind::encoder_misuse, fmt::format("setBuffer(index {}) on {}", index, self->name),
                  fmt::format("offset {} is past the buffer's {} bytes", offset, buffer->length()));
  b->buffer = Owned<Buffer>::retained(const_cast<Buffer*>(buffer));
  b->offset = offset;
}

void ComputeCommandEncoder::setThreadgroupMemoryLength(NS::UInteger length, NS::UInteger index) {
  EncoderImpl* self = impl<EncoderImpl>(this);
  if (!self->usable("setThreadgroupMemoryLength")) return;
  if (length % 16 != 0)
    self->finding(FindingKind::threadgroup_memory_invalid,
                  fmt::format("setThreadgroupMemoryLength({}, index {}) on {}", length, index, self->name),
                  "threadgroup memory lengths must be multiples of 16 bytes");
  self->threadgroup_lengths[uint32_t(index)] = length;
}

void ComputeCommandEncoder::dispatchThreadgroups(Size threadgroupsPerGrid, Size threadsPerThreadgroup) {
  EncoderImpl* self = impl<EncoderImpl>(this);
  if (!self->usable("dispatchThreadgroups")) return;
  CommandBufferImpl& commands = *self->commands;
  const size_t findings_before = commands.findings.size();
  const PipelineImpl* pipeline = pipeline_of(*self);
  const std::string call = fmt::format("dispatchThreadgroups #{} ({})", ++commands.dispatch_count,
                                       pipeline && pipeline->kernel ? pipeline->kernel->name : "no pipeline");
  RecordedDispatch d;
  d.call = call;
  d.threadgroups = {uint32_t(threadgroupsPerGrid.width), uint32_t(threadgroupsPerGrid.height),
                    uint32_t(threadgroupsPerGrid.depth)};
  d.threads = {uint32_t(threadsPerThreadgroup.width), uint32_t(threadsPerThreadgroup.height),
               uint32_t(threadsPerThreadgroup.depth)};
  self->bound_since_dispatch.clear();
  if (!pipeline) {
    self->finding(FindingKind::encoder_misuse, call, "no compute pipeline state was set");
    return;
  }
  if (d.threadgroups.volume() == 0 || d.threads.volume() == 0)
    self->finding(FindingKind::encoder_misuse, call,
                  fmt::format("an empty dispatch: {}x{}x{} threadgroups of {}x{}x{} threads", d.threadgroups.x,
                              d.threadgroups.y, d.threadgroups.z, d.threads.x, d.threads.y, d.threads.z));
  if (d.threads.volume() > pipeline->max_threads)
    self->finding(FindingKind::threads_above_limit, call,
                  fmt::format("{} threads per threadgroup; the pipeline allows {} (maxTotalThreadsPerThreadgroup)",
                              d.threads.volume(), pipeline->max_threads));
  uint64_t threadgroup_total = 0;
  bool unusable_length = false;
  std::map<const Buffer*, std::string> written_here;
  for (const cpu::KernelParam& p : pipeline->kernel->params) {
    if (!pipeline->module->parameter_present(p)) continue;
    if (p.kind == cpu::KernelParam::Kind::threadgroup_buffer) {
      auto length = self->threadgroup_lengths.find(p.index);
      if (length == self->threadgroup_lengths.end()) {
        self->finding(FindingKind::threadgroup_memory_missing, call,
                      fmt::format("argument '{} {}' [[threadgroup({})]] has no setThreadgroupMemoryLength", p.type,
                                  p.name, p.index));
        continue;
      }
      threadgroup_total += length->second;
      d.threadgroup_lengths[p.index] = length->second;
      unusable_length |= length->second % 16 != 0;  // found at setThreadgroupMemoryLength; never run
    }
    if (p.kind != cpu::KernelParam::Kind::buffer) continue;
    auto bound = self->bound.find(p.index);
    if (bound == self->bound.end() || (!bound->second.inline_bytes && !bound->second.buffer)) {
      self->finding(FindingKind::argument_not_bound, call,
                    fmt::format("argument '{} {}' [[buffer({})]] has nothing bound", p.type, p.name, p.index));
      continue;
    }
    RecordedDispatch::Binding& binding = d.bindings.emplace_back();
    binding.index = p.index;
    binding.buffer = bound->second.buffer;
    binding.offset = bound->second.offset;
    binding.bytes = bound->second.bytes;
    const Buffer* buffer = bound->second.buffer.get();
    if (!buffer) continue;
    if (self->type == DispatchTypeConcurrent) {
      if (auto writer = self->unsynchronized_writes.find(buffer); writer != self->unsynchronized_writes.end())
        self->finding(FindingKind::missing_barrier, call,
                      fmt::format("argument '{}' [[buffer({})]] uses a buffer that {} wrote, with no memoryBarrier "
                                  "between them in a concurrent encoder",
                                  p.name, p.index, writer->second));
    }
    if (may_write(p)) written_here[buffer] = call;
  }
  if (threadgroup_total > commands.device_impl().options.max_threadgroup_memory_length)
    self->finding(FindingKind::threadgroup_memory_invalid, call,
                  fmt::format("{} bytes of threadgroup memory arguments; the device allows {}", threadgroup_total,
                              commands.device_impl().options.max_threadgroup_memory_length));
  if (self->type == DispatchTypeConcurrent)
    for (auto& [buffer, writer] : written_here) self->unsynchronized_writes[buffer] = writer;
  d.pipeline = self->pipeline;
  d.runnable = commands.findings.size() == findings_before && !unusable_length;
  commands.dispatches.push_back(std::move(d));
}

void ComputeCommandEncoder::memoryBarrier(BarrierScope scope) {
  EncoderImpl* self = impl<EncoderImpl>(this);
  if (!self->usable("memoryBarrier")) return;
  if (scope & BarrierScopeBuffers) self->unsynchronized_writes.clear();
}

void ComputeCommandEncoder::memoryBarrier(Resource* resources[], NS::UInteger count) {
  EncoderImpl* self = impl<EncoderImpl>(this);
  if (!self->usable("memoryBarrier")) return;
  for (NS::UInteger i = 0; i < count; ++i) self->unsynchronized_writes.erase(static_cast<const Buffer*>(resources[i]));
}

}  // namespace MTL
