// NS::Object reference counting, autorelease pools, strings and errors.
#include <vector>

#include "objects.h"

namespace mfagen::metal_standin {
namespace {

// Per thread: the open pools, innermost last, each with the objects
// autoreleased into it. Objects autoreleased with no pool open go to the
// thread's implicit pool, drained when the thread ends (as Objective-C does).
struct PoolStack {
  std::vector<std::vector<NS::Object*>> frames;
  std::vector<NS::Object*> implicit;
  ~PoolStack() {
    while (!frames.empty()) drain_from(0);
    for (NS::Object* o : implicit) o->release();
  }
  void drain_from(size_t frame) {
    while (frames.size() > frame) {
      std::vector<NS::Object*> objects = std::move(frames.back());
      frames.pop_back();
      for (NS::Object* o : objects) o->release();
    }
  }
};
thread_local PoolStack pools;

struct PoolImpl final : NS::AutoreleasePool {
  size_t frame = 0;
  bool open = false;
  ~PoolImpl() override {
    if (open) pools.drain_from(frame);
  }
};

}  // namespace

ErrorImpl::ErrorImpl(std::string_view domain_name, NS::Integer error_code, std::string text)
    : code(error_code), domain(new StringImpl(std::string(domain_name))), description(new StringImpl(std::move(text))) {}

void report_error(NS::Error** error, std::string_view domain, NS::Integer code, std::string text) {
  if (error) *error = (new ErrorImpl(domain, code, std::move(text)))->autorelease();
}

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace mfagen::metal_standin

namespace NS {

using namespace mfagen::metal_standin;

void Object::release() {
  if (references_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
}
UInteger Object::retainCount() const { return references_.load(std::memory_order_relaxed); }
void Object::add_reference() { references_.fetch_add(1, std::memory_order_relaxed); }
void Object::add_to_autorelease_pool() {
  (pools.frames.empty() ? pools.implicit : pools.frames.back()).push_back(this);
}

String* String::alloc() { return new StringImpl(""); }
String* String::init(const char* string, StringEncoding) {
  impl<StringImpl>(this)->text = string ? string : "";
  return this;
}
String* String::string(const char* string, StringEncoding encoding) {
  return alloc()->init(string, encoding)->autorelease();
}
const char* String::utf8String() const { return impl<StringImpl>(this)->text.c_str(); }
UInteger String::length() const { return impl<StringImpl>(this)->text.size(); }

Integer Error::code() const { return impl<ErrorImpl>(this)->code; }
ErrorDomain Error::domain() const { return impl<ErrorImpl>(this)->domain.get(); }
String* Error::localizedDescription() const { return impl<ErrorImpl>(this)->description.get(); }

AutoreleasePool* AutoreleasePool::alloc() { return new PoolImpl; }
AutoreleasePool* AutoreleasePool::init() {
  PoolImpl* self = impl<PoolImpl>(this);
  self->frame = pools.frames.size();
  self->open = true;
  pools.frames.emplace_back();
  return this;
}
void AutoreleasePool::drain() { release(); }

}  // namespace NS
