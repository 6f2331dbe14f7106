/* Serve a bernonnx ONNX export from C with the onnxruntime C API: no Python involved.
 *
 * Usage: serve_c <model.onnx> <rows.csv> [<out.csv>|-] [--batch N] [--time]
 *
 * rows.csv has one header row (as pandas' DataFrame.to_csv(index=False) writes it) and
 * one row per example. The program reads the graph's inputs and feeds each at the type
 * it declares (float, double, int64, bool or string):
 *   - one input of shape (N, F), for example "X": the CSV has exactly F columns, in the
 *     graph's order (for a graph exported from a DataFrame, the order recorded in its
 *     metadata "input_columns": columns are then matched by header name);
 *   - one input of shape (N, 1) per column, as to_onnx writes for a DataFrame into a
 *     ColumnTransformer: each input takes the CSV column of the same name (other
 *     columns, a label for instance, are ignored).
 * Numbers: an empty field or "nan" is NaN, "True"/"False" are 1/0 (pandas' bool columns).
 * Output (out.csv, or stdout): a header "label,p0,p1,..." then one line per row: the
 * graph's label and its probabilities, printed with enough digits to read back the exact
 * float ("%.9g" for float, "%.17g" for double). A graph with the boolean output
 * "prediction_set" (a ConformalClassifier's) adds the columns "s0,s1,...": 1 where the
 * class is in the row's set, 0 where not.
 *
 * The library is opened at run time (dlopen): $ONNXRUNTIME_LIB, else "libonnxruntime.so".
 * onnxruntime's Linux builds version their symbols, so linking against one release's
 * library ties the program to it; looking up OrtGetApiBase works with any library whose
 * C API version is at least the header's (ORT_API_VERSION).
 * The session runs on one thread, sequentially: sums then add up in the order of Python's
 * single-threaded onnxruntime, which the parity tests compare against.
 *
 * Exit codes: 0 ok, 1 error (message on stderr), 2 usage.
 * Build: cc -std=c11 -O2 -I/usr/include/onnxruntime serve.c -o serve_c -ldl
 */
#define _POSIX_C_SOURCE 200809L
#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <onnxruntime_c_api.h>

static const OrtApi *api;

static void die(const char *format, ...) {
  va_list args;
  va_start(args, format);
  fputs("serve_c: error: ", stderr);
  vfprintf(stderr, format, args);
  fputc('\n', stderr);
  va_end(args);
  exit(1);
}

static void check(OrtStatus *status, const char *what) {
  if (status != NULL) {
    /* the message is copied by die() before the process ends */
    die("%s: %s", what, api->GetErrorMessage(status));
  }
}

static void *xmalloc(size_t size) {
  void *p = malloc(size ? size : 1);
  if (p == NULL) die("out of memory (%zu bytes)", size);
  return p;
}

/* ------------------------------------------------------------------------- the CSV */

typedef struct {
  char *text;      /* the whole file, fields unquoted and NUL-terminated in place */
  char **fields;   /* row-major: rows * columns */
  size_t rows, columns;
} Table;

/* One field starting at *pos; returns it, leaves *pos after its delimiter, sets *end_of_row. */
static char *next_field(char **pos, int *end_of_row, size_t line) {
  char *p = *pos, *out = p, *start = p;
  if (*p == '"') {
    p++;
    for (;;) {
      if (*p == '\0') die("line %zu: unterminated quoted field", line);
      if (*p == '"') {
        if (p[1] == '"') { *out++ = '"'; p += 2; continue; }
        p++;
        break;
      }
      *out++ = *p++;
    }
  } else {
    while (*p != ',' && *p != '\n' && *p != '\r' && *p != '\0') *out++ = *p++;
  }
  if (*p == '\r') p++;
  if (*p == ',') { *end_of_row = 0; p++; }
  else if (*p == '\n' || *p == '\0') { *end_of_row = 1; if (*p) p++; }
  else die("line %zu: unexpected character after a quoted field", line);
  *out = '\0';
  *pos = p;
  return start;
}

static Table read_csv(const char *path) {
  FILE *file = fopen(path, "rb");
  if (file == NULL) die("cannot open the CSV file '%s': %s", path, strerror(errno));
  size_t capacity = 1 << 16, size = 0, got;
  char *text = xmalloc(capacity + 1);
  while ((got = fread(text + size, 1, capacity - size, file)) > 0) {
    size += got;
    if (size == capacity) {
      capacity *= 2;
      if ((text = realloc(text, capacity + 1)) == NULL) die("out of memory reading '%s'", path);
    }
  }
  fclose(file);
  text[size] = '\0';
  Table t = {text, NULL, 0, 0};
  size_t cap_fields = 1024, n_fields = 0, line = 1;
  t.fields = xmalloc(cap_fields * sizeof(char *));
  char *pos = text;
  while (*pos != '\0') {
    if (*pos == '\n' || (*pos == '\r' && pos[1] == '\n')) { pos += *pos == '\r' ? 2 : 1; line++; continue; }
    size_t count = 0;
    int end = 0;
    while (!end) {
      if (n_fields == cap_fields) {
        cap_fields *= 2;
        if ((t.fields = realloc(t.fields, cap_fields * sizeof(char *))) == NULL) die("out of memory");
      }
      t.fields[n_fields++] = next_field(&pos, &end, line);
      count++;
    }
    if (t.columns == 0) t.columns = count;
    else if (count != t.columns)
      die("%s, line %zu: %zu fields, but the header has %zu columns", path, line, count, t.columns);
    line++;
  }
  if (t.columns == 0) die("%s: no header row", path);
  t.rows = n_fields / t.columns - 1; /* the header is row 0 */
  return t;
}

static const char *cell(const Table *t, size_t row, size_t column) {
  return t->fields[(row + 1) * t->columns + column];
}

static long find_column(const Table *t, const char *name) {
  for (size_t j = 0; j < t->columns; j++)
    if (strcmp(t->fields[j], name) == 0) return (long)j;
  return -1;
}

/* ---------------------------------------------------------------- parsing the cells */

static int is_word(const char *s, const char *word) { return strcasecmp(s, word) == 0; }

static double parse_real(const char *s, int single, const char *input, size_t row) {
  while (*s == ' ') s++;
  if (*s == '\0' || is_word(s, "nan")) return NAN;
  if (is_word(s, "true")) return 1.0;
  if (is_word(s, "false")) return 0.0;
  char *end;
  /* strtof for a float input: rounding the text once, as numpy's float32 parse does */
  double value = single ? (double)strtof(s, &end) : strtod(s, &end);
  while (*end == ' ') end++;
  if (end == s || *end != '\0')
    die("row %zu, input '%s': '%s' is not a number", row + 1, input, s);
  return value;
}

static int64_t parse_integer(const char *s, const char *input, size_t row) {
  while (*s == ' ') s++;
  if (is_word(s, "true")) return 1;
  if (is_word(s, "false")) return 0;
  char *end;
  errno = 0;
  long long value = strtoll(s, &end, 10);
  while (*end == ' ') end++;
  if (end == s || *end != '\0' || errno == ERANGE)
    die("row %zu, input '%s': '%s' is not a 64-bit integer", row + 1, input, s);
  return (int64_t)value;
}

/* ------------------------------------------------------------------ the graph inputs */

typedef struct {
  char *name;
  ONNXTensorElementDataType type;
  size_t width;      /* values per row */
  long *columns;     /* the CSV column of each of the width values */
  void *values;      /* rows * width values of the declared type (char * for strings) */
} Input;

static size_t element_size(ONNXTensorElementDataType type) {
  switch (type) {
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT: return sizeof(float);
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE: return sizeof(double);
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64: return sizeof(int64_t);
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_BOOL: return sizeof(uint8_t);
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_STRING: return sizeof(char *);
    default: return 0;
  }
}

/* The metadata "input_columns", a JSON list of strings, or NULL; *count set. */
static char **recorded_columns(OrtSession *session, OrtAllocator *alloc, size_t *count) {
  OrtModelMetadata *meta;
  char *json = NULL;
  check(api->SessionGetModelMetadata(session, &meta), "reading the model's metadata");
  check(api->ModelMetadataLookupCustomMetadataMap(meta, alloc, "input_columns", &json),
        "reading the metadata 'input_columns'");
  api->ReleaseModelMetadata(meta);
  *count = 0;
  if (json == NULL) return NULL;
  size_t n = strlen(json);
  char **names = xmalloc((n + 1) * sizeof(char *));
  char *copy = xmalloc(n + 1), *p = json, *out = copy;
  while (*p) {
    if (*p != '"') { p++; continue; }
    names[(*count)++] = out;
    for (p++; *p && *p != '"'; p++) {
      if (*p == '\\') {
        p++;
        if (*p == 'u') die("metadata 'input_columns': \\u escapes are not supported");
        *out++ = *p == 'n' ? '\n' : *p == 't' ? '\t' : *p;
      } else {
        *out++ = *p;
      }
    }
    if (*p) p++;
    *out++ = '\0';
  }
  check(api->AllocatorFree(alloc, json), "freeing the metadata");
  return names;
}

static Input *read_inputs(OrtSession *session, OrtAllocator *alloc, const Table *csv,
                          size_t *n_inputs) {
  check(api->SessionGetInputCount(session, n_inputs), "counting the graph inputs");
  Input *inputs = xmalloc(*n_inputs * sizeof(Input));
  size_t n_recorded = 0;
  char **recorded = recorded_columns(session, alloc, &n_recorded);
  for (size_t i = 0; i < *n_inputs; i++) {
    Input *in = &inputs[i];
    OrtTypeInfo *info;
    const OrtTensorTypeAndShapeInfo *tensor;
    ONNXType kind;
    size_t rank;
    check(api->SessionGetInputName(session, i, alloc, &in->name), "reading an input name");
    check(api->SessionGetInputTypeInfo(session, i, &info), "reading an input type");
    check(api->GetOnnxTypeFromTypeInfo(info, &kind), "reading an input type");
    if (kind != ONNX_TYPE_TENSOR)
      die("input '%s' is not a tensor (ONNX type %d): not supported", in->name, (int)kind);
    check(api->CastTypeInfoToTensorInfo(info, &tensor), "reading an input type");
    check(api->GetTensorElementType(tensor, &in->type), "reading an input type");
    check(api->GetDimensionsCount(tensor, &rank), "reading an input shape");
    int64_t dims[2] = {0, 1};
    if (rank < 1 || rank > 2)
      die("input '%s' has rank %zu: only (N,) and (N, F) inputs are supported", in->name, rank);
    check(api->GetDimensions(tensor, dims, rank), "reading an input shape");
    api->ReleaseTypeInfo(info);
    if (element_size(in->type) == 0)
      die("input '%s' has ONNX element type %d: only float, double, int64, bool and string "
          "inputs are supported", in->name, (int)in->type);
    in->width = rank == 2 ? (size_t)dims[1] : 1;
    if (rank == 2 && dims[1] <= 0)
      die("input '%s' has no fixed number of columns: cannot map CSV columns to it", in->name);
    in->columns = xmalloc(in->width * sizeof(long));
    if (*n_inputs == 1 && recorded != NULL) {
      if (n_recorded != in->width)
        die("metadata 'input_columns' names %zu columns, input '%s' takes %zu", n_recorded,
            in->name, in->width);
      for (size_t k = 0; k < in->width; k++)
        if ((in->columns[k] = find_column(csv, recorded[k])) < 0)
          die("the CSV has no column '%s', which the graph takes", recorded[k]);
    } else if (*n_inputs == 1 && in->width > 1) {
      if (csv->columns != in->width)
        die("the CSV has %zu columns, input '%s' takes %zu", csv->columns, in->name, in->width);
      for (size_t k = 0; k < in->width; k++) in->columns[k] = (long)k;
    } else {
      if (in->width != 1)
        die("input '%s' takes %zu columns: with several inputs, only one column per input is "
            "supported", in->name, in->width);
      in->columns[0] = find_column(csv, in->name);
      if (in->columns[0] < 0 && *n_inputs == 1 && csv->columns == 1) in->columns[0] = 0;
      if (in->columns[0] < 0)
        die("the CSV has no column '%s', which the graph takes as an input", in->name);
    }
  }
  free(recorded);
  return inputs;
}

static void parse_input(Input *in, const Table *csv) {
  size_t size = element_size(in->type);
  in->values = xmalloc(csv->rows * in->width * size);
  for (size_t r = 0; r < csv->rows; r++) {
    for (size_t k = 0; k < in->width; k++) {
      size_t at = r * in->width + k;
      const char *s = cell(csv, r, (size_t)in->columns[k]);
      switch (in->type) {
        case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT:
          ((float *)in->values)[at] = (float)parse_real(s, 1, in->name, r); break;
        case ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE:
          ((double *)in->values)[at] = parse_real(s, 0, in->name, r); break;
        case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64:
          ((int64_t *)in->values)[at] = parse_integer(s, in->name, r); break;
        case ONNX_TENSOR_ELEMENT_DATA_TYPE_BOOL:
          ((uint8_t *)in->values)[at] = parse_integer(s, in->name, r) != 0; break;
        default: ((const char **)in->values)[at] = s;
      }
    }
  }
}

/* A tensor over rows [start, start + n) of the input: a view for numbers, a copy for strings. */
static OrtValue *input_tensor(const Input *in, size_t start, size_t n, OrtAllocator *alloc,
                              const OrtMemoryInfo *memory) {
  int64_t shape[2] = {(int64_t)n, (int64_t)in->width};
  OrtValue *value = NULL;
  size_t size = element_size(in->type), count = n * in->width;
  if (in->type == ONNX_TENSOR_ELEMENT_DATA_TYPE_STRING) {
    check(api->CreateTensorAsOrtValue(alloc, shape, 2, in->type, &value), "creating a tensor");
    check(api->FillStringTensor(value, (const char *const *)in->values + start * in->width, count),
          "filling a string tensor");
  } else {
    check(api->CreateTensorWithDataAsOrtValue(memory, (char *)in->values + start * in->width * size,
                                              count * size, shape, 2, in->type, &value),
          "creating a tensor");
  }
  return value;
}

/* --------------------------------------------------------------------- the outputs */

static void write_csv_text(FILE *out, const char *s, size_t n) {
  int quote = 0;
  for (size_t i = 0; i < n; i++) quote |= s[i] == ',' || s[i] == '"' || s[i] == '\n' || s[i] == '\r';
  if (!quote) { fwrite(s, 1, n, out); return; }
  fputc('"', out);
  for (size_t i = 0; i < n; i++) { if (s[i] == '"') fputc('"', out); fputc(s[i], out); }
  fputc('"', out);
}

static void write_rows(FILE *out, OrtValue *label, OrtValue *proba, OrtValue *sets, size_t n,
                       int header) {
  OrtTensorTypeAndShapeInfo *info;
  ONNXTensorElementDataType label_type, proba_type;
  size_t rank;
  int64_t dims[2] = {0, 1};
  check(api->GetTensorTypeAndShape(proba, &info), "reading the probabilities");
  check(api->GetTensorElementType(info, &proba_type), "reading the probabilities");
  check(api->GetDimensionsCount(info, &rank), "reading the probabilities");
  if (rank != 2) die("the output 'probabilities' has rank %zu, expected 2", rank);
  check(api->GetDimensions(info, dims, 2), "reading the probabilities");
  api->ReleaseTensorTypeAndShapeInfo(info);
  if (proba_type != ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT && proba_type != ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE)
    die("the output 'probabilities' has element type %d, expected float or double", (int)proba_type);
  check(api->GetTensorTypeAndShape(label, &info), "reading the labels");
  check(api->GetTensorElementType(info, &label_type), "reading the labels");
  api->ReleaseTensorTypeAndShapeInfo(info);
  size_t classes = (size_t)dims[1];
  const bool *in_set = NULL; /* ONNX bool: one byte per value */
  if (sets != NULL) {
    ONNXTensorElementDataType set_type;
    check(api->GetTensorTypeAndShape(sets, &info), "reading the prediction sets");
    check(api->GetTensorElementType(info, &set_type), "reading the prediction sets");
    api->ReleaseTensorTypeAndShapeInfo(info);
    if (set_type != ONNX_TENSOR_ELEMENT_DATA_TYPE_BOOL)
      die("the output 'prediction_set' has element type %d, expected bool", (int)set_type);
    void *data;
    check(api->GetTensorMutableData(sets, &data), "reading the prediction sets");
    in_set = data;
  }
  if (header) {
    fputs("label", out);
    for (size_t k = 0; k < classes; k++) fprintf(out, ",p%zu", k);
    for (size_t k = 0; in_set != NULL && k < classes; k++) fprintf(out, ",s%zu", k);
    fputc('\n', out);
  }
  void *p, *l = NULL;
  check(api->GetTensorMutableData(proba, &p), "reading the probabilities");
  if (label_type != ONNX_TENSOR_ELEMENT_DATA_TYPE_STRING)
    check(api->GetTensorMutableData(label, &l), "reading the labels");
  char *text = NULL;
  size_t text_size = 0;
  for (size_t r = 0; r < n; r++) {
    if (label_type == ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64) {
      fprintf(out, "%lld", (long long)((int64_t *)l)[r]);
    } else if (label_type == ONNX_TENSOR_ELEMENT_DATA_TYPE_STRING) {
      size_t length;
      check(api->GetStringTensorElementLength(label, r, &length), "reading a label");
      if (length + 1 > text_size) { free(text); text = xmalloc(text_size = 2 * length + 16); }
      check(api->GetStringTensorElement(label, length, r, text), "reading a label");
      write_csv_text(out, text, length);
    } else {
      die("the output 'label' has element type %d: expected int64 or string", (int)label_type);
    }
    for (size_t k = 0; k < classes; k++) {
      if (proba_type == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT)
        fprintf(out, ",%.9g", (double)((float *)p)[r * classes + k]);
      else
        fprintf(out, ",%.17g", ((double *)p)[r * classes + k]);
    }
    for (size_t k = 0; in_set != NULL && k < classes; k++)
      fprintf(out, ",%d", in_set[r * classes + k] ? 1 : 0);
    fputc('\n', out);
  }
  free(text);
}

/* ------------------------------------------------------------------------------ main */

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int main(int argc, char **argv) {
  const char *paths[3] = {NULL, NULL, "-"};
  size_t n_paths = 0, batch = 0;
  int timing = 0;
  for (int a = 1; a < argc; a++) {
    if (strcmp(argv[a], "--time") == 0) timing = 1;
    else if (strcmp(argv[a], "--batch") == 0 && a + 1 < argc) {
      char *end;
      long long b = strtoll(argv[++a], &end, 10);
      if (*end != '\0' || b <= 0) die("--batch must be a positive integer, got '%s'", argv[a]);
      batch = (size_t)b;
    } else if (n_paths < 3 && (argv[a][0] != '-' || strcmp(argv[a], "-") == 0)) paths[n_paths++] = argv[a];
    else n_paths = 4;
  }
  if (n_paths < 2 || n_paths > 3) {
    fputs("usage: serve_c <model.onnx> <rows.csv> [<out.csv>|-] [--batch N] [--time]\n", stderr);
    return 2;
  }
  FILE *model_file = fopen(paths[0], "rb");
  if (model_file == NULL) die("cannot open the model '%s': %s", paths[0], strerror(errno));
  fclose(model_file);

  const char *library = getenv("ONNXRUNTIME_LIB");
  if (library == NULL || *library == '\0') library = "libonnxruntime.so";
  void *handle = dlopen(library, RTLD_NOW | RTLD_LOCAL);
  if (handle == NULL) die("cannot load onnxruntime (set ONNXRUNTIME_LIB): %s", dlerror());
  const OrtApiBase *(*get_api_base)(void);
  *(void **)&get_api_base = dlsym(handle, "OrtGetApiBase");
  if (get_api_base == NULL) die("%s has no OrtGetApiBase: not an onnxruntime library", library);
  api = get_api_base()->GetApi(ORT_API_VERSION);
  if (api == NULL)
    die("onnxruntime %s is older than the C API version %d of the header this was built with",
        get_api_base()->GetVersionString(), ORT_API_VERSION);

  Table csv = read_csv(paths[1]);
  OrtEnv *env;
  OrtSessionOptions *options;
  OrtSession *session;
  OrtAllocator *alloc;
  OrtMemoryInfo *memory;
  check(api->CreateEnv(ORT_LOGGING_LEVEL_WARNING, "serve_c", &env), "creating the environment");
  check(api->CreateSessionOptions(&options), "creating session options");
  check(api->SetIntraOpNumThreads(options, 1), "setting threads");
  check(api->SetInterOpNumThreads(options, 1), "setting threads");
  check(api->SetSessionExecutionMode(options, ORT_SEQUENTIAL), "setting the execution mode");
  check(api->CreateSession(env, paths[0], options, &session), "loading the model");
  check(api->GetAllocatorWithDefaultOptions(&alloc), "getting an allocator");
  check(api->CreateCpuMemoryInfo(OrtArenaAllocator, OrtMemTypeDefault, &memory), "memory info");

  size_t n_inputs, n_outputs;
  Input *inputs = read_inputs(session, alloc, &csv, &n_inputs);
  for (size_t i = 0; i < n_inputs; i++) parse_input(&inputs[i], &csv);
  const char **input_names = xmalloc(n_inputs * sizeof(char *));
  for (size_t i = 0; i < n_inputs; i++) input_names[i] = inputs[i].name;
  check(api->SessionGetOutputCount(session, &n_outputs), "counting the outputs");
  const char *output_names[3] = {"label", "probabilities", "prediction_set"};
  size_t n_wanted = 2; /* 3 with the prediction sets */
  for (size_t j = 0, found = 0; j <= n_outputs; j++) {
    if (j == n_outputs) {
      if (found != 2) die("the graph needs the outputs 'label' and 'probabilities' (export with zipmap=False)");
      break;
    }
    char *name;
    check(api->SessionGetOutputName(session, j, alloc, &name), "reading an output name");
    found += strcmp(name, "label") == 0 || strcmp(name, "probabilities") == 0;
    if (strcmp(name, "prediction_set") == 0) n_wanted = 3;
    check(api->AllocatorFree(alloc, name), "freeing a name");
  }

  FILE *out = strcmp(paths[2], "-") == 0 ? stdout : fopen(paths[2], "w");
  if (out == NULL) die("cannot write '%s': %s", paths[2], strerror(errno));
  if (batch == 0) batch = csv.rows > 0 ? csv.rows : 1;
  OrtValue **feeds = xmalloc(n_inputs * sizeof(OrtValue *));
  double seconds = 0.0, first = 0.0; /* the first Run is also the session's warm-up */
  for (size_t start = 0; start < csv.rows || start == 0; start += batch) {
    size_t n = csv.rows - start < batch ? csv.rows - start : batch;
    double t0 = now();
    for (size_t i = 0; i < n_inputs; i++) feeds[i] = input_tensor(&inputs[i], start, n, alloc, memory);
    OrtValue *results[3] = {NULL, NULL, NULL};
    check(api->Run(session, NULL, input_names, (const OrtValue *const *)feeds, n_inputs,
                   output_names, n_wanted, results), "running the model");
    seconds += now() - t0;
    if (start == 0) first = seconds;
    write_rows(out, results[0], results[1], results[2], n, start == 0);
    for (size_t i = 0; i < n_inputs; i++) api->ReleaseValue(feeds[i]);
    for (size_t j = 0; j < n_wanted; j++) api->ReleaseValue(results[j]);
    if (csv.rows == 0) break;
  }
  if (out != stdout && fclose(out) != 0) die("cannot write '%s': %s", paths[2], strerror(errno));
  if (timing)
    fprintf(stderr, "rows=%zu batch=%zu run_seconds=%.9f after_first_seconds=%.9f onnxruntime=%s\n",
            csv.rows, batch, seconds, seconds - first, get_api_base()->GetVersionString());

  for (size_t i = 0; i < n_inputs; i++) {
    check(api->AllocatorFree(alloc, inputs[i].name), "freeing a name");
    free(inputs[i].columns);
    free(inputs[i].values);
  }
  free(inputs);
  free(input_names);
  free(feeds);
  api->ReleaseMemoryInfo(memory);
  api->ReleaseSession(session);
  api->ReleaseSessionOptions(options);
  api->ReleaseEnv(env);
  free(csv.fields);
  free(csv.text);
  return 0;
}
