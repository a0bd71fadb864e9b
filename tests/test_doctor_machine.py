"""`ladder doctor`'s machine report (grader.notebooks.doctor.machine) for a GPU, on any machine: the
GPU, the ceilings and the driver are stood in for, so the GPU half of the report, which CI's CPU never
reaches, is checked for what it reads from each and how it rounds."""

from grader.cuda.gpu import GPUInfo
from grader.harness.ceilings import Ceilings
from grader.notebooks import doctor

H100 = GPUInfo("NVIDIA H100 80GB HBM3", (9, 0), 132, 50 * 2**20, int(79.1 * 2**30), "GPU-1")
CEILINGS = Ceilings("NVIDIA H100 80GB HBM3", 2900.5, 51.2, 712.0, "2026-11-27T06:00:00+0000", "2.13.0", 1210.4)


def test_with_a_gpu_the_report_names_it_and_its_measured_ceilings(monkeypatch):
    asked = []
    monkeypatch.setattr(doctor, "gpu_info", lambda: H100)
    monkeypatch.setattr(doctor, "driver_version", lambda: "580.65")
    monkeypatch.setattr(doctor, "ceilings", lambda remeasure=False: asked.append(remeasure) or CEILINGS)
    report = doctor.machine(remeasure=True)
    assert report["gpu"] == {"name": "NVIDIA H100 80GB HBM3", "compute_capability": "9.0", "sms": 132, "l2_mib": 50.0,
                             "memory_gib": 79.1, "driver": "580.65"}
    assert report["ceilings"] == {"copy_gbps": 2900.5, "fp32_tflops": 51.2, "fp16_tflops": 712.0,
                                  "fp8_tflops": 1210.4, "measured": "2026-11-27T06:00:00+0000"}
    assert asked == [True] and "no_gpu_reason" not in report


def test_without_a_gpu_the_report_says_why_and_measures_nothing(monkeypatch):
    monkeypatch.setattr(doctor, "gpu_info", lambda: None)
    monkeypatch.setattr(doctor, "gpu_or_reason", lambda: (False, "no GPU found: a test's own reason"))
    monkeypatch.setattr(doctor, "ceilings", lambda remeasure=False: (_ for _ in ()).throw(AssertionError("measured")))
    report = doctor.machine()
    assert report["gpu"] is None and report["no_gpu_reason"] == "no GPU found: a test's own reason"
    assert "ceilings" not in report and {"versions", "cuda_headers", "nvrtc_compile_only"} <= set(report)
