"""On the GPU machine: the access pass records where an op's kernel read and wrote, and every recorded
address of an elementwise add falls in one of its three tensors.

python -m pytest -m gpu tests/gpu
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tenprof.analyses.tensors.address_lookup import AddressIndex
from tenprof.cli.main import main
from tenprof.store.profile import load_profile

pytestmark = pytest.mark.gpu


def test_add_kernel_accesses_fall_in_its_tensors(tmp_path: Path) -> None:
    script = tmp_path / "add.py"
    script.write_text(
        "import torch\n"
        "a = torch.randn(1024, 1024, device='cuda')\n"
        "b = torch.randn(1024, 1024, device='cuda')\n"
        "c = a + b\n"
        "torch.cuda.synchronize()\n"
    )
    out = tmp_path / "prof"
    assert main(["run", "--quiet", "--passes", "tensors,accesses", "-o", str(out), str(script)]) == 0
    profile = load_profile(out)
    assert profile.meta.passes["accesses"].state == "complete", profile.meta.passes["accesses"].reason
    add = profile.sql("select op_seq from tensor_ops where name = 'aten::add'").column(0)[0].as_py()
    acc = profile.sql(f"select address, is_write, count from accesses where op_seq = {add}")
    assert acc.num_rows > 0
    addresses = acc.column("address").to_numpy()
    found = AddressIndex.from_profile(profile).lookup(addresses, np.full(len(addresses), add, dtype=np.int64))
    uses = profile.sql(f"select tensor_id, role from tensor_uses where op_seq = {add}").to_pylist()
    hit = {int(t) for t in found.tensor_id.tolist()}
    assert len(set(found.query.tolist())) == len(addresses)  # every address is in a live tensor
    assert hit <= {u["tensor_id"] for u in uses}  # ... of this op
    writes = acc.column("is_write").to_numpy()
    outputs = {u["tensor_id"] for u in uses if u["role"] == "output"}
    written = {int(t) for q, t in zip(found.query.tolist(), found.tensor_id.tolist(), strict=True) if writes[q]}
    assert written == outputs  # the stores went to c, the loads to a and b
    # 1M floats each read once: 32768 warp loads of 128 B per input (vectorized loads make fewer, larger ones)
    read_bytes = profile.sql(f"select sum(bytes) from accesses where op_seq = {add} and not is_write").column(0)[0]
    assert read_bytes.as_py() == pytest.approx(2 * 1024 * 1024 * 4, rel=0.1)
