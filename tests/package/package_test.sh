#!/usr/bin/env bash
# Installs mfagen to a temporary prefix, builds examples/package_consumer
# against it with find_package + mfagen_add_kernels, runs it, and checks
# incremental builds: touching one spec regenerates only that spec's
# kernels; touching nothing runs nothing.
# Usage: package_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1
source=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cmake --install "$build" --prefix "$work/prefix" > "$work/install.log"
cp -r "$source/examples/package_consumer" "$work/src"  # a copy: the test touches its specs
cmake -S "$work/src" -B "$work/consumer" -G Ninja -DCMAKE_PREFIX_PATH="$work/prefix" > "$work/configure.log" 2>&1 \
  || { cat "$work/configure.log"; exit 1; }

cmake --build "$work/consumer" > "$work/build1.log" 2>&1 || { cat "$work/build1.log"; exit 1; }
grep -q "generating the kernels of attention" "$work/build1.log"
grep -q "generating the kernels of sliding" "$work/build1.log"
"$work/consumer/consumer" | tee "$work/run.log"
grep -q PASS "$work/run.log"

sleep 1.1  # a newer mtime than the outputs
touch "$work/src/specs/sliding.json"
cmake --build "$work/consumer" > "$work/build2.log" 2>&1 || { cat "$work/build2.log"; exit 1; }
if ! grep -q "generating the kernels of sliding" "$work/build2.log" || grep -q "generating the kernels of attention" "$work/build2.log"; then
  echo "touching sliding.json should regenerate sliding's kernels only:"; cat "$work/build2.log"; exit 1
fi
cmake --build "$work/consumer" > "$work/build3.log" 2>&1
if ! grep -q "no work to do" "$work/build3.log"; then
  echo "a build with nothing changed should run nothing:"; cat "$work/build3.log"; exit 1
fi
echo "package test: install, find_package, mfagen_add_kernels, incremental builds: ok"
