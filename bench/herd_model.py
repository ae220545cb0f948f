"""The herd toy model of the storm story (docs/storm.md) in Python, the language it was first
written in. The function is that model; only the __main__ block is ours: it runs the model once
for the jitter setting given on the command line and prints the model's line.

    python3 bench/herd_model.py full   # jitter=True: 6487 calls, ... all done after 3.45 s
    python3 bench/herd_model.py none   # jitter=False: 81000 calls, ... all done after 376.21 s

bench/herd-vs-python.mjs times this against bench/herd-node.mjs, which runs the compiled
TypeScript model (dist/sim/herd.js) and prints the same line.
"""
import random
import sys


def herd(jitter, clients=2000, per_slot=25, base=0.2, cap=5.0):
    """All clients failed together at time 0. The service can answer
    per_slot calls in each 10 ms slot; the extra calls fail again."""
    rng = random.Random(7)
    due = {c: 0.0 for c in range(clients)}  # client -> next call (s)
    tries = dict.fromkeys(due, 0)
    calls, peak, ms = 0, 0, 0
    while due:
        now = [c for c, t in due.items() if t < (ms + 10) / 1000]
        rng.shuffle(now)
        calls += len(now)
        if ms > 0:
            peak = max(peak, len(now))      # busiest retry slot
        for c in now[per_slot:]:            # over capacity: fail
            ceiling = min(cap, base * 2 ** tries[c])
            wait = rng.uniform(0, ceiling) if jitter else ceiling
            due[c] = ms / 1000 + wait
            tries[c] += 1
        for c in now[:per_slot]:            # the rest succeed
            del due[c]
        ms += 10
    print(f"jitter={jitter}: {calls} calls, busiest 10 ms slot "
          f"{peak} calls, all done after {ms / 1000:.2f} s")


if __name__ == "__main__":
    SETTINGS = {"full": True, "none": False}
    if len(sys.argv) != 2 or sys.argv[1] not in SETTINGS:
        sys.exit("usage: python3 herd_model.py full|none")
    herd(jitter=SETTINGS[sys.argv[1]])
