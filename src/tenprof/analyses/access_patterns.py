"""Access patterns: how each kernel's warps read (and write) each tensor, from the access pass's records.

For every sampled warp access the device patch keeps, besides the first lane's address, how many
distinct 32-byte sectors the active lanes touched and the stride between neighbouring lanes (with
whether all lanes kept it). Grouped here per (kernel, tensor, read or write), over every launch:
- `sectors_per_request` against `ideal_per_request` (the sectors the same bytes would touch read
  contiguously): their ratio is how many times the memory traffic the layout costs;
- the dominant stride between neighbouring threads, in bytes, and in elements along which dimension of
  the tensor;
- a class: `coalesced` (no more than 1.25x the ideal sectors), `broadcast` (all lanes read one address),
  `strided` (lanes evenly spaced, further apart than they read), `gather` (lanes unevenly spaced, at least
  half of them in a sector of their own: random reads through an index), `scattered` (the rest);
- `reads_over`: bytes requested over the tensor's bytes, per launch that touched it (a bias read once
  per row of its input: many times over).
Each address goes to a tensor as in the tensor stall cost (`tensors_at`: the view the op used, else the
storage's base); addresses in no live tensor are left out. Records written before the patch compared
lanes have no pattern: `load_patterns` then returns nothing and says so through `recorded`.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, replace

import numpy as np
import pyarrow as pa

from tenprof.analyses.address_lookup import AddressIndex
from tenprof.analyses.tensor_stall_cost import NO_TENSOR, UsedViews, tensors_at
from tenprof.core import units
from tenprof.store.profile import Profile
from tenprof.store.schema import Pass

SECTOR_BYTES = 32
COALESCED_WITHIN = 1.25  # sectors over the ideal still called coalesced (alignment, partial warps)
GATHER_SECTORS_PER_LANE = 0.5


@dataclass(frozen=True)
class AccessPattern:
    kernel: str  # as the sanitizer names it (mangled)
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
        from tenprof.analyses.tensor_stall_cost import same_kernel

        found = [
            p
            for p in self.patterns
            if p.tensor_id == tensor_id
            and not p.is_write
            and (not kernels or any(same_kernel(k, p.kernel) for k in kernels))
        ]
        return sorted(found, key=lambda p: -p.bytes)

    def peers(self, pattern: AccessPattern) -> list[AccessPattern]:
        """Other tensors the same kernel read in the same op instances."""
        ops = set(pattern.op_seqs)
        return [
            p
            for p in self.patterns
            if p.kernel == pattern.kernel
            and p.tensor_id != pattern.tensor_id
            and not p.is_write
            and ops & set(p.op_seqs)
        ]


def load_patterns(profile: Profile) -> LoadPatterns:
    if not (profile.has_pass(Pass.ACCESSES) and profile.has_pass(Pass.TENSORS)):
        return LoadPatterns(False, [])
    acc = profile.table("accesses")
    if not acc.num_rows or acc.column("sectors").null_count == acc.num_rows:
        return LoadPatterns(False, [])
    acc = acc.filter(acc.column("sectors").is_valid())
    launches = profile.table("access_launches")
    last_op = dict(
        zip(launches.column("launch_id").to_pylist(), launches.column("last_op_seq").to_pylist(), strict=True)
    )
    launch = acc.column("launch_id").to_numpy()
    op_seq = acc.column("op_seq").to_numpy().astype(np.int64)
    # launches outside ops (the script's own kernels untagged): look addresses up after the last op started
    lookup_seq = np.where(op_seq >= 0, op_seq, np.array([last_op.get(int(x), -1) for x in launch], dtype=np.int64))
    index = AddressIndex.from_profile(profile)
    base_of = profile.table("storages").column("base_tensor_id").to_numpy()
    tensor = tensors_at(index, acc.column("address").to_numpy(), lookup_seq, UsedViews(profile), base_of)
    keep = tensor != NO_TENSOR
    columns = {
        "kernel": acc.column("kernel").filter(pa.array(keep)),
        "tensor": tensor[keep],
        "is_write": acc.column("is_write").to_numpy(zero_copy_only=False)[keep],
    }
    table = pa.table(
        {
            **columns,
            "launch": launch[keep],
            "op_seq": lookup_seq[keep],
            "pc_offset": acc.column("pc_offset").to_numpy()[keep],
            "lane_stride": acc.column("lane_stride").filter(pa.array(keep)),
            **{c: acc.column(c).to_numpy()[keep] for c in ("count", "bytes", "sectors", "min_sectors", "lanes")},
        }
    )
    key = ["kernel", "tensor", "is_write"]
    sums = table.group_by(key).aggregate(
        [(c, "sum") for c in ("count", "bytes", "sectors", "min_sectors", "lanes")]
        + [("launch", "count_distinct"), ("pc_offset", "distinct"), ("op_seq", "distinct")]
    )
    spacing = (
        table.filter(table.column("lane_stride").is_valid())
        .group_by([*key, "lane_stride"])
        .aggregate([("count", "sum")])
        .to_pylist()
    )
    even: dict[tuple[str, int, bool], dict[int, int]] = defaultdict(dict)
    for row in spacing:
        even[(row["kernel"], row["tensor"], row["is_write"])][int(row["lane_stride"])] = int(row["count_sum"])
    tensors = profile.table("tensors")
    nbytes = tensors.column("nbytes").to_numpy()
    itemsize = tensors.column("itemsize").to_numpy()
    shapes, strides = tensors.column("shape").to_pylist(), tensors.column("stride").to_pylist()
    out = []
    for row in sums.to_pylist():
        t = int(row["tensor"])
        strides_seen = even.get((row["kernel"], t, row["is_write"]), {})
        requests = int(row["count_sum"])
        stride = max(strides_seen, key=lambda s: strides_seen[s]) if strides_seen else None
        even_share = sum(strides_seen.values()) / requests if requests else 0.0
        launches_seen = int(row["launch_count_distinct"])
        size = int(nbytes[t]) * launches_seen
        elements, dim = _along(stride, int(itemsize[t]), shapes[t], strides[t])
        pattern = AccessPattern(
            kernel=str(row["kernel"]),
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
            launches=launches_seen,
            reads_over=int(row["bytes_sum"]) / size if size else 0.0,
            stride_elements=elements,
            stride_dim=dim,
            pc_offsets=tuple(sorted(int(x) for x in row["pc_offset_distinct"])),
            op_seqs=tuple(sorted(int(x) for x in row["op_seq_distinct"]))[:64],
        )
        out.append(_classified(pattern))
    out.sort(key=lambda p: -(p.sectors - p.min_sectors))
    return LoadPatterns(True, out)


def _classified(p: AccessPattern) -> AccessPattern:
    if p.stride == 0 and p.even_share >= 0.5:
        kind = "broadcast"
    elif p.excess <= COALESCED_WITHIN:
        kind = "coalesced"
    elif p.even_share >= 0.5:
        kind = "strided"
    elif p.distinct_share >= GATHER_SECTORS_PER_LANE:
        kind = "gather"
    else:
        kind = "scattered"
    return replace(p, kind=kind)


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
    if p.reads_over >= 1.5:
        parts.append(f"read {p.reads_over:.0f}x over")
    return ", ".join(parts)
