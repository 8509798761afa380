"""Access patterns: how each kernel's warps read (and write) each tensor, from the access pass's records.

For every sampled warp access the device patch keeps, besides the first lane's address, how many
distinct 32-byte sectors the active lanes touched, the stride between neighbouring lanes (with whether
all lanes kept it) and whether the lanes' addresses only go up. Grouped here per (kernel, tensor, read or
write, op site: the op's name and Python line, a backward op's forward line), over every launch:
- `sectors_per_request` against `ideal_per_request` (the sectors the same bytes would touch read
  contiguously): their ratio is how many times the memory traffic the layout costs;
- the dominant stride between neighbouring threads, in bytes, and in elements along which dimension of
  the tensor;
- a class: `coalesced` (no more than 1.25x the ideal sectors; also evenly spaced lanes no more than a
  sector apart on a dense tensor read whole, where the kernel's other loads fill the gaps: a vectorized
  kernel's two halves of each 32-byte chunk), `broadcast` (all lanes read one address), `strided` (lanes
  evenly spaced, further apart than they read), `gather` (lanes unevenly spaced and out of order, at
  least half of them in a sector of their own: random reads through an index), `scattered` (the rest:
  lanes in order but spread, like the rows of a tile, or few distinct sectors);
- `reads_over`: bytes requested over the tensor's bytes, per launch that touched it (a bias read once
  per row of its input: many times over).
Each address goes to a tensor as in the tensor stall cost (`tensors_at`: the view the op used, else the
storage's base); addresses in no live tensor are left out. Records written before the patch compared
lanes have no pattern: `load_patterns` then returns nothing and says so through `recorded`.
"""

from __future__ import annotations

import weakref
from collections import defaultdict
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pyarrow as pa

from tenprof.analyses.tensors.address_lookup import AddressIndex
from tenprof.analyses.tensors.tensor_forest import Forest
from tenprof.analyses.tensors.tensor_stall_cost import NO_TENSOR, UsedViews, tensors_at
from tenprof.core import units
from tenprof.store.profile import Profile
from tenprof.store.schema import Pass

SECTOR_BYTES = 32
COALESCED_WITHIN = 1.25  # sectors over the ideal still called coalesced (alignment, partial warps)
GATHER_SECTORS_PER_LANE = 0.5
WASTEFUL = ("strided", "gather", "scattered")


@dataclass(frozen=True)
class AccessPattern:
    kernel: str  # as the sanitizer names it (mangled)
    op: str  # the op whose launches these are ('' outside ops)
    line: str  # that op's line of the user's code ('' when unknown)
    tensor_id: int
    is_write: bool
    kind: str  # coalesced | broadcast | strided | gather | scattered
    requests: int  # warp accesses (sampling weights included)
    bytes: int  # bytes requested
    sectors: int
    min_sectors: int
    lanes: int
    stride: int | None  # bytes between neighbouring threads (the most common even spacing); None: uneven
    even_share: float  # of the requests, those whose lanes were evenly spaced
    ascending_share: float  # of the requests, those whose lanes' addresses never went down
    launches: int
    reads_over: float  # bytes requested / (tensor bytes x launches)
    stride_elements: int | None  # the stride in the tensor's elements
    stride_dim: int | None  # the tensor's dimension with that stride
    pc_offsets: tuple[int, ...]
    op_seqs: tuple[int, ...]  # op instances (a few) whose launches these are

    @property
    def sectors_per_request(self) -> float:
        return self.sectors / self.requests if self.requests else 0.0

    @property
    def ideal_per_request(self) -> float:
        return self.min_sectors / self.requests if self.requests else 0.0

    @property
    def excess(self) -> float:
        """Sectors touched over the ideal: how many times the traffic of a contiguous read."""
        return self.sectors / self.min_sectors if self.min_sectors else 0.0

    @property
    def bytes_per_lane(self) -> float:
        return self.bytes / self.lanes if self.lanes else 0.0

    @property
    def distinct_share(self) -> float:
        """Sectors per active lane: 1.0 when every lane reads a sector no other lane reads."""
        return self.sectors / self.lanes if self.lanes else 0.0


@dataclass(frozen=True)
class LoadPatterns:
    recorded: bool  # the accesses pass compared lanes (False: recorded before, or no accesses pass)
    patterns: list[AccessPattern]

    def for_tensor(self, tensor_id: int, kernels: tuple[str, ...] = ()) -> list[AccessPattern]:
        """The tensor's reads, by kernels whose names match `kernels` (ncu names) when given, most bytes first."""
        from tenprof.analyses.tensors.tensor_stall_cost import same_kernel

        found = [
            p
            for p in self.patterns
            if p.tensor_id == tensor_id
            and not p.is_write
            and (not kernels or any(same_kernel(k, p.kernel) for k in kernels))
        ]
        return sorted(found, key=lambda p: -p.bytes)

    def telling_read(self, tensor_id: int, kernels: tuple[str, ...] = ()) -> AccessPattern | None:
        """The read that explains the tensor's cost: the one wasting the most sectors among those moving at
        least a tenth of its bytes, else the one moving the most bytes."""
        reads = self.for_tensor(tensor_id, kernels)
        total = sum(r.bytes for r in reads)
        wasteful = [r for r in reads if r.kind in WASTEFUL and r.bytes >= 0.1 * total]
        if wasteful:
            return max(wasteful, key=lambda r: r.sectors - r.min_sectors)
        return reads[0] if reads else None

    def peers(self, pattern: AccessPattern) -> list[AccessPattern]:
        """Other tensors the same kernel read in the same op instances."""
        ops = set(pattern.op_seqs)
        return [
            p
            for p in self.patterns
            if p.kernel == pattern.kernel
            and p.op == pattern.op
            and p.tensor_id != pattern.tensor_id
            and not p.is_write
            and ops & set(p.op_seqs)
        ]


# one analysis per loaded profile: the report's tensor stall cost and access-pattern sections both ask
_analysed: weakref.WeakKeyDictionary[Profile, LoadPatterns] = weakref.WeakKeyDictionary()


def load_patterns(profile: Profile) -> LoadPatterns:
    """The access patterns of a profile (see the module docstring), analysed once per loaded profile."""
    found = _analysed.get(profile)
    if found is None:
        found = _analysed[profile] = _load_patterns(profile)
    return found


def _load_patterns(profile: Profile) -> LoadPatterns:
    if not (profile.has_pass(Pass.ACCESSES) and profile.has_pass(Pass.TENSORS)):
        return LoadPatterns(False, [])
    acc = profile.table("accesses")
    if not acc.num_rows or acc.column("sectors").null_count == acc.num_rows:
        return LoadPatterns(False, [])
    acc = acc.filter(acc.column("sectors").is_valid())
    launches = profile.table("access_launches")
    ids = launches.column("launch_id").to_numpy()
    last_op = np.full(int(ids.max(initial=-1)) + 1, -1, dtype=np.int64)
    last_op[ids] = launches.column("last_op_seq").to_numpy()
    launch = acc.column("launch_id").to_numpy()
    op_seq = acc.column("op_seq").to_numpy().astype(np.int64)
    # launches outside ops (the script's own kernels untagged): look addresses up after the last op started
    lookup_seq = np.where(op_seq >= 0, op_seq, last_op[launch])
    index = AddressIndex.from_profile(profile)
    base_of = profile.table("storages").column("base_tensor_id").to_numpy()
    tensor = tensors_at(index, acc.column("address").to_numpy(), lookup_seq, UsedViews(profile), base_of)
    keep = tensor != NO_TENSOR
    site, site_name, site_frame = _op_sites(profile)
    forest = Forest(profile)
    columns = {
        "kernel": acc.column("kernel").filter(pa.array(keep)),
        "tensor": tensor[keep],
        "is_write": acc.column("is_write").to_numpy(zero_copy_only=False)[keep],
        "site": _site_of(site, op_seq)[keep],
    }
    table = pa.table(
        {
            **columns,
            "launch": launch[keep],
            "op_seq": lookup_seq[keep],
            "pc_offset": acc.column("pc_offset").to_numpy()[keep],
            "lane_stride": acc.column("lane_stride").filter(pa.array(keep)),
            **{
                c: acc.column(c).to_numpy()[keep]
                for c in ("count", "bytes", "sectors", "min_sectors", "lanes", "ascending")
            },
        }
    )
    key = ["kernel", "tensor", "is_write", "site"]
    sums = table.group_by(key).aggregate(
        [(c, "sum") for c in ("count", "bytes", "sectors", "min_sectors", "lanes", "ascending")]
        + [("launch", "count_distinct"), ("pc_offset", "distinct"), ("op_seq", "distinct")]
    )
    spacing = (
        table.filter(table.column("lane_stride").is_valid())
        .group_by([*key, "lane_stride"])
        .aggregate([("count", "sum")])
        .to_pylist()
    )
    even: dict[tuple[str, int, bool, int], dict[int, int]] = defaultdict(dict)
    for row in spacing:
        even[(row["kernel"], row["tensor"], row["is_write"], row["site"])][int(row["lane_stride"])] = int(
            row["count_sum"]
        )
    tensors = profile.table("tensors")
    nbytes = tensors.column("nbytes").to_numpy()
    dense = (tensors.column("byte_end").to_numpy() - tensors.column("byte_start").to_numpy()) == nbytes
    itemsize = tensors.column("itemsize").to_numpy()
    shapes, strides = tensors.column("shape").to_pylist(), tensors.column("stride").to_pylist()
    out = []
    for row in sums.to_pylist():
        t = int(row["tensor"])
        strides_seen = even.get((row["kernel"], t, row["is_write"], row["site"]), {})
        requests = int(row["count_sum"])
        stride = max(strides_seen, key=lambda s: strides_seen[s]) if strides_seen else None
        even_share = sum(strides_seen.values()) / requests if requests else 0.0
        launches_seen = int(row["launch_count_distinct"])
        size = int(nbytes[t]) * launches_seen
        elements, dim = _along(stride, int(itemsize[t]), shapes[t], strides[t])
        pattern = AccessPattern(
            kernel=str(row["kernel"]),
            op=site_name.get(int(row["site"]), ""),
            line=forest.frame_line(site_frame.get(int(row["site"]), -1)),
            tensor_id=t,
            is_write=bool(row["is_write"]),
            kind="",
            requests=requests,
            bytes=int(row["bytes_sum"]),
            sectors=int(row["sectors_sum"]),
            min_sectors=int(row["min_sectors_sum"]),
            lanes=int(row["lanes_sum"]),
            stride=stride,
            even_share=even_share,
            ascending_share=int(row["ascending_sum"]) / requests if requests else 0.0,
            launches=launches_seen,
            reads_over=int(row["bytes_sum"]) / size if size else 0.0,
            stride_elements=elements,
            stride_dim=dim,
            pc_offsets=tuple(sorted(int(x) for x in row["pc_offset_distinct"])),
            op_seqs=tuple(sorted(int(x) for x in row["op_seq_distinct"]))[:64],
        )
        out.append(_classified(pattern, bool(dense[t])))
    out.sort(key=lambda p: -(p.sectors - p.min_sectors))
    return LoadPatterns(True, out)


def _classified(p: AccessPattern, dense: bool) -> AccessPattern:
    evenly = p.even_share >= 0.5
    # a vectorized kernel reads each 32-byte chunk in two loads of 16 bytes, 32 bytes apart: neither is
    # contiguous, but together they read every byte of the tensor once
    interleaved = (
        evenly
        and p.stride is not None
        and p.bytes_per_lane < p.stride <= SECTOR_BYTES
        and dense
        and p.reads_over >= 0.9
    )
    if p.stride == 0 and evenly:
        kind = "broadcast"
    elif p.excess <= COALESCED_WITHIN or interleaved:
        kind = "coalesced"
    elif evenly:
        kind = "strided"
    elif p.distinct_share >= GATHER_SECTORS_PER_LANE and p.ascending_share < 0.5:
        kind = "gather"
    else:
        kind = "scattered"
    return replace(p, kind=kind)


def _site_of(site: np.ndarray, op_seq: np.ndarray) -> np.ndarray:
    """Each launch's op site; -1 outside ops."""
    out = np.full(len(op_seq), -1, dtype=np.int64)
    inside = (op_seq >= 0) & (op_seq < len(site))
    out[inside] = site[op_seq[inside]]
    return out


def _op_sites(profile: Profile) -> tuple[np.ndarray, dict[int, str], dict[int, int]]:
    """Per op_seq a number for its site (op name and Python line; a backward op its forward op's line),
    and each site's op name and call path (frame)."""
    ops = profile.table("tensor_ops")
    seqs = ops.column("op_seq").to_numpy()
    n = int(seqs.max(initial=-1)) + 1
    names = np.full(n, "", dtype=object)
    frames = np.full(n, -1, dtype=np.int64)
    forward = np.full(n, -1, dtype=np.int64)
    names[seqs] = ops.column("name").to_numpy(zero_copy_only=False)
    frames[seqs] = ops.column("frame_id").to_numpy()
    forward[seqs] = ops.column("forward_op_seq").to_numpy()
    line = np.where((frames < 0) & (forward >= 0), frames[np.clip(forward, 0, max(n - 1, 0))], frames)
    keys: dict[tuple[str, int], int] = {}
    site = np.empty(n, dtype=np.int64)
    for i, (name, frame) in enumerate(zip(names.tolist(), line.tolist(), strict=True)):
        site[i] = keys.setdefault((name, frame if frame >= 0 else -2 - i), len(keys))
    return site, {number: name for (name, _), number in keys.items()}, {n: f for (_, f), n in keys.items()}


def _along(stride: int | None, itemsize: int, shape: list[int], strides: list[int]) -> tuple[int | None, int | None]:
    """The stride in elements, and the tensor dimension (of size > 1) whose stride it is."""
    if stride is None or itemsize <= 0 or stride % itemsize:
        return None, None
    elements = stride // itemsize
    for d, (size, step) in enumerate(zip(shape, strides, strict=True)):
        if size > 1 and step == abs(elements):
            return elements, d
    return elements, None


def describe(p: AccessPattern) -> str:
    """One line: the class, the stride, sectors per request against the ideal, and the re-reads."""
    parts = [p.kind]
    if p.kind == "strided" and p.stride is not None:
        along = f" along dim {p.stride_dim}" if p.stride_dim is not None else ""
        elements = f" = {p.stride_elements} elements{along}" if p.stride_elements is not None else ""
        parts.append(f"{units.size(p.stride)} between neighbouring threads{elements}")
    if p.kind == "gather":
        parts.append(f"{p.distinct_share:.0%} of lanes in a sector of their own")
    parts.append(f"{p.sectors_per_request:.1f} sectors per request (ideal {p.ideal_per_request:.1f})")
    if p.kind == "coalesced" and p.excess > COALESCED_WITHIN:
        parts.append("the warp's other loads read the rest of each sector")
    if p.reads_over >= 1.5:
        parts.append(f"read {p.reads_over:.0f}x over")
    return ", ".join(parts)


def stalled_load_patterns(profile: Profile) -> dict[tuple[int, int], AccessPattern]:
    """(stall replay id, PC) -> how that load's warps accessed memory, for the stalls section: the access
    records of the same op instance, kernel and PC offset (as the tensor stall cost joins them), whatever
    tensors they touched. Empty without an accesses pass that compared lanes."""
    from tenprof.analyses.tensors.tensor_stall_cost import same_kernel

    if not (profile.has_pass(Pass.ACCESSES) and profile.has_pass(Pass.STALLS)):
        return {}
    acc = profile.table("accesses")
    if not acc.num_rows or acc.column("sectors").null_count == acc.num_rows:
        return {}
    kernels = profile.table("stall_kernels").to_pylist()
    wanted = {int(k["first_op_seq"]) for k in kernels if k.get("first_op_seq") is not None}
    # one filter (the table holds every launch's rows, kernel names included: each copy costs)
    sampled = np.isin(acc.column("op_seq").to_numpy(), list(wanted)) & acc.column("sectors").is_valid().to_numpy(
        zero_copy_only=False
    )
    acc = acc.filter(pa.array(sampled))
    key = ["op_seq", "kernel", "pc_offset", "is_write"]
    # per (op, PC offset): one row per kernel of that op (an op may launch several, whose code shares
    # offsets) and direction
    sums: dict[tuple[int, int], list[dict[str, Any]]] = defaultdict(list)
    for r in (
        acc.group_by(key)
        .aggregate(
            [(c, "sum") for c in ("count", "bytes", "sectors", "min_sectors", "lanes", "ascending")]
            + [("launch_id", "count_distinct")]
        )
        .to_pylist()
    ):
        sums[(r["op_seq"], r["pc_offset"])].append(r)
    spacing: dict[tuple[Any, ...], dict[int, int]] = defaultdict(dict)
    evenly = acc.filter(acc.column("lane_stride").is_valid())
    for r in evenly.group_by([*key, "lane_stride"]).aggregate([("count", "sum")]).to_pylist():
        spacing[tuple(r[k] for k in key)][int(r["lane_stride"])] = int(r["count_sum"])
    first_pc: dict[int, int] = {}
    sass = profile.table("sass").to_pylist()
    for r in sass:
        first_pc[r["replay_id"]] = min(first_pc.get(r["replay_id"], r["pc"]), r["pc"])
    by_replay = {int(k["replay_id"]): k for k in kernels}
    out: dict[tuple[int, int], AccessPattern] = {}
    for r in sass:
        kernel = by_replay.get(int(r["replay_id"]))
        if kernel is None or kernel.get("first_op_seq") is None:
            continue
        candidates = sums.get((int(kernel["first_op_seq"]), int(r["pc"]) - first_pc[r["replay_id"]]), [])
        found = next((c for c in candidates if same_kernel(str(kernel["name"]), str(c["kernel"]))), None)
        if found is None:
            continue
        strides = spacing.get(tuple(found[k] for k in key), {})
        requests = int(found["count_sum"])
        pattern = AccessPattern(
            kernel=str(found["kernel"]),
            op=str(kernel.get("op") or ""),
            line="",
            tensor_id=NO_TENSOR,
            is_write=bool(found["is_write"]),
            kind="",
            requests=requests,
            bytes=int(found["bytes_sum"]),
            sectors=int(found["sectors_sum"]),
            min_sectors=int(found["min_sectors_sum"]),
            lanes=int(found["lanes_sum"]),
            stride=max(strides, key=lambda s: strides[s]) if strides else None,
            even_share=sum(strides.values()) / requests if requests else 0.0,
            ascending_share=int(found["ascending_sum"]) / requests if requests else 0.0,
            launches=int(found["launch_id_count_distinct"]),
            reads_over=0.0,  # no tensor here: its bytes are not known
            stride_elements=None,
            stride_dim=None,
            pc_offsets=(int(found["pc_offset"]),),
            op_seqs=(int(found["op_seq"]),),
        )
        out[(int(r["replay_id"]), int(r["pc"]))] = _classified(pattern, dense=False)
    return out
