/* kevo device: this device's measured ceilings (cached). */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "kevo/surface.h"

int cmd_device(int argc, char **argv) {
  int force = 0, json = 0;
  const char *surface = "cpu";
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--recalibrate"))
      force = 1;
    else if (!strcmp(argv[i], "--json"))
      json = 1;
    else if (!strcmp(argv[i], "--surface") && i + 1 < argc)
      surface = argv[++i];
    else {
      cli_fail("device: unknown or incomplete option '%s'", argv[i]);
      return cli_usage("device");
    }
  }
  struct kv_calib c;
  const struct kv_surface *sf = kv_surface_find(surface);
  if (kv_surface_gpu(sf)) {
    struct kv_gate_opts o;
    cli_gate_opts_default(&o);
    o.surface = kv_surface_name(sf);
    char err[2048];
    int measured = 0;
    if (!json)
      fprintf(stderr, "kevo: asking the GPU (measured once per device, then cached)...\n");
    if (kv_gate_calibrate(&o, force, &c, &measured, err, sizeof err) < 0)
      return cli_fail("%s", err);
    if (json)
      printf("{\"device\": \"%s\", \"bandwidth_gbs\": %.2f, \"fma_gflops\": %.2f, "
             "\"l2_bytes\": %.0f, \"sms\": %d, \"measured_unix\": %lld, \"cached\": %s}\n",
             c.device, c.bandwidth_gbs, c.fma_gflops, c.llc_bytes, c.threads, c.measured_unix,
             measured ? "false" : "true");
    else
      printf("device     %s\ncopy       %.1f GB/s (device to device, read + write)\n"
             "fp32 fma   %.1f GFLOP/s\nl2         %.1f MiB\nsms        %d\n%s\n",
             c.device, c.bandwidth_gbs, c.fma_gflops, c.llc_bytes / 1048576.0, c.threads,
             measured ? "(measured now)" : "(cached; --recalibrate measures again)");
    return 0;
  }
  if (!sf)
    return cli_fail("--surface %s: not a surface; use one of %s", surface, kv_surface_names());
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
