// Serve a bernonnx ONNX export in the browser with onnxruntime-web (WebAssembly): no server
// code at all, the page only needs its files served over HTTP (a file:// page cannot fetch
// the .wasm). The same rules as examples/serve_c/serve.c:
//   - the CSV has one header row; a graph with one (N, F) input takes the CSV's F columns in
//     order (by header name when the graph records its DataFrame's "input_columns"
//     metadata); a graph with one (N, 1) input per column takes the column of the same name;
//   - each input is fed at its declared type (float32, float64, int64, bool, string); an
//     empty field or "nan" is NaN, "True"/"False" are 1/0;
//   - the result is a CSV "label,p0,p1,..." with the shortest digits that read back as the
//     same float; a graph with the boolean output "prediction_set" (a ConformalClassifier's)
//     adds "s0,s1,...", 1 where the class is in the row's set.
// One WASM thread (numThreads = 1): no cross-origin isolation needed, and sums add up in the
// order of Python's single-threaded onnxruntime.

import * as ort from './node_modules/onnxruntime-web/dist/ort.wasm.min.mjs';

ort.env.wasm.numThreads = 1;

export class ServeError extends Error {}

// RFC 4180 fields: quoted fields may hold commas, doubled quotes and line breaks.
export function parseCsv(text) {
  const rows = [];
  let row = [];
  let field = '';
  let quoted = false;
  let any = false;
  for (let i = 0; i <= text.length; i++) {
    const c = i < text.length ? text[i] : '\n';
    if (quoted) {
      if (i === text.length) throw new ServeError('the CSV has an unterminated quoted field');
      if (c === '"' && text[i + 1] === '"') {
        field += '"';
        i++;
      } else if (c === '"') quoted = false;
      else field += c;
    } else if (c === '"') {
      quoted = any = true;
    } else if (c === ',') {
      row.push(field);
      field = '';
      any = true;
    } else if (c === '\n') {
      if (any || field !== '') {
        row.push(field);
        if (rows.length && row.length !== rows[0].length) {
          throw new ServeError(
            `CSV row ${rows.length}: ${row.length} fields, but the header has ${rows[0].length} columns`,
          );
        }
        rows.push(row);
      }
      row = [];
      field = '';
      any = false;
    } else if (c !== '\r') {
      field += c;
      any = true;
    }
  }
  if (!rows.length) throw new ServeError('the CSV has no header row');
  return { header: rows[0], rows: rows.slice(1) };
}

// The model's metadata_props (ModelProto field 14: key 1, value 2), read from the protobuf
// bytes: onnxruntime-web does not expose custom metadata.
export function modelMetadata(bytes) {
  const metadata = {};
  const decoder = new TextDecoder();
  function varint(state) {
    let value = 0;
    let shift = 1;
    for (;;) {
      const b = bytes[state.at++];
      value += (b & 0x7f) * shift;
      if (b < 0x80) return value;
      shift *= 128;
    }
  }
  function fields(start, end, visit) {
    const state = { at: start };
    while (state.at < end) {
      const tag = varint(state);
      const number = Math.floor(tag / 8);
      const wire = tag % 8;
      if (wire === 0) varint(state);
      else if (wire === 1) state.at += 8;
      else if (wire === 5) state.at += 4;
      else if (wire === 2) {
        const length = varint(state);
        visit(number, state.at, state.at + length);
        state.at += length;
      } else throw new ServeError(`unexpected protobuf wire type ${wire} in the model`);
    }
  }
  fields(0, bytes.length, (number, start, end) => {
    if (number !== 14) return;
    const entry = {};
    fields(start, end, (n, s, e) => {
      entry[n] = decoder.decode(bytes.subarray(s, e));
    });
    if (entry[1] !== undefined) metadata[entry[1]] = entry[2] ?? '';
  });
  return metadata;
}

const FEEDABLE = ['float32', 'float64', 'int64', 'bool', 'string'];

function parseReal(text, input, row) {
  const s = text.trim();
  const word = s.toLowerCase();
  if (s === '' || word === 'nan') return NaN;
  if (word === 'true') return 1;
  if (word === 'false') return 0;
  const value = Number(s);
  if (Number.isNaN(value)) throw new ServeError(`row ${row}, input '${input}': '${s}' is not a number`);
  return value;
}

function parseInteger(text, input, row) {
  const s = text.trim();
  const word = s.toLowerCase();
  if (word === 'true') return 1n;
  if (word === 'false') return 0n;
  try {
    if (!/^[+-]?\d+$/.test(s)) throw new Error();
    return BigInt(s);
  } catch {
    throw new ServeError(`row ${row}, input '${input}': '${s}' is not a 64-bit integer`);
  }
}

// Which CSV columns feed each input: [{name, type, width, columns}].
function plan(session, metadata, header) {
  const inputs = session.inputMetadata;
  const recorded = metadata.input_columns ? JSON.parse(metadata.input_columns) : null;
  const find = (name, what) => {
    const j = header.indexOf(name);
    if (j < 0) throw new ServeError(`the CSV has no column '${name}', which the graph takes${what}`);
    return j;
  };
  return inputs.map((meta) => {
    const { name } = meta;
    if (!meta.isTensor) throw new ServeError(`input '${name}' is not a tensor: not supported`);
    if (!FEEDABLE.includes(meta.type)) {
      throw new ServeError(
        `input '${name}' has element type ${meta.type}: only float32, float64, int64, bool and string inputs are supported`,
      );
    }
    const shape = meta.shape;
    if (shape.length < 1 || shape.length > 2) {
      throw new ServeError(`input '${name}' has rank ${shape.length}: only (N,) and (N, F) inputs are supported`);
    }
    const width = shape.length === 2 ? shape[1] : 1;
    if (typeof width !== 'number' || width <= 0) {
      throw new ServeError(`input '${name}' has no fixed number of columns: cannot map CSV columns to it`);
    }
    let columns;
    if (inputs.length === 1 && recorded) {
      if (recorded.length !== width) {
        throw new ServeError(`metadata 'input_columns' names ${recorded.length} columns, input '${name}' takes ${width}`);
      }
      columns = recorded.map((c) => find(String(c), ''));
    } else if (inputs.length === 1 && width > 1) {
      if (header.length !== width) {
        throw new ServeError(`the CSV has ${header.length} columns, input '${name}' takes ${width}`);
      }
      columns = header.map((_, j) => j);
    } else if (width !== 1) {
      throw new ServeError(`input '${name}' takes ${width} columns: with several inputs, only one column per input is supported`);
    } else if (inputs.length === 1 && header.length === 1) {
      columns = [0];
    } else {
      columns = [find(name, ' as an input')];
    }
    return { name, type: meta.type, width, columns };
  });
}

function tensor(input, rows) {
  const { name, type, width, columns } = input;
  const n = rows.length;
  let data;
  if (type === 'string') {
    data = new Array(n * width);
  } else if (type === 'int64') {
    data = new BigInt64Array(n * width);
  } else if (type === 'bool') {
    data = new Uint8Array(n * width);
  } else {
    data = type === 'float32' ? new Float32Array(n * width) : new Float64Array(n * width);
  }
  for (let r = 0; r < n; r++) {
    for (let k = 0; k < width; k++) {
      const text = rows[r][columns[k]];
      const at = r * width + k;
      if (type === 'string') data[at] = text;
      else if (type === 'int64') data[at] = parseInteger(text, name, r + 1);
      else if (type === 'bool') data[at] = parseInteger(text, name, r + 1) !== 0n ? 1 : 0;
      else data[at] = parseReal(text, name, r + 1);
    }
  }
  return new ort.Tensor(type, data, [n, width]);
}

function csvText(value) {
  const s = String(value);
  return /[",\r\n]/.test(s) ? `"${s.replaceAll('"', '""')}"` : s;
}

// Run the model on the CSV: {labels, probabilities (rows of numbers), sets (rows of booleans,
// or null without prediction sets), csv, inputs, seconds}.
export async function serve(modelBytes, csvText_) {
  const bytes = modelBytes instanceof Uint8Array ? modelBytes : new Uint8Array(modelBytes);
  const metadata = modelMetadata(bytes);
  const session = await ort.InferenceSession.create(bytes, {
    executionProviders: ['wasm'],
    intraOpNumThreads: 1,
    interOpNumThreads: 1,
  });
  try {
    for (const output of ['label', 'probabilities']) {
      if (!session.outputNames.includes(output)) {
        throw new ServeError("the graph needs the outputs 'label' and 'probabilities' (export with zipmap=False)");
      }
    }
    const { header, rows } = parseCsv(csvText_);
    const inputs = plan(session, metadata, header);
    const feeds = {};
    for (const input of inputs) feeds[input.name] = tensor(input, rows);
    const start = performance.now();
    const wanted = ['label', 'probabilities'];
    const withSets = session.outputNames.includes('prediction_set');
    if (withSets) wanted.push('prediction_set');
    const results = await session.run(feeds, wanted);
    const seconds = (performance.now() - start) / 1000;
    const proba = results.probabilities;
    const classes = proba.dims[1];
    const labels = Array.from(results.label.data, (v) => v.toString());
    const probabilities = [];
    const sets = withSets ? [] : null;
    const names = (prefix) => Array.from({ length: classes }, (_, k) => `,${prefix}${k}`).join('');
    const lines = ['label' + names('p') + (withSets ? names('s') : '')];
    for (let r = 0; r < rows.length; r++) {
      const p = Array.from(proba.data.subarray(r * classes, (r + 1) * classes));
      probabilities.push(p);
      // String(x) is the shortest text that reads back as the same double (a float32
      // output is a double here, so it reads back exactly too)
      const fields = [csvText(labels[r]), ...p.map(String)];
      if (withSets) {
        // a bool tensor's data: one byte per value
        const s = Array.from(results.prediction_set.data.subarray(r * classes, (r + 1) * classes), Boolean);
        sets.push(s);
        fields.push(...s.map(Number));
      }
      lines.push(fields.join(','));
    }
    return {
      labels,
      probabilities,
      sets,
      csv: lines.join('\n') + '\n',
      inputs: inputs.map(({ name, type, width }) => `${name}: ${type} (N, ${width})`),
      type: proba.type,
      seconds,
    };
  } finally {
    await session.release();
  }
}

// Latency and throughput for the benchmark report: batch-1 runs on the first rows, then
// the whole CSV in one run, repeated. Returns seconds per run.
export async function benchmark(modelBytes, csv, { single = 200, repeats = 3 } = {}) {
  const bytes = new Uint8Array(modelBytes);
  const session = await ort.InferenceSession.create(bytes, {
    executionProviders: ['wasm'],
    intraOpNumThreads: 1,
    interOpNumThreads: 1,
  });
  const { header, rows } = parseCsv(csv);
  const inputs = plan(session, modelMetadata(bytes), header);
  const feedsOf = (part) => Object.fromEntries(inputs.map((i) => [i.name, tensor(i, part)]));
  const oneRow = rows.slice(0, single).map((r) => feedsOf([r]));
  await session.run(oneRow[0]);
  let t = performance.now();
  for (const feeds of oneRow) await session.run(feeds);
  const latency = (performance.now() - t) / 1000 / oneRow.length;
  const all = feedsOf(rows);
  await session.run(all);
  const times = [];
  for (let k = 0; k < repeats; k++) {
    t = performance.now();
    await session.run(all);
    times.push((performance.now() - t) / 1000);
  }
  await session.release();
  return { latency, batch: Math.min(...times), rows: rows.length };
}
