// `mfagen run`: execute a generated attention kernel on .npy tensors
// (DESIGN.md section 10). The spec set is generated exactly as `mfagen
// generate` would, into a temporary directory the backend reads, the kernel
// for the call's shape is selected, and it runs on the chosen backend (the
// cpu backend with every detector on, unless told otherwise).
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cmath>
#include <filesystem>
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
#include "plan/kernel_plan.h"
#include "session/attention_call.h"
#include "session/call_layout.h"
#include "session/score_function_inputs.h"
#include "session/sink_logits.h"
#include "session/spec_library.h"
#include "session/tensor_encoding.h"
#include "spec/spec_parser.h"

namespace mfagen::cli {

using session::decode_elements;
using session::npy_values;
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

// One input tensor read from its file: the values as doubles, described as a
// HostTensor for the attention call (which rounds them to the kernel's dtype).
struct InputTensor {
  std::vector<double> values;
  session::HostTensor tensor;
};

// `array` is the file's content when the caller has read it already.
InputTensor read_input(const std::string& option, const std::string& file,
                       std::optional<io::NpyArray> array = std::nullopt) {
  InputTensor t;
  t.tensor.name = fmt::format("{} {}", option, file);
  if (!array) array = io::read_npy(file);
  for (uint64_t extent : array->shape)
    if (extent == 0)
      throw UserError(fmt::format("{}: shape {} has an empty dimension", t.tensor.name, io::shape_repr(array->shape)));
  t.values = npy_values(*array, t.tensor.name.c_str());
  for (double x : t.values)
    if (!std::isfinite(x)) throw UserError(fmt::format("{}: holds NaN or infinite values", t.tensor.name));
  t.tensor.dtype = session::HostDType::float64;
  t.tensor.shape = array->shape;
  t.tensor.data = reinterpret_cast<const std::byte*>(t.values.data());
  return t;
}

// A .npy array described in place (its bytes stay in `array`).
session::HostTensor describe_npy(const io::NpyArray& array, std::string name) {
  session::HostTensor t;
  t.name = std::move(name);
  if (array.dtype == "|b1") t.dtype = session::HostDType::boolean;
  else if (array.dtype == "<f2") t.dtype = session::HostDType::float16;
  else if (array.dtype == "<f4") t.dtype = session::HostDType::float32;
  else if (array.dtype == "<f8") t.dtype = session::HostDType::float64;
  else if (array.dtype == "<i4") t.dtype = session::HostDType::int32;
  else if (array.dtype == "|u1") t.dtype = session::HostDType::uint8;
  else throw UserError(fmt::format("{}: dtype {} is not supported", t.name, array.dtype));
  t.shape = array.shape;
  t.data = array.data.data();
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
  std::optional<session::SpecLibrary> forward_set;  // a backward spec's forward, for out and lse
  const session::KernelSet kernel_set{set, args.spec, [&](const plan::KernelPlan& backward) -> const session::SpecLibrary& {
    forward_set.emplace(std::vector<plan::KernelPlan>{plan::plan_kernel(session::forward_of(backward.spec))},
                        kernels.path() / "forward");
    return *forward_set;
  }};

  // Packed sequences (layout varlen) when their boundaries are given, a paged
  // KV cache when its block table is, packed queries on a paged cache when
  // both are (session/call_layout.h).
  const bool packed = !args.cu_seqlens_q.empty() || !args.cu_seqlens_k.empty();
  const bool paged = !args.block_table.empty() || !args.cache_seqlens.empty();
  if (packed && paged && !args.cu_seqlens_k.empty())
    throw UserError("--cu-seqlens-k with --block-table: on a paged cache each sequence's keys are its "
                    "--cache-seqlens; give --cu-seqlens-q only");
  session::AttentionInputs inputs;
  inputs.layout = packed && paged ? session::TensorLayout::packed_paged
                  : packed        ? session::TensorLayout::packed
                  : paged         ? session::TensorLayout::paged
                                  : session::TensorLayout::dense;
  // k and v: values in a float dtype, or a quantized cache's raw stored rows.
  const InputTensor q = read_input("--q", args.q);
  io::NpyArray k_array = io::read_npy(args.k), v_array = io::read_npy(args.v);
  std::vector<KvFormat> set_formats;
  for (const KernelEntry& e : set.library.kernels()) set_formats.push_back(e.info.kv_format);
  const std::optional<KvFormat> kv_format = session::choose_kv_format(args.kv_dtype, k_array, v_array, set_formats);
  InputTensor k, v;
  if (kv_format) {
    inputs.k_cache = session::read_quantized_cache(k_array, *kv_format, "--k " + args.k);
    inputs.v_cache = session::read_quantized_cache(v_array, *kv_format, "--v " + args.v);
    inputs.kv_format = *kv_format;
    k.tensor = {inputs.k_cache->shape.what, session::HostDType::uint8, inputs.k_cache->shape.shape, {}, nullptr};
    v.tensor = {inputs.v_cache->shape.what, session::HostDType::uint8, inputs.v_cache->shape.shape, {}, nullptr};
  } else {
    k = read_input("--k", args.k, std::move(k_array));
    v = read_input("--v", args.v, std::move(v_array));
  }
  if (kv_format != KvFormat::fp8_e4m3 && (args.k_scale || args.v_scale))
    throw UserError("--k-scale and --v-scale scale fp8_e4m3 caches; this call's k and v are not fp8");
  inputs.q = q.tensor;
  inputs.k = k.tensor;
  inputs.v = v.tensor;
  session::check_ranks(inputs.layout, {inputs.q.name, inputs.q.shape}, {inputs.k.name, inputs.k.shape},
                       {inputs.v.name, inputs.v.shape});
  if (packed)
    inputs.sequences = paged ? session::read_packed_queries(args.cu_seqlens_q, q.tensor.shape[0])
                             : session::read_packed_sequences(args.cu_seqlens_q, args.cu_seqlens_k, q.tensor.shape[0],
                                                              k.tensor.shape[0]);
  if (paged)
    inputs.cache = session::read_paged_cache(args.block_table, args.cache_seqlens,
                                             packed ? inputs.sequences->batch : q.tensor.shape[0], k.tensor.shape[0],
                                             k.tensor.shape[1]);
  std::optional<io::NpyArray> mask_array, slopes_array;
  if (!args.mask.empty()) {
    mask_array = io::read_npy(args.mask);
    inputs.mask = describe_npy(*mask_array, "--mask " + args.mask);
  }
  if (!args.alibi_slopes.empty()) {
    slopes_array = io::read_npy(args.alibi_slopes);
    inputs.alibi_slopes = describe_npy(*slopes_array, "--alibi-slopes " + args.alibi_slopes);
  }
  if (!args.sinks.empty()) inputs.sinks = session::read_sink_logits(args.sinks, q.tensor.shape[1]);
  if (!args.captures.empty() || !args.scalars.empty())
    inputs.score_functions = [&](const spec::KernelSpec& kernel, const AttentionShape& shape) {
      return session::ScoreFunctionInputs{session::read_captured_tensors(args.captures, kernel, shape),
                                          session::read_scalars(args.scalars, kernel)};
    };
  std::optional<InputTensor> d_out;
  if (!args.d_out.empty()) {
    d_out = read_input("--do", args.d_out);
    inputs.d_out = d_out->tensor;
  }

  session::AttentionOptions options;
  options.scale = args.scale;
  options.softcap = args.softcap;
  options.window_left = args.window_left;
  options.window_right = args.window_right;
  options.dropout = args.dropout;
  options.seed = args.seed;
  options.offset = args.offset;
  options.k_scale = args.k_scale;
  options.v_scale = args.v_scale;
  options.dtype = parse_choice(args.dtype, spec::kAllDTypes, "--dtype");
  options.causal = parse_choice(args.causal, spec::kAllCausals, "--causal");

  const session::AttentionResult result = session::run_attention(kernel_set, inputs, options, *backend);
  const plan::KernelPlan& plan = *result.plan;
  const spec::DType dtype = plan.spec.dtype;
  const AttentionShape& shape = result.shape;

  // Created only once the call succeeded: a failing call writes nothing.
  std::error_code ec;
  std::filesystem::create_directories(args.out_dir, ec);
  if (ec || !std::filesystem::is_directory(args.out_dir))
    throw UserError(fmt::format("--out-dir {}: cannot create the directory{}", args.out_dir,
                                ec ? ": " + ec.message() : ""));
  const std::filesystem::path dir(args.out_dir);
  std::vector<std::string> written = {(dir / "out.npy").string()};
  write_output(dir / "out.npy", decode_elements(result.out.bytes, dtype), result.out.shape);
  if (result.has_lse) {
    write_output(dir / "lse.npy", decode_elements(result.lse.bytes, spec::DType::float32), result.lse.shape);
    written.push_back((dir / "lse.npy").string());
  }
  if (result.dq) {
    write_output(dir / "dq.npy", decode_elements(result.dq->bytes, dtype), q.tensor.shape);
    write_output(dir / "dk.npy", decode_elements(result.dk->bytes, dtype), k.tensor.shape);
    write_output(dir / "dv.npy", decode_elements(result.dv->bytes, dtype), v.tensor.shape);
    for (const char* name : {"dq.npy", "dk.npy", "dv.npy"}) written.push_back((dir / name).string());
    if (!result.d_sinks.empty()) {
      write_output(dir / "d_sinks.npy", result.d_sinks, {shape.heads_q});
      written.push_back((dir / "d_sinks.npy").string());
    }
    for (const session::CaptureGradient& g : result.capture_gradients) {  // d_NAME.npy, in the captured tensor's shape
      const std::filesystem::path file = dir / ("d_" + g.name + ".npy");
      write_output(file, g.values, g.shape);
      written.push_back(file.string());
    }
  }
  std::string files;
  for (const std::string& w : written) files += (files.empty() ? "" : ", ") + w;
  fmt::print("{}: batch {}, heads {}/{}, seq_q {}, seq_k {} on the {} backend in {:.3f} s (compile {:.2f} s); "
             "wrote {}{}\n",
             plan.entry, shape.batch, shape.heads_q, shape.heads_kv, shape.seq_q, shape.seq_k, backend->name(),
             result.stats.seconds, result.stats.compile_seconds, files,
             result.has_lse ? "" : " (the kernel has lse: false, so no lse.npy)");
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
      "Both (a spec with layout varlen and kv_cache paged, a serving step): packed q (Tq, Hq, D) with\n"
      "--cu-seqlens-q only, against the paged cache; each sequence's queries are the last of its\n"
      "cache_seqlens keys (bottom-right); out.npy is (Tq, Hq, Dv), lse.npy (Hq, Tq).\n"
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
