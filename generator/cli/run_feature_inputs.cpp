#include "run_feature_inputs.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>

#include "errors.h"
#include "io/npy.h"
#include "session/tensor_encoding.h"

namespace mfagen::cli {

using session::decode_elements;
using session::encode_elements;
using session::npy_values;
using session::round_to_element;

MaskTensor read_mask(const std::string& file, const spec::KernelSpec& kernel, const AttentionShape& shape) {
  const std::string what = "--mask " + file;
  if (file.empty())
    throw UserError(fmt::format("kernel {} takes a {} mask: give --mask M.npy", kernel.name,
                                spec::to_string(kernel.mask)));
  const io::NpyArray array = io::read_npy(file);
  const std::array<uint64_t, 4> full = {shape.batch, shape.heads_q, shape.seq_q, shape.seq_k};
  if (array.shape.size() < 2 || array.shape.size() > 4)
    throw UserError(fmt::format("{}: expected 2 to 4 dimensions broadcastable to (B, Hq, Sq, Sk) = {}, found shape {}",
                                what, io::shape_repr({full.begin(), full.end()}), io::shape_repr(array.shape)));
  MaskTensor mask;
  mask.extents = {1, 1, 1, 1};
  const size_t skip = 4 - array.shape.size();
  for (size_t d = 0; d < array.shape.size(); ++d) {
    const uint64_t extent = array.shape[d];
    if (extent != 1 && extent != full[skip + d])
      throw UserError(fmt::format("{}: shape {} does not broadcast to (B, Hq, Sq, Sk) = {}", what,
                                  io::shape_repr(array.shape), io::shape_repr({full.begin(), full.end()})));
    mask.extents[skip + d] = extent;
  }
  if (kernel.mask == spec::MaskKind::boolean) {
    if (array.dtype != "|b1")
      throw UserError(fmt::format("{}: kernel {} takes a bool mask: expected dtype |b1, found {}", what, kernel.name,
                                  array.dtype));
    mask.bytes = array.data;
    for (std::byte& b : mask.bytes) b = b == std::byte{0} ? std::byte{0} : std::byte{1};
    return mask;
  }
  const std::vector<double> values = npy_values(array, what.c_str());
  std::vector<double> rounded(values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    if (std::isnan(values[i]) || values[i] == INFINITY)
      throw UserError(fmt::format("{}: holds NaN or +inf; an additive mask takes finite values and -inf", what));
    rounded[i] = round_to_element(kernel.dtype, values[i]);
  }
  mask.bytes = encode_elements(rounded, kernel.dtype);
  return mask;
}

AlibiInput read_alibi_slopes(const std::string& file, const AttentionShape& shape) {
  const std::string what = "--alibi-slopes " + file;
  if (file.empty()) throw UserError("the selected kernel applies ALiBi: give --alibi-slopes A.npy");
  const io::NpyArray array = io::read_npy(file);
  if (array.dtype != "<f4") throw UserError(fmt::format("{}: expected dtype <f4, found {}", what, array.dtype));
  AlibiInput slopes;
  if (array.shape == std::vector<uint64_t>{shape.heads_q}) {
    slopes.per_batch = false;
  } else if (array.shape == std::vector<uint64_t>{shape.batch, shape.heads_q}) {
    slopes.per_batch = true;
  } else {
    throw UserError(fmt::format("{}: expected shape ({},) or ({}, {}), found {}", what, shape.heads_q, shape.batch,
                                shape.heads_q, io::shape_repr(array.shape)));
  }
  for (float x : array.values<float>())
    if (!std::isfinite(x)) throw UserError(fmt::format("{}: holds NaN or infinite values", what));
  slopes.bytes = array.data;
  return slopes;
}

}  // namespace mfagen::cli
