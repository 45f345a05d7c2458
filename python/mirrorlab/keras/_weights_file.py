"""Keras 3's weights file, NAME.weights.h5: what model.save_weights writes and load_weights reads.

An HDF5 file (through h5py), laid out as Keras 3.15 was seen to write it:
    vars                        a group named for the model ("sequential")
    layers/KEY/vars             one group a layer, named for the layer (its attribute "name"),
    layers/KEY/vars/0, /1, ...  holding the layer's arrays: a kernel, then a bias
    optimizer/vars              the optimizer's variables, /0, /1, ... (_optimizer_state.py)
KEY is the layer's class in snake case, numbered within the model in order ("dense", "dense_1"),
whatever the layers' names: a file loads into any model of the same layers.
"""

from __future__ import annotations

import collections
import os
import secrets
import stat
from typing import Any, Callable, Dict, List, Sequence, Tuple

import numpy as np

ENDING = ".weights.h5"
HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"


def _h5py():
    try:
        import h5py
    except ImportError:
        raise ImportError("the weights in a file (save_weights, load_weights, save, "
                          "load_model) are HDF5, written and read through h5py, which is not "
                          "installed: apt-get install python3-h5py, or pip install h5py") from None
    return h5py


def _path(filepath: object, call: str) -> str:
    if not isinstance(filepath, (str, os.PathLike)):
        raise TypeError(f"{call} takes a file name ending in {ENDING}, not "
                        f"{type(filepath).__name__}")
    path = os.fspath(filepath)
    if not str(path).endswith(ENDING):
        verb = "writes" if call == "save_weights" else "reads"
        raise ValueError(f"The filename must end in `{ENDING}`. Received: filepath={path} "
                         f"(Keras 3's weights file: {call} {verb} no other)")
    return str(path)


def layer_keys(layers: Sequence[object]) -> List[str]:
    """Each layer's group in the file: its class in snake case, numbered within the model."""
    seen: "collections.Counter[str]" = collections.Counter()
    keys = []
    for layer in layers:
        base = getattr(layer, "_key", layer._base)
        keys.append(base if seen[base] == 0 else f"{base}_{seen[base]}")
        seen[base] += 1
    return keys


def _is_hdf5(path: str) -> bool:
    with open(path, "rb") as f:
        return f.read(len(HDF5_SIGNATURE)) == HDF5_SIGNATURE


def write_safely(path: str, overwrite: bool, is_ours, what: str, write) -> None:
    """``write(temporary)`` writes the file; ``is_ours(path)``: an existing file is of this kind.
    An existing file is replaced only if ``overwrite`` and it is of this kind and writable;
    written beside it first, then moved over it, so a failure leaves it as it was. A link's file
    is written (the link stays); a new file gets the mode the umask gives, a replaced one keeps
    its own."""
    target = os.path.realpath(path)
    mode = None
    if os.path.exists(target):
        if not overwrite:
            raise FileExistsError(f"{path} exists and overwrite=False: not replaced (give "
                                  "overwrite=True, or another name)")
        if not os.path.isfile(target) or not is_ours(target):
            raise FileExistsError(f"{path} exists and is no {what}: not replaced; move it away "
                                  "or give another name")
        mode = stat.S_IMODE(os.stat(target).st_mode)
        if mode & 0o222 == 0 or not os.access(target, os.W_OK):
            raise PermissionError(f"{path} is read-only (mode {mode:04o}): not replaced; "
                                  "make it writable (chmod u+w) or give another name")
    folder = os.path.dirname(target)
    if not os.path.isdir(folder):
        raise FileNotFoundError(f"{path}: no folder {folder} to write it in")
    temporary = os.path.join(folder, f".{os.path.basename(target)}.{os.getpid()}."
                                     f"{secrets.token_hex(4)}.part")
    os.close(os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))  # umask applies
    try:
        if mode is not None:
            os.chmod(temporary, mode)
        write(temporary)
        os.replace(temporary, target)
    except BaseException:
        os.unlink(temporary)
        raise


def write(file: object, model_name: str, optimizer_name: str,
          layers: Sequence[Tuple[str, str, List[np.ndarray]]],
          optimizer_vars: Sequence[np.ndarray] = ()) -> None:
    """The weights (and the optimizer's variables) into ``file`` (a path, or a binary file
    object), as Keras lays them out."""
    with _h5py().File(file, "w") as f:
        f.create_group("vars").attrs["name"] = model_name
        for key, name, arrays in layers:
            group = f.create_group(f"layers/{key}/vars")
            group.attrs["name"] = name
            for i, array in enumerate(arrays):
                group.create_dataset(str(i), data=np.asarray(array, dtype=np.float32))
        if optimizer_name:
            group = f.create_group("optimizer/vars")
            group.attrs["name"] = optimizer_name
            for i, array in enumerate(optimizer_vars):
                group.create_dataset(str(i), data=array)


def save(filepath: object, overwrite: bool, model_name: str, optimizer_name: str,
         layers: Sequence[Tuple[str, str, List[np.ndarray]]],
         optimizer_vars: Sequence[np.ndarray]) -> None:
    """Writes the file: ``layers`` as (key, name, arrays); an existing one replaced only if it
    is HDF5 (weights written before), as write_safely says."""
    path = _path(filepath, "save_weights")
    _h5py()
    write_safely(path, overwrite, _is_hdf5, "weights file (not HDF5)",
                 lambda temporary: write(temporary, model_name, optimizer_name, layers,
                                         optimizer_vars))


def load(filepath: object, layers: Sequence[Tuple[str, str, List[np.ndarray]]],
         optimizer: Callable[[List[Any], str], Any]) -> Tuple[List[np.ndarray], Any]:
    """(the arrays for ``layers`` (key, name, the model's arrays now), what ``optimizer`` makes
    of the optimizer's variables) from the file, the arrays checked against the model's: every
    array there, of the same shape, and no layer more."""
    path = _path(filepath, "load_weights")
    _h5py()
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{path}: no such file (save_weights writes one)")
    if not _is_hdf5(path):
        raise ValueError(f"{path} is no weights file: not HDF5 (save_weights writes one)")
    return read(path, path, layers, optimizer)


def read(file: object, path: str, layers: Sequence[Tuple[str, str, List[np.ndarray]]],
         optimizer: Callable[[List[Any], str], Any]) -> Tuple[List[np.ndarray], Any]:
    """load's answer from ``file`` (a path, or a binary file object); ``path`` names it in
    errors. ``optimizer(variables, path)`` is called while the file is open, with the
    optimizer's variables in order, not read (h5py's datasets, None where one is missing): it
    reads those it takes."""
    try:
        return _read(file, path, layers, optimizer)
    except (AttributeError, KeyError, OSError, TypeError) as e:  # h5py's, on a file laid out
        raise ValueError(f"{path}: its weights cannot be read as Keras lays them out "  # else
                         f"({type(e).__name__}: {e}); save them again") from None


def _read(file: object, path: str, layers: Sequence[Tuple[str, str, List[np.ndarray]]],
          optimizer: Callable[[List[Any], str], Any]) -> Tuple[List[np.ndarray], Any]:
    h5py = _h5py()
    out: List[np.ndarray] = []
    with h5py.File(file, "r") as f:
        saved = f.get("layers")
        keys = {key for key, _, _ in layers}
        if saved is not None:
            for key in saved:
                arrays = saved[key].get("vars")
                if key not in keys and arrays is not None and len(arrays) > 0:
                    raise ValueError(f"{path} holds the weights of a layer {key} this model "
                                     "has not: it was saved from another model")
        for key, name, now in layers:
            group = f.get(f"layers/{key}/vars")
            if not now:
                continue
            if group is None:
                raise ValueError(f"{path} has no weights for {name} (layers/{key}): it was "
                                 "saved from another model")
            if len(group) != len(now):
                raise ValueError(f"{path} holds {len(group)} arrays for {name} (layers/{key}), "
                                 f"this model's has {len(now)}")
            for i, mine in enumerate(now):
                data = group.get(str(i))
                if not isinstance(data, h5py.Dataset) or data.shape != mine.shape:
                    shape = getattr(data, "shape", None)
                    raise ValueError(f"{path}: {name}'s array {i} (layers/{key}/vars/{i}) has "
                                     f"the shape {shape}, this model's {mine.shape}")
                if not (np.issubdtype(data.dtype, np.floating) or
                        np.issubdtype(data.dtype, np.integer)):
                    raise ValueError(f"{path}: {name}'s array {i} holds {data.dtype}, not "
                                     "real numbers")
                out.append(np.asarray(data[()], dtype=np.float32))
        saved = f.get("optimizer/vars")
        entries = [saved.get(str(i)) for i in range(len(saved))] if saved is not None else []
        return out, optimizer([e if isinstance(e, h5py.Dataset) else None for e in entries],
                              path)


def by_layer(names: Sequence[str], arrays: Sequence[np.ndarray]) -> Dict[str, List[np.ndarray]]:
    """get_weights()' arrays grouped by layer, from weight_names() ("dense/kernel", ...)."""
    grouped: Dict[str, List[np.ndarray]] = collections.defaultdict(list)
    for name, array in zip(names, arrays):
        grouped[name.rsplit("/", 1)[0]].append(array)
    return grouped
