// The metal-cpp stand-in (runtime/metal_cpp_standin): kernels run when the
// command buffer commits, in encoding order; each finding it records fires
// on a deliberately wrong encoding and stays silent on the right one.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <optional>
#include <filesystem>
#include <fstream>

#include "mfagen/metal_cpp_standin.h"

namespace mfagen {
namespace {

using metal_standin::FindingKind;

constexpr const char* kSource = R"(
#include <metal_stdlib>
using namespace metal;

kernel void fill(device float* out [[buffer(0)]], constant float& value [[buffer(1)]],
                 uint i [[thread_position_in_grid]]) {
  out[i] = value + float(i);
}

kernel void add_one(device const float* in [[buffer(0)]], device float* out [[buffer(1)]],
                    uint i [[thread_position_in_grid]]) {
  out[i] = in[i] + 1.0f;
}

kernel void stage(device float* out [[buffer(0)]], threadgroup float* scratch [[threadgroup(0)]],
                  uint t [[thread_position_in_threadgroup]], uint i [[thread_position_in_grid]]) {
  scratch[t] = float(i);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  out[i] = scratch[t] * 2.0f;
}

constant float kScale [[function_constant(0)]];
kernel void scaled(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {
  out[i] = kScale * float(i);
}

kernel void overrun(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {
  out[i + 1] = 1.0f;
}
)";

constexpr NS::UInteger kCount = 64;

NS::String* text(const char* s) { return NS::String::string(s, NS::UTF8StringEncoding); }

// A device, a library of kSource and a pool for one test's autoreleased objects.
class StandIn : public ::testing::Test {
 protected:
  void SetUp() override { make_device({}); }
  void TearDown() override {
    for (auto* p : pipelines_) p->release();
    for (auto* b : buffers_) b->release();
    if (library_) library_->release();
    if (queue_) queue_->release();
    if (device_) device_->release();
    pool_->release();
  }
  void make_device(const metal_standin::DeviceOptions& options) {
    if (library_) library_->release();
    if (queue_) queue_->release();
    if (device_) device_->release();
    device_ = metal_standin::create_device(options);
    queue_ = device_->newCommandQueue();
    NS::Error* error = nullptr;
    library_ = device_->newLibrary(text(kSource), nullptr, &error);
    ASSERT_NE(library_, nullptr) << (error ? error->localizedDescription()->utf8String() : "");
  }
  MTL::ComputePipelineState* pipeline(const char* name) {
    MTL::Function* function = library_->newFunction(text(name));
    EXPECT_NE(function, nullptr) << name;
    NS::Error* error = nullptr;
    MTL::ComputePipelineState* p = device_->newComputePipelineState(function, &error);
    function->release();
    pipelines_.push_back(p);
    return p;
  }
  MTL::Buffer* buffer(MTL::ResourceOptions options = MTL::ResourceStorageModeShared) {
    buffers_.push_back(device_->newBuffer(kCount * sizeof(float), options));
    return buffers_.back();
  }
  static std::vector<FindingKind> kinds(MTL::CommandBuffer* commands) {
    std::vector<FindingKind> out;
    for (const auto& f : metal_standin::findings(commands)) out.push_back(f.kind);
    return out;
  }
  static float at(MTL::Buffer* b, size_t i) { return static_cast<float*>(b->contents())[i]; }
  // fill(out, value) as one dispatch of kCount threads.
  void encode_fill(MTL::ComputeCommandEncoder* e, MTL::Buffer* out, float value) {
    e->setComputePipelineState(pipeline("fill"));
    e->setBuffer(out, 0, 0);
    e->setBytes(&value, sizeof value, 1);
    e->dispatchThreadgroups(MTL::Size(2, 1, 1), MTL::Size(kCount / 2, 1, 1));
  }
  void encode_add_one(MTL::ComputeCommandEncoder* e, MTL::Buffer* in, MTL::Buffer* out) {
    e->setComputePipelineState(pipeline("add_one"));
    e->setBuffer(in, 0, 0);
    e->setBuffer(out, 0, 1);
    e->dispatchThreadgroups(MTL::Size(2, 1, 1), MTL::Size(kCount / 2, 1, 1));
  }
  static void finish(MTL::CommandBuffer* commands, MTL::ComputeCommandEncoder* e) {
    e->endEncoding();
    commands->commit();
    commands->waitUntilCompleted();
  }

  NS::AutoreleasePool* pool_ = NS::AutoreleasePool::alloc()->init();
  MTL::Device* device_ = nullptr;
  MTL::CommandQueue* queue_ = nullptr;
  MTL::Library* library_ = nullptr;
  std::vector<MTL::ComputePipelineState*> pipelines_;
  std::vector<MTL::Buffer*> buffers_;
};

TEST_F(StandIn, DispatchesRunAtCommitInEncodingOrder) {
  MTL::Buffer *a = buffer(), *b = buffer();
  MTL::CommandBuffer* commands = queue_->commandBuffer();
  MTL::ComputeCommandEncoder* e = commands->computeCommandEncoder();
  encode_fill(e, a, 10);
  encode_add_one(e, a, b);
  EXPECT_TRUE(std::isnan(at(b, 5))) << "nothing runs before commit; new buffers hold NaN bytes";
  finish(commands, e);
  EXPECT_EQ(commands->status(), MTL::CommandBufferStatusCompleted);
  EXPECT_EQ(commands->error(), nullptr);
  EXPECT_TRUE(kinds(commands).empty());
  for (size_t i = 0; i < kCount; ++i) ASSERT_EQ(at(b, i), 11.0f + float(i)) << i;
  EXPECT_LE(commands->GPUStartTime(), commands->GPUEndTime());
  EXPECT_EQ(metal_standin::counters(device_).dispatches_run, 2u);
}

TEST_F(StandIn, AConcurrentEncoderNeedsABarrierBetweenAWriteAndARead) {
  for (int variant = 0; variant < 4; ++variant) {
    SCOPED_TRACE(variant);
    MTL::Buffer *a = buffer(), *b = buffer();
    MTL::CommandBuffer* commands = queue_->commandBuffer();
    MTL::ComputeCommandEncoder* e =
        commands->computeCommandEncoder(variant == 3 ? MTL::DispatchTypeSerial : MTL::DispatchTypeConcurrent);
    encode_fill(e, a, 1);
    if (variant == 1) e->memoryBarrier(MTL::BarrierScopeBuffers);
    if (variant == 2) {
      MTL::Resource* written[] = {a};
      e->memoryBarrier(written, 1);
    }
    encode_add_one(e, a, b);
    finish(commands, e);
    if (variant == 0) {
      ASSERT_EQ(kinds(commands), std::vector{FindingKind::missing_barrier});
      const metal_standin::Finding f = metal_standin::findings(commands).at(0);
      EXPECT_EQ(f.call, "dispatchThreadgroups #2 (add_one)");
      EXPECT_NE(f.detail.find("dispatchThreadgroups #1 (fill)"), std::string::npos) << f.detail;
      EXPECT_EQ(commands->status(), MTL::CommandBufferStatusError);
    } else {
      EXPECT_TRUE(kinds(commands).empty());
      EXPECT_EQ(at(b, 3), 5.0f);
    }
  }
}

TEST_F(StandIn, AnArgumentWithNothingBoundIsNamed) {
  MTL::Buffer* a = buffer();
  MTL::CommandBuffer* commands = queue_->commandBuffer();
  MTL::ComputeCommandEncoder* e = commands->computeCommandEncoder();
  e->setComputePipelineState(pipeline("add_one"));
  e->setBuffer(a, 0, 0);
  e->dispatchThreadgroups(MTL::Size(1, 1, 1), MTL::Size(kCount, 1, 1));
  finish(commands, e);
  ASSERT_EQ(kinds(commands), std::vector{FindingKind::argument_not_bound});
  EXPECT_NE(metal_standin::findings(commands)[0].detail.find("out' [[buffer(1)]]"), std::string::npos);
  EXPECT_EQ(commands->status(), MTL::CommandBufferStatusError);
  EXPECT_NE(std::string(commands->error()->localizedDescription()->utf8String()).find("argument not bound"),
            std::string::npos);
  EXPECT_EQ(metal_standin::counters(device_).dispatches_run, 0u) << "a dispatch with findings does not run";
}

TEST_F(StandIn, AnIndexSetTwiceBeforeOneDispatchIsAFinding) {
  MTL::Buffer *a = buffer(), *b = buffer(), *c = buffer();
  MTL::CommandBuffer* commands = queue_->commandBuffer();
  MTL::ComputeCommandEncoder* e = commands->computeCommandEncoder();
  encode_add_one(e, a, b);
  e->setBuffer(c, 0, 1);  // after a dispatch: rebinding is how encoders are reused
  e->dispatchThreadgroups(MTL::Size(1, 1, 1), MTL::Size(kCount, 1, 1));
  e->setBuffer(a, 0, 1);
  e->setBuffer(b, 0, 1);
  e->dispatchThreadgroups(MTL::Size(1, 1, 1), MTL::Size(kCount, 1, 1));
  finish(commands, e);
  ASSERT_EQ(kinds(commands), std::vector{FindingKind::index_bound_twice});
  EXPECT_EQ(metal_standin::findings(commands)[0].call, "setBuffer(index 1) on compute encoder #1");
}

TEST_F(StandIn, ThreadsAboveThePipelineLimitAreAFinding) {
  metal_standin::DeviceOptions small;
  small.max_threads_per_threadgroup = 32;
  make_device(small);
  MTL::ComputePipelineState* fill = pipeline("fill");
  EXPECT_EQ(fill->maxTotalThreadsPerThreadgroup(), 32u);
  for (NS::UInteger threads : {32u, 64u}) {
    MTL::Buffer* a = buffer();
    MTL::CommandBuffer* commands = queue_->commandBuffer();
    MTL::ComputeCommandEncoder* e = commands->computeCommandEncoder();
    float value = 0;
    e->setComputePipelineState(fill);
    e->setBuffer(a, 0, 0);
    e->setBytes(&value, 4, 1);
    e->dispatchThreadgroups(MTL::Size(kCount / threads, 1, 1), MTL::Size(threads, 1, 1));
    finish(commands, e);
    EXPECT_EQ(kinds(commands), threads == 32 ? std::vector<FindingKind>{}
                                             : std::vector{FindingKind::threads_above_limit});
  }
}

TEST_F(StandIn, ThreadgroupArgumentsNeedAValidLength) {
  struct Variant {
    std::optional<NS::UInteger> length;
    std::vector<FindingKind> expected;
  };
  const Variant variants[] = {{std::nullopt, {FindingKind::threadgroup_memory_missing}},
                              {20, {FindingKind::threadgroup_memory_invalid}},
                              {40000, {FindingKind::threadgroup_memory_invalid}},
                              {kCount * sizeof(float), {}}};
  for (const Variant& v : variants) {
    MTL::Buffer* out = buffer();
    MTL::CommandBuffer* commands = queue_->commandBuffer();
    MTL::ComputeCommandEncoder* e = commands->computeCommandEncoder();
    e->setComputePipelineState(pipeline("stage"));
    e->setBuffer(out, 0, 0);
    if (v.length) e->setThreadgroupMemoryLength(*v.length, 0);
    e->dispatchThreadgroups(MTL::Size(1, 1, 1), MTL::Size(kCount, 1, 1));
    finish(commands, e);
    EXPECT_EQ(kinds(commands), v.expected) << (v.length ? *v.length : 0);
    if (v.expected.empty()) {
      EXPECT_EQ(at(out, 7), 14.0f);
    }
  }
}

TEST_F(StandIn, EncoderMisuseIsAFinding) {
  MTL::CommandBuffer* commands = queue_->commandBuffer();
  MTL::ComputeCommandEncoder* e = commands->computeCommandEncoder();
  e->dispatchThreadgroups(MTL::Size(1, 1, 1), MTL::Size(1, 1, 1));  // no pipeline
  commands->commit();                                                // encoder still open
  e->endEncoding();
  e->endEncoding();  // twice
  EXPECT_EQ(kinds(commands), (std::vector{FindingKind::encoder_misuse, FindingKind::encoder_misuse,
                                          FindingKind::encoder_misuse}));
  EXPECT_EQ(commands->status(), MTL::CommandBufferStatusError);

  MTL::CommandBuffer* never = queue_->commandBuffer();
  never->waitUntilCompleted();  // would block forever on Metal
  EXPECT_EQ(kinds(never), std::vector{FindingKind::encoder_misuse});
}

TEST_F(StandIn, KernelDetectorFindingsFailTheCommandBuffer) {
  MTL::Buffer* out = buffer();
  MTL::CommandBuffer* commands = queue_->commandBuffer();
  MTL::ComputeCommandEncoder* e = commands->computeCommandEncoder();
  e->setComputePipelineState(pipeline("overrun"));
  e->setBuffer(out, 0, 0);
  e->dispatchThreadgroups(MTL::Size(1, 1, 1), MTL::Size(kCount, 1, 1));
  finish(commands, e);
  ASSERT_EQ(kinds(commands), std::vector{FindingKind::kernel_finding});
  EXPECT_NE(metal_standin::findings(commands)[0].detail.find("out-of-bounds"), std::string::npos)
      << metal_standin::findings(commands)[0].detail;
}

TEST_F(StandIn, BufferOffsetsShiftWhatTheKernelSees) {
  MTL::Buffer *a = buffer(), *b = buffer();
  MTL::CommandBuffer* commands = queue_->commandBuffer();
  MTL::ComputeCommandEncoder* e = commands->computeCommandEncoder();
  encode_fill(e, a, 0);
  e->setComputePipelineState(pipeline("add_one"));
  e->setBuffer(a, 16 * sizeof(float), 0);
  e->setBuffer(b, 0, 1);
  e->dispatchThreadgroups(MTL::Size(1, 1, 1), MTL::Size(kCount - 16, 1, 1));
  finish(commands, e);
  EXPECT_TRUE(kinds(commands).empty());
  EXPECT_EQ(at(b, 0), 17.0f);
}

TEST_F(StandIn, FunctionConstantValuesSpecializeThePipeline) {
  const float scale = 3;
  MTL::FunctionConstantValues* values = MTL::FunctionConstantValues::alloc()->init();
  values->setConstantValue(&scale, MTL::DataTypeFloat, 0);
  NS::Error* error = nullptr;
  MTL::Function* function = library_->newFunction(text("scaled"), values, &error);
  ASSERT_NE(function, nullptr);
  MTL::ComputePipelineState* p = device_->newComputePipelineState(function, &error);
  ASSERT_NE(p, nullptr) << (error ? error->localizedDescription()->utf8String() : "");
  pipelines_.push_back(p);
  MTL::Buffer* out = buffer();
  MTL::CommandBuffer* commands = queue_->commandBuffer();
  MTL::ComputeCommandEncoder* e = commands->computeCommandEncoder();
  e->setComputePipelineState(p);
  e->setBuffer(out, 0, 0);
  e->dispatchThreadgroups(MTL::Size(1, 1, 1), MTL::Size(kCount, 1, 1));
  finish(commands, e);
  EXPECT_EQ(at(out, 5), 15.0f);
  function->release();

  const int32_t wrong = 3;
  values->setConstantValue(&wrong, MTL::DataTypeInt, 0);
  EXPECT_EQ(library_->newFunction(text("scaled"), values, &error), nullptr);
  EXPECT_NE(std::string(error->localizedDescription()->utf8String()).find("declared float"), std::string::npos);
  values->release();
}

TEST_F(StandIn, LibrariesAndBuffersBehaveAsMetalDocuments) {
  NS::Error* error = nullptr;
  EXPECT_EQ(device_->newLibrary(text("kernel void k() { undeclared(); }"), nullptr, &error), nullptr);
  ASSERT_NE(error, nullptr);
  EXPECT_EQ(error->code(), 3);  // MTLLibraryErrorCompileFailure
  EXPECT_NE(std::string(error->localizedDescription()->utf8String()).find("undeclared"), std::string::npos);

  EXPECT_EQ(library_->newFunction(text("no_such_kernel")), nullptr);
  EXPECT_EQ(device_->newLibrary(text("/nonexistent/k.metallib"), &error), nullptr);
  EXPECT_EQ(error->code(), 6);  // MTLLibraryErrorFileNotFound

  EXPECT_EQ(buffer(MTL::ResourceStorageModePrivate)->contents(), nullptr) << "private memory is GPU-only";
  const float data[2] = {1.5f, -2};
  MTL::Buffer* copy = device_->newBuffer(data, sizeof data, MTL::ResourceStorageModeShared);
  EXPECT_EQ(std::memcmp(copy->contents(), data, sizeof data), 0);
  EXPECT_EQ(copy->length(), sizeof data);
  copy->release();
}

// A kernel using Metal 4 TensorOps (MetalPerformancePrimitives' matmul2d).
constexpr const char* kTensorOpsSource = R"(
#include <metal_stdlib>
#include <MetalPerformancePrimitives/MetalPerformancePrimitives.h>
using namespace metal;
using namespace mpp::tensor_ops;

kernel void product(device half* a [[buffer(0)]], device half* b [[buffer(1)]], device float* c [[buffer(2)]]) {
  typedef tensor<device half, dextents<int32_t, 2>, tensor_inline> Operand;
  Operand left(a, dextents<int32_t, 2>(16, 16)), right(b, dextents<int32_t, 2>(16, 16));
  tensor<device float, dextents<int32_t, 2>, tensor_inline> out(c, dextents<int32_t, 2>(16, 16));
  constexpr auto desc = matmul2d_descriptor(16, 16, 16);
  matmul2d<desc, execution_simdgroup> op;
  op.run(left, right, out);
}
)";

// GPU families answer as configured; TensorOps sources compile only as Metal
// 4.0 on a device with GPUFamilyMetal4 and TensorOps, and fail otherwise as
// Apple's compiler does (the error the Metal backend's probe turns into "no
// TensorOps").
TEST_F(StandIn, GpuFamiliesAndTensorOpsAreAsConfigured) {
  for (MTL::GPUFamily f : {MTL::GPUFamilyApple7, MTL::GPUFamilyApple10, MTL::GPUFamilyMetal3, MTL::GPUFamilyMetal4})
    EXPECT_TRUE(device_->supportsFamily(f)) << f;  // the default: an M5 on macOS 26
  auto compile_error = [&](const char* source, std::optional<MTL::LanguageVersion> version) -> std::string {
    MTL::CompileOptions* options = MTL::CompileOptions::alloc()->init();
    if (version) options->setLanguageVersion(*version);
    NS::Error* error = nullptr;
    MTL::Library* library = device_->newLibrary(text(source), options, &error);
    options->release();
    if (library) {
      library->release();
      return "compiled";
    }
    EXPECT_EQ(error->code(), 3);  // MTLLibraryErrorCompileFailure
    return error->localizedDescription()->utf8String();
  };
  EXPECT_EQ(compile_error(kTensorOpsSource, MTL::LanguageVersion4_0), "compiled");
  EXPECT_EQ(compile_error(kTensorOpsSource, std::nullopt),
            "program_source: error: <MetalPerformancePrimitives/MetalPerformancePrimitives.h> needs Metal Shading "
            "Language 4.0; this library is compiled as 3.1 (set MTL::LanguageVersion4_0)");

  metal_standin::DeviceOptions no_tensor_ops;
  no_tensor_ops.tensor_ops = false;
  make_device(no_tensor_ops);
  EXPECT_TRUE(device_->supportsFamily(MTL::GPUFamilyMetal4));
  EXPECT_EQ(compile_error(kTensorOpsSource, MTL::LanguageVersion4_0),
            "program_source: fatal error: 'MetalPerformancePrimitives/MetalPerformancePrimitives.h' file not found "
            "(this OS and device have no Metal 4 TensorOps)");
  EXPECT_EQ(compile_error(kSource, MTL::LanguageVersion4_0), "compiled");

  metal_standin::DeviceOptions m4_on_macos15;
  m4_on_macos15.name = "M4";
  m4_on_macos15.gpu_families = metal_standin::families_of(9, false);
  make_device(m4_on_macos15);
  EXPECT_TRUE(device_->supportsFamily(MTL::GPUFamilyApple9));
  EXPECT_FALSE(device_->supportsFamily(MTL::GPUFamilyApple10));
  EXPECT_FALSE(device_->supportsFamily(MTL::GPUFamilyMetal4));
  EXPECT_EQ(compile_error(kSource, MTL::LanguageVersion4_0),
            "language version 4.0 is not supported on this device (M4 lacks GPUFamilyMetal4)");
  EXPECT_EQ(compile_error(kTensorOpsSource, MTL::LanguageVersion4_0),
            "language version 4.0 is not supported on this device (M4 lacks GPUFamilyMetal4)");
  EXPECT_EQ(compile_error(kSource, MTL::LanguageVersion3_1), "compiled");
}

TEST(StandInFoundation, AutoreleasedObjectsLiveUntilTheirPoolDrains) {
  NS::AutoreleasePool* pool = NS::AutoreleasePool::alloc()->init();
  NS::String* s = NS::String::string("kept", NS::UTF8StringEncoding)->retain();
  EXPECT_EQ(s->retainCount(), 2u);
  NS::AutoreleasePool* inner = NS::AutoreleasePool::alloc()->init();
  s->retain()->autorelease();
  EXPECT_EQ(s->retainCount(), 3u);
  inner->drain();
  EXPECT_EQ(s->retainCount(), 2u);
  pool->release();
  EXPECT_EQ(s->retainCount(), 1u);
  EXPECT_STREQ(s->utf8String(), "kept");
  s->release();
}

}  // namespace
}  // namespace mfagen
