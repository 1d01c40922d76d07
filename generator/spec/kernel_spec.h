// One attention kernel as a user asked for it (DESIGN.md section 2), after
// validation and list expansion: every field has a concrete value. This is
// the data every later stage (plan, render, emit) starts from.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "expr/score_functions.h"

namespace mfagen::spec {

// cache_append: not attention, the kernel that writes a step's new keys and
// values into a cache (paged or dense), quantizing them for a quantized one.
enum class Kind { forward, decode, backward, cache_append };
enum class DType { float16, bfloat16, float32 };
enum class Causal { none, top_left, bottom_right };
enum class MaskKind { none, boolean, additive };  // JSON spelling: "none", "bool", "additive"
enum class Target { apple7, apple8, apple9, apple10 };
// How q, k, v, out are laid out (DESIGN.md section 13): dense (B, H, S, D)
// tensors, or variable-length sequences packed as (T, H, D) with
// cu_seqlens_q / cu_seqlens_k marking where each sequence starts.
enum class Layout { dense, varlen };
// Where keys and values live (DESIGN.md section 13): dense (B, Hkv, Sk, D)
// tensors, or a paged cache (num_pages, page_size, Hkv, D) read through a
// block table, with per-sequence cache lengths.
enum class KvCache { dense, paged };
// How k and v are stored (DESIGN.md section 13): in the spec's dtype
// (as_dtype, also what "kv_dtype" naming that dtype means), or quantized:
// llama.cpp's q8_0 and q4_0 blocks of 32 values along D, or OCP fp8 E4M3FN
// with one float32 scale per tensor. A float dtype other than the spec's is
// kept so that the planner can refuse it with the reason.
enum class KvDType { as_dtype, float16, bfloat16, float32, q8_0, q4_0, fp8_e4m3 };

// Every value of each enum, in the order of DESIGN.md section 2, so that
// parsers and error messages can list them ("expected one of ...").
inline constexpr std::array kAllKinds{Kind::forward, Kind::decode, Kind::backward, Kind::cache_append};
inline constexpr std::array kAllDTypes{DType::float16, DType::bfloat16, DType::float32};
inline constexpr std::array kAllCausals{Causal::none, Causal::top_left, Causal::bottom_right};
inline constexpr std::array kAllMaskKinds{MaskKind::none, MaskKind::boolean, MaskKind::additive};
inline constexpr std::array kAllTargets{Target::apple7, Target::apple8, Target::apple9, Target::apple10};
inline constexpr std::array kAllLayouts{Layout::dense, Layout::varlen};
inline constexpr std::array kAllKvCaches{KvCache::dense, KvCache::paged};
// The JSON spellings of kv_dtype (as_dtype has none: it is the absence of the field).
inline constexpr std::array kAllKvDTypes{KvDType::float16, KvDType::bfloat16, KvDType::float32,
                                         KvDType::q8_0,    KvDType::q4_0,     KvDType::fp8_e4m3};

// The JSON spelling of each value ("forward", "float16", "bottom_right", "bool", "apple9").
std::string_view to_string(Kind);
std::string_view to_string(DType);
std::string_view to_string(Causal);
std::string_view to_string(MaskKind);
std::string_view to_string(Target);
std::string_view to_string(Layout);
std::string_view to_string(KvCache);
std::string_view to_string(KvDType);

// True for the formats the kernel dequantizes (q8_0, q4_0, fp8_e4m3).
inline bool kv_quantized(KvDType t) { return t == KvDType::q8_0 || t == KvDType::q4_0 || t == KvDType::fp8_e4m3; }
// True for the formats stored in blocks of 32 values along D (q8_0, q4_0).
inline bool kv_in_blocks(KvDType t) { return t == KvDType::q8_0 || t == KvDType::q4_0; }

// Bytes of one element of q, k, v, out in memory.
inline uint32_t dtype_bytes(DType t) { return t == DType::float32 ? 4 : 2; }

struct Tiles {
  uint32_t block_q = 0;
  uint32_t block_k = 0;
  uint32_t simdgroups = 0;
  // Forward: groups of simdgroups that split each staged key block and merge
  // after the last one (simdgroups / key_groups simdgroups share the rows).
  uint32_t key_groups = 1;
  bool operator==(const Tiles&) const = default;
};

// Where a kernel came from, so that any later stage can name the file and
// JSON path in its errors: "specs/llama.json: kernels[2].tiles: ...".
struct SpecOrigin {
  std::string file;       // as given on the command line
  std::string json_path;  // the object the kernel was expanded from: "kernels[2]", or "" for a single-kernel file
};

struct KernelSpec {
  Kind kind = Kind::forward;
  DType dtype = DType::float16;
  uint32_t head_dim = 0;    // D, 1..576
  uint32_t head_dim_v = 0;  // Dv, 1..512 (defaults to head_dim)
  Causal causal = Causal::none;
  bool gqa = true;
  MaskKind mask = MaskKind::none;
  bool window = false;
  bool softcap = false;
  bool alibi = false;
  bool sinks = false;  // a learned float32 logit per q head joins every row's softmax (DESIGN.md section 13)
  Layout layout = Layout::dense;
  KvCache kv_cache = KvCache::dense;
  KvDType kv_dtype = KvDType::as_dtype;
  bool dropout = false;  // Philox dropout of P.V weights, runtime p, seed and offset (DESIGN.md section 13)
  // score_mod and mask_mod with the captured tensors and scalars they read
  // (DESIGN.md section 13); checked when the spec is read.
  expr::ScoreFunctions mods;
  bool lse = true;
  // "accumulate" is always float32 (the only accepted value); not stored.
  std::optional<Tiles> tiles;  // absent: the planner's table decides
  Target target = Target::apple9;
  std::string name;            // given, or derived canonically (derived_name)
  bool name_given = false;
  SpecOrigin origin;

  bool operator==(const KernelSpec& other) const;  // every field but origin
};

// A problem with a spec file: names the file, the JSON path and what was
// expected. what() is the full message "FILE: PATH: MESSAGE" (PATH omitted
// when empty).
class SpecError : public std::runtime_error {
 public:
  SpecError(std::string file, std::string json_path, std::string message);
  const std::string& file() const { return file_; }
  const std::string& json_path() const { return json_path_; }
  const std::string& message() const { return message_; }

 private:
  std::string file_, json_path_, message_;
};

}  // namespace mfagen::spec
