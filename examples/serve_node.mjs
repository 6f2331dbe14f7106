// Serve a bernonnx ONNX export from Node.js with onnxruntime-node, no Python involved.
//
// Usage: node serve_node.mjs <model.onnx> <inputs.json> <outputs.json>
//
// inputs.json maps each graph input name to {"dtype", "shape", "data"} (data: the flattened
// row-major values as JSON numbers, which is lossless for float32 and float64). outputs.json
// gets every graph output in the same form; int64 outputs (the label) are decimal strings,
// because a JSON number loses integers above 2**53.
//
// onnxruntime-node is resolved from the repository's tests/node folder (installed there by
// `cd tests/node && ONNXRUNTIME_NODE_INSTALL=skip npm ci`), then from the usual node_modules
// folders above it and NODE_PATH. The session runs single-threaded so that reductions add up
// in the same order as the Python side (intra_op_num_threads=1).
// Exit codes: 0 ok, 1 error, 2 usage, 3 onnxruntime-node not found.

import { readFile, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';

const USAGE = 'usage: node serve_node.mjs <model.onnx> <inputs.json> <outputs.json>';
const TYPED_ARRAYS = {
  float32: Float32Array,
  float64: Float64Array,
  int32: Int32Array,
  uint8: Uint8Array,
};

function loadRuntime() {
  // onnxruntime-node is CommonJS; createRequire gives the package's own resolution rules.
  const require = createRequire(new URL('../tests/node/package.json', import.meta.url));
  try {
    return require('onnxruntime-node');
  } catch (error) {
    console.error(
      'onnxruntime-node not found: run `cd tests/node && ONNXRUNTIME_NODE_INSTALL=skip npm ci` ' +
        `or put it on NODE_PATH (${error.message.split('\n')[0]})`,
    );
    process.exit(3);
  }
}

function toTensor(ort, name, { dtype, shape, data }) {
  const size = shape.reduce((a, b) => a * b, 1);
  if (size !== data.length) {
    throw new Error(`input ${name}: shape ${JSON.stringify(shape)} holds ${size} values, data has ${data.length}`);
  }
  if (dtype === 'int64') return new ort.Tensor(dtype, BigInt64Array.from(data, (v) => BigInt(v)), shape);
  if (dtype === 'string') return new ort.Tensor(dtype, data.map(String), shape);
  if (!(dtype in TYPED_ARRAYS)) throw new Error(`input ${name}: unsupported dtype ${JSON.stringify(dtype)}`);
  return new ort.Tensor(dtype, TYPED_ARRAYS[dtype].from(data), shape);
}

function fromTensor({ type, dims, data }) {
  const values = type === 'int64' || type === 'uint64' ? Array.from(data, (v) => v.toString()) : Array.from(data);
  return { dtype: type, shape: Array.from(dims), data: values };
}

async function main(argv) {
  if (argv.length !== 3) {
    console.error(USAGE);
    return 2;
  }
  const [modelPath, inputsPath, outputsPath] = argv;
  const ort = loadRuntime();
  const session = await ort.InferenceSession.create(modelPath, {
    executionProviders: ['cpu'],
    intraOpNumThreads: 1,
    interOpNumThreads: 1,
  });
  const specs = JSON.parse(await readFile(inputsPath, 'utf8'));
  const missing = session.inputNames.filter((name) => !(name in specs));
  if (missing.length) throw new Error(`inputs.json lacks the graph inputs ${JSON.stringify(missing)}`);
  const feeds = {};
  for (const name of session.inputNames) feeds[name] = toTensor(ort, name, specs[name]);
  const results = await session.run(feeds);
  const outputs = {};
  for (const name of session.outputNames) outputs[name] = fromTensor(results[name]);
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
