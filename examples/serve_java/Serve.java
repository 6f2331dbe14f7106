/* Serve a bernonnx ONNX export from the JVM with onnxruntime's C API, through JNA.
 *
 * Usage: java -cp <jna.jar>:<classes> Serve <model.onnx> <rows.csv> [<out.csv>|-] [--batch N]
 *        java -cp <jna.jar>:<classes> Serve --check-header <onnxruntime_c_api.h>
 *
 * The same program as examples/serve_c/serve.c, in Java: it reads the graph's inputs and
 * feeds each at the type it declares (float, double, int64, bool or string):
 *   - one input of shape (N, F), for example "X": the CSV has exactly F columns, in the
 *     graph's order (for a graph exported from a DataFrame, the order its metadata
 *     "input_columns" records: columns are then matched by header name);
 *   - one input of shape (N, 1) per column, as to_onnx writes for a DataFrame into a
 *     ColumnTransformer: each input takes the CSV column of the same name.
 * Numbers: an empty field or "nan" is NaN, "inf"/"-inf" infinite, "True"/"False" are 1/0.
 * Output (out.csv, or stdout): a header "label,p0,p1,..." and one line per row: the label
 * and the probabilities, then every further output of the graph in graph order, one column
 * per value of a row, named "<output>[j]" (Venn-Abers' "interval", a conformal
 * "prediction_set"...), printed by element type: float and double as the shortest text
 * that reads back as the same double (a float widened to double first), integers and
 * booleans as integers, strings quoted as CSV needs.
 *
 * Library: $ONNXRUNTIME_LIB (a path), else "onnxruntime" as the system's loader finds it.
 * The session runs on one thread, sequentially, as the C example does: sums then add up
 * in the order of Python's single-threaded onnxruntime.
 * Threads: one OrtEnv per process; an OrtSession may be shared by threads calling Run.
 * Exit codes: 0 ok, 1 error (message on stderr, naming the path or name at fault), 2 usage.
 * Build: javac -cp jna.jar -d classes OrtApi.java Serve.java
 */
import com.sun.jna.Memory;
import com.sun.jna.Platform;
import com.sun.jna.Pointer;
import com.sun.jna.StringArray;
import com.sun.jna.WString;
import com.sun.jna.ptr.IntByReference;
import com.sun.jna.ptr.PointerByReference;
import java.io.BufferedWriter;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;

public final class Serve {
  private static OrtApi ort;

  /** What must be released, released in reverse order of acquisition. */
  static final class Scope implements AutoCloseable {
    private final Deque<Runnable> releases = new ArrayDeque<>();

    Pointer own(OrtApi.Fn release, Pointer object) {
      releases.push(() -> ort.release(release, object));
      return object;
    }

    <T extends Memory> T own(T memory) {
      releases.push(memory::close);
      return memory;
    }

    /** A string the default allocator made: copied to Java, then given back. */
    String take(Pointer allocator, Pointer text) {
      try {
        return text.getString(0, "UTF-8");
      } finally {
        ort.call(OrtApi.Fn.AllocatorFree, "freeing a string", allocator, text);
      }
    }

    @Override
    public void close() {
      while (!releases.isEmpty()) {
        releases.pop().run();
      }
    }
  }

  // ------------------------------------------------------------------------- the CSV

  /** The CSV: a header row and rows of text fields, as pandas' to_csv writes them. */
  static final class Table {
    final String[] header;
    final List<String[]> rows = new ArrayList<>();

    Table(Path path) {
      String text;
      try {
        text = new String(Files.readAllBytes(path), StandardCharsets.UTF_8);
      } catch (IOException e) {
        throw new OrtApi.Error("cannot open the CSV file '" + path + "': " + reason(e));
      }
      List<String[]> lines = parse(text, path);
      if (lines.isEmpty()) {
        throw new OrtApi.Error(path + ": no header row");
      }
      header = lines.get(0);
      for (int i = 1; i < lines.size(); i++) {
        rows.add(lines.get(i));
      }
    }

    private static List<String[]> parse(String text, Path path) {
      List<String[]> lines = new ArrayList<>();
      List<String> fields = new ArrayList<>();
      StringBuilder field = new StringBuilder();
      int line = 1;
      int i = 0;
      int n = text.length();
      while (i < n) {
        char c = text.charAt(i);
        if (fields.isEmpty() && field.length() == 0 && (c == '\n' || c == '\r')) {
          i += c == '\r' && i + 1 < n && text.charAt(i + 1) == '\n' ? 2 : 1; // a blank line
          line++;
          continue;
        }
        boolean quoted = c == '"';
        if (quoted) {
          for (i++; ; i++) {
            if (i >= n) {
              throw new OrtApi.Error(path + ", line " + line + ": unterminated quoted field");
            }
            char q = text.charAt(i);
            if (q == '"' && i + 1 < n && text.charAt(i + 1) == '"') {
              field.append('"');
              i++;
            } else if (q == '"') {
              i++;
              break;
            } else {
              field.append(q);
            }
          }
        }
        while (i < n && ",\r\n".indexOf(text.charAt(i)) < 0) {
          if (quoted) {
            throw new OrtApi.Error(path + ", line " + line
                + ": unexpected character after a quoted field");
          }
          field.append(text.charAt(i++));
        }
        fields.add(field.toString());
        field.setLength(0);
        if (i < n && text.charAt(i) == ',') {
          i++;
          if (i == n) {
            fields.add("");
          } else {
            continue;
          }
        }
        if (i < n && text.charAt(i) == '\r') {
          i++;
        }
        if (i < n && text.charAt(i) == '\n') {
          i++;
        }
        String[] row = fields.toArray(new String[0]);
        if (!lines.isEmpty() && row.length != lines.get(0).length) {
          throw new OrtApi.Error(path + ", line " + line + ": " + row.length
              + " fields, but the header has " + lines.get(0).length + " columns");
        }
        lines.add(row);
        fields.clear();
        line++;
      }
      return lines;
    }

    int column(String name) {
      for (int j = 0; j < header.length; j++) {
        if (header[j].equals(name)) {
          return j;
        }
      }
      return -1;
    }
  }

  private static String reason(IOException e) {
    return e instanceof NoSuchFileException ? "no such file" : e.toString();
  }

  // ----------------------------------------------------------------- parsing the cells

  static double parseReal(String text, boolean single, String input, int row) {
    String s = text.trim();
    String lower = s.toLowerCase();
    switch (lower) {
      case "":
      case "nan":
        return Double.NaN;
      case "true":
        return 1.0;
      case "false":
        return 0.0;
      case "inf":
      case "+inf":
      case "infinity":
        return Double.POSITIVE_INFINITY;
      case "-inf":
      case "-infinity":
        return Double.NEGATIVE_INFINITY;
      default:
    }
    // Java also reads "1d", "1f" and hexadecimal floats: a CSV number has none of these
    if (!lower.matches("[+-]?(\\d+\\.?\\d*|\\.\\d+)(e[+-]?\\d+)?")) {
      throw new OrtApi.Error("row " + (row + 1) + ", input '" + input + "': '" + text
          + "' is not a number");
    }
    // Float.parseFloat for a float input: the text rounded once, as numpy's float32 parse
    return single ? Float.parseFloat(s) : Double.parseDouble(s);
  }

  static long parseInteger(String text, String input, int row) {
    String s = text.trim();
    if (s.equalsIgnoreCase("true")) {
      return 1;
    }
    if (s.equalsIgnoreCase("false")) {
      return 0;
    }
    try {
      return Long.parseLong(s.startsWith("+") ? s.substring(1) : s);
    } catch (NumberFormatException e) {
      throw new OrtApi.Error("row " + (row + 1) + ", input '" + input + "': '" + text
          + "' is not a 64-bit integer");
    }
  }

  static int elementSize(int type) {
    switch (type) {
      case OrtApi.FLOAT:
        return 4;
      case OrtApi.DOUBLE:
      case OrtApi.INT64:
        return 8;
      case OrtApi.BOOL:
        return 1;
      case OrtApi.STRING:
        return 0; // held as Java strings, copied into the tensor by FillStringTensor
      default:
        return -1;
    }
  }

  // ---------------------------------------------------------------- the graph inputs

  /** One graph input: its name, type, width, CSV columns and parsed values. */
  static final class Input {
    String name;
    int type;
    int width;
    int[] columns;
    Memory values; // rows * width numbers of the declared type (numeric inputs)
    String[] strings; // rows * width strings (string inputs)
  }

  /** Element type and dimensions of an input or output, from its OrtTypeInfo. */
  static long[] describe(Pointer typeInfo, String kind, String name, IntByReference type) {
    IntByReference onnxType = new IntByReference();
    ort.call(OrtApi.Fn.GetOnnxTypeFromTypeInfo, "reading the type of " + kind + " '" + name + "'",
        typeInfo, onnxType);
    if (onnxType.getValue() != OrtApi.ONNX_TYPE_TENSOR) {
      throw new OrtApi.Error(kind + " '" + name + "' is not a tensor (ONNX type "
          + onnxType.getValue() + "): export with zipmap=False");
    }
    PointerByReference tensor = new PointerByReference(); // owned by typeInfo
    ort.call(OrtApi.Fn.CastTypeInfoToTensorInfo, "reading " + kind + " '" + name + "'",
        typeInfo, tensor);
    return shape(tensor.getValue(), kind + " '" + name + "'", type);
  }

  /** Element type and dimensions of an OrtTensorTypeAndShapeInfo. */
  static long[] shape(Pointer info, String what, IntByReference type) {
    ort.call(OrtApi.Fn.GetTensorElementType, "reading the type of " + what, info, type);
    Memory count = OrtApi.sizeOut();
    ort.call(OrtApi.Fn.GetDimensionsCount, "reading the shape of " + what, info, count);
    long[] dims = new long[(int) OrtApi.size(count)];
    ort.call(OrtApi.Fn.GetDimensions, "reading the shape of " + what, info, dims,
        new OrtApi.SizeT(dims.length));
    count.close();
    return dims;
  }

  /** The metadata "input_columns", a JSON list of strings, or null. */
  static List<String> recordedColumns(Pointer session, Pointer allocator) {
    try (Scope scope = new Scope()) {
      PointerByReference meta = new PointerByReference();
      ort.call(OrtApi.Fn.SessionGetModelMetadata, "reading the model's metadata", session, meta);
      scope.own(OrtApi.Fn.ReleaseModelMetadata, meta.getValue());
      PointerByReference json = new PointerByReference();
      ort.call(OrtApi.Fn.ModelMetadataLookupCustomMetadataMap,
          "reading the metadata 'input_columns'", meta.getValue(), allocator, "input_columns",
          json);
      if (json.getValue() == null) {
        return null;
      }
      return parseNames(scope.take(allocator, json.getValue()));
    }
  }

  /** The strings of a JSON list of strings. */
  static List<String> parseNames(String json) {
    List<String> names = new ArrayList<>();
    for (int i = 0; i < json.length(); i++) {
      if (json.charAt(i) != '"') {
        continue;
      }
      StringBuilder name = new StringBuilder();
      for (i++; i < json.length() && json.charAt(i) != '"'; i++) {
        char c = json.charAt(i);
        if (c == '\\' && i + 1 < json.length()) {
          char e = json.charAt(++i);
          if (e == 'u' && i + 4 < json.length()) {
            name.append((char) Integer.parseInt(json.substring(i + 1, i + 5), 16));
            i += 4;
          } else {
            name.append(e == 'n' ? '\n' : e == 't' ? '\t' : e == 'r' ? '\r' : e);
          }
        } else {
          name.append(c);
        }
      }
      names.add(name.toString());
    }
    return names;
  }

  static List<Input> readInputs(Pointer session, Pointer allocator, Table csv, Scope scope) {
    Memory count = scope.own(OrtApi.sizeOut());
    ort.call(OrtApi.Fn.SessionGetInputCount, "counting the graph inputs", session, count);
    int n = (int) OrtApi.size(count);
    List<String> recorded = recordedColumns(session, allocator);
    List<Input> inputs = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      Input in = new Input();
      PointerByReference name = new PointerByReference();
      ort.call(OrtApi.Fn.SessionGetInputName, "reading an input name", session,
          new OrtApi.SizeT(i), allocator, name);
      in.name = scope.take(allocator, name.getValue());
      PointerByReference info = new PointerByReference();
      ort.call(OrtApi.Fn.SessionGetInputTypeInfo, "reading input '" + in.name + "'", session,
          new OrtApi.SizeT(i), info);
      IntByReference type = new IntByReference();
      long[] dims;
      try {
        dims = describe(info.getValue(), "input", in.name, type);
      } finally {
        ort.release(OrtApi.Fn.ReleaseTypeInfo, info.getValue());
      }
      in.type = type.getValue();
      if (dims.length < 1 || dims.length > 2) {
        throw new OrtApi.Error("input '" + in.name + "' has rank " + dims.length
            + ": only (N,) and (N, F) inputs are supported");
      }
      if (elementSize(in.type) < 0) {
        throw new OrtApi.Error("input '" + in.name + "' has ONNX element type " + in.type
            + ": only float, double, int64, bool and string inputs are supported");
      }
      if (dims.length == 2 && dims[1] <= 0) {
        throw new OrtApi.Error("input '" + in.name
            + "' has no fixed number of columns: cannot map CSV columns to it");
      }
      in.width = dims.length == 2 ? (int) dims[1] : 1;
      in.columns = new int[in.width];
      if (n == 1 && recorded != null) {
        if (recorded.size() != in.width) {
          throw new OrtApi.Error("metadata 'input_columns' names " + recorded.size()
              + " columns, input '" + in.name + "' takes " + in.width);
        }
        for (int k = 0; k < in.width; k++) {
          if ((in.columns[k] = csv.column(recorded.get(k))) < 0) {
            throw new OrtApi.Error("the CSV has no column '" + recorded.get(k)
                + "', which the graph's input '" + in.name + "' takes");
          }
        }
      } else if (n == 1 && in.width > 1) {
        if (csv.header.length != in.width) {
          throw new OrtApi.Error("the CSV has " + csv.header.length + " columns, input '"
              + in.name + "' takes " + in.width);
        }
        for (int k = 0; k < in.width; k++) {
          in.columns[k] = k;
        }
      } else {
        if (in.width != 1) {
          throw new OrtApi.Error("input '" + in.name + "' takes " + in.width
              + " columns: with several inputs, only one column per input is supported");
        }
        in.columns[0] = csv.column(in.name);
        if (in.columns[0] < 0 && n == 1 && csv.header.length == 1) {
          in.columns[0] = 0;
        }
        if (in.columns[0] < 0) {
          throw new OrtApi.Error("the CSV has no column '" + in.name
              + "', which the graph takes as an input");
        }
      }
      inputs.add(in);
    }
    return inputs;
  }

  /** The input's values from the CSV, at its declared type, in memory this program owns. */
  static void parseInput(Input in, Table csv, Scope scope) {
    int rows = csv.rows.size();
    long count = (long) rows * in.width;
    if (in.type == OrtApi.STRING) {
      in.strings = new String[(int) count];
    } else {
      in.values = scope.own(new Memory(Math.max(1, count * elementSize(in.type))));
    }
    for (int r = 0; r < rows; r++) {
      String[] row = csv.rows.get(r);
      for (int k = 0; k < in.width; k++) {
        long at = (long) r * in.width + k;
        String s = row[in.columns[k]];
        switch (in.type) {
          case OrtApi.FLOAT:
            in.values.setFloat(4 * at, (float) parseReal(s, true, in.name, r));
            break;
          case OrtApi.DOUBLE:
            in.values.setDouble(8 * at, parseReal(s, false, in.name, r));
            break;
          case OrtApi.INT64:
            in.values.setLong(8 * at, parseInteger(s, in.name, r));
            break;
          case OrtApi.BOOL:
            in.values.setByte(at, (byte) (parseInteger(s, in.name, r) != 0 ? 1 : 0));
            break;
          default:
            in.strings[(int) at] = s;
        }
      }
    }
  }

  /**
   * A tensor over rows [start, start + n) of the input, released by ``batch``. Numbers: a
   * view of the input's memory (CreateTensorWithDataAsOrtValue copies nothing, so that
   * memory must outlive the tensor: it is freed at the very end). Strings: a tensor the
   * default allocator owns, filled with copies (FillStringTensor copies each string).
   */
  static Pointer inputTensor(Input in, int start, int n, Pointer allocator, Pointer memoryInfo,
      Scope batch) {
    long[] shape = {n, in.width};
    long count = (long) n * in.width;
    PointerByReference value = new PointerByReference();
    if (in.type == OrtApi.STRING) {
      ort.call(OrtApi.Fn.CreateTensorAsOrtValue, "creating a tensor for input '" + in.name + "'",
          allocator, shape, new OrtApi.SizeT(2), in.type, value);
      batch.own(OrtApi.Fn.ReleaseValue, value.getValue());
      String[] slice = new String[(int) count];
      System.arraycopy(in.strings, start * in.width, slice, 0, slice.length);
      try (StringArray text = new StringArray(slice, "UTF-8")) {
        ort.call(OrtApi.Fn.FillStringTensor, "filling input '" + in.name + "'", value.getValue(),
            text, new OrtApi.SizeT(count));
      }
    } else {
      long size = elementSize(in.type);
      Pointer data = in.values.share((long) start * in.width * size);
      ort.call(OrtApi.Fn.CreateTensorWithDataAsOrtValue,
          "creating a tensor for input '" + in.name + "'", memoryInfo, data,
          new OrtApi.SizeT(count * size), shape, new OrtApi.SizeT(2), in.type, value);
      batch.own(OrtApi.Fn.ReleaseValue, value.getValue());
    }
    return value.getValue();
  }

  // --------------------------------------------------------------------- the outputs

  /** One output tensor of a batch, its values copied into Java arrays. */
  static final class Output {
    final String name;
    final int type;
    final int rows;
    final int width; // values per row: the product of the dimensions after the first
    final Object values; // float[], double[], long[], int[], byte[] or String[]

    Output(String name, Pointer value) {
      this.name = name;
      IntByReference type = new IntByReference();
      PointerByReference info = new PointerByReference();
      ort.call(OrtApi.Fn.GetTensorTypeAndShape, "reading output '" + name + "'", value, info);
      long[] dims;
      try {
        dims = shape(info.getValue(), "output '" + name + "'", type);
      } finally {
        ort.release(OrtApi.Fn.ReleaseTensorTypeAndShapeInfo, info.getValue());
      }
      this.type = type.getValue();
      this.rows = dims.length == 0 ? 1 : (int) dims[0];
      long width = 1;
      for (int d = 1; d < dims.length; d++) {
        width *= dims[d];
      }
      this.width = (int) width;
      int count = rows * this.width;
      if (this.type == OrtApi.STRING) {
        String[] text = new String[count];
        Memory length = OrtApi.sizeOut();
        for (int i = 0; i < count; i++) {
          ort.call(OrtApi.Fn.GetStringTensorElementLength, "reading output '" + name + "'",
              value, new OrtApi.SizeT(i), length);
          long n = OrtApi.size(length);
          try (Memory bytes = new Memory(Math.max(1, n))) {
            ort.call(OrtApi.Fn.GetStringTensorElement, "reading output '" + name + "'", value,
                new OrtApi.SizeT(n), new OrtApi.SizeT(i), bytes);
            text[i] = new String(bytes.getByteArray(0, (int) n), StandardCharsets.UTF_8);
          }
        }
        length.close();
        values = text;
        return;
      }
      PointerByReference data = new PointerByReference(); // inside the OrtValue: copied out
      ort.call(OrtApi.Fn.GetTensorMutableData, "reading output '" + name + "'", value, data);
      Pointer p = data.getValue();
      switch (this.type) {
        case OrtApi.FLOAT:
          values = p.getFloatArray(0, count);
          break;
        case OrtApi.DOUBLE:
          values = p.getDoubleArray(0, count);
          break;
        case OrtApi.INT64:
          values = p.getLongArray(0, count);
          break;
        case OrtApi.INT32:
          values = p.getIntArray(0, count);
          break;
        case OrtApi.BOOL:
        case OrtApi.UINT8:
        case OrtApi.INT8:
          values = p.getByteArray(0, count);
          break;
        default:
          throw new OrtApi.Error("output '" + name + "' has ONNX element type " + this.type
              + ": only float, double, int64, int32, int8, uint8, bool and string outputs"
              + " are supported");
      }
    }

    String cell(int row, int j) {
      int at = row * width + j;
      switch (type) {
        case OrtApi.FLOAT:
          return Double.toString(((float[]) values)[at]);
        case OrtApi.DOUBLE:
          return Double.toString(((double[]) values)[at]);
        case OrtApi.INT64:
          return Long.toString(((long[]) values)[at]);
        case OrtApi.INT32:
          return Integer.toString(((int[]) values)[at]);
        case OrtApi.UINT8:
        case OrtApi.BOOL:
          return Integer.toString(((byte[]) values)[at] & 0xff);
        case OrtApi.INT8:
          return Integer.toString(((byte[]) values)[at]);
        default:
          return csvText(((String[]) values)[at]);
      }
    }
  }

  static String csvText(String s) {
    if (s.indexOf(',') < 0 && s.indexOf('"') < 0 && s.indexOf('\n') < 0 && s.indexOf('\r') < 0) {
      return s;
    }
    return '"' + s.replace("\"", "\"\"") + '"';
  }

  /** The batch's rows: label, probabilities, then the other outputs in graph order. */
  static void writeRows(Writer out, List<Output> outputs, int label, int proba, boolean header)
      throws IOException {
    List<Output> order = new ArrayList<>();
    order.add(outputs.get(label));
    order.add(outputs.get(proba));
    for (int j = 0; j < outputs.size(); j++) {
      if (j != label && j != proba) {
        order.add(outputs.get(j));
      }
    }
    for (Output o : order) {
      if (o.rows != order.get(0).rows) {
        throw new OrtApi.Error("output '" + o.name + "' has " + o.rows + " rows, output '"
            + order.get(0).name + "' " + order.get(0).rows);
      }
    }
    if (header) {
      StringBuilder line = new StringBuilder("label");
      for (int k = 0; k < order.get(1).width; k++) {
        line.append(",p").append(k);
      }
      for (Output o : order.subList(2, order.size())) {
        for (int k = 0; k < o.width; k++) {
          line.append(',').append(csvText(o.name + "[" + k + "]"));
        }
      }
      out.write(line.append('\n').toString());
    }
    StringBuilder line = new StringBuilder();
    for (int r = 0; r < order.get(0).rows; r++) {
      line.setLength(0);
      for (int o = 0; o < order.size(); o++) {
        Output output = order.get(o);
        if (o == 0 && output.width != 1) {
          throw new OrtApi.Error("output 'label' has " + output.width + " values per row");
        }
        for (int k = 0; k < output.width; k++) {
          if (o > 0 || k > 0) {
            line.append(',');
          }
          line.append(output.cell(r, k));
        }
      }
      out.write(line.append('\n').toString());
    }
  }

  // ---------------------------------------------------------------------------- main

  private static int usage() {
    System.err.println("usage: serve_java <model.onnx> <rows.csv> [<out.csv>|-] [--batch N]\n"
        + "       serve_java --check-header <onnxruntime_c_api.h>");
    return 2;
  }

  static int run(String[] args) throws IOException {
    if (args.length == 2 && args[0].equals("--check-header")) {
      return OrtApi.checkHeader(Paths.get(args[1]));
    }
    List<String> paths = new ArrayList<>();
    int batchSize = 0;
    for (int a = 0; a < args.length; a++) {
      if (args[a].equals("--batch") && a + 1 < args.length) {
        try {
          batchSize = Integer.parseInt(args[++a]);
        } catch (NumberFormatException e) {
          batchSize = -1;
        }
        if (batchSize <= 0) {
          throw new OrtApi.Error("--batch must be a positive integer, got '" + args[a] + "'");
        }
      } else if (!args[a].startsWith("-") || args[a].equals("-")) {
        paths.add(args[a]);
      } else {
        return usage();
      }
    }
    if (paths.size() < 2 || paths.size() > 3) {
      return usage();
    }
    Path model = Paths.get(paths.get(0));
    try {
      Files.newInputStream(model).close();
    } catch (IOException e) {
      throw new OrtApi.Error("cannot open the model '" + model + "': " + reason(e));
    }
    String library = System.getenv("ONNXRUNTIME_LIB");
    if (library == null || library.isEmpty()) {
      library = "onnxruntime";
    }
    ort = OrtApi.load(library);
    Table csv = new Table(Paths.get(paths.get(1)));
    String target = paths.size() == 3 ? paths.get(2) : "-";

    // everything the session needs, released in reverse order when the block ends
    try (Scope scope = new Scope()) {
      PointerByReference out = new PointerByReference();
      ort.call(OrtApi.Fn.CreateEnv, "creating the environment", OrtApi.ORT_LOGGING_LEVEL_WARNING,
          "serve_java", out);
      Pointer env = scope.own(OrtApi.Fn.ReleaseEnv, out.getValue());
      ort.call(OrtApi.Fn.CreateSessionOptions, "creating session options", out);
      Pointer options = scope.own(OrtApi.Fn.ReleaseSessionOptions, out.getValue());
      ort.call(OrtApi.Fn.SetIntraOpNumThreads, "setting threads", options, 1);
      ort.call(OrtApi.Fn.SetInterOpNumThreads, "setting threads", options, 1);
      ort.call(OrtApi.Fn.SetSessionExecutionMode, "setting the execution mode", options,
          OrtApi.ORT_SEQUENTIAL);
      // ORTCHAR_T is wchar_t on Windows, UTF-8 char elsewhere
      Object modelPath = Platform.isWindows() ? new WString(model.toString()) : model.toString();
      ort.call(OrtApi.Fn.CreateSession, "loading the model '" + model + "'", env, modelPath,
          options, out);
      Pointer session = scope.own(OrtApi.Fn.ReleaseSession, out.getValue());
      ort.call(OrtApi.Fn.GetAllocatorWithDefaultOptions, "getting an allocator", out);
      Pointer allocator = out.getValue(); // onnxruntime's own: never released
      ort.call(OrtApi.Fn.CreateCpuMemoryInfo, "describing CPU memory", OrtApi.ORT_ARENA_ALLOCATOR,
          OrtApi.ORT_MEM_TYPE_DEFAULT, out);
      Pointer memoryInfo = scope.own(OrtApi.Fn.ReleaseMemoryInfo, out.getValue());

      List<Input> inputs = readInputs(session, allocator, csv, scope);
      for (Input in : inputs) {
        parseInput(in, csv, scope);
      }
      String[] inputNames = inputs.stream().map(in -> in.name).toArray(String[]::new);

      Memory count = scope.own(OrtApi.sizeOut());
      ort.call(OrtApi.Fn.SessionGetOutputCount, "counting the outputs", session, count);
      String[] outputNames = new String[(int) OrtApi.size(count)];
      int label = -1;
      int proba = -1;
      for (int j = 0; j < outputNames.length; j++) {
        ort.call(OrtApi.Fn.SessionGetOutputName, "reading an output name", session,
            new OrtApi.SizeT(j), allocator, out);
        outputNames[j] = scope.take(allocator, out.getValue());
        label = outputNames[j].equals("label") ? j : label;
        proba = outputNames[j].equals("probabilities") ? j : proba;
        ort.call(OrtApi.Fn.SessionGetOutputTypeInfo, "reading output '" + outputNames[j] + "'",
            session, new OrtApi.SizeT(j), out);
        try {
          describe(out.getValue(), "output", outputNames[j], new IntByReference());
        } finally {
          ort.release(OrtApi.Fn.ReleaseTypeInfo, out.getValue());
        }
      }
      if (label < 0 || proba < 0) {
        throw new OrtApi.Error("the graph needs the outputs 'label' and 'probabilities'"
            + " (export with zipmap=False)");
      }

      int rows = csv.rows.size();
      int batch = batchSize > 0 ? batchSize : Math.max(rows, 1);
      try (Writer writer = target.equals("-")
          ? new BufferedWriter(new OutputStreamWriter(System.out, StandardCharsets.UTF_8))
          : new BufferedWriter(new OutputStreamWriter(openOutput(target), StandardCharsets.UTF_8))) {
        try (StringArray inNames = new StringArray(inputNames, "UTF-8");
            StringArray outNames = new StringArray(outputNames, "UTF-8")) {
          for (int start = 0; start < rows || start == 0; start += batch) {
            int n = Math.min(batch, rows - start);
            // this batch's input and output values, released when it is written
            try (Scope step = new Scope()) {
              Pointer[] feeds = new Pointer[inputs.size()];
              for (int i = 0; i < feeds.length; i++) {
                feeds[i] = inputTensor(inputs.get(i), start, n, allocator, memoryInfo, step);
              }
              Pointer[] results = new Pointer[outputNames.length]; // Run fills: ours to free
              try {
                ort.call(OrtApi.Fn.Run, "running the model", session, null, inNames, feeds,
                    new OrtApi.SizeT(feeds.length), outNames,
                    new OrtApi.SizeT(outputNames.length), results);
              } finally {
                for (Pointer result : results) {
                  step.own(OrtApi.Fn.ReleaseValue, result);
                }
              }
              List<Output> outputs = new ArrayList<>();
              for (int j = 0; j < results.length; j++) {
                outputs.add(new Output(outputNames[j], results[j]));
              }
              writeRows(writer, outputs, label, proba, start == 0);
            }
            if (rows == 0) {
              break;
            }
          }
        }
      }
    }
    return 0;
  }

  private static java.io.OutputStream openOutput(String target) {
    try {
      return new FileOutputStream(target);
    } catch (IOException e) {
      throw new OrtApi.Error("cannot write '" + target + "': " + e.getMessage());
    }
  }

  public static void main(String[] args) {
    int code;
    try {
      code = run(args);
    } catch (OrtApi.Error | IOException e) {
      System.err.println("serve_java: error: " + e.getMessage());
      code = 1;
    }
    System.exit(code);
  }
}
