#!/bin/sh
# Build the C and C++ programs and serve a model on a CSV, from a bernonnx checkout.
# Usage: sh examples/serve_c/quickstart.sh model.onnx rows.csv probabilities.csv
# Headers: $ONNXRUNTIME_INCLUDE, else /usr/include/onnxruntime (Debian 13's
# libonnxruntime-dev), else fetched by get_headers.sh into examples/serve_c/build.
# Library: $ONNXRUNTIME_LIB, else the one inside Python's onnxruntime wheel.
set -eu
here="$(cd "$(dirname "$0")" && pwd)"
headers="${ONNXRUNTIME_INCLUDE:-/usr/include/onnxruntime}"
if [ ! -f "$headers/onnxruntime_c_api.h" ]; then
  echo "quickstart.sh: no onnxruntime headers in $headers (set ONNXRUNTIME_INCLUDE, or" \
    "install Debian 13's libonnxruntime-dev); fetching them with get_headers.sh" >&2
  sh "$here/get_headers.sh" "$here/build"
  headers="$here/build/include/onnxruntime"
fi
make -s -C "$here" ORT_INCLUDE="$headers"
if [ -z "${ONNXRUNTIME_LIB:-}" ]; then
  ONNXRUNTIME_LIB="$(python -c 'import glob, os, onnxruntime
print(sorted(glob.glob(os.path.join(os.path.dirname(onnxruntime.__file__), "capi", "libonnxruntime.so*")))[0])')"
fi
export ONNXRUNTIME_LIB
"$here/serve_c" "$1" "$2" "$3"
"$here/serve_cpp" "$1" "$2" "$3.cpp.csv"
cmp "$3" "$3.cpp.csv" && echo "serve_c and serve_cpp wrote the same $3"
