// Integer bounds of index expressions, as linear forms over a call's sizes
// (B, Hq, Hkv, Sq, Sk, each at least 1): what lets the type checker prove at
// generate time that every read of a captured tensor stays inside the shape
// the tensor is declared with, whatever the call's sizes are.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>

namespace mfagen::expr {

// c0 + cB·B + cHq·Hq + cHkv·Hkv + cSq·Sq + cSk·Sk.
struct LinearForm {
  static constexpr int kSizes = 5;  // B, Hq, Hkv, Sq, Sk, in that order
  int64_t constant = 0;
  std::array<int64_t, kSizes> size{};

  // Arithmetic throws std::overflow_error rather than wrap (the bounds of
  // an expression with such numbers are then unknown).
  static LinearForm of(int64_t c) { return {c, {}}; }
  static LinearForm of_size(int which, int64_t add = 0);  // Variable B.. Sk as 0..4
  bool is_constant() const;
  LinearForm operator+(const LinearForm& o) const;
  LinearForm operator-(const LinearForm& o) const;
  LinearForm operator*(int64_t k) const;
  bool operator==(const LinearForm&) const = default;
  // The value for given sizes (B, Hq, Hkv, Sq, Sk); std::overflow_error past int64.
  int64_t at(const std::array<int64_t, kSizes>& sizes) const;
  // "Sq + Sk - 2", "254", "-Sk + 1".
  std::string text() const;
};

// Whether a <= b for every value of the sizes (each >= 1). Sound, not
// complete: false means "not provable this way".
bool provably_at_most(const LinearForm& a, const LinearForm& b);

// Bounds of an integer expression; an absent side is unbounded (unknown).
struct Interval {
  std::optional<LinearForm> low, high;
  static Interval exactly(const LinearForm& f) { return {f, f}; }
  static Interval unknown() { return {}; }
};

}  // namespace mfagen::expr
