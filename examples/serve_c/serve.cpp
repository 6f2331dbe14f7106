// Serve a bernonnx ONNX export from C++ with the onnxruntime C++ API: no Python involved.
//
// Usage: serve_cpp <model.onnx> <rows.csv> [<out.csv>|-] [--batch N] [--time]
//
// The same program as serve.c, written with onnxruntime_cxx_api.h: rows.csv has one header
// row; a graph with one (N, F) input takes the CSV's F columns in order (by header name when
// the graph records its DataFrame's "input_columns"), a graph with one (N, 1) input per
// column takes the CSV column of the same name. Each input is fed at its declared type
// (float, double, int64, bool, string); an empty field or "nan" is NaN, "True"/"False" are
// 1/0. Output: "label,p0,p1,..." then one line per row, exact digits ("%.9g" float,
// "%.17g" double); with the boolean output "prediction_set" (a ConformalClassifier's graph)
// also "s0,s1,...", 1 where the class is in the row's set.
//
// The library is opened at run time (dlopen of $ONNXRUNTIME_LIB, else "libonnxruntime.so")
// and handed to the C++ API with Ort::InitApi (ORT_API_MANUAL_INIT), because onnxruntime's
// Linux builds version their symbols. One thread, sequential, as Python's parity runs.
// Exit codes: 0 ok, 1 error (message on stderr), 2 usage.
// Build: c++ -std=c++17 -O2 -I/usr/include/onnxruntime serve.cpp -o serve_cpp -ldl
#define ORT_API_MANUAL_INIT
#include <onnxruntime_cxx_api.h>
#undef ORT_API_MANUAL_INIT

#include <dlfcn.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

using Row = std::vector<std::string>;

// RFC 4180 fields: quoted fields may hold commas, doubled quotes and line breaks.
std::vector<Row> read_csv(const std::string &path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) throw Error("cannot open the CSV file '" + path + "': " + std::strerror(errno));
  std::stringstream buffer;
  buffer << file.rdbuf();
  const std::string text = buffer.str();
  std::vector<Row> rows;
  Row row;
  std::string field;
  bool quoted = false, any = false;
  for (size_t i = 0; i <= text.size(); ++i) {
    const char c = i < text.size() ? text[i] : '\n';
    if (quoted) {
      if (i == text.size()) throw Error(path + ": unterminated quoted field");
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') field += '"', ++i;
      else if (c == '"') quoted = false;
      else field += c;
    } else if (c == '"') {
      quoted = any = true;
    } else if (c == ',') {
      row.push_back(field), field.clear(), any = true;
    } else if (c == '\n') {
      if (any || !field.empty()) {
        row.push_back(field);
        if (!rows.empty() && row.size() != rows[0].size())
          throw Error(path + ", row " + std::to_string(rows.size()) + ": " +
                      std::to_string(row.size()) + " fields, but the header has " +
                      std::to_string(rows[0].size()) + " columns");
        rows.push_back(row);
      }
      row.clear(), field.clear(), any = false;
    } else if (c != '\r') {
      field += c, any = true;
    }
  }
  if (rows.empty()) throw Error(path + ": no header row");
  return rows;
}

bool same_word(const std::string &s, const char *word) { return strcasecmp(s.c_str(), word) == 0; }

std::string trimmed(const std::string &s) {
  const size_t a = s.find_first_not_of(' '), b = s.find_last_not_of(' ');
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

[[noreturn]] void not_a(const char *what, const std::string &s, const std::string &input, size_t row) {
  throw Error("row " + std::to_string(row) + ", input '" + input + "': '" + s + "' is not " + what);
}

double parse_real(const std::string &raw, bool single, const std::string &input, size_t row) {
  const std::string s = trimmed(raw);
  if (s.empty() || same_word(s, "nan")) return NAN;
  if (same_word(s, "true")) return 1.0;
  if (same_word(s, "false")) return 0.0;
  char *end = nullptr;
  // strtof for a float input: the text rounded once, as numpy's float32 parse does
  const double value = single ? static_cast<double>(std::strtof(s.c_str(), &end))
                              : std::strtod(s.c_str(), &end);
  if (end == s.c_str() || *end != '\0') not_a("a number", s, input, row);
  return value;
}

int64_t parse_integer(const std::string &raw, const std::string &input, size_t row) {
  const std::string s = trimmed(raw);
  if (same_word(s, "true")) return 1;
  if (same_word(s, "false")) return 0;
  char *end = nullptr;
  errno = 0;
  const long long value = std::strtoll(s.c_str(), &end, 10);
  if (end == s.c_str() || *end != '\0' || errno == ERANGE) not_a("a 64-bit integer", s, input, row);
  return value;
}

// The metadata "input_columns" (a JSON list of strings), empty when absent.
std::vector<std::string> recorded_columns(const Ort::Session &session) {
  Ort::AllocatorWithDefaultOptions alloc;
  const auto json = session.GetModelMetadata().LookupCustomMetadataMapAllocated("input_columns", alloc);
  std::vector<std::string> names;
  if (!json) return names;
  for (const char *p = json.get(); *p; ++p) {
    if (*p != '"') continue;
    std::string name;
    for (++p; *p && *p != '"'; ++p) {
      if (*p == '\\') {
        ++p;
        if (*p == 'u') throw Error("metadata 'input_columns': \\u escapes are not supported");
        name += *p == 'n' ? '\n' : *p == 't' ? '\t' : *p;
      } else {
        name += *p;
      }
    }
    names.push_back(name);
    if (!*p) break;
  }
  return names;
}

struct Input {
  std::string name;
  ONNXTensorElementDataType type;
  size_t width;
  std::vector<size_t> columns;  // the CSV column of each of the width values
  std::vector<float> f32;
  std::vector<double> f64;
  std::vector<int64_t> i64;
  std::vector<uint8_t> b8;  // bool: std::vector<bool> has no data()
  std::vector<const char *> text;
};

size_t column_of(const Row &header, const std::string &name, const std::string &what) {
  for (size_t j = 0; j < header.size(); ++j)
    if (header[j] == name) return j;
  throw Error("the CSV has no column '" + name + "', which the graph takes" + what);
}

std::vector<Input> read_inputs(const Ort::Session &session, const std::vector<Row> &csv) {
  const Row &header = csv[0];
  const size_t n_inputs = session.GetInputCount(), rows = csv.size() - 1;
  const auto recorded = recorded_columns(session);
  Ort::AllocatorWithDefaultOptions alloc;
  std::vector<Input> inputs(n_inputs);
  for (size_t i = 0; i < n_inputs; ++i) {
    Input &in = inputs[i];
    in.name = session.GetInputNameAllocated(i, alloc).get();
    const Ort::TypeInfo info = session.GetInputTypeInfo(i);
    if (info.GetONNXType() != ONNX_TYPE_TENSOR)
      throw Error("input '" + in.name + "' is not a tensor: not supported");
    const auto tensor = info.GetTensorTypeAndShapeInfo();
    in.type = tensor.GetElementType();
    const auto shape = tensor.GetShape();
    if (shape.empty() || shape.size() > 2)
      throw Error("input '" + in.name + "' has rank " + std::to_string(shape.size()) +
                  ": only (N,) and (N, F) inputs are supported");
    if (shape.size() == 2 && shape[1] <= 0)
      throw Error("input '" + in.name + "' has no fixed number of columns: cannot map CSV columns to it");
    in.width = shape.size() == 2 ? static_cast<size_t>(shape[1]) : 1;
    if (in.type != ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT && in.type != ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE &&
        in.type != ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64 && in.type != ONNX_TENSOR_ELEMENT_DATA_TYPE_BOOL &&
        in.type != ONNX_TENSOR_ELEMENT_DATA_TYPE_STRING)
      throw Error("input '" + in.name + "' has ONNX element type " + std::to_string(in.type) +
                  ": only float, double, int64, bool and string inputs are supported");
    if (n_inputs == 1 && !recorded.empty()) {
      if (recorded.size() != in.width)
        throw Error("metadata 'input_columns' names " + std::to_string(recorded.size()) +
                    " columns, input '" + in.name + "' takes " + std::to_string(in.width));
      for (const auto &name : recorded) in.columns.push_back(column_of(header, name, ""));
    } else if (n_inputs == 1 && in.width > 1) {
      if (header.size() != in.width)
        throw Error("the CSV has " + std::to_string(header.size()) + " columns, input '" + in.name +
                    "' takes " + std::to_string(in.width));
      for (size_t k = 0; k < in.width; ++k) in.columns.push_back(k);
    } else if (in.width != 1) {
      throw Error("input '" + in.name + "' takes " + std::to_string(in.width) +
                  " columns: with several inputs, only one column per input is supported");
    } else if (n_inputs == 1 && header.size() == 1) {
      in.columns.push_back(0);
    } else {
      in.columns.push_back(column_of(header, in.name, " as an input"));
    }
    for (size_t r = 0; r < rows; ++r) {
      for (const size_t j : in.columns) {
        const std::string &s = csv[r + 1][j];
        switch (in.type) {
          case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT:
            in.f32.push_back(static_cast<float>(parse_real(s, true, in.name, r + 1))); break;
          case ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE:
            in.f64.push_back(parse_real(s, false, in.name, r + 1)); break;
          case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64:
            in.i64.push_back(parse_integer(s, in.name, r + 1)); break;
          case ONNX_TENSOR_ELEMENT_DATA_TYPE_BOOL:
            in.b8.push_back(parse_integer(s, in.name, r + 1) != 0); break;
          default:  // string
            in.text.push_back(s.c_str());
        }
      }
    }
  }
  return inputs;
}

// A tensor over rows [start, start + n): a view for numbers, a copy for strings.
Ort::Value input_tensor(Input &in, size_t start, size_t n, const Ort::MemoryInfo &memory) {
  const std::vector<int64_t> shape{static_cast<int64_t>(n), static_cast<int64_t>(in.width)};
  const size_t at = start * in.width, count = n * in.width;
  switch (in.type) {
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT:
      return Ort::Value::CreateTensor<float>(memory, in.f32.data() + at, count, shape.data(), 2);
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE:
      return Ort::Value::CreateTensor<double>(memory, in.f64.data() + at, count, shape.data(), 2);
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64:
      return Ort::Value::CreateTensor<int64_t>(memory, in.i64.data() + at, count, shape.data(), 2);
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_BOOL:
      return Ort::Value::CreateTensor(memory, in.b8.data() + at, count, shape.data(), 2, in.type);
    default: {
      Ort::AllocatorWithDefaultOptions alloc;
      auto value = Ort::Value::CreateTensor(alloc, shape.data(), 2, in.type);
      value.FillStringTensor(in.text.data() + at, count);
      return value;
    }
  }
}

void write_text(FILE *out, const std::string &s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) {
    std::fputs(s.c_str(), out);
    return;
  }
  std::fputc('"', out);
  for (const char c : s) {
    if (c == '"') std::fputc('"', out);
    std::fputc(c, out);
  }
  std::fputc('"', out);
}

void write_rows(FILE *out, const Ort::Value &label, const Ort::Value &proba, const Ort::Value *sets,
                size_t n, bool header) {
  const auto info = proba.GetTensorTypeAndShapeInfo();
  const auto shape = info.GetShape();
  const auto type = info.GetElementType();
  if (shape.size() != 2) throw Error("the output 'probabilities' is not a matrix");
  if (type != ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT && type != ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE)
    throw Error("the output 'probabilities' is neither float nor double");
  const auto label_type = label.GetTensorTypeAndShapeInfo().GetElementType();
  if (label_type != ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64 && label_type != ONNX_TENSOR_ELEMENT_DATA_TYPE_STRING)
    throw Error("the output 'label' is neither int64 nor string");
  const size_t classes = static_cast<size_t>(shape[1]);
  const bool *in_set = nullptr;
  if (sets != nullptr) {
    if (sets->GetTensorTypeAndShapeInfo().GetElementType() != ONNX_TENSOR_ELEMENT_DATA_TYPE_BOOL)
      throw Error("the output 'prediction_set' is not boolean");
    in_set = sets->GetTensorData<bool>();
  }
  if (header) {
    std::fputs("label", out);
    for (size_t k = 0; k < classes; ++k) std::fprintf(out, ",p%zu", k);
    for (size_t k = 0; in_set != nullptr && k < classes; ++k) std::fprintf(out, ",s%zu", k);
    std::fputc('\n', out);
  }
  for (size_t r = 0; r < n; ++r) {
    if (label_type == ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64)
      std::fprintf(out, "%lld", static_cast<long long>(label.GetTensorData<int64_t>()[r]));
    else
      write_text(out, label.GetStringTensorElement(r));
    for (size_t k = 0; k < classes; ++k) {
      if (type == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT)
        std::fprintf(out, ",%.9g", static_cast<double>(proba.GetTensorData<float>()[r * classes + k]));
      else
        std::fprintf(out, ",%.17g", proba.GetTensorData<double>()[r * classes + k]);
    }
    for (size_t k = 0; in_set != nullptr && k < classes; ++k)
      std::fprintf(out, ",%d", in_set[r * classes + k] ? 1 : 0);
    std::fputc('\n', out);
  }
}

const OrtApiBase *load_onnxruntime() {
  const char *library = std::getenv("ONNXRUNTIME_LIB");
  if (library == nullptr || *library == '\0') library = "libonnxruntime.so";
  void *handle = dlopen(library, RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) throw Error(std::string("cannot load onnxruntime (set ONNXRUNTIME_LIB): ") + dlerror());
  using GetApiBase = const OrtApiBase *(*)();
  const auto get_api_base = reinterpret_cast<GetApiBase>(dlsym(handle, "OrtGetApiBase"));
  if (get_api_base == nullptr) throw Error(std::string(library) + " has no OrtGetApiBase: not an onnxruntime library");
  const OrtApiBase *base = get_api_base();
  const OrtApi *api = base->GetApi(ORT_API_VERSION);
  if (api == nullptr)
    throw Error(std::string("onnxruntime ") + base->GetVersionString() +
                " is older than the C API version " + std::to_string(ORT_API_VERSION) +
                " of the header this was built with");
  Ort::InitApi(api);
  return base;
}

int serve(int argc, char **argv) {
  std::vector<std::string> paths;
  size_t batch = 0;
  bool timing = false;
  for (int a = 1; a < argc; ++a) {
    const std::string arg = argv[a];
    if (arg == "--time") {
      timing = true;
    } else if (arg == "--batch" && a + 1 < argc) {
      char *end = nullptr;
      const long long b = std::strtoll(argv[++a], &end, 10);
      if (*end != '\0' || b <= 0) throw Error(std::string("--batch must be a positive integer, got '") + argv[a] + "'");
      batch = static_cast<size_t>(b);
    } else if (arg.size() > 1 && arg[0] == '-') {
      paths.assign(4, "");  // an unknown option: usage
    } else {
      paths.push_back(arg);
    }
  }
  if (paths.size() < 2 || paths.size() > 3) {
    std::fputs("usage: serve_cpp <model.onnx> <rows.csv> [<out.csv>|-] [--batch N] [--time]\n", stderr);
    return 2;
  }
  if (!std::ifstream(paths[0], std::ios::binary))
    throw Error("cannot open the model '" + paths[0] + "': " + std::strerror(errno));
  const OrtApiBase *base = load_onnxruntime();
  const auto csv = read_csv(paths[1]);
  const size_t rows = csv.size() - 1;

  Ort::Env env(ORT_LOGGING_LEVEL_WARNING, "serve_cpp");
  Ort::SessionOptions options;
  options.SetIntraOpNumThreads(1).SetInterOpNumThreads(1).SetExecutionMode(ORT_SEQUENTIAL);
  Ort::Session session(env, paths[0].c_str(), options);
  auto inputs = read_inputs(session, csv);
  std::vector<const char *> input_names;
  for (const auto &in : inputs) input_names.push_back(in.name.c_str());
  const char *output_names[] = {"label", "probabilities", "prediction_set"};
  size_t n_wanted = 2;  // 3 with the prediction sets
  Ort::AllocatorWithDefaultOptions alloc;
  size_t found = 0;
  for (size_t j = 0; j < session.GetOutputCount(); ++j) {
    const std::string name = session.GetOutputNameAllocated(j, alloc).get();
    found += name == "label" || name == "probabilities";
    if (name == "prediction_set") n_wanted = 3;
  }
  if (found != 2) throw Error("the graph needs the outputs 'label' and 'probabilities' (export with zipmap=False)");

  FILE *out = paths.size() == 3 && paths[2] != "-" ? std::fopen(paths[2].c_str(), "w") : stdout;
  if (out == nullptr) throw Error("cannot write '" + paths[2] + "': " + std::strerror(errno));
  if (batch == 0) batch = rows > 0 ? rows : 1;
  const auto memory = Ort::MemoryInfo::CreateCpu(OrtArenaAllocator, OrtMemTypeDefault);
  std::chrono::duration<double> seconds{0}, first{0};  // the first Run also warms up
  for (size_t start = 0; start == 0 || start < rows; start += batch) {
    const size_t n = std::min(batch, rows - start);
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<Ort::Value> feeds;
    for (auto &in : inputs) feeds.push_back(input_tensor(in, start, n, memory));
    auto results = session.Run(Ort::RunOptions{nullptr}, input_names.data(), feeds.data(),
                               feeds.size(), output_names, n_wanted);
    seconds += std::chrono::steady_clock::now() - t0;
    if (start == 0) first = seconds;
    write_rows(out, results[0], results[1], n_wanted == 3 ? &results[2] : nullptr, n, start == 0);
    if (rows == 0) break;
  }
  if (out != stdout && std::fclose(out) != 0) throw Error("cannot write '" + paths[2] + "'");
  if (timing)
    std::fprintf(stderr, "rows=%zu batch=%zu run_seconds=%.9f after_first_seconds=%.9f onnxruntime=%s\n",
                 rows, batch, seconds.count(), (seconds - first).count(), base->GetVersionString());
  return 0;
}

}  // namespace

int main(int argc, char **argv) {
  try {
    return serve(argc, argv);
  } catch (const Ort::Exception &e) {
    std::fprintf(stderr, "serve_cpp: error: onnxruntime: %s\n", e.what());
  } catch (const std::exception &e) {
    std::fprintf(stderr, "serve_cpp: error: %s\n", e.what());
  }
  return 1;
}
