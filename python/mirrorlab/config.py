"""tf.config for mirrorlab's devices: list them, and split one device into several.

TensorFlow's rules hold: the configuration may change until the devices are first used (a
strategy made, ``list_logical_devices()`` called); after that it raises RuntimeError.

Two kinds of logical devices:
  - from the CPU (``list_physical_devices("CPU")[0]``): CPU-backed virtual GPUs, each a thread
    with its own memory cap. TensorFlow would make logical CPUs; mirrorlab makes GPUs a laptop
    can train on, named and listed as GPUs ("/device:GPU:0").
  - from a CUDA GPU (``list_physical_devices("GPU")[0]``): logical GPUs carved from the card,
    each with its own capped memory, as on TensorFlow.
Without any configuration a strategy has one CPU-backed virtual GPU.
"""

from __future__ import annotations

from typing import List, NamedTuple, Optional, Sequence

from . import _mirrorlab, _numbers

__all__ = [
    "PhysicalDevice",
    "LogicalDevice",
    "LogicalDeviceConfiguration",
    "list_physical_devices",
    "list_logical_devices",
    "set_logical_device_configuration",
    "get_logical_device_configuration",
]

_DEFAULT_MEMORY_LIMIT_MIB = 1024


class PhysicalDevice(NamedTuple):
    """A device of the machine: "/physical_device:CPU:0", or a CUDA GPU "/physical_device:GPU:0"."""

    name: str
    device_type: str


class LogicalDevice(NamedTuple):
    """A device a strategy runs a replica on: "/device:GPU:0" (and "/device:CPU:0", the host)."""

    name: str
    device_type: str


class LogicalDeviceConfiguration:
    """One logical device to make: ``memory_limit`` in MiB (None: 1024 for a CPU-backed one)."""

    def __init__(self, memory_limit: Optional[int] = None,
                 experimental_priority: Optional[int] = None,
                 experimental_device_ordinal: Optional[int] = None) -> None:
        if memory_limit is not None:
            if not _numbers.is_whole(memory_limit):
                raise TypeError(
                    f"memory_limit must be a whole number of MiB (or None), not {memory_limit!r}")
            if memory_limit < 1:
                raise ValueError(f"memory_limit {memory_limit}: give a number of MiB of at least 1")
            memory_limit = int(memory_limit)
        if experimental_priority is not None or experimental_device_ordinal is not None:
            raise ValueError("mirrorlab's devices have no priorities or ordinals: "
                             "give memory_limit only")
        self.memory_limit = memory_limit
        self.experimental_priority = experimental_priority
        self.experimental_device_ordinal = experimental_device_ordinal

    def __repr__(self) -> str:
        return (f"LogicalDeviceConfiguration(memory_limit={self.memory_limit}, "
                f"experimental_priority=None, experimental_device_ordinal=None)")

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, LogicalDeviceConfiguration)
                and other.memory_limit == self.memory_limit)


_configured: dict = {}  # PhysicalDevice -> the list it was given


def _check_type(device_type: Optional[str]) -> Optional[str]:
    if device_type is None:
        return None
    if not isinstance(device_type, str):
        raise TypeError(f"device_type must be a string such as 'GPU' or 'CPU', not {device_type!r}")
    return device_type.upper()


def list_physical_devices(device_type: Optional[str] = None) -> List[PhysicalDevice]:
    """The machine's devices: the CPU, then each CUDA GPU that is visible."""
    wanted = _check_type(device_type)
    devices = [PhysicalDevice(name, kind) for name, kind in _mirrorlab._physical_devices()]
    return [d for d in devices if wanted is None or d.device_type == wanted]


def _logical_devices() -> tuple:
    """Makes the devices (the configuration is then fixed); their names and what they are."""
    devices, description = _mirrorlab._logical_devices()
    return devices, description


def list_logical_devices(device_type: Optional[str] = None) -> List[LogicalDevice]:
    """The host's CPU, then every logical GPU; makes the devices, as TensorFlow does."""
    wanted = _check_type(device_type)
    devices, _ = _logical_devices()
    out = [LogicalDevice("/device:CPU:0", "CPU")]
    out += [LogicalDevice(f"/device:GPU:{i}", "GPU") for i in range(len(devices))]
    return [d for d in out if wanted is None or d.device_type == wanted]


def describe_logical_devices() -> str:
    """One line on what the logical GPUs are: "1 Physical CPU, 2 Logical GPUs (CPU-backed ...)"."""
    return _logical_devices()[1]


def set_logical_device_configuration(
        device: PhysicalDevice,
        logical_devices: Optional[Sequence[LogicalDeviceConfiguration]]) -> None:
    """Splits ``device`` into one logical device per configuration given.

    The CPU gives CPU-backed virtual GPUs, each with its memory cap (TensorFlow makes logical
    CPUs, and refuses a memory_limit on them); a CUDA GPU gives logical GPUs carved from it. An
    empty list goes back to the default. Raises RuntimeError once the devices are in use, as
    TensorFlow does.
    """
    if not isinstance(device, PhysicalDevice):
        raise ValueError(f"Unrecognized device: {device!r}: give one of "
                         "mirrorlab.config.list_physical_devices()")
    if device not in list_physical_devices():
        raise ValueError(f"Unrecognized device: {device!r}")
    if logical_devices is None:
        raise TypeError("'NoneType' object is not iterable: give a list of "
                        "LogicalDeviceConfiguration (an empty one: the default devices)")
    configs = list(logical_devices)
    for c in configs:
        if not isinstance(c, LogicalDeviceConfiguration):
            raise TypeError("each logical device must be a "
                            f"mirrorlab.config.LogicalDeviceConfiguration, not {c!r}")
    if not configs:  # TensorFlow's way back to the default: here one CPU-backed virtual GPU
        configs = [LogicalDeviceConfiguration()]
        device = list_physical_devices("CPU")[0]
    limits = [c.memory_limit if c.memory_limit is not None else _DEFAULT_MEMORY_LIMIT_MIB
              for c in configs]
    if device.device_type == "CPU":
        _mirrorlab._configure_virtual_gpus(limits)
    else:
        if any(c.memory_limit is None for c in configs):
            raise ValueError("Setting memory limit is required for GPU virtual devices")
        _mirrorlab._configure_logical_gpus(int(device.name.rsplit(":", 1)[1]), limits)
    _configured.clear()
    if logical_devices:
        _configured[device] = configs


def get_logical_device_configuration(
        device: PhysicalDevice) -> Optional[List[LogicalDeviceConfiguration]]:
    """What set_logical_device_configuration gave ``device``; None if nothing."""
    return _configured.get(device)
