// Run one ONNX model in onnxruntime-node or onnxruntime-web (WASM) and write its outputs as JSON.
//
// Usage: node parity.mjs <runtime: node|web> <model.onnx> <inputs.json> <outputs.json>
//
// inputs.json and outputs.json map a tensor name to {"dtype", "shape", "data"}, data being the
// flattened row-major values. The encoding is lossless both ways:
//   - float32/float64: JSON numbers (JSON.stringify writes the shortest string that parses back to
//     the same double, and every float32 is a double); NaN and +-Infinity, which JSON cannot
//     hold, are the strings "NaN", "Infinity", "-Infinity"; outputs write -0 as "-0".
//   - int64/uint64: decimal strings on output, numbers or strings on input, because a JSON number
//     is a double and loses integers above 2**53.
//   - bool: true/false; string: JSON strings; int8..int32, uint8..uint32: numbers.
// Both runtimes are forced single-threaded so that reductions add up in the same order as the
// Python side (intra_op_num_threads=1).
// Errors go to stderr with exit code 1 (2 for a usage error).

import { readFile, writeFile } from 'node:fs/promises';

const USAGE = 'usage: node parity.mjs <runtime: node|web> <model.onnx> <inputs.json> <outputs.json>';

const TYPED_ARRAYS = {
  float32: Float32Array,
  float64: Float64Array,
  int8: Int8Array,
  int16: Int16Array,
  int32: Int32Array,
  uint8: Uint8Array,
  uint16: Uint16Array,
  uint32: Uint32Array,
};

async function loadRuntime(runtime) {
  if (runtime === 'node') {
    // onnxruntime-node is CommonJS: its exports arrive as the default export.
    const mod = await import('onnxruntime-node');
    return { ort: mod.InferenceSession ? mod : mod.default, providers: ['cpu'] };
  }
  if (runtime === 'web') {
    // Under Node, the package's "node" export condition resolves to the WASM build.
    const mod = await import('onnxruntime-web');
    const ort = mod.InferenceSession ? mod : mod.default;
    // The threaded WASM build would otherwise start one worker per core.
    ort.env.wasm.numThreads = 1;
    return { ort, providers: ['wasm'] };
  }
  throw new Error(`runtime must be "node" or "web", got ${JSON.stringify(runtime)}`);
}

function decodeFloat(value, name) {
  if (typeof value === 'number') return value;
  if (value === '-0') return -0;
  if (value === 'NaN') return NaN;
  if (value === 'Infinity') return Infinity;
  if (value === '-Infinity') return -Infinity;
  throw new Error(`input ${name}: expected a number or "NaN"/"Infinity"/"-Infinity", got ${JSON.stringify(value)}`);
}

function encodeFloat(value) {
  // JSON.stringify(-0) is "0": keep the sign, which 1/x or copysign downstream would see.
  if (Object.is(value, -0)) return '-0';
  if (Number.isFinite(value)) return value;
  if (Number.isNaN(value)) return 'NaN';
  return value > 0 ? 'Infinity' : '-Infinity';
}

function toTensor(ort, name, spec) {
  const { dtype, shape, data } = spec;
  if (!Array.isArray(shape) || !Array.isArray(data)) {
    throw new Error(`input ${name}: "shape" and "data" must be arrays`);
  }
  const size = shape.reduce((a, b) => a * b, 1);
  if (size !== data.length) {
    throw new Error(`input ${name}: shape ${JSON.stringify(shape)} holds ${size} values, data has ${data.length}`);
  }
  let values;
  if (dtype === 'float32' || dtype === 'float64') {
    values = TYPED_ARRAYS[dtype].from(data, (v) => decodeFloat(v, name));
  } else if (dtype === 'int64') {
    // BigInt() of a string is exact; of a non-integer number it throws rather than truncating.
    values = BigInt64Array.from(data, (v) => BigInt(v));
  } else if (dtype === 'uint64') {
    values = BigUint64Array.from(data, (v) => BigInt(v));
  } else if (dtype === 'bool') {
    values = Uint8Array.from(data, (v) => (v ? 1 : 0));
  } else if (dtype === 'string') {
    values = data.map(String);
  } else if (dtype in TYPED_ARRAYS) {
    values = TYPED_ARRAYS[dtype].from(data);
  } else {
    throw new Error(`input ${name}: unsupported dtype ${JSON.stringify(dtype)}`);
  }
  return new ort.Tensor(dtype, values, shape);
}

function fromTensor(tensor) {
  const { type, dims, data } = tensor;
  let values;
  if (type === 'float32' || type === 'float64') {
    values = Array.from(data, encodeFloat);
  } else if (type === 'int64' || type === 'uint64') {
    values = Array.from(data, (v) => v.toString());
  } else if (type === 'bool') {
    values = Array.from(data, (v) => Boolean(v));
  } else if (type === 'string') {
    values = Array.from(data);
  } else if (type in TYPED_ARRAYS) {
    values = Array.from(data);
  } else {
    throw new Error(`output of unsupported type ${JSON.stringify(type)}`);
  }
  return { dtype: type, shape: Array.from(dims), data: values };
}

async function main(argv) {
  if (argv.length !== 4) {
    console.error(USAGE);
    return 2;
  }
  const [runtime, modelPath, inputsPath, outputsPath] = argv;
  const { ort, providers } = await loadRuntime(runtime);
  // Bytes rather than a path: onnxruntime-web cannot open a file path by itself.
  const modelBytes = new Uint8Array(await readFile(modelPath));
  const session = await ort.InferenceSession.create(modelBytes, {
    executionProviders: providers,
    intraOpNumThreads: 1,
    interOpNumThreads: 1,
  });
  const inputSpecs = JSON.parse(await readFile(inputsPath, 'utf8'));
  const feeds = {};
  for (const [name, spec] of Object.entries(inputSpecs)) {
    feeds[name] = toTensor(ort, name, spec);
  }
  const results = await session.run(feeds);
  const outputs = {};
  for (const name of session.outputNames) {
    outputs[name] = fromTensor(results[name]);
  }
  await writeFile(outputsPath, JSON.stringify(outputs));
  await session.release();
  return 0;
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error) => {
    console.error(error instanceof Error ? error.stack || error.message : String(error));
    process.exitCode = 1;
  },
);
