#!/usr/bin/env bash
# Fits what ships for the default model from the question corpus, from scratch: the model's
# tuning and the ranker (docs/RANKING.md, "How to add a feature and refit").
#
#     bench/fit/refit.sh [WORK]        (WORK defaults to target/fit)
#
# Four tunings of the model, one fold per schema left out and one over all (bench/fit/tune.py,
# about 90 minutes each on two cores): rank 8, rank 16, rank 8 with another seed, rank 8 with
# two hard negatives a question. Averages of three of them (bench/fit/soup.py): the shipped
# tuning (rank 8, rank 16, two negatives: rank 32 as int8 factors, to stay small), the same
# average as f16 factors and brought back to rank 24 (near copies, more rows to fit on), and
# another (rank 8, rank 16, another seed). Each tuning and average dumped, every schema through
# its fold (bench/fit/run.py --models, about 17 minutes each). The trees fitted on the shipped
# average's dump with the seven other dumps as more rows (bench/fit/fit.py --extra), measured
# leaving one schema out and written to workers/src/rank/fitted/; the average over all schemas
# copied to workers/src/embed/fitted/. About eleven hours; every step is seeded and a step
# whose output exists is skipped, so a stopped run goes on where it was.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
work="${1:-target/fit}"
py=.wayfinder/fit-venv/bin/python
untuned="$(mktemp)"
trap 'rm -f "$untuned"' EXIT
echo '{"learned": false}' > "$untuned"

# The merged questions (and the stages' answers) the tunings read.
[ -f "$work/answers.jsonl" ] || python3 bench/fit/run.py --work "$work" --params "$untuned" -- --model-tuning none
tune() {  # tune NAME [--set NAME=VALUE]
  local out="$work/$1"; shift
  [ -f "$out/all.safetensors" ] || "$py" bench/fit/tune.py --work "$work" --out "$out" --no-recall "$@"
}
tune rank8
tune rank16 --set RANK=16
tune seed1 --set SEED=1
tune negatives2 --set NEGATIVES=2
average() {  # average NAME [soup.py OPTIONS] TUNING...
  local out="$work/$1"; shift
  [ -f "$out/all.safetensors" ] || "$py" bench/fit/soup.py --out "$out" "$@"
}
shipped=("$work/rank8" "$work/rank16" "$work/negatives2")
average shipped --rank 32 --int8 "${shipped[@]}"
average float "${shipped[@]}"
average rank24 --rank 24 "${shipped[@]}"
average other "$work/rank8" "$work/rank16" "$work/seed1"
for tuning in shipped float rank24 other rank8 rank16 seed1 negatives2; do
  [ -f "$work/dump-$tuning/features.jsonl" ] ||
    python3 bench/fit/run.py --work "$work/dump-$tuning" --params "$untuned" --models "$work/$tuning"
done
# The extra dumps in the order the shipped trees were fitted with: the rows' order is the fit's.
extra=()
for tuning in other negatives2 seed1 rank8 rank16 float rank24; do extra+=(--extra "$work/dump-$tuning/features.jsonl"); done
"$py" bench/fit/fit.py "$work/dump-shipped/features.jsonl" "${extra[@]}" --before "$work/answers.jsonl" \
  --json "$work/fit.json" --out workers/src/rank/fitted/all-MiniLM-L6-v2-int8.onnx
install -m 644 "$work/shipped/all.safetensors" workers/src/embed/fitted/all-MiniLM-L6-v2-int8.tuning.safetensors
echo "refit: the tuned model's key changed: DEFAULT_MODEL_KEY in workers/src/rank/params.rs follows it (scripts/test names the new one)"
