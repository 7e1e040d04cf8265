/* kevo device: this device's measured ceilings (cached). */
#include <stdio.h>
#include <string.h>

#include "cli.h"

int cmd_device(int argc, char **argv) {
  int force = 0, json = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--recalibrate"))
      force = 1;
    else if (!strcmp(argv[i], "--json"))
      json = 1;
    else {
      cli_fail("device: unknown option '%s'", argv[i]);
      return cli_usage("device");
    }
  }
  struct kv_calib c;
  if (cli_calib(&c, force, json) != 0)
    return 2;
  if (json)
    printf("{\"device\": \"%s\", \"bandwidth_gbs\": %.2f, \"fma_gflops\": %.2f, \"llc_bytes\": "
           "%.0f, \"threads\": %d, \"measured_unix\": %lld}\n",
           c.device, c.bandwidth_gbs, c.fma_gflops, c.llc_bytes, c.threads, c.measured_unix);
  else
    printf("device     %s\nbandwidth  %.1f GB/s\nfp32 fma   %.1f GFLOP/s\nllc        %.1f MiB\n"
           "threads    %d\n",
           c.device, c.bandwidth_gbs, c.fma_gflops, c.llc_bytes / 1048576.0, c.threads);
  return 0;
}
