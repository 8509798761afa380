"""Diagnose the join of the stalls and accesses passes: per sampled kernel, the load PCs (as offsets from
the kernel's first instruction) next to the PC offsets the access pass recorded for the same op.

    python3 scripts/access_join_check.py PROFILE_DIR
"""

import itertools
import sys
from collections import defaultdict

from tenprof.analyses.tensors.tensor_stall_cost import same_kernel
from tenprof.store.profile import load_profile


def main() -> None:
    p = load_profile(sys.argv[1])
    sass = defaultdict(list)
    for r in p.table("sass").to_pylist():
        sass[r["replay_id"]].append(r)
    acc = defaultdict(lambda: defaultdict(int))
    names = defaultdict(set)
    for a in p.table("accesses").to_pylist():
        acc[a["op_seq"]][(a["kernel"][:60], a["pc_offset"])] += a["count"]
        names[a["op_seq"]].add(a["kernel"][:90])
    launches = p.table("access_launches").to_pylist()
    print("launches:", [(lr["op_seq"], lr["kernel"][:50], lr["records"]) for lr in launches[:20]])
    for k in p.table("stall_kernels").to_pylist():
        rows = sorted(sass[k["replay_id"]], key=lambda r: r["pc"])
        first = rows[0]["pc"] if rows else 0
        loads = [(r["pc"] - first, r["opcode"], r["l2_sectors"]) for r in rows if r["space"] in ("global", "local")]
        print(f"kernel {k['name']} op {k['op']} seq {k['first_op_seq']} first_pc {first:#x} n_sass {len(rows)}")
        print("   sass pc step:", sorted({b["pc"] - a["pc"] for a, b in itertools.pairwise(rows)})[:5])
        print("   loads (offset, opcode, L2 sectors):", [(hex(o), op, sec) for o, op, sec in loads[:12]])
        here = acc.get(k["first_op_seq"], {})
        print("   access kernels at that op:", sorted(names.get(k["first_op_seq"], set()))[:4])
        matching = sorted({off for (name, off) in here if same_kernel(k["name"], name)})
        print("   access offsets (same kernel):", [hex(o) for o in matching[:12]])


if __name__ == "__main__":
    main()
