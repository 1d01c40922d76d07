// Which kernel of a spec set serves a call (`mfagen run`, `mfagen profile`),
// chosen the way an app's runtime chooses (mfagen::Library, DESIGN.md section 8): the spec set becomes an
// in-memory manifest and the library's selection rule picks by shape and
// features. A call does not state its dtype or causal mode, so they are taken
// from the set's kernels in spec order (or from --dtype / --causal); nor does
// it state score_mod / mask_mod expressions: a kernel with them serves the
// call in spec order like any other (and only such kernels, when the call
// gives captured tensors or scalars).
#pragma once

#include <optional>
#include <string>

#include "mfagen/library.h"
#include "session/call_error.h"
#include "session/call_layout.h"
#include "spec/kernel_spec.h"

namespace mfagen::session {

struct CallRequest {
  uint64_t head_dim = 0, head_dim_v = 0, heads_q = 0, heads_kv = 0, seq_q = 0, seq_k = 0, batch = 1;
  MaskInput mask = MaskInput::none;  // from the kind of the set's kernels when --mask is given
  bool has_mask = false, alibi = false, softcap = false, window = false, sinks = false, backward = false;
  bool varlen = false;  // packed sequences: seq_q, seq_k are the longest
  bool paged = false;   // a paged KV cache: seq_k is the longest cache length
  KvFormat kv_format = KvFormat::elements;  // quantized k and v
  bool dropout = false;                     // --dropout given
  bool mods = false;  // --capture or --scalar given: only score_mod / mask_mod kernels serve the call
  std::optional<spec::DType> dtype;
  std::optional<spec::Causal> causal;
  std::string describe() const;
};

// A request with a call's shape (batch, heads, lengths, head dims); the
// caller adds the features.
CallRequest request_with_shape(const CallLayout& geometry);

// The selected kernel among those `device` can run (default: every kernel,
// as the cpu backend emulates; `mfagen run` passes its backend's
// capabilities()), or CallError listing what was asked and what the set has.
const KernelEntry& select_kernel(const Library& library, const CallRequest& request, const std::string& spec_file,
                                 const DeviceCapabilities& device = DeviceCapabilities::all());

// The query the runtime answers for a request, given the kernel's dtype and causal mode.
AttentionQuery query_for(const CallRequest& request, KernelKind kind, ElementType dtype, CausalMode causal,
                         MaskInput mask, bool need_lse, uint64_t mods_id = 0);

}  // namespace mfagen::session
