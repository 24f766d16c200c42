"""Minimal safetensors reader/writer (pure Python + numpy), used by the parity fixtures.

File layout:
  * 8 bytes: N, the JSON header length, unsigned 64-bit little-endian;
  * N bytes: UTF-8 JSON object
      {"__metadata__": {str: str}, name: {"dtype": "F32", "shape": [...], "data_offsets": [b, e]}}
    padded with trailing spaces so that N is a multiple of 8;
  * the data buffer: every tensor row-major, little-endian, contiguous, with no gaps; offsets
    are relative to the start of the buffer and `e` is exclusive.

The writer sorts tensors by name (the JSON keys and the data in the same order) and puts
"__metadata__" first. The reader is strict: it rejects the same malformed files as the
reference implementation (short file, oversized header, bad JSON, non-contiguous offsets,
size mismatch, trailing bytes) plus duplicate keys and BOOL bytes other than 0/1.

Tensors are handed back as numpy arrays. The writer also takes torch tensors (it calls
`.detach().cpu().numpy()`), so this module does not import torch.
"""

from __future__ import annotations

import json
import struct
from typing import Dict, Mapping, Optional, Tuple

import numpy as np

MAX_HEADER_SIZE = 100_000_000

# safetensors dtype tag -> little-endian numpy dtype. BF16 has no numpy type: it is read as raw
# uint16 bits and widened to float32 (exact); the writer does not produce it.
_DTYPES = {
    "BOOL": np.dtype("|b1"),
    "U8": np.dtype("|u1"),
    "I8": np.dtype("|i1"),
    "I16": np.dtype("<i2"),
    "U16": np.dtype("<u2"),
    "F16": np.dtype("<f2"),
    "BF16": np.dtype("<u2"),
    "I32": np.dtype("<i4"),
    "U32": np.dtype("<u4"),
    "F32": np.dtype("<f4"),
    "F64": np.dtype("<f8"),
    "I64": np.dtype("<i8"),
    "U64": np.dtype("<u8"),
}
_NP_TO_TAG = {np.dtype(v).newbyteorder("=").str[1:]: k for k, v in _DTYPES.items() if k != "BF16"}


class SafetensorsError(ValueError):
    pass


def _tag_of(arr: np.ndarray) -> str:
    if arr.dtype == np.bool_:
        return "BOOL"
    key = arr.dtype.newbyteorder("=").str[1:]  # e.g. 'f8', 'i4', 'u1'
    try:
        return _NP_TO_TAG[key]
    except KeyError:
        raise SafetensorsError(f"unsupported dtype {arr.dtype}") from None


def _as_numpy(x) -> np.ndarray:
    if hasattr(x, "detach"):  # torch tensor, without importing torch
        x = x.detach().cpu().numpy()
    return np.asarray(x)


def serialize(tensors: Mapping[str, object], metadata: Optional[Mapping[str, str]] = None) -> bytes:
    """Encode `tensors` (name -> numpy array / torch tensor) and string `metadata` to bytes."""
    header: Dict[str, object] = {}
    if metadata is not None:
        for k, v in metadata.items():
            if not isinstance(k, str) or not isinstance(v, str):
                raise SafetensorsError(f"metadata must map str to str, got {k!r}: {v!r}")
        header["__metadata__"] = dict(sorted(metadata.items()))
    chunks = []
    offset = 0
    for name in sorted(tensors):
        if name == "__metadata__":
            raise SafetensorsError("'__metadata__' is not a valid tensor name")
        arr = _as_numpy(tensors[name])
        tag = _tag_of(arr)
        data = np.ascontiguousarray(arr, dtype=_DTYPES[tag]).tobytes(order="C")
        header[name] = {"dtype": tag, "shape": [int(d) for d in arr.shape],
                        "data_offsets": [offset, offset + len(data)]}
        chunks.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":"), ensure_ascii=True).encode("utf-8")
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + b"".join(chunks)


def save_file(tensors: Mapping[str, object], path, metadata: Optional[Mapping[str, str]] = None) -> int:
    """Write a safetensors file; returns the number of bytes written."""
    blob = serialize(tensors, metadata)
    with open(path, "wb") as f:
        f.write(blob)
    return len(blob)


def _no_duplicates(pairs):
    out = {}
    for k, v in pairs:
        if k in out:
            raise SafetensorsError(f"duplicate JSON key {k!r}")
        out[k] = v
    return out


def deserialize(blob: bytes) -> Tuple[Dict[str, np.ndarray], Dict[str, str]]:
    """Decode bytes into (name -> numpy array, metadata). Raises SafetensorsError if malformed."""
    if len(blob) < 8:
        raise SafetensorsError("file shorter than 8 bytes")
    (n,) = struct.unpack("<Q", blob[:8])
    if n > MAX_HEADER_SIZE:
        raise SafetensorsError(f"header size {n} too large")
    if 8 + n > len(blob):
        raise SafetensorsError("header extends beyond the end of the file")
    try:
        header = json.loads(blob[8:8 + n].decode("utf-8"), object_pairs_hook=_no_duplicates)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise SafetensorsError(f"bad header: {e}") from None
    if not isinstance(header, dict):
        raise SafetensorsError("header is not a JSON object")
    metadata = header.pop("__metadata__", None) or {}
    if not isinstance(metadata, dict) or not all(isinstance(v, str) for v in metadata.values()):
        raise SafetensorsError("__metadata__ must map strings to strings")

    entries = []
    for name, info in header.items():
        if not isinstance(info, dict) or set(info) != {"dtype", "shape", "data_offsets"}:
            raise SafetensorsError(f"bad entry for {name!r}")
        tag, shape, offs = info["dtype"], info["shape"], info["data_offsets"]
        if tag not in _DTYPES:
            raise SafetensorsError(f"{name!r}: unknown dtype {tag!r}")
        if (not isinstance(shape, list) or
                not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape)):
            raise SafetensorsError(f"{name!r}: bad shape {shape!r}")
        if (not isinstance(offs, list) or len(offs) != 2 or
                not all(isinstance(o, int) and not isinstance(o, bool) and o >= 0 for o in offs)):
            raise SafetensorsError(f"{name!r}: bad data_offsets {offs!r}")
        begin, end = offs
        if end < begin:
            raise SafetensorsError(f"{name!r}: end offset before begin")
        count = 1
        for d in shape:
            count *= d
        if count > 2**63 - 1:
            raise SafetensorsError(f"{name!r}: element count overflows")
        if end - begin != count * _DTYPES[tag].itemsize:
            raise SafetensorsError(f"{name!r}: byte size {end - begin} != "
                                   f"{count} elements of {tag}")
        entries.append((begin, end, name, tag, shape))

    entries.sort()
    pos = 0
    for begin, end, name, _, _ in entries:
        if begin != pos:
            raise SafetensorsError(f"{name!r}: data not contiguous (begins at {begin}, expected {pos})")
        pos = end
    if 8 + n + pos != len(blob):
        raise SafetensorsError(f"buffer is {len(blob) - 8 - n} bytes, tensors cover {pos}")

    base = 8 + n
    tensors: Dict[str, np.ndarray] = {}
    for begin, end, name, tag, shape in entries:
        raw = blob[base + begin: base + end]
        if tag == "BOOL":
            u8 = np.frombuffer(raw, dtype=np.uint8)
            if np.any(u8 > 1):
                raise SafetensorsError(f"{name!r}: BOOL byte other than 0/1")
            arr = u8.astype(np.bool_)
        elif tag == "BF16":
            arr = (np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16).view(np.float32)
        else:
            arr = np.frombuffer(raw, dtype=_DTYPES[tag]).copy()
        tensors[name] = arr.reshape(shape)
    return tensors, metadata


def load_file(path) -> Tuple[Dict[str, np.ndarray], Dict[str, str]]:
    with open(path, "rb") as f:
        return deserialize(f.read())


def dtype_tag(x) -> str:
    """The safetensors dtype tag a numpy array / torch tensor would be stored as."""
    return _tag_of(_as_numpy(x))
