#!/usr/bin/env bash
# The vendored example's checked-in kernels are exactly what mfagen generates
# from its spec today. Usage: vendored_kernels_test.sh MFAGEN SOURCE_DIR
set -euo pipefail
mfagen=$1
app=$2/examples/vendored_app/AttentionApp/Kernels
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$mfagen" generate "$app/attention.json" -o "$work/generated" --quiet
if ! diff -r "$app/generated" "$work/generated"; then
  echo "examples/vendored_app is stale: run mfagen generate $app/attention.json -o $app/generated"
  exit 1
fi
echo "vendored kernels are current"
