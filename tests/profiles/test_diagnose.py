"""The "diagnose" exercises (grader/profiles/diagnose.py, one or more cases per chapter): every answer key is
shown by the recorded profiles it is about, and only that constraint is; the check accepts the key and
says where to look otherwise."""

import math

import pytest

from conftest import ROOT
from grader import chapters
from grader.errors import CheckFailed, NotImplementedYet
from grader.profiles import diagnose, recorded

CHAPTERS = [name for name in chapters.names() if hasattr(chapters.module(name), "DIAGNOSE")]
CASES = {case.key: case for name in CHAPTERS for case in diagnose.cases(chapters.module(name).DIAGNOSE)}


def signatures(case):
    """The case's two recorded rungs; a case whose recording is not in the checkout fails here, by name."""
    if not case.recorded:
        pytest.fail(f"{case.key}'s profiles are not recorded yet (assets/profiles/{case.folder}/{case.exercise}/): "
                    "`bash assets/results/gpu_measure.sh` on a GPU records them (its `text-facts OUT diagnose` step, "
                    "or the chapter's own)")
    return case.signatures()


def test_every_chapter_has_a_case():
    assert set(chapters.names()) == set(CHAPTERS)
    assert len({c.binding for c in CASES.values()}) >= 5, "the cases cover most of the constraints"


@pytest.mark.parametrize("key", sorted(CASES))
def test_the_key_is_what_the_recorded_profiles_show(key):
    case = CASES[key]
    sig, beside = signatures(case)
    shown = {n for n, c in diagnose.CONSTRAINTS.items() if c.evidence(sig, beside)}
    # A kernel with no matrix product trivially leaves the tensor cores idle: that names nothing.
    assert shown - {"no-tensor-cores"} == {case.binding} - {"no-tensor-cores"} and case.binding in shown, shown
    assert case.rung != case.beside and len(set(case.choices)) == len(case.choices) >= 3


def right_answer(name):
    keys = [(case.binding, case.next_rung) for case in diagnose.cases(chapters.module(name).DIAGNOSE)]
    return keys[0] if len(keys) == 1 else tuple(keys)


def answered(name, case, pair):
    """The right answer of chapter `name` with `case`'s pair replaced by `pair`."""
    keys = [pair if c is case else (c.binding, c.next_rung) for c in diagnose.cases(chapters.module(name).DIAGNOSE)]
    return keys[0] if len(keys) == 1 else tuple(keys)


@pytest.mark.parametrize("name", CHAPTERS)
def test_the_check_accepts_the_key_and_points_at_the_numbers_otherwise(name, capsys):
    check = chapters.module(name).check_diagnosis
    check(lambda: right_answer(name))
    printed = capsys.readouterr().out
    for case in diagnose.cases(chapters.module(name).DIAGNOSE):
        assert f"✓ {case.key} diagnosis" in printed
        wrong = next(b for b in diagnose.CONSTRAINTS if b != case.binding)
        with pytest.raises(CheckFailed, match=f"is not bound by {wrong}.*look at"):
            check(lambda case=case, wrong=wrong: answered(name, case, (wrong, case.next_rung)))
        other = next(c for c in case.choices if c != case.next_rung)
        with pytest.raises(CheckFailed, match=f"does not relieve {case.binding}"):
            check(lambda case=case, other=other: answered(name, case, (case.binding, other)))
        with pytest.raises(CheckFailed, match="is not one of the constraints"):
            check(lambda case=case: answered(name, case, ("slow", case.next_rung)))
    first = diagnose.cases(chapters.module(name).DIAGNOSE)[0]
    with pytest.raises(CheckFailed, match="should return a tuple"):
        check(lambda: first.binding)
    with pytest.raises(NotImplementedYet, match=f"exercise {first.key.split(' ')[0]} is not written yet"):
        check(lambda: (_ for _ in ()).throw(NotImplementedError()))


def test_a_case_not_recorded_yet_still_shows_its_question_and_says_so(monkeypatch):
    case = CASES["2.P"]
    monkeypatch.setattr(recorded, "PROFILES", recorded.PROFILES / "nowhere")
    recorded.index.cache_clear()
    try:
        text = diagnose.show(case)
    finally:
        recorded.index.cache_clear()
    assert "not recorded in this copy of the course yet" in text and "| naive |" not in text
    assert all(repr(c) in text for c in case.choices) and all(n in text for n in diagnose.CONSTRAINTS)


def test_a_chapter_with_two_cases_takes_one_pair_for_each():
    (a, b) = chapters.module("ch07").DIAGNOSE
    with pytest.raises(CheckFailed, match=r"tuple of 2 pairs: \(\(binding, next rung\) for 7.P \(a\)"):
        chapters.module("ch07").check_diagnosis(lambda: (a.binding, a.next_rung))
    text = diagnose.show(chapters.module("ch07").DIAGNOSE)
    assert "Exercise 7.P (a)" in text and "Exercise 7.P (b)" in text and text.count("The constraints:") == 1


def test_show_prints_the_two_rungs_only_and_every_choice():
    case = CASES["2.P"]
    text = diagnose.show(case)
    assert "| unpadded_tile |" in text and "| naive |" in text and "| solution |" not in text
    assert all(repr(c) in text for c in case.choices) and all(n in text for n in diagnose.CONSTRAINTS)


def test_a_case_with_an_unknown_key_is_refused():
    with pytest.raises(ValueError, match="not a constraint"):
        diagnose.Case("x", "2", "naive", "solution", "slow", "a", ("a", "b"), "")
    with pytest.raises(ValueError, match="not one of the choices"):
        diagnose.Case("x", "2", "naive", "solution", "uncoalesced", "c", ("a", "b"), "")


def test_too_few_programs_is_a_grid_under_one_wave_with_memory_idle():
    """Chapter 10's constraint, on a recorded signature made to look like the unsplit decode kernel: a grid of 32
    blocks on 132 SMs (launch__waves_per_multiprocessor well under 1) with DRAM nearly idle shows it; the same kernel
    with a full grid, or a small grid that keeps memory busy, does not. Of the recorded rungs, only two of chapter
    10's show it: 10b's unsplit rung (the case) and 10a's page_per_step, 512 programs at 0.65 waves with DRAM at 36%
    of its peak; the 10a solution's grid, under one wave as well (0.97), keeps DRAM at 74%."""
    import dataclasses

    base = recorded.load("7a", "solution")
    rule = diagnose.CONSTRAINTS["too-few-programs"].evidence
    shown = {(e, r) for e in recorded.exercises() for r in recorded.rungs(e) if rule(recorded.load(e, r), base)}
    assert shown == {("10b", "unsplit"), ("10a", "page_per_step")}, shown
    assert recorded.load("10a", "solution").waves_per_sm < 1
    assert rule(dataclasses.replace(base, waves_per_sm=0.06, dram_pct=7.0), base)
    assert not rule(dataclasses.replace(base, waves_per_sm=3.9, dram_pct=7.0), base)
    assert not rule(dataclasses.replace(base, waves_per_sm=0.5, dram_pct=85.0), base)


def test_bank_conflicts_bind_only_where_the_warps_wait_on_shared_memory():
    """A rung shows bank-conflicts with 8 or more wavefronts a shared load and mio throttle or short scoreboard its
    top stall. Chapter 2's unpadded tile does (32-way, mio throttle). Chapter 10's decode kernels load with 9.5- to
    10.2-way conflicts and wait on global loads (long scoreboard) or fixed latencies (wait), the 10a solution at 74%
    of DRAM's peak: they do not, nor do 5b and 8b's solutions (12-way, dispatch stall and wait). The unsplit decode
    kernel's counters with its warps queued on the shared pipe would."""
    import dataclasses

    rule = diagnose.CONSTRAINTS["bank-conflicts"].evidence
    tile, naive = recorded.load("2", "unpadded_tile"), recorded.load("2", "naive")
    assert tile.leading_stalls == ("mio throttle",) and rule(tile, naive)
    unsplit, split = recorded.load("10b", "unsplit"), recorded.load("10b", "solution")
    for sig, beside in ((unsplit, split), (recorded.load("10a", "solution"), recorded.load("10a", "head_per_program")),
                        (recorded.load("5b", "solution"), recorded.load("5b", "unfused")),
                        (recorded.load("8b", "solution"), recorded.load("8b", "naive_tiles"))):
        assert sig.shared_ld_ways >= 8 and not set(sig.leading_stalls) & set(diagnose.SHARED_PIPE_STALLS), sig.rung
        assert not rule(sig, beside), f"{sig.exercise} {sig.rung}"
    for stall in diagnose.SHARED_PIPE_STALLS:
        queued = dataclasses.replace(unsplit, top_stalls=((stall, 3.0),) + unsplit.top_stalls)
        assert rule(queued, split), stall
    assert not rule(dataclasses.replace(tile, shared_ld_ways=7.9), naive)


def test_the_gpu_waiting_for_the_host_silences_the_kernel_rules():
    """A rung whose GPU is busy for a small part of each call shows no kernel-level constraint, whatever its
    counters say; the same counters without a trace still show theirs."""
    import dataclasses

    naive = recorded.load("2", "unpadded_tile")
    beside = recorded.load("2", "naive")
    assert diagnose.CONSTRAINTS["bank-conflicts"].evidence(naive, beside)
    waiting = dataclasses.replace(naive, gpu_busy_pct=30.0, call_us=100.0)
    busy = dataclasses.replace(beside, gpu_busy_pct=95.0, call_us=400.0)
    shown = {n for n, c in diagnose.CONSTRAINTS.items() if c.evidence(waiting, busy)}
    assert shown == {"host-bound"}


# ------------------------------------------------------------------ what each case's `why` says of its records

def test_7p_the_on_chip_rungs_claims_are_the_records():
    """7.P (a)'s reading: one block of 1,024 threads per SM against the solution's two, DRAM below the solution's
    with a third fewer bytes, and the rung it names next (four loads in flight) faster."""
    case = CASES["7.P (a)"]
    on_chip, solution = signatures(case)
    assert on_chip.theoretical_occupancy_pct == pytest.approx(50) and "shared memory" in on_chip.occupancy_limiter
    assert solution.theoretical_occupancy_pct == pytest.approx(100)
    assert on_chip.dram_pct < solution.dram_pct and on_chip.launch_dram_bytes < 0.75 * solution.launch_dram_bytes
    loads = recorded.load(case.exercise, "on_chip_loads", case.folder)
    assert loads.time_us < on_chip.time_us and loads.theoretical_occupancy_pct == on_chip.theoretical_occupancy_pct
    # "the table's 3.4 wavefronts a load are no conflict": between the 4-byte merge's one and a float4's four
    assert f"table's {on_chip.shared_ld_ways:.1f} wavefronts a load" in case.why
    assert 1 < on_chip.shared_ld_ways <= 4 and f"softmax: {on_chip.shared_ld_ways:.1f})" in (
        ROOT / "docs" / "profiling.md").read_text()


def test_7p_the_unfused_rungs_claims_are_the_records():
    """7.P (b)'s reading: the longest kernel near DRAM's peak, more kernels and more bytes in all than the fused
    rung, the difference about one pass over the (16,384 x 4,096 fp16) matrix."""
    unfused, fused = signatures(CASES["7.P (b)"])
    assert unfused.dram_pct >= 85 and (unfused.launch_kernels, fused.launch_kernels) == (2, 1)
    one_pass = 16384 * 4096 * 2
    assert unfused.launch_dram_bytes - fused.launch_dram_bytes == pytest.approx(one_pass, rel=0.2)


def test_8p_the_host_bound_rungs_claims_are_the_records():
    """8.P's reading: the same kernels at both sizes, the GPU busy far less of a call at B = 1, N = 256, and the call
    replayed as a CUDA graph faster."""
    b1, b64 = signatures(CASES["8.P"])
    assert b1.launch_kernels == b64.launch_kernels
    assert b1.gpu_busy_pct < diagnose.GPU_WAITS_BELOW_PCT <= b64.gpu_busy_pct
    assert not math.isnan(b1.graph_call_us) and b1.graph_call_us < b1.call_us


def test_9p_the_every_step_rungs_claims_are_the_records():
    """9.P's reading: four times the solution's fp32 work (a promotion after every 32 of K, not every 128: three
    fp32 operations an output for each), the tensor pipe less than half as busy, 2.3 times the time; more DRAM
    bytes (its autotuner's 64 x 128 tiles) at 7% of DRAM's peak, which would move them in a tenth of the extra time
    or less; and no one stall leading. The figures its `why` quotes are these."""
    case = CASES["9.P"]
    every_step, solution = signatures(case)
    m, n, k = 4096, 7168, 7168
    assert recorded.exercise_index("9b")["exercises"]["9b"]["size"] == f"M={m:,} N={n:,} K={k:,}"
    for sig, step in ((every_step, 32), (solution, 128)):
        assert sig.fp32_flops == 3 * m * n * (k // step), sig.rung
    assert every_step.block[0] // 32 == 4 and m * n // every_step.grid[0] == 64 * 128   # 4 warps, 64 x 128 outputs
    assert every_step.tensor_pipe_pct < 0.5 * solution.tensor_pipe_pct
    assert every_step.dram_bytes > 1.5 * solution.dram_bytes and every_step.dram_pct < 10
    assert every_step.leading_stalls[:2] == ("long scoreboard", "short scoreboard")
    for quote in (f"{every_step.fp32_gflop:.1f} against {solution.fp32_gflop:.1f} GFLOP",
                  f"busy {every_step.tensor_pipe_pct:.0f}% of the time against {solution.tensor_pipe_pct:.0f}%",
                  f"{every_step.time_us / solution.time_us:.1f} times as long", "64 x 128 tiles",
                  f"at {every_step.dram_pct:.0f}% of DRAM's peak"):
        assert quote in case.why, quote


def test_10p_the_unsplit_rungs_claims_are_the_records():
    """10.P's reading: 32 programs (one per sequence and KV head at B = 4, H_kv = 8), which at the recorded occupancy
    are 0.06 of the 132 SMs' room; DRAM at 4% of its peak against the split solution's 62% over 3.88 waves; shared
    loads 9.6-way with neither shared-memory stall on top. The figures its `why` quotes are these."""
    case = CASES["10.P"]
    unsplit, split = signatures(case)
    assert (unsplit.grid, split.grid) == ((4, 8, 1), (4, 8, 64))   # the split: 64 chunks of each sequence
    # blocks an SM holds: its resident warps over a block's
    per_sm = unsplit.theoretical_occupancy_pct / 100 * 64 / (unsplit.block[0] // 32)
    assert unsplit.waves_per_sm == pytest.approx(32 / (132 * per_sm), abs=0.005)
    assert unsplit.waves_per_sm < 1 < split.waves_per_sm and unsplit.dram_pct < 10 < 60 < split.dram_pct
    assert unsplit.leading_stalls == ("wait",) and unsplit.shared_ld_ways >= 8
    for quote in ("32 programs at 10b's size, under one for each of the 132 SMs",
                  f"{unsplit.waves_per_sm:.2f} waves", f"DRAM at {unsplit.dram_pct:.0f}% of its peak",
                  f"DRAM at {split.dram_pct:.0f}% over {split.waves_per_sm:.2f} waves",
                  f"shared loads are {unsplit.shared_ld_ways:.1f}-way"):
        assert quote in case.why, quote


def test_a_tied_top_stall_names_no_stall():
    """A stall ahead of the next by less than a tenth is a tie (Signature.leading_stalls): the rules that read the
    top stall see none, and the table prints every tied stall. 9b's every_step, DRAM idle and its L2 hit rate
    high, would show cache-traffic-per-flop were its long-scoreboard stall clear of the short-scoreboard one."""
    import dataclasses

    every_step, solution = signatures(CASES["9.P"])
    assert every_step.leading_stalls == ("long scoreboard", "short scoreboard", "barrier")
    assert "| long scoreboard ≈ short scoreboard ≈ barrier |" in diagnose.show(CASES["9.P"])
    clear = dataclasses.replace(every_step, top_stalls=(("long scoreboard", 2.0),) + every_step.top_stalls[1:])
    rule = diagnose.CONSTRAINTS["cache-traffic-per-flop"].evidence
    assert rule(clear, solution) and not rule(every_step, solution)


def test_the_table_shows_the_fp32_work_beside_tensor_core_products_only():
    """The accumulator-promotion rule reads fp32 GFLOP: 9b's table prints it; chapter 2's, with no product at all,
    does not."""
    assert "fp32 GFLOP" in recorded.table("9b") and "| 19.7 |" in recorded.table("9b")
    assert "fp32 GFLOP" not in recorded.table("2")


def test_bytes_that_dram_moves_at_its_peak_in_a_tenth_of_the_extra_time_do_not_explain_it():
    """accumulator-promotion's last condition, at its boundary: the same rung with DRAM busier (the same extra
    bytes then take longer at the peak the counters imply) is no longer shown."""
    import dataclasses

    every_step, solution = signatures(CASES["9.P"])
    rule = diagnose.CONSTRAINTS["accumulator-promotion"].evidence
    assert rule(every_step, solution)
    assert not rule(dataclasses.replace(every_step, dram_pct=3 * every_step.dram_pct), solution)
