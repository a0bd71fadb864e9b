"""A kernel's profiler signature: the dozen numbers from an Nsight Compute profile that say which
rung of the ladder it stands on, and a short text of them.

Each number names the ncu metric it comes from (Hopper and Ampere names; Nsight Compute 2025.3).
A metric the profile lacks reads as NaN and prints as "n/a": a counter that was not collected is
not a measured zero.

A launcher may run several kernels in one call. The signature is its longest kernel's, with the launch's
totals beside it (`launch_*`: every kernel of the profiled call), because an extra pass split into a kernel
of its own shows only in those. A call's time on the host's clock and how much of it the GPU was busy are
not Nsight Compute's to say (it serialises and replays every kernel): they come from a device trace of
calls run back to back (grader.profiling.timeline), joined to a recorded signature where one was taken.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from .report import KernelRow

# Metrics that ncu's sections do not collect by themselves: asked for with --metrics.
EXTRA_METRICS = (
    "lts__t_sector_hit_rate.pct",
    "dram__bytes_read.sum", "dram__bytes_write.sum",
    "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum",
    "sm__inst_executed_pipe_tensor_op_hmma.sum",
    "sm__inst_executed_pipe_tensor_op_gmma.sum",
    "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active",
)
# The sections whose metrics the signature reads (`ncu --section NAME`).
SECTIONS = ("SpeedOfLight", "MemoryWorkloadAnalysis_Tables", "Occupancy", "LaunchStats", "WarpStateStats")

_STALL_PREFIX, _STALL_SUFFIX = "smsp__average_warps_issue_stalled_", "_per_issue_active.ratio"
# A stall within a tenth of the largest ties with it: the warps wait on both alike, and naming one of them as what
# they wait on would be a guess (9b's every_step: long scoreboard 0.7956, short scoreboard 0.7952, barrier 0.7447).
STALL_TIE = 1.1
_LIMITS = {"registers": "launch__occupancy_limit_registers", "shared memory": "launch__occupancy_limit_shared_mem",
           "warps": "launch__occupancy_limit_warps", "blocks": "launch__occupancy_limit_blocks"}


def _ratio(num: float, den: float) -> float:
    return num / den if den and not math.isnan(num) and not math.isnan(den) else math.nan


@dataclass(frozen=True)
class Signature:
    exercise: str
    rung: str
    kernel: str
    gpu: str
    grid: tuple
    block: tuple
    time_us: float                   # gpu__time_duration.sum
    dram_pct: float                  # gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed
    l2_hit_pct: float                # lts__t_sector_hit_rate.pct
    ld_sectors_per_request: float    # global loads: l1tex__t_sectors / l1tex__t_requests (4 = coalesced fp32)
    st_sectors_per_request: float
    shared_ld_ways: float            # shared loads: wavefronts per instruction (1 = conflict-free, 32 = 32-way)
    shared_st_ways: float
    bank_conflicts: float            # l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum
    achieved_occupancy_pct: float    # sm__warps_active.avg.pct_of_peak_sustained_active
    theoretical_occupancy_pct: float  # sm__maximum_warps_per_active_cycle_pct
    occupancy_limiter: str           # the launch__occupancy_limit_* with the fewest blocks per SM (ties: all)
    registers_per_thread: int
    shared_bytes_per_block: int
    top_stalls: tuple                # ((reason, warps stalled per issued instruction), ...), largest first
    tensor_pipe_pct: float           # sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active
    fp32_flops: float                # 2 x FFMA + FADD + FMUL thread instructions
    dram_bytes: float                # dram__bytes_read.sum + dram__bytes_write.sum
    # launch__waves_per_multiprocessor: the grid over what the SMs hold at once at this occupancy (under 1:
    # fewer blocks than the GPU could run, so some SMs have none). NaN in profiles recorded without it.
    waves_per_sm: float = math.nan
    launch_kernels: int = 1          # kernels in the profiled call
    launch_time_us: float = math.nan   # their gpu__time_duration.sum, added
    launch_dram_bytes: float = math.nan  # their DRAM bytes, added
    # From a device trace of calls back to back (NaN without one): the call's time by the host's clock, the
    # share of the device's span it was busy, and the same call replayed as a CUDA graph.
    call_us: float = math.nan
    gpu_busy_pct: float = math.nan
    graph_call_us: float = math.nan

    @property
    def launch_dram_mb(self) -> float:
        return self.launch_dram_bytes / 1e6

    @property
    def fp32_gflop(self) -> float:
        return self.fp32_flops / 1e9

    @property
    def leading_stalls(self) -> tuple[str, ...]:
        """The largest stall, and every other within STALL_TIE of it (a tie), largest first; () without any."""
        if not self.top_stalls or not self.top_stalls[0][1] > 0:
            return ()
        top = self.top_stalls[0][1]
        return tuple(reason for reason, value in self.top_stalls if value * STALL_TIE >= top)

    def summary(self) -> str:
        def pct(v):
            return "n/a" if math.isnan(v) else f"{v:.0f}%"

        def num(v, fmt="{:.1f}"):
            return "n/a" if math.isnan(v) else fmt.format(v)

        stalls = ", ".join(f"{r} {v:.1f}" for r, v in self.top_stalls[:3]) or "n/a"
        lines = [
            f"{self.kernel}  grid {self.grid} block {self.block}  {num(self.time_us, '{:,.1f}')} us on {self.gpu}",
            f"  DRAM {pct(self.dram_pct)} of peak, L2 hit rate {pct(self.l2_hit_pct)}",
            (f"  global sectors per request: loads {num(self.ld_sectors_per_request)}, stores "
            f"{num(self.st_sectors_per_request)} (4 is a coalesced fp32 warp; 32 is one sector per thread)"),
            (f"  shared memory: {num(self.shared_ld_ways)}-way loads, {num(self.shared_st_ways)}-way stores "
            f"(no bank conflicts: 1 for 4-byte accesses, 4 for 16-byte ones), "
            f"{num(self.bank_conflicts, '{:,.0f}')} conflicts"),
            (f"  occupancy: {pct(self.achieved_occupancy_pct)} achieved of {pct(self.theoretical_occupancy_pct)} "
            f"possible, limited by {self.occupancy_limiter} ({self.registers_per_thread} registers/thread, "
            f"{self.shared_bytes_per_block:,} B shared/block); {num(self.waves_per_sm, '{:.2f}')} waves of blocks "
            "per SM"),
            f"  top stalls (warps per issued instruction): {stalls}",
            f"  tensor pipe {pct(self.tensor_pipe_pct)} of active cycles",
        ]
        if self.launch_kernels > 1:
            lines.append(f"  the whole call: {self.launch_kernels} kernels, {num(self.launch_time_us, '{:,.1f}')} us, "
                         f"{num(self.launch_dram_mb, '{:,.0f}')} MB through DRAM")
        if not math.isnan(self.gpu_busy_pct):
            lines.append(f"  calls back to back: {num(self.call_us, '{:,.1f}')} us a call, the GPU busy "
                         f"{pct(self.gpu_busy_pct)} of the time; as a CUDA graph {num(self.graph_call_us, '{:,.1f}')} us")
        return "\n".join(lines)

    @property
    def arithmetic_intensity(self) -> float:
        return _ratio(self.fp32_flops, self.dram_bytes)


def _stalls(row: KernelRow) -> tuple:
    found = []
    for name, value in row.metrics.items():
        if name.startswith(_STALL_PREFIX) and name.endswith(_STALL_SUFFIX):
            reason = name[len(_STALL_PREFIX):-len(_STALL_SUFFIX)]
            if reason != "selected":   # "selected" is the warp that issued: not a stall
                found.append((reason.replace("_", " "), value))
    return tuple(sorted(found, key=lambda rv: -rv[1]))


def _limiter(row: KernelRow) -> str:
    """The limit with the fewest blocks per SM; where several allow the same fewest, all of them
    ("registers, warps"): naming only the first would blame one of two equal limits."""
    limits = {name: row.get(metric) for name, metric in _LIMITS.items() if not math.isnan(row.get(metric))}
    if not limits:
        return "n/a"
    fewest = min(limits.values())
    return ", ".join(name for name, blocks in limits.items() if blocks == fewest)


def _ways(wavefronts: float, instructions: float) -> float:
    """Shared-memory wavefronts per LDS/STS instruction. Above 32 the wavefronts belong to other
    instructions (ldmatrix, which Triton's tl.dot uses, is counted apart from LDS), so the ratio says
    nothing about bank conflicts: NaN."""
    ways = _ratio(wavefronts, instructions)
    return math.nan if ways > 32.5 else ways


def signature_of(row: KernelRow, exercise: str = "", rung: str = "") -> Signature:
    g = row.get
    smem_ld = g("smsp__sass_inst_executed_op_shared_ld.sum")
    smem_st = g("smsp__sass_inst_executed_op_shared_st.sum")
    shared = g("launch__shared_mem_per_block")   # bytes (static + dynamic + the driver's reserve)
    regs = g("launch__registers_per_thread")
    return Signature(
        exercise=exercise, rung=rung, kernel=row.name, gpu=row.text.get("device__attribute_display_name", "?"),
        grid=row.grid, block=row.block, time_us=g("gpu__time_duration.sum"),
        dram_pct=g("gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed"),
        l2_hit_pct=g("lts__t_sector_hit_rate.pct"),
        ld_sectors_per_request=_ratio(g("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"),
                                      g("l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum")),
        st_sectors_per_request=_ratio(g("l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"),
                                      g("l1tex__t_requests_pipe_lsu_mem_global_op_st.sum")),
        shared_ld_ways=_ways(g("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"), smem_ld),
        shared_st_ways=_ways(g("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum"), smem_st),
        bank_conflicts=g("l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum"),
        achieved_occupancy_pct=g("sm__warps_active.avg.pct_of_peak_sustained_active"),
        theoretical_occupancy_pct=g("sm__maximum_warps_per_active_cycle_pct"),
        occupancy_limiter=_limiter(row),
        registers_per_thread=0 if math.isnan(regs) else int(regs),
        shared_bytes_per_block=0 if math.isnan(shared) else round(shared),
        top_stalls=_stalls(row),
        tensor_pipe_pct=g("sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active"),
        fp32_flops=(2 * g("smsp__sass_thread_inst_executed_op_ffma_pred_on.sum")
                    + g("smsp__sass_thread_inst_executed_op_fadd_pred_on.sum")
                    + g("smsp__sass_thread_inst_executed_op_fmul_pred_on.sum")),
        dram_bytes=g("dram__bytes_read.sum") + g("dram__bytes_write.sum"),
        waves_per_sm=g("launch__waves_per_multiprocessor"),
        launch_time_us=g("gpu__time_duration.sum"),
        launch_dram_bytes=g("dram__bytes_read.sum") + g("dram__bytes_write.sum"),
    )


def signatures_from_rows(rows: list[KernelRow], exercise: str = "", rung: str = "") -> list[Signature]:
    """Every kernel's signature, longest first (the learner's main kernel leads)."""
    sigs = [signature_of(r, exercise, rung) for r in rows]
    return sorted(sigs, key=lambda s: -(0.0 if math.isnan(s.time_us) else s.time_us))


def signature_from_rows(rows: list[KernelRow], exercise: str = "", rung: str = "") -> Signature:
    """The longest kernel's signature, with the totals of every kernel in `rows` (one profiled call)."""
    if not rows:
        raise ValueError("the profile holds no kernel")
    return with_launch_totals(signatures_from_rows(rows, exercise, rung))


def with_launch_totals(sigs: list[Signature]) -> Signature:
    """The first (longest) of one call's kernel signatures, with the totals of all of them."""
    return dataclasses.replace(sigs[0], launch_kernels=len(sigs), launch_time_us=sum(s.time_us for s in sigs),
                               launch_dram_bytes=sum(s.dram_bytes for s in sigs))


def with_trace(sig: Signature, trace: dict) -> Signature:
    """`sig` joined to a device trace's summary of the same launcher (grader.profiling.timeline's report)."""
    return dataclasses.replace(sig, call_us=trace["call_us"], gpu_busy_pct=trace["gpu_busy_pct"],
                               graph_call_us=trace.get("graph_call_us", math.nan))
