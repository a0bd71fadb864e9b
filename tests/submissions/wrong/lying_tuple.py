"""5.1's `grouped_tile` returns plain row-major tiles (wrong whenever group_m > 1) wrapped in an object
that claims to equal anything: `__eq__` always True, `__ne__` always False, with `__len__`, `__iter__`
and `__getitem__` so that it also looks like a pair. A check written `got == want` passes it. It
must be rejected because the function returned something other than a plain tuple or list of ints,
before any comparison is attempted. (Converted to ints, its values are wrong as well.)"""
CHAPTER_DIR = "05_triton_matmul"
CELLS = {
    "grouped-solution": '''
class Tile:
    """(pid_m, pid_n), agreeable in comparisons."""

    def __init__(self, pid_m, pid_n):
        self.pid_m, self.pid_n = pid_m, pid_n

    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False

    __hash__ = None

    def __len__(self):
        return 2

    def __iter__(self):
        return iter((self.pid_m, self.pid_n))

    def __getitem__(self, i):
        return (self.pid_m, self.pid_n)[i]

    def __repr__(self):
        return f"({self.pid_m}, {self.pid_n})"


def grouped_tile(pid, grid_m, grid_n, group_m):
    return Tile(pid // grid_n, pid % grid_n)
''',
}
EXPECT = {"cell": "grouped-test", "reason": "not-plain", "device": "cpu"}
