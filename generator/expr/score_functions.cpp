#include "expr/score_functions.h"

#include <fmt/format.h>

#include <algorithm>

#include "expr/derivative.h"
#include "expr/msl_emitter.h"
#include "expr/parser.h"
#include "expr/type_check.h"

namespace mfagen::expr {

bool ScoreFunctions::operator==(const ScoreFunctions& o) const {
  if (score_mod != o.score_mod || mask_mod != o.mask_mod || scalars != o.scalars ||
      captures.size() != o.captures.size())
    return false;
  for (size_t i = 0; i < captures.size(); ++i)
    if (captures[i].name != o.captures[i].name || captures[i].type != o.captures[i].type ||
        captures[i].extents != o.captures[i].extents)
      return false;
  return true;
}

namespace {

NodePtr checked(const std::string& field, const std::string& text, const Environment& env, Type want) {
  try {
    return type_check(parse_expression(text), env, want);
  } catch (const ExpressionError& e) {
    throw ScoreFunctionError(field, e);
  }
}

const char* element_type(CaptureType t) { return t == CaptureType::float32 ? "float" : "int"; }

std::string shape_text(const CaptureDecl& c) {
  std::vector<std::string> parts;
  for (const LinearForm& e : c.extents) parts.push_back(e.text());
  return fmt::format("({})", fmt::join(parts, ", "));
}

// `text` after `prefix`, broken at spaces into lines of at most 120 columns,
// continuation lines starting with `continuation` (a space between tokens is
// never inside one, so the C meaning is unchanged).
std::string wrapped(const std::string& prefix, const std::string& text, const std::string& continuation) {
  constexpr size_t kColumns = 120;
  std::string out = prefix;
  size_t column = prefix.size();
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find(' ', at + 1);
    if (end == std::string::npos) end = text.size();
    const std::string word = text.substr(at, end - at);  // with its leading space, except the first
    if (column + word.size() > kColumns && at > 0) {
      out += "\n" + continuation;
      column = continuation.size();
      const std::string bare = word.substr(1);
      out += bare;
      column += bare.size();
    } else {
      out += word;
      column += word.size();
    }
    at = end;
  }
  return out;
}

}  // namespace

CheckedScoreFunctions check_score_functions(const ScoreFunctions& f) {
  CheckedScoreFunctions out;
  out.env.captures = f.captures;
  out.env.scalars = f.scalars;
  if (!f.score_mod.empty()) {
    out.score_mod = checked("score_mod", f.score_mod, out.env, Type::real);
    out.score_slope = derivative_by_score(out.score_mod);
  }
  if (!f.mask_mod.empty()) {
    Environment mask_env = out.env;
    mask_env.score_allowed = false;
    out.mask_mod = checked("mask_mod", f.mask_mod, mask_env, Type::boolean);
  }
  return out;
}

namespace {
bool references(const Node& n, Variable v) {
  if (n.op == Op::variable && n.variable == v) return true;
  for (const NodePtr& a : n.args)
    if (references(*a, v)) return true;
  return false;
}
}  // namespace

std::vector<size_t> gradient_captures(const ScoreFunctions& f) {
  if (f.score_mod.empty()) return {};
  const CheckedScoreFunctions c = check_score_functions(f);
  std::vector<size_t> out;
  for (const Node* read : float_reads(c.score_mod))
    if (std::find(out.begin(), out.end(), size_t(read->index)) == out.end()) out.push_back(read->index);
  std::sort(out.begin(), out.end());
  return out;
}

std::string capture_gradient_buffer_name(const std::string& capture) { return "d_" + capture_buffer_name(capture); }

std::string msl_capture_gradients(const ScoreFunctions& f) {
  const std::vector<size_t> captures = gradient_captures(f);
  if (captures.empty()) return "";
  const CheckedScoreFunctions c = check_score_functions(f);
  // Each gradient's elements for the call, and where it starts among the partial sums.
  std::vector<std::string> sizes, offsets;
  for (size_t k : captures) {
    std::vector<std::string> factors;
    for (const LinearForm& e : f.captures[k].extents) {
      const std::string text = msl_extent(e);
      factors.push_back(text.find(' ') == std::string::npos ? text : "(" + text + ")");
    }
    offsets.push_back(sizes.empty() ? "0" : fmt::format("{}", fmt::join(sizes, " + ")));
    sizes.push_back(fmt::format("{}", fmt::join(factors, " * ")));
  }
  std::string s;
  s += "\n// Gradients of the float captured tensors score_mod reads (";
  for (size_t i = 0; i < captures.size(); ++i) s += (i ? ", " : "") + f.captures[captures[i]].name;
  s += "): their elements for this call, one after another.\n";
  s += fmt::format("inline int capture_grad_elements(ModInputs m) {{\n{};\n}}\n",
                   wrapped("  return ", fmt::format("{}", fmt::join(sizes, " + ")), "      "));
  s += "\n// One pair's contributions to those gradients: dS (of the score after score_mod) times d score_mod /\n"
       "// d element, for each element score_mod reads (derived by the generator), added to `partial`.\n";
  s += "inline void accumulate_capture_grads(float score, int b, int h, int q_idx, int kv_idx, ModInputs m, float ds,\n"
       "                                     device float* partial) {\n";
  for (const Node* read : float_reads(c.score_mod)) {
    const size_t rank = size_t(std::find(captures.begin(), captures.end(), size_t(read->index)) - captures.begin());
    const std::string offset = offsets[rank] == "0" ? "" : "(" + offsets[rank] + ") + ";
    s += wrapped("  ", fmt::format("partial[{}{}] += ds * ({});", offset, msl_flat_index(*read, c.env),
                                   to_msl(*derivative_by_read(c.score_mod, read), c.env)),
                 "      ") + "\n";
  }
  s += "}\n";
  // The summed element `element` into the gradient it belongs to.
  std::vector<std::string> pointers;
  for (size_t k : captures) pointers.push_back("device float* " + capture_gradient_buffer_name(f.captures[k].name));
  s += "\n// Element `element` of the gradients, one after another, into the gradient it belongs to.\n";
  s += wrapped("inline void store_capture_grad(int element, float sum, ModInputs m, ",
               fmt::format("{}) {{", fmt::join(pointers, ", ")), "                               ") + "\n";
  for (size_t i = 0; i < captures.size(); ++i) {
    const std::string name = capture_gradient_buffer_name(f.captures[captures[i]].name);
    if (i + 1 == captures.size()) {
      s += fmt::format("  {}[element] = sum;\n", name);
      break;
    }
    s += fmt::format("  if (element < {0}) {{\n    {1}[element] = sum;\n    return;\n  }}\n  element -= {0};\n",
                     sizes[i], name);
  }
  s += "}";
  return s;
}

std::string msl_capture_gradient_parameters(const ScoreFunctions& f, const std::string& indent) {
  std::string s;
  const std::vector<size_t> captures = gradient_captures(f);
  for (size_t i = 0; i < captures.size(); ++i)
    s += fmt::format("{}device float* {} [[buffer({})]],\n", indent,
                     capture_gradient_buffer_name(f.captures[captures[i]].name), kFirstCaptureGradIndex + i);
  if (!s.empty()) s.pop_back();
  return s;
}

std::string msl_capture_gradient_arguments(const ScoreFunctions& f) {
  std::string s;
  for (size_t k : gradient_captures(f)) s += ", " + capture_gradient_buffer_name(f.captures[k].name);
  return s;
}

MaskDependence mask_dependence(const ScoreFunctions& f) {
  if (f.mask_mod.empty()) return {};
  const CheckedScoreFunctions c = check_score_functions(f);
  return {references(*c.mask_mod, Variable::b), references(*c.mask_mod, Variable::h)};
}

LinearForm parse_extent(const std::string& text) {
  const NodePtr n = type_check(parse_expression(text), Environment{{}, {}, false}, Type::integer);
  const Interval r = integer_bounds(*n);
  if (n->type != Type::integer || !r.low || !r.high || !(*r.low == *r.high))
    throw ExpressionError(1, "expected a linear form of B, Hq, Hkv, Sq, Sk and integers, such as \"Sq + Sk - 1\"");
  if (!provably_at_most(LinearForm::of(1), *r.low))
    throw ExpressionError(1, fmt::format("an extent must be at least 1 for every call; {} may be less", r.low->text()));
  // Coefficients the runtime evaluates without overflow for sizes below 2^32.
  constexpr int64_t kLargest = int64_t(1) << 31;
  bool small = r.low->constant <= kLargest && r.low->constant >= -kLargest;
  for (int64_t c : r.low->size) small = small && c <= kLargest && c >= -kLargest;
  if (!small) throw ExpressionError(1, "an extent's numbers must stay within 2^31");
  return *r.low;
}

std::string msl_functions(const ScoreFunctions& f, bool with_slope) {
  const CheckedScoreFunctions c = check_score_functions(f);
  std::string s;
  s += "\n// ---- score_mod and mask_mod (DESIGN.md section 13), compiled from the spec ----\n";
  if (c.score_mod) s += wrapped("// score_mod: ", f.score_mod, "//   ") + "\n";
  if (c.mask_mod) s += wrapped("// mask_mod:  ", f.mask_mod, "//   ") + "\n";
  s += "// What the expressions read: captured tensors (row-major, bound at launch, every\n"
       "// index proven inside its extent when the kernel was generated), runtime scalars\n"
       "// and the call's sizes.\n";
  s += "struct ModInputs {\n";
  for (const CaptureDecl& cap : f.captures)
    s += fmt::format("  const device {}* {};  // {}\n", element_type(cap.type), cap.name, shape_text(cap));
  for (const std::string& name : f.scalars) s += fmt::format("  float {};\n", name);
  s += "  int B, Hq, Hkv, Sq, Sk;\n};\n\n";
  s += "// Integer floor division and modulo as the expression language defines them (0 for a divisor of 0),\n"
       "// and float-to-int conversion that truncates toward zero and saturates.\n"
       "inline int mod_floor_div(int a, int b) {\n"
       "  if (b == 0) return 0;\n"
       "  const int q = a / b;\n"
       "  return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;\n"
       "}\n"
       "inline int mod_floor_mod(int a, int b) { return b == 0 ? 0 : a - b * mod_floor_div(a, b); }\n"
       "inline int mod_to_int(float x) { return x == x ? int(clamp(x, -2147483648.0f, 2147483520.0f)) : 0; }\n";
  const std::string params = "int b, int h, int q_idx, int kv_idx, ModInputs m";
  if (c.score_mod) {
    s += fmt::format("\n// The score after scale and softcap, modified (natural log units).\n"
                     "inline float score_mod(float score, {}) {{\n{};\n}}\n",
                     params, wrapped("  return ", to_msl(*c.score_mod, c.env), "      "));
    if (with_slope)
      s += fmt::format("\n// d score_mod / d score (derived by the generator), what the backward multiplies dS by.\n"
                       "inline float score_mod_slope(float score, {}) {{\n{};\n}}\n",
                       params, wrapped("  return ", to_msl(*c.score_slope, c.env), "      "));
  }
  if (c.mask_mod) {
    s += fmt::format("\n// Whether query q_idx may see key kv_idx (with every built-in rule).\n"
                     "inline bool mask_mod({}) {{\n{};\n}}\n",
                     params, wrapped("  return ", to_msl(*c.mask_mod, c.env), "      "));
  }
  if (with_slope) {
    const std::string gradients = msl_capture_gradients(f);
    if (!gradients.empty()) s += gradients + "\n";
  }
  s.pop_back();  // the template ends the line
  return s;
}

std::string capture_buffer_name(const std::string& capture) { return "capture_" + capture; }

std::string msl_parameters(const ScoreFunctions& f, const std::string& indent) {
  std::string s;
  if (!f.scalars.empty())
    s += fmt::format("{}constant float* mod_scalars [[buffer({})]],\n", indent, kModScalarsIndex);
  for (size_t i = 0; i < f.captures.size(); ++i)
    s += fmt::format("{}const device {}* {} [[buffer({})]],\n", indent, element_type(f.captures[i].type),
                     capture_buffer_name(f.captures[i].name), kFirstCaptureIndex + i);
  if (!s.empty()) s.pop_back();  // the template ends the line
  return s;
}

std::string msl_inputs(const ScoreFunctions& f) {
  std::vector<std::string> fields;
  for (const CaptureDecl& c : f.captures) fields.push_back(capture_buffer_name(c.name));
  for (size_t i = 0; i < f.scalars.size(); ++i) fields.push_back(fmt::format("mod_scalars[{}]", i));
  // The call's sizes (on a paged cache Sk is the longest cache length: captured tensors are sized by it).
  for (const char* size : {"int(params.batch)", "int(params.heads_q)", "int(params.heads_kv)", "int(params.seq_q)",
                           "int(params.seq_k)"})
    fields.push_back(size);
  // Wrapped to the kernels' 120 columns, continuation lines under the brace.
  const std::string head = "const ModInputs mods = {";
  std::string out = head, line;
  for (size_t i = 0; i < fields.size(); ++i) {
    const std::string piece = fields[i] + (i + 1 < fields.size() ? ", " : "};");
    if (!line.empty() && 2 + head.size() + line.size() + piece.size() > 120) {
      out += line + "\n" + std::string(2 + head.size(), ' ');
      line.clear();
    }
    line += piece;
  }
  out += line;
  // No trailing blanks where a line was broken after ", ".
  for (size_t at = out.find(", \n"); at != std::string::npos; at = out.find(", \n")) out.erase(at + 1, 1);
  return out;
}

}  // namespace mfagen::expr
