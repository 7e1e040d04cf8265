/* Fuzz target: whatever a client sends the gate server as a job (its JSON and
 * the blob of files after it), kv_job_parse never crashes, never reads
 * outside the blob, and accepts only plain file names within the caps. Input:
 * a byte n, then n * 16 bytes of JSON (to the end if shorter), then the blob. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kevo/serve.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1)
    return 0;
  size_t jl = (size_t)data[0] * 16;
  if (jl > size - 1)
    jl = size - 1;
  char *json = malloc(jl + 1);
  if (!json)
    return 0;
  memcpy(json, data + 1, jl);
  json[jl] = 0;
  const uint8_t *blob = data + 1 + jl;
  uint64_t bl = size - 1 - jl;
  struct kv_job job;
  char err[512];
  if (kv_job_parse(json, blob, bl, &job, err, sizeof err) == 0) {
    for (int i = 0; i < job.nfiles; i++)
      if (job.files[i].data < blob || job.files[i].data + job.files[i].len > blob + bl ||
          strchr(job.files[i].name, '/') || job.files[i].name[0] == '.')
        abort();
    if (job.candidate.data + job.candidate.len > blob + bl)
      abort();
  }
  free(json);
  return 0;
}
