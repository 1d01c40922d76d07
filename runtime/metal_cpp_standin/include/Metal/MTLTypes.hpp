// Stand-in for metal-cpp's MTL value types and enums (values as in Apple's
// public headers). See Foundation/Foundation.hpp for what the stand-in is.
#pragma once

#include <Foundation/Foundation.hpp>

namespace MTL {

struct Size {
  NS::UInteger width = 0, height = 0, depth = 0;
  Size() = default;
  Size(NS::UInteger w, NS::UInteger h, NS::UInteger d) : width(w), height(h), depth(d) {}
  static Size Make(NS::UInteger w, NS::UInteger h, NS::UInteger d) { return Size(w, h, d); }
};

enum DataType : NS::UInteger {
  DataTypeNone = 0,
  DataTypeFloat = 3,
  DataTypeHalf = 16,
  DataTypeInt = 29,
  DataTypeUInt = 33,
  DataTypeShort = 37,
  DataTypeUShort = 41,
  DataTypeChar = 45,
  DataTypeUChar = 49,
  DataTypeBool = 53,
};

enum LanguageVersion : NS::UInteger {
  LanguageVersion2_4 = 131076,
  LanguageVersion3_0 = 196608,
  LanguageVersion3_1 = 196609,
  LanguageVersion3_2 = 196610,
  LanguageVersion4_0 = 262144,  // Metal 4 (macOS 26): <metal_tensor>, MetalPerformancePrimitives' TensorOps
};

// Device::supportsFamily(): Apple GPU families (Apple7: M1 / A14 ... Apple10:
// M5 / A19), Mac, Common and the Metal feature families (Metal3, Metal4).
enum GPUFamily : NS::Integer {
  GPUFamilyApple1 = 1001,
  GPUFamilyApple2 = 1002,
  GPUFamilyApple3 = 1003,
  GPUFamilyApple4 = 1004,
  GPUFamilyApple5 = 1005,
  GPUFamilyApple6 = 1006,
  GPUFamilyApple7 = 1007,
  GPUFamilyApple8 = 1008,
  GPUFamilyApple9 = 1009,
  GPUFamilyApple10 = 1010,
  GPUFamilyMac2 = 2002,
  GPUFamilyCommon1 = 3001,
  GPUFamilyCommon2 = 3002,
  GPUFamilyCommon3 = 3003,
  GPUFamilyMetal3 = 5001,
  GPUFamilyMetal4 = 5002,
};

enum BarrierScope : NS::UInteger {
  BarrierScopeBuffers = 1,
  BarrierScopeTextures = 2,
  BarrierScopeRenderTargets = 4,
};

enum DispatchType : NS::UInteger {
  DispatchTypeSerial = 0,
  DispatchTypeConcurrent = 1,
};

enum StorageMode : NS::UInteger {
  StorageModeShared = 0,
  StorageModeManaged = 1,
  StorageModePrivate = 2,
  StorageModeMemoryless = 3,
};

using ResourceOptions = NS::UInteger;
inline constexpr NS::UInteger ResourceStorageModeShift = 4;
inline constexpr ResourceOptions ResourceStorageModeShared = StorageModeShared << ResourceStorageModeShift;
inline constexpr ResourceOptions ResourceStorageModeManaged = StorageModeManaged << ResourceStorageModeShift;
inline constexpr ResourceOptions ResourceStorageModePrivate = StorageModePrivate << ResourceStorageModeShift;
inline constexpr ResourceOptions ResourceStorageModeMemoryless = StorageModeMemoryless << ResourceStorageModeShift;

enum CommandBufferStatus : NS::UInteger {
  CommandBufferStatusNotEnqueued = 0,
  CommandBufferStatusEnqueued = 1,
  CommandBufferStatusCommitted = 2,
  CommandBufferStatusScheduled = 3,
  CommandBufferStatusCompleted = 4,
  CommandBufferStatusError = 5,
};

}  // namespace MTL
