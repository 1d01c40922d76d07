#include "expr/linear_form.h"

#include <fmt/format.h>

#include <stdexcept>

namespace mfagen::expr {

namespace {
constexpr std::array<const char*, LinearForm::kSizes> kSizeNames{"B", "Hq", "Hkv", "Sq", "Sk"};
}

LinearForm LinearForm::of_size(int which, int64_t add) {
  LinearForm f = of(add);
  f.size[which] = 1;
  return f;
}

bool LinearForm::is_constant() const {
  for (int64_t c : size)
    if (c != 0) return false;
  return true;
}

namespace {
int64_t checked_add(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) throw std::overflow_error("linear form overflows int64");
  return r;
}
int64_t checked_mul(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) throw std::overflow_error("linear form overflows int64");
  return r;
}
}  // namespace

LinearForm LinearForm::operator+(const LinearForm& o) const {
  LinearForm r = *this;
  r.constant = checked_add(r.constant, o.constant);
  for (int i = 0; i < kSizes; ++i) r.size[i] = checked_add(r.size[i], o.size[i]);
  return r;
}

LinearForm LinearForm::operator-(const LinearForm& o) const { return *this + o * -1; }

LinearForm LinearForm::operator*(int64_t k) const {
  LinearForm r = *this;
  r.constant = checked_mul(r.constant, k);
  for (int64_t& c : r.size) c = checked_mul(c, k);
  return r;
}

int64_t LinearForm::at(const std::array<int64_t, kSizes>& sizes) const {
  int64_t v = constant;
  for (int i = 0; i < kSizes; ++i) v = checked_add(v, checked_mul(size[i], sizes[i]));
  return v;
}

std::string LinearForm::text() const {
  std::string out;
  for (int i = 0; i < kSizes; ++i) {
    const int64_t c = size[i];
    if (c == 0) continue;
    const std::string sign = c < 0 ? (out.empty() ? "-" : " - ") : (out.empty() ? "" : " + ");
    const int64_t m = c < 0 ? -c : c;
    out += sign + (m == 1 ? std::string(kSizeNames[i]) : fmt::format("{}*{}", m, kSizeNames[i]));
  }
  if (out.empty()) return std::to_string(constant);
  if (constant > 0) out += fmt::format(" + {}", constant);
  if (constant < 0) out += fmt::format(" - {}", -constant);
  return out;
}

// b - a = c0 + sum ci si with every si >= 1: at least c0 + sum ci when every
// ci >= 0.
bool provably_at_most(const LinearForm& a, const LinearForm& b) {
  LinearForm d;
  try {
    d = b - a;
  } catch (const std::overflow_error&) {
    return false;  // not provable this way
  }
  __int128 least = d.constant;
  for (int64_t c : d.size) {
    if (c < 0) return false;
    least += c;
  }
  return least >= 0;
}

}  // namespace mfagen::expr
