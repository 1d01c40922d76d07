// `mfagen run`: execute a generated attention kernel on .npy tensors
// (DESIGN.md section 10). The spec set is generated exactly as `mfagen
// generate` would, into a temporary directory the backend reads, the kernel
// for the call's shape is selected, and it runs on the chosen backend (the
// cpu backend with every detector on, unless told otherwise).
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <array>
#include <cmath>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <span>
#include <string>
#include <vector>

#include "backend_choice.h"
#include "commands.h"
#include "errors.h"
#include "spec_choice.h"
#include "io/npy.h"
#include "io/temp_directory.h"
#include "mfagen/cpu_backend.h"
#include "mfagen/library.h"
#include "mfagen/forward_dispatch.h"
#include "plan/dispatch_info.h"
#include "plan/kernel_plan.h"
#include "run_feature_inputs.h"
#include "session/call_layout.h"
#include "session/kernel_selection.h"
#include "session/packed_sequences.h"
#include "session/paged_cache_inputs.h"
#include "session/quantized_cache_inputs.h"
#include "session/score_function_inputs.h"
#include "session/sink_logits.h"
#include "session/spec_library.h"
#include "spec/spec_parser.h"
#include "session/tensor_encoding.h"

namespace mfagen::cli {

using session::decode_elements;
using session::encode_elements;
using session::npy_values;
using session::round_to_element;
namespace {

struct RunArgs {
  std::string spec;
  std::string q, k, v, mask, alibi_slopes, sinks, cu_seqlens_q, cu_seqlens_k, block_table, cache_seqlens, d_out;
  std::optional<double> scale, softcap, k_scale, v_scale, dropout;
  uint64_t seed = 0;
  uint32_t offset = 0;
  std::optional<std::string> kv_dtype;
  std::vector<std::string> captures, scalars;  // score_mod / mask_mod inputs: NAME=FILE.npy, NAME=VALUE
  std::optional<int64_t> window_left, window_right;
  std::string dtype, causal;
  std::string backend = "cpu";
  std::string out_dir;
  bool no_detectors = false;
};

// One input tensor: its file, values and shape (session/call_layout.h says
// which shapes a call takes).
struct InputTensor {
  std::string what;  // "--q q.npy"
  std::vector<uint64_t> shape;
  std::vector<double> values;
};

// `array` is the file's content when the caller has read it already.
InputTensor read_input(const std::string& option, const std::string& file,
                       std::optional<io::NpyArray> array = std::nullopt) {
  InputTensor t;
  t.what = fmt::format("{} {}", option, file);
  if (!array) array = io::read_npy(file);
  for (uint64_t extent : array->shape)
    if (extent == 0) throw UserError(fmt::format("{}: shape {} has an empty dimension", t.what, io::shape_repr(array->shape)));
  t.shape = array->shape;
  t.values = npy_values(*array, t.what.c_str());
  for (double x : t.values)
    if (!std::isfinite(x)) throw UserError(fmt::format("{}: holds NaN or infinite values", t.what));
  return t;
}

void write_output(const std::filesystem::path& path, std::span<const float> values, std::vector<uint64_t> shape) {
  try {
    io::write_npy_atomic(path, io::NpyArray::from(values, std::move(shape)));
  } catch (const std::system_error& e) {
    throw UserError(fmt::format("cannot write {}: {}", path.string(), e.what()));
  }
}

int run(const RunArgs& args) {
  const std::unique_ptr<Backend> backend = make_backend(args.backend, !args.no_detectors);
  if (args.scale && !(std::isfinite(*args.scale) && *args.scale > 0))
    throw UserError(fmt::format("--scale {}: expected a finite number > 0", *args.scale));
  if (args.dropout && !(*args.dropout >= 0 && *args.dropout < 1))
    throw UserError(fmt::format("--dropout {}: expected a probability in [0, 1)", *args.dropout));
  if (!args.dropout && (args.seed != 0 || args.offset != 0))
    throw UserError("--seed and --offset key the dropout mask: they need --dropout");

  // On disk, as an app vendors them: the Metal backend reads the kernel files.
  const io::TempDirectory kernels("mfagen-run-");
  const session::SpecLibrary set = session::SpecLibrary::from_spec_files({args.spec}, kernels.path() / "set");
  // Packed sequences (layout varlen) when their boundaries are given, a paged
  // KV cache when its block table is (session/call_layout.h).
  const bool packed = !args.cu_seqlens_q.empty() || !args.cu_seqlens_k.empty();
  const bool paged = !args.block_table.empty() || !args.cache_seqlens.empty();
  if (packed && paged)
    throw UserError("--cu-seqlens-q/k and --block-table/--cache-seqlens: paged caches take dense queries");
  const session::TensorLayout layout = packed ? session::TensorLayout::packed
                                       : paged ? session::TensorLayout::paged
                                               : session::TensorLayout::dense;
  // k and v: values in a float dtype, or a quantized cache's raw stored rows.
  const InputTensor q = read_input("--q", args.q);
  io::NpyArray k_array = io::read_npy(args.k), v_array = io::read_npy(args.v);
  std::vector<KvFormat> set_formats;
  for (const KernelEntry& e : set.library.kernels()) set_formats.push_back(e.info.kv_format);
  const std::optional<KvFormat> kv_format = session::choose_kv_format(args.kv_dtype, k_array, v_array, set_formats);
  InputTensor k, v;
  std::optional<session::QuantizedCache> k_cache, v_cache;
  if (kv_format) {
    k_cache = session::read_quantized_cache(k_array, *kv_format, "--k " + args.k);
    v_cache = session::read_quantized_cache(v_array, *kv_format, "--v " + args.v);
    k = {k_cache->shape.what, k_cache->shape.shape, {}};
    v = {v_cache->shape.what, v_cache->shape.shape, {}};
  } else {
    k = read_input("--k", args.k, std::move(k_array));
    v = read_input("--v", args.v, std::move(v_array));
  }
  const bool fp8 = kv_format == KvFormat::fp8_e4m3;
  if (!fp8 && (args.k_scale || args.v_scale))
    throw UserError("--k-scale and --v-scale scale fp8_e4m3 caches; this call's k and v are not fp8");
  const session::TensorShape q_shape{q.what, q.shape}, k_shape{k.what, k.shape}, v_shape{v.what, v.shape};
  session::check_ranks(layout, q_shape, k_shape, v_shape);
  session::SequenceSizes sizes;
  std::optional<session::PackedSequences> sequences;
  if (packed) {
    sequences = session::read_packed_sequences(args.cu_seqlens_q, args.cu_seqlens_k, q.shape[0], k.shape[0]);
    sizes = {sequences->batch, sequences->longest_q, sequences->longest_k, 0};
  }
  std::optional<session::PagedCacheInputs> cache;
  if (paged) {
    cache = session::read_paged_cache(args.block_table, args.cache_seqlens, q.shape[0], k.shape[0], k.shape[1]);
    sizes = {q.shape[0], 0, cache->longest, cache->max_pages};
  }
  const session::CallLayout geometry =
      session::call_layout(layout, q_shape, k_shape, v_shape, sizes, kv_format.value_or(KvFormat::elements));

  session::CallRequest request;
  request.batch = geometry.shape.batch;
  request.head_dim = geometry.head_dim;
  request.head_dim_v = geometry.head_dim_v;
  request.heads_q = geometry.shape.heads_q;
  request.heads_kv = geometry.shape.heads_kv;
  request.seq_q = geometry.shape.seq_q;
  request.seq_k = geometry.shape.seq_k;
  request.varlen = packed;
  request.paged = paged;
  request.kv_format = kv_format.value_or(KvFormat::elements);
  request.dropout = args.dropout.has_value();
  request.has_mask = !args.mask.empty();
  request.alibi = !args.alibi_slopes.empty();
  request.softcap = args.softcap.has_value();
  request.window = args.window_left.has_value() || args.window_right.has_value();
  request.sinks = !args.sinks.empty();
  request.backward = !args.d_out.empty();
  request.mods = !args.captures.empty() || !args.scalars.empty();
  request.dtype = parse_choice(args.dtype, spec::kAllDTypes, "--dtype");
  request.causal = parse_choice(args.causal, spec::kAllCausals, "--causal");
  const KernelEntry& entry = session::select_kernel(set.library, request, args.spec, backend->capabilities());
  const plan::KernelPlan& plan = set.plan_of(entry);
  const spec::DType dtype = plan.spec.dtype;

  const AttentionShape& shape = geometry.shape;
  ForwardCall call;
  geometry.apply_to(call);
  call.scale = args.scale.value_or(0);
  call.softcap = args.softcap.value_or(0);
  call.window_left = args.window_left.value_or(-1);
  call.window_right = args.window_right.value_or(-1);
  if (fp8) {
    call.k_scale = args.k_scale.value_or(1);
    call.v_scale = args.v_scale.value_or(1);
  }
  if (args.dropout) {
    call.dropout_p = *args.dropout;
    call.dropout_seed = args.seed;
    call.dropout_offset = args.offset;
  }
  std::vector<std::byte> mask_bytes, slope_bytes;
  if (plan.spec.mask != spec::MaskKind::none) {
    MaskTensor mask = read_mask(args.mask, plan.spec, shape);
    call.mask_strides = broadcast_strides(mask.extents);
    mask_bytes = std::move(mask.bytes);
  }
  if (plan.spec.alibi) {
    AlibiInput slopes = read_alibi_slopes(args.alibi_slopes, shape);
    call.alibi_per_batch = slopes.per_batch;
    slope_bytes = std::move(slopes.bytes);
  }
  std::vector<float> sinks;
  if (plan.spec.sinks) sinks = session::read_sink_logits(args.sinks, shape.heads_q);
  std::vector<std::vector<std::byte>> captures = session::read_captured_tensors(args.captures, plan.spec, shape);
  std::vector<float> mod_scalars = session::read_scalars(args.scalars, plan.spec);
  // A backward call first runs the forward kernel of the same features for
  // out and lse (DESIGN.md section 10), then the backward kernels.
  const bool backward = plan.spec.kind == spec::Kind::backward;
  std::optional<session::SpecLibrary> forward_set;
  if (backward)
    forward_set.emplace(std::vector<plan::KernelPlan>{plan::plan_kernel(session::forward_of(plan.spec))},
                        kernels.path() / "forward");
  const session::SpecLibrary& forward_kernels = backward ? *forward_set : set;
  const KernelEntry& forward = backward ? forward_kernels.library.kernels().front() : entry;
  const DispatchPlan dispatch = session::dispatch_for(forward, call);
  const std::vector<uint64_t>& out_shape = geometry.out_shape;
  const std::vector<uint64_t>& lse_shape = geometry.lse_shape;
  std::optional<InputTensor> d_out;
  if (backward) {
    d_out = read_input("--do", args.d_out);
    if (d_out->shape != out_shape)
      throw UserError(fmt::format("{} has shape {}; dO must have the shape of out, {}", d_out->what,
                                  io::shape_repr(d_out->shape), io::shape_repr(out_shape)));
  }

  auto rounded = [&](const InputTensor& t) {
    std::vector<double> r(t.values.size());
    for (size_t i = 0; i < r.size(); ++i) r[i] = round_to_element(dtype, t.values[i]);
    return encode_elements(r, dtype);
  };
  std::vector<std::byte> q_bytes = rounded(q);
  std::vector<std::byte> k_bytes = k_cache ? k_cache->bytes : rounded(k), v_bytes = v_cache ? v_cache->bytes : rounded(v);
  std::vector<std::byte> out_bytes(dispatch.buffer("out")->bytes);
  uint64_t lse_rows = 1;
  for (uint64_t extent : lse_shape) lse_rows *= extent;
  std::vector<float> lse(lse_rows);

  std::error_code ec;
  std::filesystem::create_directories(args.out_dir, ec);
  if (ec || !std::filesystem::is_directory(args.out_dir))
    throw UserError(fmt::format("--out-dir {}: cannot create the directory{}", args.out_dir,
                                ec ? ": " + ec.message() : ""));

  std::map<uint32_t, std::span<std::byte>> tensors = {
      {plan::kQIndex, q_bytes}, {plan::kKIndex, k_bytes}, {plan::kVIndex, v_bytes}, {plan::kOutIndex, out_bytes}};
  if (forward.info.lse) tensors[plan::kLseIndex] = std::as_writable_bytes(std::span(lse));
  if (!mask_bytes.empty()) tensors[plan::kMaskIndex] = mask_bytes;
  if (!slope_bytes.empty()) tensors[plan::kAlibiIndex] = slope_bytes;
  if (!sinks.empty()) tensors[plan::kSinksIndex] = std::as_writable_bytes(std::span(sinks));
  if (!mod_scalars.empty()) tensors[kForwardModScalars] = std::as_writable_bytes(std::span(mod_scalars));
  for (size_t i = 0; i < captures.size(); ++i) tensors[kForwardFirstCapture + uint32_t(i)] = captures[i];
  if (paged) {
    tensors[plan::kBlockTableIndex] = std::as_writable_bytes(std::span(cache->block_table));
    tensors[plan::kCacheSeqlensIndex] = std::as_writable_bytes(std::span(cache->cache_seqlens));
  }
  if (packed) {
    tensors[plan::kCuSeqlensQIndex] = std::as_writable_bytes(std::span(sequences->cu_seqlens_q));
    tensors[plan::kCuSeqlensKIndex] = std::as_writable_bytes(std::span(sequences->cu_seqlens_k));
  }
  RunStats run = backend->run(forward_kernels.library, forward, dispatch, tensors);

  const std::filesystem::path dir(args.out_dir);
  std::vector<std::string> written = {(dir / "out.npy").string()};
  std::vector<std::byte> dq, dk, dv;
  std::vector<float> d_sinks(plan.spec.sinks && backward ? shape.heads_q : 0);
  std::vector<std::pair<const CapturedTensor*, std::vector<float>>> capture_grads;
  if (backward) {
    const DispatchPlan grads = session::dispatch_for(entry, call);
    std::vector<std::byte> do_bytes = rounded(*d_out);
    dq.resize(grads.buffer("dq")->bytes);
    dk.resize(grads.buffer("dk")->bytes);
    dv.resize(grads.buffer("dv")->bytes);
    tensors[plan::kDOutIndex] = do_bytes;
    tensors[plan::kDqIndex] = dq;
    tensors[plan::kDkIndex] = dk;
    tensors[plan::kDvIndex] = dv;
    if (!d_sinks.empty()) tensors[plan::kDSinksIndex] = std::as_writable_bytes(std::span(d_sinks));
    for (const CapturedTensor& t : entry.info.captures)  // gradients of the float tensors score_mod reads
      if (t.gradient) capture_grads.emplace_back(&t, std::vector<float>(grads.buffer(t.gradient_buffer)->bytes / 4));
    for (size_t r = 0; r < capture_grads.size(); ++r)
      tensors[kBackwardFirstCaptureGrad + uint32_t(r)] = std::as_writable_bytes(std::span(capture_grads[r].second));
    const RunStats backward_run = backend->run(set.library, entry, grads, tensors);
    run.seconds += backward_run.seconds;
    run.compile_seconds += backward_run.compile_seconds;
  }

  write_output(dir / "out.npy", decode_elements(out_bytes, dtype), out_shape);
  if (forward.info.lse) {
    write_output(dir / "lse.npy", lse, lse_shape);
    written.push_back((dir / "lse.npy").string());
  }
  if (backward) {
    write_output(dir / "dq.npy", decode_elements(dq, dtype), q.shape);
    write_output(dir / "dk.npy", decode_elements(dk, dtype), k.shape);
    write_output(dir / "dv.npy", decode_elements(dv, dtype), v.shape);
    for (const char* name : {"dq.npy", "dk.npy", "dv.npy"}) written.push_back((dir / name).string());
    if (!d_sinks.empty()) {
      write_output(dir / "d_sinks.npy", d_sinks, {shape.heads_q});
      written.push_back((dir / "d_sinks.npy").string());
    }
    for (const auto& [t, values] : capture_grads) {  // d_NAME.npy, in the captured tensor's shape
      const expr::CaptureDecl* decl = nullptr;
      for (const expr::CaptureDecl& c : plan.spec.mods.captures)
        if (c.name == t->name) decl = &c;
      const std::array<int64_t, 5> sizes{int64_t(shape.batch), int64_t(shape.heads_q), int64_t(shape.heads_kv),
                                         int64_t(shape.seq_q), int64_t(shape.seq_k)};
      std::vector<uint64_t> extents;
      for (const expr::LinearForm& e : decl->extents) extents.push_back(uint64_t(e.at(sizes)));
      const std::filesystem::path file = dir / ("d_" + t->name + ".npy");
      write_output(file, values, extents);
      written.push_back(file.string());
    }
  }
  std::string files;
  for (const std::string& w : written) files += (files.empty() ? "" : ", ") + w;
  fmt::print("{}: batch {}, heads {}/{}, seq_q {}, seq_k {} on the {} backend in {:.3f} s (compile {:.2f} s); "
             "wrote {}{}\n",
             plan.entry, shape.batch, shape.heads_q, shape.heads_kv, shape.seq_q, shape.seq_k, backend->name(),
             run.seconds, run.compile_seconds, files,
             forward.info.lse ? "" : " (the kernel has lse: false, so no lse.npy)");
  return kExitOk;
}

}  // namespace

int run_reporting_findings(const RunArgs& args) {
  try {
    return run(args);
  } catch (const KernelFindingsError& e) {
    fmt::print(stderr, "mfagen run: internal error: {}\n", e.what());
    return kExitInternalError;
  }
}

void register_run_command(CLI::App& app, CommandAction& action) {
  auto args = std::make_shared<RunArgs>();
  CLI::App* run_app = app.add_subcommand("run", "Run a generated attention kernel on .npy tensors");
  run_app->footer(
      "SPEC.json holds one kernel or a set; the kernel is selected by the call as an app would:\n"
      "the first kernel, in spec order, whose head_dim and head_dim_v match the last dimensions of\n"
      "q and v, that allows the head counts (gqa), and whose features match the options given\n"
      "(narrow it down with --dtype and --causal); with at most 16 queries a decode kernel is\n"
      "preferred when the set has one.\n"
      "Inputs are .npy arrays of dtype <f4, <f2 or <f8 in BHSD layout: q (B, Hq, Sq, D),\n"
      "k (B, Hkv, Sk, D), v (B, Hkv, Sk, Dv); values are rounded to the kernel's dtype\n"
      "(round-to-nearest-even). Writes OUT_DIR/out.npy (<f4, (B, Hq, Sq, Dv), exact widening)\n"
      "and OUT_DIR/lse.npy (<f4, (B, Hq, Sq), natural log) atomically. With --do DO.npy (the shape\n"
      "of out) and a backward spec, also dq.npy, dk.npy and dv.npy (the forward runs first), and\n"
      "d_sinks.npy (<f4, (Hq,)) for a spec with sinks.\n"
      "Packed sequences (a spec with layout varlen): q (Tq, Hq, D), k (Tk, Hkv, D), v (Tk, Hkv, Dv) with\n"
      "--cu-seqlens-q and --cu-seqlens-k (<i4, B + 1 row offsets from 0); out.npy is (Tq, Hq, Dv), lse.npy\n"
      "(Hq, Tq).\n"
      "A paged KV cache (a spec with kv_cache paged): k (num_pages, page_size, Hkv, D), v (num_pages,\n"
      "page_size, Hkv, Dv) with --block-table (<i4, (B, max_pages)) and --cache-seqlens (<i4, (B,)).\n"
      "A quantized cache (a spec with kv_dtype q8_0, q4_0 or fp8_e4m3): k and v hold the raw stored rows as\n"
      "uint8 (|u1), the last axis a row's bytes (q8_0: 34 per 32 values, q4_0: 18 per 32, fp8: 1 per value),\n"
      "the other axes those of the layout; the format is the set's, or --kv-dtype; fp8 caches take\n"
      "--k-scale and --v-scale (default 1).\n"
      "Dropout (a spec with dropout): --dropout P with --seed S and --offset O; the backward (--do)\n"
      "regenerates the forward's mask.\n"
      "score_mod / mask_mod (a spec with them): each captured tensor as --capture NAME=FILE.npy (<f4 or <i4,\n"
      "of the shape its extents give for the call) and each scalar as --scalar NAME=VALUE; the backward also\n"
      "writes d_NAME.npy (<f4) for each float32 tensor score_mod reads.\n"
      "Negative numbers need the --name=value form: --window-left=-1.\n\n"
      "Example:\n"
      "  mfagen run specs/llama.json --q q.npy --k k.npy --v v.npy --causal bottom_right --out-dir out");
  run_app->add_option("spec", args->spec, "spec file (one kernel or a set)")->required()->check(CLI::ExistingFile);
  run_app->add_option("--q", args->q, "queries (B, Hq, Sq, D)")->required()->type_name("Q.npy");
  run_app->add_option("--k", args->k, "keys (B, Hkv, Sk, D)")->required()->type_name("K.npy");
  run_app->add_option("--v", args->v, "values (B, Hkv, Sk, Dv)")->required()->type_name("V.npy");
  run_app->add_option("--mask", args->mask, "bool or additive mask broadcastable to (B, Hq, Sq, Sk)")->type_name("M.npy");
  run_app->add_option("--alibi-slopes", args->alibi_slopes, "ALiBi slopes (Hq,) or (B, Hq)")->type_name("A.npy");
  run_app->add_option("--sinks", args->sinks, "attention sink logits (Hq,), <f4")->type_name("S.npy");
  run_app->add_option("--cu-seqlens-q", args->cu_seqlens_q, "varlen: B + 1 query row offsets (<i4)")
      ->type_name("CU.npy");
  run_app->add_option("--cu-seqlens-k", args->cu_seqlens_k, "varlen: B + 1 key row offsets (<i4)")->type_name("CU.npy");
  run_app->add_option("--block-table", args->block_table, "paged KV cache: (B, max_pages) page of each block (<i4)")
      ->type_name("BT.npy");
  run_app->add_option("--cache-seqlens", args->cache_seqlens, "paged KV cache: (B,) keys per sequence (<i4)")
      ->type_name("CS.npy");
  run_app->add_option("--kv-dtype", args->kv_dtype, "quantized k and v (uint8 raw rows): q8_0, q4_0 or fp8_e4m3")
      ->type_name("FORMAT");
  run_app->add_option("--k-scale", args->k_scale, "fp8_e4m3 caches: the scale of every stored k value")->type_name("X");
  run_app->add_option("--v-scale", args->v_scale, "fp8_e4m3 caches: the scale of every stored v value")->type_name("X");
  run_app->add_option("--capture", args->captures, "score_mod / mask_mod: a captured tensor (repeat per tensor)")
      ->type_name("NAME=FILE.npy");
  run_app->add_option("--scalar", args->scalars, "score_mod / mask_mod: a runtime scalar (repeat per scalar)")
      ->type_name("NAME=VALUE");
  run_app->add_option("--dropout", args->dropout, "dropout probability in [0, 1) (spec dropout)")->type_name("P");
  run_app->add_option("--seed", args->seed, "dropout: the Philox key (64 bits)")->type_name("S");
  run_app->add_option("--offset", args->offset, "dropout: the Philox counter's last word (32 bits)")->type_name("O");
  run_app->add_option("--scale", args->scale, "softmax scale (default 1/sqrt(D))")->type_name("X");
  run_app->add_option("--softcap", args->softcap, "logit soft-capping value")->type_name("X");
  run_app->add_option("--window-left", args->window_left, "sliding window: keys before the diagonal (-1: all)")->type_name("N");
  run_app->add_option("--window-right", args->window_right, "sliding window: keys after the diagonal (-1: all)")->type_name("N");
  run_app->add_option("--do", args->d_out, "output gradient, for backward kernels")->type_name("DO.npy");
  run_app->add_option("--dtype", args->dtype, "only kernels of this dtype: float16, bfloat16, float32");
  run_app->add_option("--causal", args->causal, "only kernels of this causal mode: none, top_left, bottom_right");
  run_app->add_option("--backend", args->backend, "cpu (default) or metal (builds with the Metal backend)")
      ->type_name("cpu|metal");
  run_app->add_option("--out-dir", args->out_dir, "where out.npy and lse.npy are written (created)")
      ->required()
      ->type_name("DIR");
  run_app->add_flag("--no-detectors", args->no_detectors, "run without the cpu backend's detectors (faster)");
  run_app->callback([args, &action] { action = [args] { return run_reporting_findings(*args); }; });
}

}  // namespace mfagen::cli
