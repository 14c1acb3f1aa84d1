# Shared by the benchmark scripts (sourced, not run).  Before sourcing,
# set `me` (the script's name, for messages), `build` (a build directory
# from the command line, or empty) and `build_given` (1 if it was given).
# Sets here, root, build, hs, trainsim and timecmd, and checks that the
# binaries and /usr/bin/time are there.

die() { echo "$me: $*" >&2; exit 1; }

# median of numbers on stdin
median() { sort -g | awk '{v[NR]=$1} END {if (NR % 2) print v[(NR+1)/2]; else print (v[NR/2]+v[NR/2+1])/2}'; }

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
if ((!build_given)) && [[ -n ${HEAPSLOPE:-} ]]; then
	# only $HEAPSLOPE given: trainsim is in the same build tree
	build=$(cd "$(dirname "$HEAPSLOPE")/../.." && pwd)
fi
build=${build:-$root/build}
hs=${HEAPSLOPE:-$build/src/cli/heapslope}
trainsim=${TRAINSIM:-$build/data/trainsim}
timecmd=/usr/bin/time

[[ -x $hs ]] || die "no heapslope binary at $hs (build it, or set HEAPSLOPE)"
[[ -x $trainsim ]] || die "no trainsim at $trainsim (set TRAINSIM)"
[[ -x $timecmd ]] || die "$timecmd missing: apt-get install time"
