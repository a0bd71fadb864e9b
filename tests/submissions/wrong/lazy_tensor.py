"""6.1's `tiled_attention` does no tiling and no online softmax. It returns a torch.Tensor subclass of
the right shape and dtype whose memory is never written; its `__torch_function__` computes ordinary
softmax attention the moment anything reads it (a shape, a dtype, a comparison), so every check made
on it in the same process sees right values. It must be rejected because the returned object is not a
plain tensor: the verifier accepts only a plain torch.Tensor (or array) of the right shape, dtype and
device, and never runs code the learner attached to a result."""
CHAPTER_DIR = "06_flash_attention"
CELLS = {
    "tiled-solution": '''
class Deferred(torch.Tensor):
    """A result computed only when someone looks at it."""

    @staticmethod
    def __new__(cls, q, k, v):
        t = torch.Tensor._make_subclass(cls, torch.empty(q.shape[0], v.shape[1], dtype=q.dtype), False)
        t._inputs = (q, k, v)
        return t

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        def real(x):
            if isinstance(x, Deferred):
                q, k, v = x._inputs
                with torch._C.DisableTorchFunctionSubclass():
                    return torch.softmax(q @ k.T * q.shape[1] ** -0.5, dim=1) @ v
            return x
        args = tuple(real(a) for a in args)
        kwargs = {name: real(a) for name, a in (kwargs or {}).items()}
        with torch._C.DisableTorchFunctionSubclass():
            return func(*args, **kwargs)


def tiled_attention(q, k, v, block_n):
    return Deferred(q, k, v)
''',
}
EXPECT = {"cell": "tiled-test", "reason": "not-plain", "device": "cpu"}
