# clang 16's libtooling for the Check stage: its headers (as system headers)
# and the shared libclang-cpp and libLLVM, found once here for the main build
# (generator/check) and the sanitizer build (fuzz/).
function(mfagen_use_clang_libtooling target standin_dir)
  find_path(MFAGEN_CLANG_INCLUDE_DIR clang/Tooling/Tooling.h PATHS /usr/lib/llvm-16/include NO_DEFAULT_PATH REQUIRED)
  find_library(MFAGEN_LIBCLANG_CPP NAMES clang-cpp clang-cpp16 PATHS /usr/lib/llvm-16/lib NO_DEFAULT_PATH REQUIRED)
  find_library(MFAGEN_LIBLLVM NAMES LLVM-16 LLVM PATHS /usr/lib/llvm-16/lib NO_DEFAULT_PATH REQUIRED)
  find_package(Threads REQUIRED)
  target_include_directories(${target} SYSTEM PRIVATE ${MFAGEN_CLANG_INCLUDE_DIR})
  target_compile_definitions(${target} PRIVATE MFAGEN_CHECK_STANDIN_DIR="${standin_dir}"
                             _GNU_SOURCE __STDC_CONSTANT_MACROS __STDC_FORMAT_MACROS __STDC_LIMIT_MACROS)
  target_link_libraries(${target} PRIVATE ${MFAGEN_LIBCLANG_CPP} ${MFAGEN_LIBLLVM} Threads::Threads)
endfunction()
