#!/bin/bash
# simulate-openb.sh [OUTDIR] - the scheduling-quality benchmark of docs/scheduling-quality.md:
# every openb trace x every policy, 10 seeds, tuned to 1.3x, JSON + SVG per trace, a summary
# table and the wall/user/sys time of each run. Uses a Release build:
#   cmake -S . -B build-simrel -DCMAKE_BUILD_TYPE=Release -DGX_TESTS=OFF
#   cmake --build build-simrel --target gpu-extender
# Env: GX_BIN (binary), GX_TRACES (trace dir), GX_SEEDS (42-51), GX_THREADS (2).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-sim-out}
bin=${GX_BIN:-build-simrel/gpu-extender}
# the openb traces (the FGD paper's public CSVs); by default a shared/traces/openb beside the checkout
traces=${GX_TRACES:-$(cd .. && pwd)/shared/traces/openb}
seeds=${GX_SEEDS:-42-51}
threads=${GX_THREADS:-2}
mkdir -p "$out"
# binpack rows: the production config's weights with only GPU pods through the extender, so
# the config of that install (the default's score.relative is for all pods through it)
gpu_only=manifests/overlays/gpu-pods-only/config.json
summary="$out/summary.txt"
: > "$summary"
run() { # name trace nodes config|deployment:NAME policy extra...
    local name=$1 trace=$2 nodes=$3 cfg=$4 pol=$5 setup
    shift 5
    # a shipped install (simulate --deployment, read from manifests/) or a config's experiment
    setup=(--config "$cfg")
    [[ $cfg == deployment:* ]] && setup=(--deployment "${cfg#deployment:}")
    # a finished run (its mean line is there) is kept: the script resumes
    if ! grep -q ' mean of ' "$out/$trace.$name.txt" 2> /dev/null; then
    /usr/bin/time -o "$out/$trace.$name.time" -f "%e %U %S" "$bin" simulate \
        --nodes "$traces/$nodes" --pods "$traces/$trace.csv" "${setup[@]}" --policy "$pol" \
        --seeds "$seeds" --threads "$threads" --json "$out/$trace.$name.json" "$@" \
        > "$out/$trace.$name.txt" 2> "$out/$trace.$name.err"
    fi
    read -r wall user sys < <(tail -1 "$out/$trace.$name.time")
    printf '%-28s %-14s %s  wall %ss user %ss sys %ss\n' "$trace" "$name" \
        "$(grep ' mean of ' "$out/$trace.$name.txt" | sed 's/.*seeds: //')" "$wall" "$user" "$sys" \
        | tee -a "$summary"
}
nodes=openb_node_list_gpu_node.csv
for trace in openb_pod_list_default openb_pod_list_gpushare40 openb_pod_list_multigpu20; do
    run count-only "$trace" $nodes config/simulate/openb.json count-only --replicas 4
    run random "$trace" $nodes config/simulate/openb.json random
    run binpack "$trace" $nodes "$gpu_only" binpack
    run fgd "$trace" $nodes config/simulate/openb.json fgd
    # the all-pods watch of the live service (kubernetes.watch_all_pods)
    run fgd-watch "$trace" $nodes config/simulate/openb.json fgd --sees-all-pods
    # the shipped default install as kubectl apply -k manifests/ deploys it: every pod through
    # the extender (its config's metric weights included, which the fgd rows above set to 0)
    run fgd-all-pods "$trace" $nodes deployment:default fgd
    # the install for clusters before 1.36: only GPU pods (manifests/overlays/gpu-pods-only)
    run fgd-gpu-pods-only "$trace" $nodes deployment:gpu-pods-only fgd
done
# the same policy with more of the node in view, and with the unrounded score
trace=openb_pod_list_default
run binpack-slices4 $trace $nodes "$gpu_only" binpack --share-slices
run fgd-cpu-pods $trace $nodes config/simulate/openb.json fgd --cpu-pods-too
run fgd-exact $trace $nodes config/simulate/openb.json fgd --exact-score
# held out: the same workload on the cluster with its CPU-only nodes (never used for tuning)
run fgd-allnodes openb_pod_list_default openb_node_list_all_node.csv config/simulate/openb.json fgd
run fgd-all-pods-allnodes openb_pod_list_default openb_node_list_all_node.csv deployment:default fgd
run binpack-allnodes openb_pod_list_default openb_node_list_all_node.csv "$gpu_only" binpack
# one SVG per trace with every policy
for trace in openb_pod_list_default openb_pod_list_gpushare40 openb_pod_list_multigpu20; do
    "$bin" simulate --nodes "$traces/openb_node_list_gpu_node.csv" --pods "$traces/$trace.csv" \
        --config config/simulate/openb.json --policy count-only,random,binpack,fgd \
        --seeds "$seeds" --threads "$threads" --svg "$out/$trace.svg" > /dev/null 2>&1
done
echo "summary: $summary"
