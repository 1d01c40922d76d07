# mfagen_add_kernels(<target> SPECS <spec.json>... [OUTPUT_DIR <dir>] [METALLIB <name>])
#
# Runs `mfagen generate` at build time, once per spec file, into
# <OUTPUT_DIR>/<spec name>/ (default OUTPUT_DIR: <binary dir>/<target>-kernels),
# with a depfile, so editing one spec (or upgrading mfagen) regenerates only
# that spec's kernels and nothing runs when nothing changed. <target> gets:
#   MFAGEN_KERNELS_DIR="<OUTPUT_DIR>"   (a compile definition; manifests are
#                                        <OUTPUT_DIR>/<spec name>/manifest.json)
# On Apple platforms with METALLIB, each spec's .metal files are also
# compiled with `xcrun metal` and linked with `xcrun metallib` into
# <OUTPUT_DIR>/<spec name>/<METALLIB>.metallib (not run where mfagen is
# developed: no Apple toolchain there). Elsewhere <target> links the cpu
# backend (mfagen::runtime_cpu), which runs the generated MSL on the CPU.
function(mfagen_add_kernels target)
  cmake_parse_arguments(ARG "" "OUTPUT_DIR;METALLIB" "SPECS" ${ARGN})
  if(NOT ARG_SPECS)
    message(FATAL_ERROR "mfagen_add_kernels(${target}): give at least one spec file after SPECS")
  endif()
  if(NOT ARG_OUTPUT_DIR)
    set(ARG_OUTPUT_DIR "${CMAKE_CURRENT_BINARY_DIR}/${target}-kernels")
  endif()
  if(TARGET mfagen::mfagen)
    set(generator mfagen::mfagen)
  else()
    set(generator mfagen)  # inside mfagen's own build tree
  endif()
  set(outputs "")
  foreach(spec IN LISTS ARG_SPECS)
    get_filename_component(spec_path "${spec}" ABSOLUTE)
    get_filename_component(spec_name "${spec}" NAME_WE)
    set(out "${ARG_OUTPUT_DIR}/${spec_name}")
    add_custom_command(
      OUTPUT "${out}/manifest.json"
      COMMAND ${generator} generate "${spec_path}" -o "${out}" --depfile "${out}.d" --quiet
      DEPENDS "${spec_path}" ${generator}
      DEPFILE "${out}.d"
      COMMENT "mfagen: generating the kernels of ${spec_name}"
      VERBATIM)
    list(APPEND outputs "${out}/manifest.json")
    if(APPLE AND ARG_METALLIB)
      # Every .metal file the manifest names, compiled and linked into one library.
      add_custom_command(
        OUTPUT "${out}/${ARG_METALLIB}.metallib"
        COMMAND sh -c "for f in '${out}'/*.metal; do std=metal3.1; grep -q MetalPerformancePrimitives \"$f\" \&\& std=metal4.0; xcrun -sdk macosx metal -std=$std -c \"$f\" -o \"$f.air\" || exit 1; done; xcrun -sdk macosx metallib '${out}'/*.air -o '${out}/${ARG_METALLIB}.metallib'"
        DEPENDS "${out}/manifest.json"
        COMMENT "mfagen: compiling the kernels of ${spec_name} into ${ARG_METALLIB}.metallib"
        VERBATIM)
      list(APPEND outputs "${out}/${ARG_METALLIB}.metallib")
    endif()
  endforeach()
  add_custom_target(${target}_mfagen_kernels DEPENDS ${outputs})
  add_dependencies(${target} ${target}_mfagen_kernels)
  target_compile_definitions(${target} PRIVATE MFAGEN_KERNELS_DIR="${ARG_OUTPUT_DIR}")
  if(NOT APPLE OR NOT ARG_METALLIB)
    if(TARGET mfagen::runtime_cpu)
      target_link_libraries(${target} PRIVATE mfagen::runtime_cpu)
    else()
      target_link_libraries(${target} PRIVATE mfagen_runtime_cpu)
    endif()
  endif()
endfunction()
