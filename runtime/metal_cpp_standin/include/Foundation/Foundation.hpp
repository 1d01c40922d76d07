// Stand-in for metal-cpp's Foundation/Foundation.hpp (Apple's C++ interface
// to Foundation), so that code written against metal-cpp compiles and runs
// where there is no Apple platform. Only the subset the Metal backend uses is
// declared, with metal-cpp's namespaces, class names and member signatures
// (facts from Apple's public metal-cpp headers); everything here is written
// for mfagen. Objects are reference counted as in Objective-C: alloc/new*
// return an owned reference, other getters return autoreleased objects that
// live until the innermost AutoreleasePool drains (or the thread ends).
#pragma once

#include <atomic>
#include <cstdint>

namespace NS {

using Integer = std::intptr_t;
using UInteger = std::uintptr_t;
using TimeInterval = double;

struct Range {
  UInteger location = 0, length = 0;
  Range(UInteger loc, UInteger len) : location(loc), length(len) {}
  static Range Make(UInteger loc, UInteger len) { return Range(loc, len); }
};

enum StringEncoding : UInteger {
  ASCIIStringEncoding = 1,
  UTF8StringEncoding = 4,
};

// The root of every stand-in object: an atomic reference count.
class Object {
 public:
  void release();
  UInteger retainCount() const;

 protected:
  Object() = default;
  virtual ~Object() = default;
  Object(const Object&) = delete;
  Object& operator=(const Object&) = delete;
  void add_reference();
  void add_to_autorelease_pool();

 private:
  std::atomic<UInteger> references_{1};
};

template <class Class, class Base = Object>
class Referencing : public Base {
 public:
  Class* retain() {
    this->add_reference();
    return static_cast<Class*>(this);
  }
  Class* autorelease() {
    this->add_to_autorelease_pool();
    return static_cast<Class*>(this);
  }
};

class String : public Referencing<String> {
 public:
  static String* alloc();
  String* init(const char* string, StringEncoding encoding);
  // An autoreleased copy of `string`.
  static String* string(const char* string, StringEncoding encoding);
  const char* utf8String() const;
  UInteger length() const;

 protected:
  String() = default;
};

using ErrorDomain = String*;

class Error : public Referencing<Error> {
 public:
  Integer code() const;
  ErrorDomain domain() const;
  String* localizedDescription() const;

 protected:
  Error() = default;
};

class AutoreleasePool : public Referencing<AutoreleasePool> {
 public:
  static AutoreleasePool* alloc();
  AutoreleasePool* init();
  // Releases the objects autoreleased since init (release() drains too).
  void drain();

 protected:
  AutoreleasePool() = default;
};

}  // namespace NS
