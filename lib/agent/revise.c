/* AdaExplore's small step as released (agent/small_loop.py): a Reviser call
 * gives 1 to 3 items of guidance about the last kernel, then a Tuner call
 * answers with exact string edits to it, given the path back to the nearest
 * large-step ancestor (at most KVA_RT_CONTEXT nodes). The prompts (templates
 * "reviser" and "tuner", overridden like the others by --prompts DIR) and
 * the edits' application; search.c sequences the calls. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "kevo/prompt.h"
#include "kevo/util.h"

#define EDIT_SEARCH "<<<<<<< SEARCH\n"
#define EDIT_SEP "\n=======\n"
#define EDIT_END "\n>>>>>>> REPLACE"

static const char reviser_default[] =
    "## Task: {{name}}\n{{summary}}\n\nReference implementation (correct, slow):\n```\n"
    "{{reference}}```\n\n## The last kernel\n```\n{{code}}```\n\n## Its result\n{{result}}\n\n"
    "You are the reviser. Give one to three items of guidance for the next version of the last "
    "kernel: what to fix first if it failed, else the change most likely to make it faster. "
    "Answer with a numbered list of at most three items, no code.\n";

static const char tuner_default[] =
    "## Task: {{name}}\n{{summary}}\n\nDefine exactly this entry point: `{{entry}}`.\n\n"
    "## Earlier kernels on this path (oldest first)\n{{context}}\n## The kernel to edit\n```\n"
    "{{code}}```\n\n## Its result\n{{result}}\n\n## Guidance\n{{guidance}}\n\n"
    "You are the tuner. Apply the guidance as exact string edits to the kernel to edit. Answer "
    "with one or more blocks, each exactly:\n<<<<<<< SEARCH\n(lines copied exactly from the "
    "kernel, enough to occur once)\n=======\n(their replacement)\n>>>>>>> REPLACE\n";

char *kva_rt_prompt(const char *dir, int tuner, const struct kva_rt_ctx *c, char *err,
                    size_t errlen) {
  char *tmpl =
      tuner ? kv_prompt_template(dir, "tuner", "name summary entry context code result guidance",
                                 tuner_default, err, errlen)
            : kv_prompt_template(dir, "reviser", "name summary reference code result",
                                 reviser_default, err, errlen);
  if (!tmpl)
    return NULL;
  const char *pairs[] = {"name",      c->name,
                         "summary",   c->summary ? c->summary : "",
                         "entry",     c->entry,
                         "reference", c->reference ? c->reference : "(not available)\n",
                         "context",   c->context && *c->context ? c->context : "(none)\n",
                         "code",      c->code ? c->code : "(no code)\n",
                         "result",    c->result ? c->result : "",
                         "guidance",  c->guidance && *c->guidance ? c->guidance : "(none)",
                         NULL};
  char *text = kv_prompt_fill(tmpl, pairs);
  free(tmpl);
  if (!text)
    kv_error(err, errlen, "out of memory");
  return text;
}

/* How often needle occurs in hay (overlaps counted), at most 2. */
static int occurrences(const char *hay, const char *needle) {
  int k = 0;
  for (const char *p = hay; (p = strstr(p, needle)) && k < 2; p++)
    k++;
  return k;
}

int kva_rt_apply(const char *code, const char *reply, char **out, char *why, size_t whycap) {
  *out = NULL;
  char *cur = strdup(code ? code : "");
  int nedits = 0, bad = 0;
  const char *p = reply ? reply : "";
  while (cur && (p = strstr(p, EDIT_SEARCH))) {
    const char *s = p + strlen(EDIT_SEARCH), *sep = strstr(s, EDIT_SEP);
    const char *r = sep ? sep + strlen(EDIT_SEP) : NULL, *end = r ? strstr(r, EDIT_END) : NULL;
    if (!sep || !end) {
      snprintf(why, whycap, "edit %d: no '=======' and '>>>>>>> REPLACE' after its SEARCH",
               nedits + 1);
      bad = 1;
      break;
    }
    char *find = strndup(s, (size_t)(sep - s)), *repl = strndup(r, (size_t)(end - r));
    int k = find && *find ? occurrences(cur, find) : -1;
    if (k != 1) {
      snprintf(why, whycap, "edit %d: its SEARCH text %s the kernel", nedits + 1,
               k < 0    ? "is empty; it must quote"
               : k == 0 ? "does not occur in"
                        : "occurs twice in");
      free(find);
      free(repl);
      bad = 1;
      break;
    }
    char *at = strstr(cur, find);
    size_t head = (size_t)(at - cur), fl = strlen(find), rl = strlen(repl), tl = strlen(cur);
    char *next = malloc(tl - fl + rl + 1);
    if (next) {
      memcpy(next, cur, head);
      memcpy(next + head, repl, rl);
      memcpy(next + head + rl, at + fl, tl - head - fl + 1);
    }
    free(cur);
    cur = next;
    free(find);
    free(repl);
    nedits++;
    p = end + strlen(EDIT_END);
  }
  if (!cur)
    return snprintf(why, whycap, "out of memory"), -1;
  if (bad) {
    free(cur);
    return -1;
  }
  if (nedits == 0) {
    snprintf(why, whycap, "no SEARCH/REPLACE block in the reply");
    free(cur);
    return -1;
  }
  *out = cur;
  return nedits;
}
