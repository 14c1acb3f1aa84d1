#!/bin/bash
# Benchmark (not a test): `heapslope analyze` against `heaptrack_print` on
# recordings of the same program, for two workloads:
#   trainsim   the bundled training-loop simulator (data/trainsim)
#   python     a Python loop under PYTHONMALLOC=malloc that grows a list of
#              dicts and bytearrays per iteration, marking each iteration
#              when recorded by heapslope (tests/bench/pyloop.py, which
#              bench_record.sh --workload python runs too)
#
# usage: tests/bench/bench_analyze.sh [--quick] [--runs N] [--batches N]
#                                     [--iters N] [BUILD_DIR]
#   BUILD_DIR    meson build directory (default: build); $HEAPSLOPE, the
#                heapslope binary, overrides BUILD_DIR/src/cli/heapslope and
#                $TRAINSIM overrides BUILD_DIR/data/trainsim
#   --runs N     timed runs of each analyzer (default 3), median reported
#   --batches N  trainsim batches (default 200 x 20000 ops: 8 M events)
#   --iters N    Python loop iterations (default 300)
#   --quick      smoke mode: 1 run, 20 batches, 30 iterations
#   --ht-timeout S, --ht-mem-gib G   limits of each heaptrack recording
#                (default 120 s, 6 GiB of address space): heaptrack 1.4.0's
#                heaptrack_interpret can grow without bound on trainsim's
#                allocation pattern (seen: 18.9 GB and 264 s for 100,000
#                mallocs, then std::bad_alloc); a workload whose heaptrack
#                recording fails is reported with heaptrack's columns n/a
#   PYTHON       the Python interpreter (default: /usr/bin/python3, else
#                the real executable behind `python3`, not a pyenv shim)
#
# Each workload is recorded once by `heapslope record` and once by
# `heaptrack` (normal mode: its own heaptrack_interpret writes FILE.zst).
# Then, for each trace, timed under /usr/bin/time -f '%e %M':
#   heapslope analyze --json /dev/null TRACE   (text report to /dev/null)
#   heaptrack_print FILE.zst                   (its report to /dev/null)
# Printed per workload: events (allocations + frees + reallocs of
# `heapslope dump --stats`), median wall time of each analyzer, replay
# rate in events/s, peak RSS (median of the runs' %M), and the ratios
# against the targets: >= 20 M events/s, heaptrack_print / analyze time
# >= 5, analyze peak memory < heaptrack_print's.
set -euo pipefail

runs=3
batches=200
iters=300
ht_timeout=120
ht_mem_gib=6
build=
build_given=0
while (($#)); do
	case "$1" in
	--quick) runs=1; batches=20; iters=30 ;;
	--runs) runs=$2; shift ;;
	--batches) batches=$2; shift ;;
	--iters) iters=$2; shift ;;
	--ht-timeout) ht_timeout=$2; shift ;;
	--ht-mem-gib) ht_mem_gib=$2; shift ;;
	-h|--help) sed -n '2,/^set /{/^set /d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
	-*) echo "bench_analyze.sh: unknown option $1" >&2; exit 2 ;;
	*) build=$1; build_given=1 ;;
	esac
	shift
done

me=bench_analyze.sh
. "$(dirname "$0")/common.sh"
command -v heaptrack >/dev/null || die "heaptrack missing: apt-get install heaptrack"
command -v heaptrack_print >/dev/null || die "heaptrack_print missing"
if [[ -z ${PYTHON:-} ]]; then
	if [[ -x /usr/bin/python3 ]]; then
		PYTHON=/usr/bin/python3
	else
		PYTHON=$(python3 -c 'import sys; print(sys.executable)') ||
			die "python3 missing"
	fi
fi
[[ $runs =~ ^[1-9][0-9]*$ ]] || die "--runs: '$runs' is not a count"

work=$(mktemp -d "${TMPDIR:-/tmp}/bench_analyze.XXXXXX")
trap 'rm -rf "$work"' EXIT



# timed CMD...: runs it $runs times; prints "median_wall_s median_maxrss_kib"
timed() {
	local i walls=() rsss=()
	for ((i = 0; i < runs; i++)); do
		"$timecmd" -f '%e %M' -o "$work/time.out" "$@" >/dev/null 2>"$work/err.out" ||
			{ cat "$work/err.out" >&2; die "failed: $*"; }
		read -r w m <"$work/time.out"
		walls+=("$w")
		rsss+=("$m")
	done
	echo "$(printf '%s\n' "${walls[@]}" | median) $(printf '%s\n' "${rsss[@]}" | median)"
}

rows=()
bench() { # name cmd...   (environment: as exported by the caller)
	local name=$1
	shift
	echo "bench_analyze.sh: recording $name ($*)" >&2
	"$hs" record -f -o "$work/$name.hst" -- "$@" >/dev/null 2>"$work/rec.err" ||
		{ cat "$work/rec.err" >&2; die "heapslope record $name failed"; }
	local events
	events=$("$hs" dump --stats "$work/$name.hst" | awk -F': ' '$1 == "events" {print $2}')
	[[ -n $events ]] || die "no event count for $name"
	echo "bench_analyze.sh: timing heapslope analyze on $name: $events events," \
		"$runs run(s)" >&2
	local hsr htr="n/a n/a" ht=
	hsr=$(timed "$hs" analyze --json /dev/null "$work/$name.hst")
	echo "bench_analyze.sh: recording $name with heaptrack (limits" \
		"${ht_timeout} s, ${ht_mem_gib} GiB)" >&2
	if (ulimit -v $((ht_mem_gib * 1024 * 1024)) &&
	    exec timeout -k 5 "$ht_timeout" heaptrack -o "$work/$name.ht" "$@") \
		>/dev/null 2>"$work/ht.err"; then
		ht=$(ls "$work/$name.ht".*z* 2>/dev/null | head -1)
	fi
	if [[ -n $ht && -s $ht ]]; then
		echo "bench_analyze.sh: timing heaptrack_print on $name" >&2
		htr=$(timed heaptrack_print "$ht")
	else
		echo "bench_analyze.sh: heaptrack could not record $name within" \
			"the limits; its columns are n/a. Its last words:" >&2
		{ grep -v '^$' "$work/ht.err" | tail -n 3 | sed 's/^/    /' >&2; } || true
	fi
	rows+=("$name $events $hsr $htr")
	rm -f "$work/$name".ht.* "$work/$name.hst"
}

bench trainsim "$trainsim" --batches "$batches"
PYTHONMALLOC=malloc bench python "$PYTHON" "$here/pyloop.py" "$iters"

echo
printf 'heapslope analyze vs heaptrack_print (median of %d runs; %s, %d cores)\n' \
	"$runs" "$(uname -m)" "$(nproc)"
printf '%-9s %10s | %9s %10s %9s | %9s %9s | %7s %7s %7s\n' \
	workload events analyze_s "events/s" "peak_MiB" print_s "peak_MiB" \
	speedup mem targets
printf '%-9s %10s | %9s %10s %9s | %9s %9s | %7s %7s %7s\n' \
	"" "" "" ">=20M" "" "" "" ">=5x" "<1" ""
for r in "${rows[@]}"; do
	read -r name events hs_s hs_kib ht_s ht_kib <<<"$r"
	awk -v n="$name" -v e="$events" -v hs="$hs_s" -v hk="$hs_kib" \
	    -v ht="$ht_s" -v tk="$ht_kib" 'BEGIN {
		hs1 = (hs > 0) ? hs : 0.005	# /usr/bin/time has 10 ms steps
		rate = e / hs1
		if (ht == "n/a") {
			printf "%-9s %10d | %9.2f %9.1fM %9.1f | %9s %9s | %7s %7s %7s\n",
				n, e, hs, rate / 1e6, hk / 1024, "n/a", "n/a",
				"n/a", "n/a", (rate >= 20e6) ? "rate ok" : "MISSED"
			exit
		}
		speed = ht / hs1
		mem = hk / tk
		printf "%-9s %10d | %9.2f %9.1fM %9.1f | %9.2f %9.1f | %6.1fx %7.2f %7s\n",
			n, e, hs, rate / 1e6, hk / 1024, ht, tk / 1024, speed, mem,
			(rate >= 20e6 && speed >= 5 && mem < 1) ? "ok" : "MISSED"
	}'
done
echo "(analyze_s/print_s: wall seconds; peak: max RSS; speedup: print_s /" \
	"analyze_s; mem: analyze peak / print peak; last column: all three" \
	"targets met)"
