# Reads redis-benchmark's full report (no --csv, no -q; carriage returns turned into
# newlines) and prints "rps p50 p99 p99.9", latencies in milliseconds. p99.9 is the first
# row of its percentile distribution at or above 99.9% (the rows halve the distance to
# 100%: 99.902% is the one).
/^Latency by percentile distribution/ { dist = 1; next }
dist && /^[0-9.]+% <=/ {
  pct = $1; sub("%", "", pct)
  if (pct + 0 >= 99.9 && p999 == "") p999 = $3
  next
}
dist && !/^[0-9.]+% <=/ { dist = 0 }
/throughput summary:/ { rps = $3 }
/latency summary/ { getline; getline; p50 = $3; p99 = $5 }
END { printf "%s %s %s %s\n", rps, p50, p99, (p999 == "" ? p99 : p999) }
