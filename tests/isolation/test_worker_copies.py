"""The worker's timed batches run on native copies of the verifier's tensors (grader.isolation.worker):
what the learner's kernels write there must all come back, also when several arguments are slices of
one tensor (6b's dq, dk, dv; chapter 7's outputs). Run on a CPU with the worker told it has a GPU, so
that the copies are made exactly as on one."""

from __future__ import annotations

import torch

from grader.calls.messages import Batch, Bind
from grader.isolation.worker import Worker


def test_slices_of_one_output_all_come_back_after_a_timed_batch():
    worker = Worker(conn=None, has_gpu=True)

    def backward(x, dq, dk, dv):          # a launcher writing three slices of one stacked output
        dq.copy_(x + 1)
        dk.copy_(x + 2)
        dv.copy_(x + 3)

    worker.ns["backward"] = backward
    x = torch.randn(4, 5)
    stacked = torch.full((3, 4, 5), float("nan"))
    bid = worker.bind(Bind("backward", [(x, *stacked.unbind(0))], {})).bid
    worker.batch(Batch(bid, reps=3))
    torch.testing.assert_close(stacked, torch.stack([x + 1, x + 2, x + 3]))


def test_a_batch_starts_from_the_verifiers_current_tensors():
    worker = Worker(conn=None, has_gpu=True)
    worker.ns["scale"] = lambda a, out: out.copy_(a * 2)
    a, out = torch.ones(8), torch.zeros(8)
    bid = worker.bind(Bind("scale", [(a, out)], {})).bid
    a.fill_(5.0)                              # the verifier draws fresh inputs between batches
    worker.batch(Batch(bid, reps=1))
    torch.testing.assert_close(out, torch.full((8,), 10.0))
