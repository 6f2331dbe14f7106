/* onnxruntime's C API from Java through JNA: the library, its function table, OrtStatus.
 *
 * onnxruntime exports one C symbol, OrtGetApiBase. It returns an OrtApiBase, two function
 * pointers: GetApi(version) and GetVersionString(). GetApi returns the OrtApi table, a
 * struct of several hundred function pointers; a function is reached by its position in
 * `struct OrtApi` of onnxruntime_c_api.h, counted from 0. The table is append-only (a
 * later onnxruntime keeps every earlier entry where it was), so the positions read from
 * the header of API version API_VERSION hold for every library at least that new: the
 * 1.32 library of the onnxruntime wheel, asked for version 21, hands back the same table.
 * `Serve --check-header onnxruntime_c_api.h` re-reads every position used here from a
 * header and fails on any difference (tests/test_serve_java.py runs it).
 *
 * Memory ownership, as the C API states it: every OrtStatus, OrtEnv, OrtSessionOptions,
 * OrtSession, OrtMemoryInfo, OrtValue, OrtTypeInfo, OrtTensorTypeAndShapeInfo and
 * OrtModelMetadata the API creates is the caller's and goes back through its Release*
 * function; strings the API returns through an allocator (names, metadata) go back
 * through AllocatorFree on that allocator; the default allocator itself is onnxruntime's
 * and is never released; pointers *into* an object (GetErrorMessage's text, a tensor's
 * data, the tensor info CastTypeInfoToTensorInfo returns) live as long as the object and
 * are copied into Java values before it is released.
 */
import com.sun.jna.Function;
import com.sun.jna.IntegerType;
import com.sun.jna.Memory;
import com.sun.jna.Native;
import com.sun.jna.NativeLibrary;
import com.sun.jna.Pointer;
import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

final class OrtApi {
  /** ORT_API_VERSION of the onnxruntime_c_api.h the positions below were read from. */
  static final int API_VERSION = 21;

  /** The functions used, by their position in struct OrtApi (API version 21's header). */
  enum Fn {
    CreateStatus(0),
    GetErrorCode(1),
    GetErrorMessage(2),
    CreateEnv(3),
    CreateSession(7),
    Run(9),
    CreateSessionOptions(10),
    SetSessionExecutionMode(13),
    SetIntraOpNumThreads(24),
    SetInterOpNumThreads(25),
    SessionGetInputCount(30),
    SessionGetOutputCount(31),
    SessionGetInputTypeInfo(33),
    SessionGetOutputTypeInfo(34),
    SessionGetInputName(36),
    SessionGetOutputName(37),
    CreateTensorAsOrtValue(48),
    CreateTensorWithDataAsOrtValue(49),
    GetTensorMutableData(51),
    FillStringTensor(52),
    CastTypeInfoToTensorInfo(55),
    GetOnnxTypeFromTypeInfo(56),
    GetTensorElementType(60),
    GetDimensionsCount(61),
    GetDimensions(62),
    GetTensorTypeAndShape(65),
    CreateCpuMemoryInfo(69),
    AllocatorFree(76),
    GetAllocatorWithDefaultOptions(78),
    ReleaseEnv(92),
    ReleaseStatus(93),
    ReleaseMemoryInfo(94),
    ReleaseSession(95),
    ReleaseValue(96),
    ReleaseTypeInfo(98),
    ReleaseTensorTypeAndShapeInfo(99),
    ReleaseSessionOptions(100),
    SessionGetModelMetadata(111),
    ModelMetadataLookupCustomMetadataMap(116),
    ReleaseModelMetadata(118),
    GetStringTensorElementLength(127),
    GetStringTensorElement(128);

    final int index;

    Fn(int index) {
      this.index = index;
    }
  }

  // ONNXTensorElementDataType, ONNXType and the other enums of onnxruntime_c_api.h used here
  static final int FLOAT = 1, UINT8 = 2, INT8 = 3, INT32 = 6, INT64 = 7, STRING = 8, BOOL = 9;
  static final int DOUBLE = 11;
  static final int ONNX_TYPE_TENSOR = 1;
  static final int ORT_LOGGING_LEVEL_WARNING = 2, ORT_SEQUENTIAL = 0;
  static final int ORT_ARENA_ALLOCATOR = 1, ORT_MEM_TYPE_DEFAULT = 0;

  /** An error the program reports as such (exit code 1), never a crash. */
  static final class Error extends RuntimeException {
    private static final long serialVersionUID = 1L;

    Error(String message) {
      super(message);
    }
  }

  /** C's size_t, whatever its width on this platform. */
  public static final class SizeT extends IntegerType {
    private static final long serialVersionUID = 1L;

    public SizeT() {
      this(0);
    }

    public SizeT(long value) {
      super(Native.SIZE_T_SIZE, value, true);
    }
  }

  /** Room for one size_t the API writes (an out-parameter). */
  static Memory sizeOut() {
    return new Memory(Native.SIZE_T_SIZE);
  }

  static long size(Memory out) {
    return Native.SIZE_T_SIZE == 8 ? out.getLong(0) : out.getInt(0) & 0xffffffffL;
  }

  final String library;
  final String version;
  /**
   * The loaded library, held for as long as this object lives: JNA keeps only a weak
   * reference to a NativeLibrary and closes (dlclose) one the garbage collector finds
   * unreachable, after which every pointer in ``table`` points into unmapped memory.
   */
  private final NativeLibrary lib;
  private final Function[] table = new Function[Fn.values().length];

  private OrtApi(NativeLibrary lib, String library, String version, Pointer api) {
    this.lib = lib;
    this.library = library;
    this.version = version;
    for (Fn fn : Fn.values()) {
      table[fn.ordinal()] = Function.getFunction(api.getPointer((long) fn.index * Native.POINTER_SIZE));
    }
  }

  /** Opens ``library`` (a path, or a name the system's loader finds) and its OrtApi table. */
  static OrtApi load(String library) {
    String path = library.contains(File.separator) ? new File(library).getAbsolutePath() : library;
    NativeLibrary lib;
    try {
      lib = NativeLibrary.getInstance(path);
    } catch (UnsatisfiedLinkError e) {
      // JNA's message lists each place it tried, one per line: one line here
      throw new Error("cannot load onnxruntime from '" + library + "' (set ONNXRUNTIME_LIB): "
          + String.join("; ", e.getMessage().split("\\R")));
    }
    Function getApiBase;
    try {
      getApiBase = lib.getFunction("OrtGetApiBase");
    } catch (UnsatisfiedLinkError e) {
      throw new Error("'" + library + "' has no OrtGetApiBase: not an onnxruntime library");
    }
    Pointer base = getApiBase.invokePointer(new Object[0]);
    Function getApi = Function.getFunction(base.getPointer(0));
    Function getVersion = Function.getFunction(base.getPointer(Native.POINTER_SIZE));
    String version = getVersion.invokeString(new Object[0], false);
    Pointer api = getApi.invokePointer(new Object[] {API_VERSION});
    if (api == null) {
      throw new Error("onnxruntime " + version + " at '" + library
          + "' is older than the C API version " + API_VERSION + " this program uses");
    }
    OrtApi ort = new OrtApi(lib, library, version, api);
    ort.selfCheck();
    return ort;
  }

  /** The first three entries answer as documented: a status made, read back, released. */
  private void selfCheck() {
    Pointer status = table[Fn.CreateStatus.ordinal()].invokePointer(new Object[] {2, "probe"});
    int code = table[Fn.GetErrorCode.ordinal()].invokeInt(new Object[] {status});
    String text = table[Fn.GetErrorMessage.ordinal()].invokeString(new Object[] {status}, false);
    table[Fn.ReleaseStatus.ordinal()].invokeVoid(new Object[] {status});
    if (code != 2 || !"probe".equals(text)) {
      throw new Error("'" + library + "': the OrtApi table does not answer as API version "
          + API_VERSION + " says (CreateStatus/GetErrorCode/GetErrorMessage)");
    }
  }

  /** Calls a function that returns an OrtStatus*; a non-null status becomes an Error. */
  void call(Fn fn, String what, Object... args) {
    Pointer status = table[fn.ordinal()].invokePointer(args);
    if (status == null) {
      return;
    }
    // the message belongs to the status: copied into a Java String, then the status freed
    String message = table[Fn.GetErrorMessage.ordinal()].invokeString(new Object[] {status}, false);
    table[Fn.ReleaseStatus.ordinal()].invokeVoid(new Object[] {status});
    throw new Error(what + ": " + message);
  }

  /** Release* of an object the API created (a null pointer is ignored, as the API does). */
  void release(Fn fn, Pointer object) {
    if (object != null) {
      table[fn.ordinal()].invokeVoid(new Object[] {object});
    }
  }

  // ------------------------------------------------------------- checking the header

  /** The names of struct OrtApi's members in onnxruntime_c_api.h, in order. */
  static List<String> headerFunctions(String text) {
    text = text.replaceAll("(?s)/\\*.*?\\*/", " ").replaceAll("//[^\\n]*", " ");
    int start = text.indexOf("struct OrtApi {");
    if (start < 0) {
      throw new Error("the header has no 'struct OrtApi {'");
    }
    start += "struct OrtApi {".length();
    List<String> members = new ArrayList<>();
    int depth = 0;
    int from = start;
    for (int i = start; ; i++) {
      if (i == text.length()) {
        throw new Error("the header's struct OrtApi has no end");
      }
      char c = text.charAt(i);
      if (c == '(' || c == '{') {
        depth++;
      } else if (c == ')') {
        depth--;
      } else if (c == '}' && depth-- == 0) {
        break;
      } else if (c == ';' && depth == 0) {
        members.add(text.substring(from, i).trim());
        from = i + 1;
      }
    }
    Pattern status = Pattern.compile("^ORT_API2_STATUS\\(\\s*(\\w+)");
    Pattern release = Pattern.compile("^ORT_CLASS_RELEASE\\(\\s*(\\w+)");
    Pattern plain = Pattern.compile("\\(\\s*ORT_API_CALL\\s*\\*\\s*(\\w+)\\s*\\)");
    List<String> names = new ArrayList<>();
    for (String member : members) {
      Matcher m;
      if ((m = status.matcher(member)).find()) {
        names.add(m.group(1));
      } else if ((m = release.matcher(member)).find()) {
        names.add("Release" + m.group(1));
      } else if ((m = plain.matcher(member)).find()) {
        names.add(m.group(1));
      } else {
        throw new Error("cannot read a member of struct OrtApi: " + member);
      }
    }
    return names;
  }

  /** Checks every position of Fn against the header; prints the table; 0 if all agree. */
  static int checkHeader(Path header) throws IOException {
    String text = new String(Files.readAllBytes(header), StandardCharsets.UTF_8);
    Matcher v = Pattern.compile("#define ORT_API_VERSION (\\d+)").matcher(text);
    if (!v.find()) {
      throw new Error("'" + header + "' defines no ORT_API_VERSION");
    }
    int headerVersion = Integer.parseInt(v.group(1));
    List<String> names = headerFunctions(text);
    for (int i = 0; i < names.size(); i++) {
      System.out.println(i + " " + names.get(i));
    }
    int wrong = 0;
    for (Fn fn : Fn.values()) {
      int found = names.indexOf(fn.name());
      if (found != fn.index) {
        System.err.println("serve_java: " + fn.name() + " is at " + found + " in " + header
            + ", this program calls position " + fn.index);
        wrong++;
      }
    }
    if (headerVersion < API_VERSION) {
      System.err.println("serve_java: " + header + " is API version " + headerVersion
          + ", older than this program's " + API_VERSION);
      wrong++;
    }
    System.err.println("serve_java: " + (wrong == 0 ? "ok" : wrong + " differences") + ": "
        + Fn.values().length + " functions checked against " + header + " (ORT_API_VERSION "
        + headerVersion + ", " + names.size() + " functions)");
    return wrong == 0 ? 0 : 1;
  }
}
