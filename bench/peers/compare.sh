#!/usr/bin/env bash
# compare.sh COMMIT [BENCH] [ROUNDS]: this module's benchmarks at COMMIT beside
# the working tree, in one run, on one machine.
#
# Both sides are built first (a git worktree of COMMIT, removed at the end),
# then run interleaved, ROUNDS times each (COMMIT, working tree, COMMIT, ...),
# one -count per run and each run in a fresh directory, so that whatever the
# machine does meanwhile falls on both sides alike. benchstat (pinned) prints
# each benchmark's median per side, the change and its p-value; "~" is no
# significant difference. The raw results stay in OUT (default a temporary
# directory, printed at the end).
#
#   bash bench/peers/compare.sh 8e4d6b7                        # Seq and Fanout, Skein only, 10 rounds
#   bash bench/peers/compare.sh 0dcf686 'Seq1000/skein' 20
#
# BENCH is a -bench pattern (default '(Seq|Fanout)/skein': Skein's
# configurations only; the peers do not change between commits).
set -euo pipefail

commit=${1:?usage: compare.sh COMMIT [BENCH] [ROUNDS]}
bench=${2:-'(Seq|Fanout)/skein'}
rounds=${3:-10}
benchstat=golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da

here=$(cd "$(dirname "$0")" && pwd)
root=$(git -C "$here" rev-parse --show-toplevel)
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"
base=$(mktemp -d)
cleanup() { git -C "$root" worktree remove --force "$base/tree" >/dev/null 2>&1 || true; rm -rf "$base"; }
trap cleanup EXIT

name=$(git -C "$root" rev-parse --short "$commit^{commit}")
git -C "$root" worktree add -q --detach "$base/tree" "$name"
echo "building bench/peers at $name and in the working tree" >&2
(cd "$base/tree/bench/peers" && go test -c -o "$out/base.test" .)
(cd "$here" && go test -c -o "$out/head.test" .)

: > "$out/base.txt"
: > "$out/head.txt"
for r in $(seq "$rounds"); do
	for side in base head; do
		dir=$(mktemp -d "$base/run.XXXX")
		(cd "$dir" && "$out/$side.test" -test.run '^$' -test.bench "$bench" -test.benchtime 5x -test.count 1 >> "$out/$side.txt")
		rm -rf "$dir"
	done
	echo "round $r of $rounds" >&2
done

go run "$benchstat" -filter '.unit:ms/run' "$name=$out/base.txt" "working-tree=$out/head.txt"
echo "raw results and binaries: $out" >&2
