// Stand-in for metal-cpp's Metal/Metal.hpp (see Foundation/Foundation.hpp).
#pragma once

#include <Foundation/Foundation.hpp>
#include <Metal/MTLCommandBuffer.hpp>
#include <Metal/MTLCommandEncoder.hpp>
#include <Metal/MTLComputePipeline.hpp>
#include <Metal/MTLDevice.hpp>
#include <Metal/MTLLibrary.hpp>
#include <Metal/MTLResource.hpp>
#include <Metal/MTLTypes.hpp>
