// `mfagen profile SPEC...`: what a generated kernel costs on Apple GPUs, as a
// model predicts it from the work counted on the cpu backend (DESIGN.md
// section 14, docs/profile.md, docs/cost_model.md). Each spec file is one
// call, selected and dispatched as `mfagen run` would, on synthetic inputs;
// several files are compared side by side.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <array>
#include <fstream>
#include <sstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "commands.h"
#include "shape_options.h"
#include "errors.h"
#include "spec_choice.h"
#include "profile/sequence_lengths.h"
#include "profile/spec_profile.h"
#include "profile/work_json.h"
#include "profile_output.h"

namespace mfagen::cli {
namespace {

struct ProfileArgs {
  std::vector<std::string> specs;
  std::vector<std::string> from;  // saved profiles (JSON) to predict again
  profile::SpecCall call;
  std::string dtype, causal, kv_dtype;
  std::optional<uint32_t> head_dim, head_dim_v;
  std::string seqlens_q, seqlens_k;  // per-sequence lengths (profile::parse_lengths)
  bool separate = false;             // also the same batch as separate prefill and decode calls
  ProfileOutputArgs output;
  const CLI::App* command = nullptr;
};

// --from: counts saved by an earlier run (counting is slow; a changed model or
// chip table needs only the prediction again).
std::vector<profile::KernelWork> saved_work(const std::vector<std::string>& files) {
  std::vector<profile::KernelWork> work;
  for (const std::string& file : files) {
    std::ifstream in(file, std::ios::binary);
    if (!in) throw UserError(fmt::format("--from {}: cannot read the file", file));
    std::stringstream text;
    text << in.rdbuf();
    try {
      for (profile::KernelWork& w : profile::work_from_json(text.str(), file)) work.push_back(std::move(w));
    } catch (const profile::WorkJsonError& e) {
      throw UserError(e.what());
    }
  }
  return work;
}

int run_profile(const ProfileArgs& args) {
  check_profile_output(args.output);
  if (args.specs.empty() && args.from.empty()) throw UserError("give spec files to profile, or --from FILE.json");
  profile::SpecCall call = args.call;
  if (call.shape.heads_q % call.shape.heads_kv != 0)
    throw UserError(fmt::format("--heads-kv {} must divide --heads-q {}", call.shape.heads_kv, call.shape.heads_q));
  call.dtype = parse_choice(args.dtype, spec::kAllDTypes, "--dtype");
  call.causal = parse_choice(args.causal, spec::kAllCausals, "--causal");
  call.head_dim = args.head_dim;
  call.head_dim_v = args.head_dim_v;
  call.kv_dtype = parse_choice(args.kv_dtype, spec::kAllKvDTypes, "--kv-dtype");
  call.sample_threadgroups = args.output.sample;
  if (!args.seqlens_q.empty() || !args.seqlens_k.empty()) {
    if (args.command->count("--batch") > 0)
      throw UserError("--batch: the batch is the sequences --seqlens-q / --seqlens-k list; give one or the other");
    call.lengths = profile::complete_lengths(
        args.seqlens_q.empty() ? std::vector<uint64_t>{} : profile::parse_lengths(args.seqlens_q, "--seqlens-q"),
        args.seqlens_k.empty() ? std::vector<uint64_t>{} : profile::parse_lengths(args.seqlens_k, "--seqlens-k"),
        call.shape.seq_q, call.shape.seq_k);
  }
  if (args.separate && call.lengths.empty())
    throw UserError("--separate: give the batch's sequences with --seqlens-q (and --seqlens-k)");
  if (args.separate) profile::check_separable(call.lengths);  // before anything is counted
  std::vector<profile::KernelWork> work = saved_work(args.from);
  for (const std::string& spec : args.specs) {
    call.spec_file = spec;
    work.push_back(profile::profile_spec_call(call));
    if (args.separate) work.push_back(profile::profile_separate_launches(call));
  }
  report_profiles(std::move(work), args.output, "mfagen profile");
  return kExitOk;
}

}  // namespace

void register_profile_command(CLI::App& app, CommandAction& action) {
  auto args = std::make_shared<ProfileArgs>();
  CLI::App* cmd = app.add_subcommand("profile", "Predict a generated kernel's time on Apple GPUs from counted work");
  cmd->footer(
      "For each spec file: the kernel a call of this shape selects (as `mfagen run` selects it; narrow\n"
      "the set with --dtype, --causal, --head-dim), dispatched as the runtime would, runs on synthetic\n"
      "inputs on the cpu backend with its operations counted per simdgroup (docs/profile.md). A cost\n"
      "model turns the counts into a predicted time, TFLOPS, utilization and the limiting bound per\n"
      "chip (docs/cost_model.md; every constant cites its source or says it is an assumption). Every\n"
      "time printed is a MODEL PREDICTION, not a measurement on an Apple GPU. Large launches execute\n"
      "--sample threadgroups and extrapolate. --from re-predicts counts saved with --json-out (or by\n"
      "tools/profile_peers) without running anything.\n\n"
      "A serving step's batch: --seqlens-q and --seqlens-k give each sequence's queries and keys (a paged\n"
      "cache's cache_seqlens) as N, NxCOUNT, A..BxCOUNT (COUNT evenly spaced from A to B) items separated\n"
      "by commas, or a 1-d int32/int64 .npy file; kernels with planned batches run Library::plan_batch's\n"
      "work split. --separate also profiles the same batch as a prefill call and a decode call, summed.\n\n"
      "Examples:\n"
      "  mfagen profile specs/llama.json --heads-q 32 --heads-kv 8 --seq-q 8192 --seq-k 8192 --chip m3_max\n"
      "  mfagen profile specs/serving.json --kv-dtype q8_0 --heads-q 32 --heads-kv 4 \\\n"
      "      --seqlens-q 2048,1x63 --seqlens-k 2048,4096..32768x63 --separate --chip m3_max\n\n"
      "Exit status: 0 ok, 1 bad spec, shape or option, 2 internal error.");
  cmd->add_option("specs", args->specs, "spec files (JSON); one call each")->type_name("SPEC");
  cmd->add_option("--from", args->from, "predict again the counts saved in a profile's JSON (--json-out)")
      ->type_name("FILE.json")
      ->allow_extra_args(false);
  add_shape_options(*cmd, args->call.shape);
  add_window_options(*cmd, args->call.shape);
  cmd->add_option("--dtype", args->dtype, "only kernels of this dtype: float16, bfloat16, float32");
  cmd->add_option("--capture", args->call.captures, "score_mod / mask_mod: a captured tensor (default zeros)")
      ->type_name("NAME=FILE.npy");
  cmd->add_option("--scalar", args->call.scalars, "score_mod / mask_mod: a runtime scalar (default 1)")
      ->type_name("NAME=VALUE");
  cmd->add_option("--causal", args->causal, "only kernels of this causal mode: none, top_left, bottom_right");
  cmd->add_option("--head-dim", args->head_dim, "only kernels of this head_dim");
  cmd->add_option("--head-dim-v", args->head_dim_v, "only kernels of this head_dim_v");
  cmd->add_option("--kv-dtype", args->kv_dtype,
                  "only kernels storing k and v so: float16, bfloat16, float32 (unquantized), q8_0, q4_0, fp8_e4m3");
  cmd->add_option("--seqlens-q", args->seqlens_q,
                  "each sequence's queries, e.g. 2048,1x63 (NxCOUNT repeats N; A..BxCOUNT spaces COUNT evenly from A "
                  "to B) or a .npy file; the batch is these sequences (varlen or paged kernels)")
      ->type_name("LIST");
  cmd->add_option("--seqlens-k,--cache-seqlens", args->seqlens_k,
                  "each sequence's keys (a paged cache's cache_seqlens, the new tokens included), same syntax, e.g. "
                  "2048,4096..32768x63; without it every sequence has --seq-k keys")
      ->type_name("LIST");
  cmd->add_flag("--separate", args->separate,
                "with --seqlens-q: also profile the batch as separate launches, the prefills (more than one query) "
                "then the decodes (one query, dense queries on the same cache), summed, beside the one-launch call");
  add_profile_output_options(*cmd, args->output);
  args->command = cmd;
  cmd->callback([args, &action] { action = [args] { return run_profile(*args); }; });
}

}  // namespace mfagen::cli
