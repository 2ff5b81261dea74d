# Sourced by the GPU-host scripts: one line of the conditions a published figure needs beside it.
host_line() {
  echo "host: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%FT%TZ)"
}
