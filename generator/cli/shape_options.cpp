#include "shape_options.h"

#include <CLI/CLI.hpp>

namespace mfagen::cli {

void add_shape_options(CLI::App& cmd, plan::CostShape& s) {
  cmd.add_option("--batch", s.batch, "batch size")->capture_default_str()->check(CLI::PositiveNumber);
  cmd.add_option("--heads-q", s.heads_q, "query heads")->capture_default_str()->check(CLI::PositiveNumber);
  cmd.add_option("--heads-kv", s.heads_kv, "key/value heads (must divide --heads-q)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd.add_option("--seq-q", s.seq_q, "query sequence length")->capture_default_str()->check(CLI::PositiveNumber);
  cmd.add_option("--seq-k", s.seq_k, "key sequence length")->capture_default_str()->check(CLI::PositiveNumber);
}

void add_window_options(CLI::App& cmd, plan::CostShape& s) {
  cmd.add_option("--window-left", s.window_left, "window kernels: keys before the diagonal (-1: all)")
      ->capture_default_str();
  cmd.add_option("--window-right", s.window_right, "window kernels: keys after the diagonal (-1: all)")
      ->capture_default_str();
}

}  // namespace mfagen::cli
