/* kevo task format v1: task.json parsing and validation, integer shape
 * expressions, generated prototypes and call shims, deterministic inputs.
 *
 * The library never prints and never exits. Functions that can fail return 0
 * on success and a negative value on failure, with a one-line message in the
 * caller's buffer `err` (capacity `errlen`) that names the file, the field and
 * the fix, e.g. "task.json: params[2].dtype: 'float' is not a dtype; use one
 * of f32 f64 i32 i64 u8 f16 bf16". */
#ifndef KEVO_TASK_H
#define KEVO_TASK_H

#include <stddef.h>
#include <stdint.h>

#define KV_MAX_PARAMS 32
#define KV_MAX_DIMS 8
#define KV_MAX_SIZESETS 64
/* A candidate's (or a reference's) source: at most this many bytes, wherever
 * it is read, sent or parsed. */
#define KV_SOURCE_MAX (1 << 20)
/* bench: each size is timed on its own, so fewer */
#define KV_MAX_BENCH 16
#define KV_NAME_MAX 64
#define KV_MAX_ALLOW 16
/* Largest single buffer and largest sum of buffers for one size set: half
 * the memory of the device the task runs on (the reference's buffers and the
 * candidate's are there at once), kv_task_max_set_bytes(). A task whose
 * shapes exceed it is refused before anything is allocated. The memory: what
 * kv_task_set_device_memory() set (kevo import --device-memory), else
 * $KEVO_DEVICE_MEMORY_GIB, else KV_DEFAULT_DEVICE_MEMORY (an H100's 80 GiB,
 * the device class kevo targets), whatever this machine has. */
#define KV_DEFAULT_DEVICE_MEMORY ((int64_t)80 << 30)
#define KV_MAX_BUFFER_BYTES kv_task_max_set_bytes()
#define KV_MAX_TOTAL_BYTES kv_task_max_set_bytes()
/* Tensors one packed param holds ("pack", kevo import's weights). */
#define KV_MAX_PACK 4096
#define KV_PACK_NAME_MAX 256
/* Largest task.json accepted. */
#define KV_MAX_TASK_JSON (1 << 20)

enum kv_dtype { KV_F32, KV_F64, KV_I32, KV_I64, KV_U8, KV_F16, KV_BF16, KV_DTYPE_COUNT };
enum kv_role { KV_ROLE_IN, KV_ROLE_OUT, KV_ROLE_INOUT, KV_ROLE_SIZE, KV_ROLE_SCALAR };
enum kv_dist { KV_DIST_DEFAULT, KV_DIST_UNIFORM, KV_DIST_NORMAL, KV_DIST_INT };
enum kv_lang { KV_LANG_C, KV_LANG_CUDA, KV_LANG_PYTHON /* the torch surface's ModelNew */ };

struct kv_init {
  enum kv_dist dist; /* KV_DIST_DEFAULT: uniform[-1,1] for floats, int[-100,100] for
                        i32/i64, int[0,255] for u8 */
  double a, b;       /* uniform: lo, hi; normal: mean, std; int: lo, hi (inclusive) */
};

/* One tensor of a packed buffer: kevo import puts a network's weights, each
 * flattened row-major, back to back in one read-only buffer, in this order
 * (docs/task-format.md "pack"); shape expressions over the size names. */
struct kv_pack {
  char *name; /* the module's name for it, e.g. "layer1.0.conv1.weight" */
  int ndim;
  char *shape[KV_MAX_DIMS];
};

struct kv_param {
  char name[KV_NAME_MAX];
  enum kv_role role;
  enum kv_dtype dtype;      /* unused for size params (always int) */
  int ndim;                 /* buffers only; 0 dims means one element */
  char *shape[KV_MAX_DIMS]; /* integer expressions over size names */
  struct kv_init init;      /* in, inout, scalar */
  int has_value;            /* scalar with a fixed "value" */
  double value;
  int npack; /* an in buffer with "pack": its tensors, in order */
  struct kv_pack *pack;
};

/* One assignment of values to the task's size parameters. values[i] is the
 * value of params[i] when params[i].role == KV_ROLE_SIZE; other slots are 0. */
struct kv_sizeset {
  int64_t values[KV_MAX_PARAMS];
};

struct kv_task {
  char *dir; /* directory the task was loaded from ("" when parsed from memory) */
  char *name;
  char *summary;
  char *entry; /* a C identifier */
  int nparams;
  struct kv_param params[KV_MAX_PARAMS];
  int ncheck;
  struct kv_sizeset check[KV_MAX_SIZESETS];
  int nbench;
  struct kv_sizeset bench[KV_MAX_SIZESETS];
  double atol, rtol;
  char *cost_bytes; /* expression, or NULL when absent */
  char *cost_flops; /* expression, or NULL when absent */
  int nallow;       /* optional "allow": vendor libraries a candidate may use */
  char *allow[KV_MAX_ALLOW];
  char *json; /* the canonical JSON text of the spec (json_dumps, sorted keys) */
};

/* Loads DIR/task.json and checks that DIR/reference.c (or, for a task of kevo
 * import, DIR/reference.py: the torch reference worker runs it) exists. Messages are
 * prefixed with the file path as given ("examples/tasks/rowsum/task.json: ..."). */
int kv_task_load(const char *dir, struct kv_task **out, char *err, size_t errlen);
/* Parses a task.json held in memory; `filename` prefixes the messages. */
int kv_task_parse(const char *text, size_t len, const char *filename, struct kv_task **out,
                  char *err, size_t errlen);
void kv_task_free(struct kv_task *t);
/* Adds the vendor libraries of list ("cublas,cudnn": names of "allow",
 * comma- or space-separated) to the task's allow list and its JSON, those
 * already there skipped: kevo eval --allow. Messages start with origin
 * ("--allow: 'cufft' is not a library kevo can link; use one of ..."). */
int kv_task_allow_add(struct kv_task *t, const char *list, const char *origin, char *err,
                      size_t errlen);

/* The device memory the byte caps derive from (see KV_MAX_BUFFER_BYTES) and
 * where it came from ("--device-memory", "KEVO_DEVICE_MEMORY_GIB", or
 * "default (an H100)"); bytes <= 0 clears what was set. */
int64_t kv_task_device_memory(const char **from);
void kv_task_set_device_memory(int64_t bytes);
int64_t kv_task_max_set_bytes(void);
/* "half of the 80 GiB of device memory kevo assumes (default (an H100)); set
 * KEVO_DEVICE_MEMORY_GIB to the device's": for messages. */
void kv_task_cap_note(char *out, size_t cap);

/* A sum of products of shape dims, like terms combined, for a pack's offsets
 * and size: "64 + 18*hidden*hidden + 17*hidden". Dims that are numbers go
 * into the coefficients. overflow: more distinct terms or digits than it
 * holds (then there is no expression). */
#define KV_SUMEXPR_TERMS 32
struct kv_sumexpr {
  long long fixed;
  int n, overflow;
  char term[KV_SUMEXPR_TERMS][192];
  long long count[KV_SUMEXPR_TERMS];
};
void kv_sumexpr_add(struct kv_sumexpr *s, char *const *dims, int ndim);
/* The expression (at most cap - 1 characters); -1 on overflow. */
int kv_sumexpr_format(const struct kv_sumexpr *s, char *out, size_t cap);

/* Elements of tensor k of packed param p under size set s, and its offset
 * (elements before it in the buffer). */
int kv_pack_elems(const struct kv_task *t, int p, int k, const struct kv_sizeset *s,
                  int64_t *offset, int64_t *n, char *err, size_t errlen);

/* Expressions: integers, size names, + - * / % ( ) and unary minus, 64-bit,
 * with errors for unknown names, division or modulo by zero, overflow and
 * syntax (the message quotes the expression and the offending position). */
int kv_expr_eval(const struct kv_task *t, const struct kv_sizeset *s, const char *expr,
                 int64_t *out, char *err, size_t errlen);

/* Number of elements of buffer param p under size set s (product of its shape;
 * 1 for ndim 0), checking each dimension is >= 0 and the byte size <= KV_MAX_BUFFER_BYTES. */
int kv_param_elems(const struct kv_task *t, int p, const struct kv_sizeset *s, int64_t *out,
                   char *err, size_t errlen);
/* Checks every buffer of size set s and their sum against the caps. */
int kv_sizeset_bytes(const struct kv_task *t, const struct kv_sizeset *s, int64_t *total, char *err,
                     size_t errlen);
/* Value of a size by name; -1 if no such size. */
int kv_sizeset_get(const struct kv_task *t, const struct kv_sizeset *s, const char *name,
                   int64_t *out);
/* "rows=7 cols=1001" */
void kv_sizeset_format(const struct kv_task *t, const struct kv_sizeset *s, char *out, size_t cap);

size_t kv_dtype_size(enum kv_dtype d);
const char *kv_dtype_name(enum kv_dtype d);
int kv_dtype_is_float(enum kv_dtype d); /* f32 f64 f16 bf16 */
/* C type of one element: "float", "double", "int32_t", "int64_t", "uint8_t",
 * "uint16_t" (f16, bf16 on the CPU); CUDA: "__half", "__nv_bfloat16". */
const char *kv_dtype_ctype(enum kv_dtype d, enum kv_lang lang);
const char *kv_role_name(enum kv_role r);

/* The entry's prototype as a self-contained header (includes, extern "C" for
 * CUDA, trailing cudaStream_t stream), e.g.
 *   C:    void rowsum(const float *x, float *y, int rows, int cols);
 *   CUDA: extern "C" void rowsum(const float *x, float *y, int rows, int cols,
 *                                cudaStream_t stream);
 * Returns the length written, or a negative value if cap is too small. */
int kv_task_prototype(const struct kv_task *t, enum kv_lang lang, char *out, size_t cap);

/* A translation unit (to be compiled and linked with the candidate) defining
 *   C:    void kevo_shim_call(void *const *args)
 *   CUDA: extern "C" void kevo_shim_call(void *const *args, cudaStream_t stream)
 * that calls the entry: args[i] is the buffer pointer for buffer params and a
 * pointer to the value (int for sizes, the dtype's C type for scalars) for
 * the others. It includes the prototype itself. Same return as above. */
int kv_task_shim(const struct kv_task *t, enum kv_lang lang, char *out, size_t cap);

/* The prototype and the shim in buffers sized from their content (a network
 * of hundreds of packed weights lists every tensor's offset and shape), at
 * most KV_TASK_PROTO_MAX bytes: malloc'd, or NULL past that cap (or out of
 * memory). */
#define KV_TASK_PROTO_MAX (16u << 20)
char *kv_task_prototype_alloc(const struct kv_task *t, enum kv_lang lang);
char *kv_task_shim_alloc(const struct kv_task *t, enum kv_lang lang);

/* Deterministic generation. The same (seed, stream, dtype, init, n) gives the
 * same bytes on every machine. `stream` separates independent sequences
 * (kevo uses the param index and the call number). */
void kv_gen_fill(enum kv_dtype d, const struct kv_init *init, uint64_t seed, uint64_t stream,
                 void *buf, size_t n);
/* Elements first .. first+n-1 of the same sequence: filling in chunks (or in
 * parallel) gives exactly the bytes of one kv_gen_fill. */
void kv_gen_fill_at(enum kv_dtype d, const struct kv_init *init, uint64_t seed, uint64_t stream,
                    uint64_t first, void *buf, size_t n);
/* The value of a scalar param for a seed: its fixed value, or one draw from
 * its init. Written as the dtype's C type into out (at most 8 bytes). */
void kv_gen_scalar(const struct kv_param *p, uint64_t seed, void *out);

/* f16 / bf16 storage conversions (round to nearest even). */
float kv_f16_to_f32(uint16_t h);
uint16_t kv_f32_to_f16(float f);
float kv_bf16_to_f32(uint16_t h);
uint16_t kv_f32_to_bf16(float f);
/* Element i of a buffer of dtype d as a double (f16/bf16 converted). */
double kv_elem_as_double(enum kv_dtype d, const void *buf, size_t i);

#endif
