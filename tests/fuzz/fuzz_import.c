/* libFuzzer target for the import helper's reply: any text in, either a
 * task.json that kevo's own parser accepts, or a one-line error with a cause. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kevo/import.h"
#include "kevo/task.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *json = NULL, cause[32], err[1024];
  if (kv_import_task_json((const char *)data, size, "fuzz", "fuzz.py", &json, cause, sizeof cause,
                          err, sizeof err) != 0) {
    if (json || !cause[0] || !err[0] || strchr(err, '\n'))
      abort();
    return 0;
  }
  struct kv_task *t = NULL;
  if (!json || kv_task_parse(json, strlen(json), "task.json", &t, err, sizeof err) != 0)
    abort();
  kv_task_free(t);
  free(json);
  return 0;
}
