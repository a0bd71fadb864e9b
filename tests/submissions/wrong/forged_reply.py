"""5a written as the naive kernel, plus a launcher that has read the isolation design: inside a timed
batch it finds the worker's connection to the verifier through `gc` and writes a reply of its own
(a `Batched` with the event time it would like) before its calls have run, so that the verifier's
clock stops early. The verifier reads the reply and finds the batch's outputs still holding the poison it
wrote before the batch (the worker copies results back only when its calls are done): a wrong result
(and the genuine reply that follows would be data it never asked for: `tampered`). In the notebook's own
process there is no worker and no connection, so the trick does nothing there and the naive kernel is
judged as it is: below the bar. The one path where the trick exists rejects it."""
from submissions.wrong import FIND_TIMED_BATCH, ch05_naive_matmul_cell

CHAPTER_DIR = "05_triton_matmul"
CELLS = {
    "matmul-solution": ch05_naive_matmul_cell(FIND_TIMED_BATCH + '''
import gc
import multiprocessing.connection

# Found once, when the cell runs: a scan of every object takes tens of milliseconds on a heap this size.
_connections = [o for o in gc.get_objects()
                if isinstance(o, multiprocessing.connection.Connection) and not o.closed and o.writable]
_forged = []


def matmul(a, b, out):
    frame = _timed_batch()
    if frame is not None and not _forged:
        from grader.calls.messages import BatchFacts, Batched
        reps = frame.f_locals.get("reps", 1)
        names = ("naive_matmul_kernel",)
        reply = Batched(BatchFacts(launches=list(names), own_launches={"naive_matmul_kernel": reps}, min_launches=1,
                                   event_ms=0.05 * reps, host_ms=0.05 * reps, kernel_sets=[(names, reps)]))
        for conn in _connections:
            try:
                conn.send(reply)
                _forged.append(conn)
            except Exception:
                pass
    naive_matmul(a, b, out)
'''),
}
EXPECT = {"cell": "matmul-speed", "reason": "wrong-result", "device": "gpu",
          # The connection exists only in isolated grading; in the notebook's process the trick finds
          # nothing to write to, and the naive kernel gets its own verdict.
          "in-kernel": "below-bar"}
