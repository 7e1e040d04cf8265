/* Internals of the executors, exposed to their tests and fuzz target: the
 * parsers of what a gate server sends. */
#ifndef KEVO_EXEC_INTERNAL_H
#define KEVO_EXEC_INTERNAL_H

#include <stddef.h>
#include <sys/types.h>

#include <jansson.h>

struct kvx_hello {
  char version[64];
  long long protocol;
  char host[256];
  char gpu[64];     /* its CUDA_VISIBLE_DEVICES */
  char device[256]; /* cuda: the GPU it checked at start */
  pid_t pid;
};
/* A server's hello: 0, or -1 with err (not a hello, another protocol). */
int kvx_hello_parse(const char *json, struct kvx_hello *h, char *err, size_t errlen);
/* A verdict frame for job want_id: 0 and *result (a reference the caller
 * drops); 1 when the server could not judge the job (error says why;
 * *need_task when it lacks the task's files); -1 when the frame is not a
 * verdict for this job (the channel is no longer trusted). */
int kvx_verdict_parse(const char *json, const char *want_id, json_t **result, int *need_task,
                      char *error, size_t errlen);

#endif
