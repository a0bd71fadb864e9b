"""The device count grader.cuda.gpu hands torch once cuInit has run, so that torch's first CUDA call starts no
NVML (every GPU of the machine, under the driver's lock) in each of a check's fresh processes."""

from types import SimpleNamespace

from grader.cuda import gpu


def _torch(cached, count=1):
    calls = []

    def device_count():
        calls.append("cuda")
        return count
    return SimpleNamespace(cuda=SimpleNamespace(_cached_device_count=cached),
                           _C=SimpleNamespace(_cuda_getDeviceCount=device_count)), calls


def test_an_empty_cache_gets_cudas_own_count():
    torch, calls = _torch(None, count=2)
    gpu._count_devices_once(torch)
    assert torch.cuda._cached_device_count == 2 and calls == ["cuda"]


def test_a_filled_cache_is_left_as_torch_filled_it():
    torch, calls = _torch(4)
    gpu._count_devices_once(torch)
    assert torch.cuda._cached_device_count == 4 and calls == []


def test_a_torch_without_the_cache_gets_none_made_up():
    torch, calls = _torch(None)
    del torch.cuda._cached_device_count
    gpu._count_devices_once(torch)
    assert not hasattr(torch.cuda, "_cached_device_count") and calls == []
