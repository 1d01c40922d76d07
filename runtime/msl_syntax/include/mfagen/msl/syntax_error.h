// What a lowering pass throws for MSL it cannot lower (TokenView::fail,
// TokenView::matching): "file:line: error: message" for the token it is
// about. The cpu backend turns it into its CompileError with the same text;
// the checker never lets one escape (it reports lexical findings instead).
#pragma once

#include <stdexcept>
#include <string>

namespace mfagen::msl {

class SyntaxError : public std::runtime_error {
 public:
  SyntaxError(const std::string& what, size_t token, size_t offset)
      : std::runtime_error(what), token_(token), offset_(offset) {}
  size_t token() const { return token_; }    // significant-token index in the TokenView
  size_t offset() const { return offset_; }  // byte offset in the tokenized text

 private:
  size_t token_;
  size_t offset_;
};

}  // namespace mfagen::msl
