#!/usr/bin/env python3
"""Per-pair cost of `cuberoute paths TOPO --all-pairs --json` against networkx.

    python3 cluster/bench/networkx_pairs.py eh:4,4 [--sample 300] [--binary target/release/cuberoute]

Runs the CLI once over every ordered pair (wall time, output to a pipe that this script reads),
builds the graph from the edges of its paths (every adjacent pair's set holds the edge itself),
then times networkx's node_disjoint_paths (flow-based) on a fixed random sample of the pairs and
checks that it finds as many disjoint paths as the CLI did. Prints both costs per pair and their
ratio. networkx is the reference a user would otherwise reach for; it is not a dependency of the
project, so the script says so and exits 2 without it.
"""
import argparse
import json
import random
import subprocess
import sys
import time

try:
    import networkx as nx
    from networkx.algorithms.connectivity import node_disjoint_paths
except ImportError:
    print("networkx_pairs.py: needs networkx (pip install networkx)", file=sys.stderr)
    sys.exit(2)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("topology")
    ap.add_argument("--sample", type=int, default=300)
    ap.add_argument("--binary", default="target/release/cuberoute")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()

    start = time.perf_counter()
    run = subprocess.run(
        [args.binary, "paths", args.topology, "--all-pairs", "--json"],
        stdout=subprocess.PIPE,
        check=True,
    )
    cli_seconds = time.perf_counter() - start
    lines = run.stdout.splitlines()

    graph = nx.Graph()
    k_of = {}
    for line in lines:
        v = json.loads(line)
        k_of[(v["from"], v["to"])] = v["k"]
        for path in v["paths"]:
            graph.add_edges_from(zip(path, path[1:]))
    pairs = sorted(k_of)
    sample = random.Random(args.seed).sample(pairs, min(args.sample, len(pairs)))

    start = time.perf_counter()
    for s, t in sample:
        found = len(list(node_disjoint_paths(graph, s, t)))
        if found != k_of[(s, t)]:
            print(f"pair {s}->{t}: networkx {found} paths, cuberoute {k_of[(s, t)]}", file=sys.stderr)
            sys.exit(1)
    nx_seconds = time.perf_counter() - start

    cli_per_pair = cli_seconds / len(pairs)
    nx_per_pair = nx_seconds / len(sample)
    print(
        f"{args.topology}: {graph.number_of_nodes()} nodes, {graph.number_of_edges()} edges; "
        f"cuberoute {len(pairs)} pairs in {cli_seconds:.3f} s ({cli_per_pair * 1e6:.2f} us/pair, "
        f"JSON included); networkx {len(sample)} sampled pairs in {nx_seconds:.2f} s "
        f"({nx_per_pair * 1e3:.2f} ms/pair, same k); ratio {nx_per_pair / cli_per_pair:,.0f}x"
    )


if __name__ == "__main__":
    main()
