#!/bin/bash
# Benchmark (not a test): the cost of `heapslope record` against heaptrack's
# raw recording, on the bundled training-loop simulator (data/trainsim),
# or on a Python workload.
#
# usage: tests/bench/bench_record.sh [--quick] [--runs N] [--batches N]
#                                    [--ops N] [--workload NAME] [BUILD_DIR]
#   BUILD_DIR   meson build directory (default: build); $HEAPSLOPE, the path
#               of the heapslope binary, overrides BUILD_DIR/src/cli/heapslope
#               and $TRAINSIM overrides BUILD_DIR/data/trainsim
#   --runs N    timed runs of each tool, interleaved (default 5), after one
#               untimed warm-up round
#   --batches N, --ops N   trainsim's size (default 200 x 20000: 8 M events,
#               a native run of about 0.75 s on a 2-core machine)
#   --quick     smoke mode: 1 run, no warm-up, 20 batches
#   --workload NAME   trainsim (the default); regions: trainsim with a
#               region around each batch and each of its phases (--regions:
#               the operations run phase by phase); regions-per-op: a
#               region around each operation (--regions-per-op: two region
#               records per operation, the most a program would write);
#               python: a Python loop of
#               dicts and bytearrays (--batches iterations, default 300);
#               torch: data/torch_train.py (--batches steps, default 40)
#               under /usr/bin/python3 with Debian's python3-torch.  The
#               Python workloads run with PYTHONMALLOC=malloc under every
#               tool (record sets it; native and heaptrack get it too), so
#               that all three see the same allocations.  They also run
#               under `heapslope record --no-python` (tool nopy): what the
#               Python frames cost, against targets of at most 1.15x the
#               recorded time and 1.3x the trace without them.
#
# Prints medians of wall time and max RSS, the time each recorder adds over
# the native run, trace bytes per event (events = allocations + frees +
# reallocs from `heapslope dump --stats`) and the ratios against targets:
# heapslope's added time <= 0.33 of heaptrack's, trace size <= heaptrack's.
#
# heaptrack runs as `heaptrack -r -o DIR/ht CMD...`: the preloaded library
# writes its text trace to a fifo that a separate `zstd -c` (gzip without
# zstd) compresses into DIR/ht.raw.zst, nothing is interpreted.  Wall time
# is that command's, from start to exit.  Max RSS comes from
# /usr/bin/time -f %M, the largest process below it: the recorded program
# under each tool.  heapslope compresses on a thread inside the program,
# so that is already in its RSS; heaptrack's compressor is another process,
# so a `zstd` wrapper first in heaptrack's PATH runs the real one under
# /usr/bin/time, detached (else heaptrack's script reaps it and %M of the
# whole command can be the compressor's), and its peak RSS is added to
# heaptrack's total in full.  The compressor then always finishes (the
# SIGTERM of heaptrack's cleanup reaches only the wrapper); the bench waits
# for it before going on.
# The launchers (heapslope's parent process, heaptrack's shell script) are
# counted for neither.
set -euo pipefail

runs=5
batches=200
ops=20000
workload=trainsim
warmup=1
quick=0
batches_set=0
build=
build_given=0
while (($#)); do
	case "$1" in
	--quick) quick=1 ;;
	--runs) runs=$2; shift ;;
	--batches) batches=$2; batches_set=1; shift ;;
	--ops) ops=$2; shift ;;
	--workload) workload=$2; shift ;;
	-h|--help) sed -n '2,/^set /{/^set /d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
	-*) echo "bench_record.sh: unknown option $1" >&2; exit 2 ;;
	*) build=$1; build_given=1 ;;
	esac
	shift
done
case $workload in
trainsim|regions|regions-per-op) ;;
python) ((batches_set)) || batches=300 ;;
torch) ((batches_set)) || batches=40 ;;
*) echo "bench_record.sh: unknown workload $workload" >&2; exit 2 ;;
esac
if ((quick)); then
	runs=1
	warmup=0
	((batches_set)) || case $workload in
		trainsim|regions|regions-per-op) batches=20 ;;
		python) batches=50 ;;
		torch) batches=5 ;;
		esac
fi

me=bench_record.sh
. "$(dirname "$0")/common.sh"
heaptrack=$(command -v heaptrack || true)
[[ -n $heaptrack ]] || echo "bench_record.sh: heaptrack not found;" \
	"measuring heapslope only" >&2

work=$(mktemp -d "${TMPDIR:-/tmp}/bench_record.XXXXXX")
trap 'rm -rf "$work"' EXIT

# heaptrack's compressor, measured in place (see above)
zstd=$(command -v zstd || true)
if [[ -n $zstd && -n $heaptrack ]]; then
	mkdir "$work/bin"
	# detached, so that heaptrack's script does not reap it and its RSS
	# stays out of the program's
	cat >"$work/bin/zstd" <<EOF
#!/bin/bash
trap '' TERM
exec 3<&0
"$timecmd" -f "%M %U %S" -o "$work/zrss" "$zstd" "\$@" <&3 3<&- &
EOF
	chmod +x "$work/bin/zstd"
fi
# the program under test, as cmd=(...)
case $workload in
trainsim)
	cmd=("$trainsim" --batches "$batches" --ops "$ops") ;;
regions|regions-per-op)
	cmd=("$trainsim" --batches "$batches" --ops "$ops" "--$workload") ;;
python)
	cmd=(/usr/bin/python3 "$here/pyloop.py" "$batches") ;;
torch)
	/usr/bin/python3 -c "import torch" 2>/dev/null ||
		die "/usr/bin/python3 cannot import torch (apt-get install python3-torch)"
	cmd=(/usr/bin/python3 "$root/data/torch_train.py" --steps "$batches") ;;
esac
# the Python workloads: the same allocator under every tool
[[ $workload == trainsim || $workload == regions* ]] ||
	export PYTHONMALLOC=malloc

# run NAME CMD...: one timed run; appends "wall_s max_rss_kb trace_bytes
# compressor_rss_kb" to $work/NAME.runs
run() {
	local name=$1 t0 t1 rss trace=0 zrss=0 zu zs
	shift
	t0=$EPOCHREALTIME
	if ! "$timecmd" -f %M -o "$work/rss" "$@" >"$work/out" 2>"$work/err"
	then
		cat "$work/err" >&2
		die "$name run failed: $*"
	fi
	t1=$EPOCHREALTIME
	rss=$(tail -n 1 "$work/rss")
	case $name in
	heapslope|nopy) trace=$(stat -c %s "$work/hs.hst") ;;
	heaptrack)
		if [[ -x $work/bin/zstd ]]; then
			for ((n = 0; n < 3000; n++)); do
				[[ -s $work/zrss ]] && break
				sleep 0.01
			done
			[[ -s $work/zrss ]] || die "heaptrack's zstd did not finish"
			read -r zrss zu zs < <(tail -n 1 "$work/zrss")
			echo "$zu $zs" >>"$work/zcpu"
		fi
		trace=$(stat -c %s "$work"/ht.raw.*) ;;
	esac
	echo "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.4f", b - a }')" \
		"$rss $trace $zrss" >>"$work/$name.runs"
}

native() { run native "${cmd[@]}"; }
heapslope() {
	run heapslope "$hs" record -q -f -o "$work/hs.hst" -- "${cmd[@]}"
	# its children's traces (none for these workloads) are not counted
	rm -f "$work"/hs.hst.*
}
nopy() {
	run nopy "$hs" record -q -f --no-python -o "$work/hs.hst" -- \
		"${cmd[@]}"
	rm -f "$work"/hs.hst.*
}
heaptrack() {
	rm -f "$work"/ht.raw.* "$work/zrss"
	PATH=$work/bin:$PATH run heaptrack "$heaptrack" -r -o "$work/ht" \
		"${cmd[@]}"
}

tools=(native)
[[ $workload == trainsim || $workload == regions* ]] || tools+=(nopy)
tools+=(heapslope)
[[ -n $heaptrack ]] && tools+=(heaptrack)

round() {
	for t in "${tools[@]}"; do
		"$t"
	done
}

# busy CPU seconds of the whole machine, to tell how much ran beside us
busy_s() {
	awk -v hz="$(getconf CLK_TCK)" '$1 == "cpu" {
		printf "%.2f", ($2 + $3 + $4 + $7 + $8) / hz }' /proc/stat
}
busy0=$(busy_s)
start=$EPOCHREALTIME
note=
((warmup)) && note=", after a warm-up round"
echo "heapslope record benchmark: $(basename "${cmd[0]}") ${cmd[*]:1}," \
     "$runs run(s) of each, interleaved$note; medians"
if ((warmup)); then
	round
	rm -f "$work"/*.runs
fi
for ((i = 0; i < runs; i++)); do
	round
done

# the counts: events from heapslope's trace, checked against the program's
# own summary line
"$hs" dump --stats "$work/hs.hst" >"$work/stats"
stat_of() { awk -F': ' -v k="$1" '$1 == k { print $2 }' "$work/stats"; }
allocs=$(stat_of allocations)
frees=$(stat_of frees)
reallocs=$(stat_of reallocs)
events=$((allocs + frees + reallocs))
if [[ $workload == trainsim || $workload == regions* ]]; then
	want=$("${cmd[@]}")
	for k in allocations frees reallocs; do
		w=$(sed -n "s/.* $k=\([0-9]*\).*/\1/p" <<<"$want")
		[[ $w == "$(stat_of $k)" ]] ||
			echo "WARNING: heapslope recorded $k=$(stat_of $k)," \
			     "trainsim made $w" >&2
	done
fi
[[ $(stat_of complete) == yes ]] || echo "WARNING: heapslope trace" \
	"incomplete" >&2
[[ $(stat_of counts_verified) == yes ]] || echo "WARNING: heapslope" \
	"trace counts not verified" >&2
if [[ -x $work/bin/zstd ]] && ! "$zstd" -tq "$work"/ht.raw.zst; then
	echo "WARNING: heaptrack's trace is damaged" >&2
fi

# the median of column $1 of stdin
median_of() { awk -v c="$1" '{ print $c }' | median; }
declare -A wall rss trace
for t in "${tools[@]}"; do
	wall[$t]=$(median_of 1 <"$work/$t.runs")
	rss[$t]=$(median_of 2 <"$work/$t.runs")
	trace[$t]=$(median_of 3 <"$work/$t.runs")
done
zrss=0
[[ -n $heaptrack ]] && zrss=$(median_of 4 <"$work/heaptrack.runs")

model=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
# our own CPU time: the children's line of `times`, and heaptrack's
# detached compressors
times >"$work/times"  # here, not in a subshell: a fork starts from zero
ours=$( (tail -n 1 "$work/times"; cat "$work/zcpu" 2>/dev/null || true) | awk '
	/m/ { gsub(/s/, ""); split($1, u, "m"); split($2, k, "m");
	      t += u[1] * 60 + u[2] + k[1] * 60 + k[2]; next }
	{ t += $1 + $2 } END { print t }')
echo "machine: $(nproc) CPUs, ${model:-unknown CPU}, $(uname -sr)"
awk -v b0="$busy0" -v b1="$(busy_s)" -v ours="$ours" -v t0="$start" \
    -v t1="$EPOCHREALTIME" 'BEGIN { printf "other load: %.1f CPU-s" \
	" of other processes in the %.1f s of the bench\n",
	b1 - b0 - ours, t1 - t0 }'
echo "events: $events (allocations $allocs + frees $frees +" \
     "reallocs $reallocs)"
if [[ -n $heaptrack ]]; then
	echo "heaptrack: $("$heaptrack" --version 2>&1 | head -n 1)," \
	     "invoked as: heaptrack -r -o DIR/ht $(basename "${cmd[0]}")" \
	     "${cmd[*]:1}  (trace DIR/$(cd "$work" && echo ht.raw.*))"
fi
echo
awk -v events="$events" -v zrss="$zrss" \
    -v tools="${tools[*]}" \
    -v w_p="${wall[nopy]:-0}" -v r_p="${rss[nopy]:-0}" \
    -v t_p="${trace[nopy]:-0}" \
    -v w_n="${wall[native]}" -v r_n="${rss[native]}" \
    -v w_s="${wall[heapslope]}" -v r_s="${rss[heapslope]}" \
    -v t_s="${trace[heapslope]}" -v w_t="${wall[heaptrack]:-0}" \
    -v r_t="${rss[heaptrack]:-0}" -v t_t="${trace[heaptrack]:-0}" '
function row(name, w, r, t, extra,   add) {
	add = w - w_n
	if (name == "native")
		printf "%-10s %8.3f %8s %9s %9.1f %9s %10s %8s\n", name, w, "-",
		       "-", r / 1024, "-", "-", "-"
	else
		printf "%-10s %8.3f %8.3f %9.1f %9.1f %9.1f %10.1f %8.2f%s\n",
		       name, w, add, add * 1e9 / events, r / 1024,
		       (r - r_n) / 1024, t / 1e6, t / events, extra
}
BEGIN {
	printf "%-10s %8s %8s %9s %9s %9s %10s %8s\n", "tool", "wall_s",
	       "added_s", "ns/event", "rss_MB", "added_MB", "trace_MB",
	       "B/event"
	row("native", w_n, r_n, 0, "")
	if (tools ~ /nopy/)
		row("nopy", w_p, r_p, t_p, "  (record --no-python)")
	row("heapslope", w_s, r_s, t_s, "")
	if (tools ~ /heaptrack/) {
		note = "  (compressor not measured)"
		if (zrss)
			note = sprintf("  (+ %.1f MB zstd process: %.1f MB" \
				       " added in all)", zrss / 1024,
				       (r_t - r_n + zrss) / 1024)
		row("heaptrack", w_t, r_t, t_t, note)
		print ""
		a_s = w_s - w_n; a_t = w_t - w_n
		printf "added time   heapslope / heaptrack: %.3f  (target <= 0.33)%s\n",
		       a_s / a_t, a_s / a_t <= 0.33 ? "" : "  MISSED"
		printf "trace size   heapslope / heaptrack: %.3f  (target <= 1)%s\n",
		       t_s / t_t, t_s / t_t <= 1 ? "" : "  MISSED"
		printf "added memory heapslope / heaptrack: %.3f  (heaptrack with its zstd process)\n",
		       (r_s - r_n) / (r_t - r_n + zrss)
	}
	if (tools ~ /nopy/) {
		printf "Python frames: recorded time with / without: %.3f  (target <= 1.15)%s\n",
		       w_s / w_p, w_s / w_p <= 1.15 ? "" : "  MISSED"
		printf "Python frames: trace with / without:         %.3f  (target <= 1.3)%s\n",
		       t_s / t_p, t_s / t_p <= 1.3 ? "" : "  MISSED"
	}
}'
echo
echo "wall_s of each run:"
for t in "${tools[@]}"; do
	printf '  %-10s %s\n' "$t" "$(awk '{ printf "%s%s", sep, $1; sep = " " }' \
		"$work/$t.runs")"
done
