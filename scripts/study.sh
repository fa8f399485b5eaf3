#!/usr/bin/env bash
# `make study`: the built-in catalog built offline and published into a registry of its own
# (once per study), then the built-in study STUDY (seed, seed-quick or engines) run there, shown as its
# matrix and reported as an HTML page. Run again, it resumes: cells done are not run again.
#
#   STUDY=seed-quick make study        # the quick subset (a few minutes)
#   STUDY_WORK=/big/disk make study    # where the catalog, the registry and the report go
set -euo pipefail
bin=${BIN:-.venv/bin}
study=${STUDY:-seed}
work=${STUDY_WORK:-$PWD/study-work}/$study
case "$study" in
    seed-quick) parts=digits,cnn ;;
    engines) parts=llama ;;
    seed) parts=digits,cnn,resnet50,efficientnet,nsfw,minilm,nudenet,ppocr,silero,microwakeword,magika,crepe,openwakeword,faces ;;
    *) echo "STUDY=$study: a built-in study is seed, seed-quick or engines" >&2; exit 2 ;;
esac
unset PINBENCH_URL PINBENCH_DATABASE_URL
export PINBENCH_HOME=$work/registry
# every cell's system under test runs in the sandbox: where it cannot start, stop before the
# catalog's minutes of building, naming the fix (pinbench doctor tells the rest)
"$bin/pinbench" doctor --only sandbox
if [ ! -e "$work/published.json" ]; then
    echo "== the catalog ($parts), built offline in $work" >&2
    rm -rf "$work/data" "$work/weights" "$work/catalog" "$PINBENCH_HOME"
    "$bin/pinbench" catalog prepare "$work/data" --parts "$parts" > /dev/null
    "$bin/pinbench" catalog train "$work/data" "$work/weights" --parts "$parts" > /dev/null
    "$bin/pinbench" catalog export "$work/weights" "$work/catalog" --parts "$parts" > /dev/null
    "$bin/pinbench" catalog publish "$PINBENCH_HOME" "$work/data" "$work/catalog" \
        --record "$work/published.json.tmp" > /dev/null
    mv "$work/published.json.tmp" "$work/published.json"
fi
echo "== study $study in $PINBENCH_HOME" >&2
status=0
# --allow-code: the catalog's own pinned processing code (magika's features, CREPE's and MTCNN's
# builders, written by pinbench/catalog/) runs beside those models, confined like any worker
"$bin/pinbench" study run "$study" --allow-code || status=$?   # 1: a cell failed or was refused
"$bin/pinbench" study show "$study"
"$bin/pinbench" study report "$study" --html "$work/report.html" --force
echo "open $work/report.html; PINBENCH_HOME=$PINBENCH_HOME $bin/pinbench study show $study --json" >&2
exit "$status"
