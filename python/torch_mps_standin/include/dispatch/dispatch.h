// Stand-in of the one libdispatch call the MPS bridge makes (Apple's
// <dispatch/dispatch.h>, which PyTorch's MPSStream.h includes in C++): a
// serial queue and dispatch_sync_f, which runs `work(context)` on that queue
// and returns when it is done. Here there is one thread of encoding, so it
// runs the work at once under the queue's mutex.
#pragma once

#include <mutex>

struct dispatch_queue_s {
  std::recursive_mutex serial;  // dispatch_sync_f onto a queue the caller already holds deadlocks on Apple; not here
};
using dispatch_queue_t = dispatch_queue_s*;
using dispatch_function_t = void (*)(void*);

inline void dispatch_sync_f(dispatch_queue_t queue, void* context, dispatch_function_t work) {
  std::lock_guard lock(queue->serial);
  work(context);
}
