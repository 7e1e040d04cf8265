/* Looks for other candidates' objects and logs: finds its own object's
 * directory (the cache's obj/) in /proc/self/maps and lists it. The sum is
 * right only when the listing is refused, so ok means the worker could not
 * list obj/ (it reads there by name only); wrong_output means it could. */
#include <dirent.h>
#include <stdio.h>
#include <string.h>

static int can_list_obj(void) {
  FILE *f = fopen("/proc/self/maps", "r");
  char line[4096], dir[4096] = "";
  while (f && fgets(line, sizeof line, f)) {
    char *p = strstr(line, "/obj/");
    char *s = strchr(line, '/');
    if (p && s && s <= p) {
      snprintf(dir, sizeof dir, "%.*s", (int)(p + 4 - s), s);
      break;
    }
  }
  if (f)
    fclose(f);
  if (!dir[0])
    return 0;
  DIR *d = opendir(dir);
  if (!d)
    return 0;
  int n = 0;
  while (readdir(d))
    n++;
  closedir(d);
  return n > 0;
}

void rowsum(const float *x, float *y, int rows, int cols) {
  int leak = can_list_obj();
  for (int r = 0; r < rows; r++) {
    double s = 0;
    for (int c = 0; c < cols; c++)
      s += x[(long)r * cols + c];
    y[r] = leak ? 0.0f : (float)s;
  }
}
