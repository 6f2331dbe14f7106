#!/bin/sh
# Build the Java program and serve a model on a CSV, from a bernonnx checkout.
# Usage: sh examples/serve_java/quickstart.sh model.onnx rows.csv probabilities.csv
# JNA: $BERNONNX_JNA_JAR, else the newest jna-<version>.jar in Maven's local repository
# (~/.m2), else Debian's libjna-java (/usr/share/java/jna.jar).
# Library: $ONNXRUNTIME_LIB, else the one inside Python's onnxruntime wheel.
set -eu
here="$(cd "$(dirname "$0")" && pwd)"
jar="${BERNONNX_JNA_JAR:-}"
if [ -z "$jar" ]; then
  jar="$(ls "$HOME"/.m2/repository/net/java/dev/jna/jna/*/jna-*.jar 2>/dev/null | sort -V | tail -n 1)"
fi
if [ -z "$jar" ] && [ -f /usr/share/java/jna.jar ]; then
  jar=/usr/share/java/jna.jar
fi
if [ -z "$jar" ] || [ ! -f "$jar" ]; then
  echo "no JNA jar: set BERNONNX_JNA_JAR, or apt-get install libjna-java" >&2
  exit 1
fi
classes="$here/build"
mkdir -p "$classes"
javac -cp "$jar" -d "$classes" "$here/OrtApi.java" "$here/Serve.java"
if [ -z "${ONNXRUNTIME_LIB:-}" ]; then
  ONNXRUNTIME_LIB="$(python -c 'import glob, os, onnxruntime
print(sorted(glob.glob(os.path.join(os.path.dirname(onnxruntime.__file__), "capi", "libonnxruntime.so*")))[0])')"
fi
export ONNXRUNTIME_LIB
java -cp "$jar:$classes" Serve "$1" "$2" "$3"
echo "serve_java wrote $3"
