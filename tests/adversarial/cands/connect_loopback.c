/* Attack: connect_loopback (network access, e.g. to exfiltrate secrets).
 * With raw system calls only (no socket/connect symbols for the policy to
 * see): socket(AF_INET, SOCK_STREAM), connect to 127.0.0.1:@PORT@ where the
 * test listens, and send a line if connected; then computes the correct
 * output.
 * Defence: seccomp denies socket/connect; the worker's new network namespace
 * has no route to the host's loopback; landlock (ABI >= 4) denies TCP connect.
 * Expected verdict: ok (calls fail) or crash (a seccomp policy that kills);
 * the test's listener must not have a connection to accept. */
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

static const char port_text[] = "@PORT@";

void rowsum(const float *x, float *y, int rows, int cols) {
  long port = strtol(port_text, 0, 10);
  long s = syscall(SYS_socket, (long)AF_INET, (long)SOCK_STREAM, 0L);
  if (port > 0 && port < 65536 && s >= 0) {
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((unsigned short)port);
    a.sin_addr.s_addr = htonl(0x7f000001u);
    if (syscall(SYS_connect, s, &a, (long)sizeof a) == 0)
      (void)!write((int)s, "escaped the sandbox\n", 20);
    close((int)s);
  }
  for (int r = 0; r < rows; r++) {
    const float *row = x + (long)r * cols;
    double sum = 0.0;
    for (int c = 0; c < cols; c++)
      sum += row[c];
    y[r] = (float)sum;
  }
}
