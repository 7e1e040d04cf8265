/* Parsing LLM replies: the plan and the code of a candidate kernel, and the
 * `// kevo:tune` declarations a kernel makes for the tuner.
 *
 * The library never prints and never exits. Functions that can fail return a
 * negative value with a one-line message in the caller's buffer `err`
 * (capacity `errlen`, may be NULL/0).
 *
 * How the code is chosen (kv_reply_parse):
 *  - Fenced blocks follow CommonMark: a line of 3+ backticks or tildes,
 *    indented by at most 3 spaces, opens a block; the info string's first
 *    word (lowercased) is its tag; a line of the same character, at least as
 *    long, with nothing after it, closes it; a block left open runs to the end
 *    of the reply. Content lines lose as many leading spaces (up to) as the
 *    opening fence had.
 *  - A block *defines the entry* when, outside comments, strings and
 *    preprocessor lines, `entry(` ... `)` is followed by `{` (possibly after
 *    qualifiers such as `noexcept` or `__attribute__((...))`), or `class
 *    entry` appears (the torch surface's Python `class ModelNew`). A call or
 *    a prototype does not count. Any tag may define the entry.
 *  - Chosen, first that applies: the last block that defines the entry; the
 *    last stretch of text outside the blocks that defines the entry (a reply
 *    without fences), with leading and trailing prose lines cut off; the
 *    largest code-looking block (a C-family tag: c h cpp c++ cc cxx hpp hh
 *    hxx cuda cu cuh; or no tag or an unknown tag with C-looking content;
 *    never text, bash, python, json, ... tags), the last of equals.
 *  - code: the chosen lines, leading and trailing blank lines removed, each
 *    line ending in "\n" (CRLF and lone CR become LF).
 *  - plan: the reply's `Plan` section when it has one (a heading such as
 *    `## Plan` or `### Optimization plan`, running to the next heading of the
 *    same or a higher level; or a line such as `Plan: ...` or `**Plan:**`,
 *    running to the next heading or `Label:` line), else everything outside
 *    the chosen code. Either way the chosen code is left out (other blocks
 *    stay, fences and all), trailing spaces are cut, runs of blank lines
 *    become one, and the result is capped at KV_REPLY_PLAN_MAX bytes at a
 *    line (or UTF-8) boundary.
 *  - The task's language does not change these rules (models tag CUDA as
 *    cpp and C as cuda); `lang` reports the tag for callers that care. */
#ifndef KEVO_REPLY_H
#define KEVO_REPLY_H

#include <stddef.h>

#define KV_REPLY_MAX (1u << 20)       /* largest reply accepted, bytes */
#define KV_REPLY_PLAN_MAX (32u << 10) /* longest plan kept, bytes */
#define KV_REPLY_MAX_BLOCKS 1024      /* most fenced blocks in one reply */
#define KV_REPLY_ENTRY_MAX 128        /* longest entry name */

struct kv_reply {
  char *plan;         /* never NULL after success; "" when the reply has no prose */
  char *code;         /* never NULL or empty after success */
  char lang[16];      /* the chosen block's tag, lowercased ("" when untagged or unfenced) */
  int nblocks;        /* fenced blocks in the reply */
  int had_fence;      /* 1: the code came from a fenced block; 0: from unfenced text */
  int block;          /* index of the chosen block, -1 when unfenced */
  int defines_entry;  /* the code defines the entry */
  int unterminated;   /* the chosen block had no closing fence */
  int plan_explicit;  /* the plan came from a Plan section */
  int plan_truncated; /* the plan was cut at KV_REPLY_PLAN_MAX */
};

/* Extracts plan and code from `text` (len bytes, NUL not required; at most
 * KV_REPLY_MAX, no NUL bytes). `entry` is the task's entry function (a C
 * identifier), or NULL to take the largest code-looking block. Returns 0 and
 * fills *out (release it with kv_reply_release), or -1 with a message when
 * the reply is refused or holds no code; *out is then empty. */
int kv_reply_parse(const char *text, size_t len, const char *entry, struct kv_reply *out, char *err,
                   size_t errlen);
void kv_reply_release(struct kv_reply *r);

/* The plan of a reply that need not hold code (a planner's reply): its Plan
 * section when it has one, else the whole reply, cleaned and capped as above.
 * Returns 0 with a malloc'd string in *plan, or -1 (empty, oversized or
 * NUL-holding reply, no memory) with *plan = NULL. */
int kv_reply_plan(const char *text, size_t len, char **plan, char *err, size_t errlen);

/* `// kevo:tune NAME=v1,v2,...` declarations (the comment alone on its line,
 * spaces allowed around `=` and `,`), or `# kevo:tune NAME=...` in Python. NAME is a C identifier
 * of at most 63 characters; each value is an integer (decimal without leading zeros, optionally
 * negative, or 0x hex) or a C identifier, at most 31 characters; at most KV_TUNE_MAX_VALUES
 * distinct values; names are unique. */
#define KV_TUNE_MAX_VALUES 32
#define KV_TUNE_NAME_MAX 64
#define KV_TUNE_VALUE_MAX 32
struct kv_tunable {
  char name[KV_TUNE_NAME_MAX];
  int py; /* declared `# kevo:tune` (Python: read as globals().get("NAME", default)) */
  int nvalues;
  char values[KV_TUNE_MAX_VALUES][KV_TUNE_VALUE_MAX];
};

/* Parses every declaration of `code` (NUL-terminated) into out[0..max).
 * Returns their number (0 when there are none), or -1 with a message that
 * names the line when one is malformed or there are more than max. */
int kv_tunables_parse(const char *code, struct kv_tunable *out, int max, char *err, size_t errlen);

#endif
