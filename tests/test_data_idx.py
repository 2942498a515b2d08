"""IDX reader and Fashion-MNIST loader against tiny IDX files written here with numpy + struct."""

import gzip
import struct

import numpy as np
import pytest

from oversmooth.data import load_fashion_mnist, read_idx
from oversmooth.data.fashion_mnist import DEFAULT_DIR
from oversmooth.errors import UsageError

TYPE_CODES = {np.dtype("u1"): 0x08, np.dtype("i2"): 0x0B, np.dtype("i4"): 0x0C, np.dtype("f4"): 0x0D}


def write_idx(path, array, compress=False):
    header = struct.pack(">BBBB", 0, 0, TYPE_CODES[array.dtype], array.ndim)
    header += b"".join(struct.pack(">I", s) for s in array.shape)
    payload = header + array.astype(array.dtype.newbyteorder(">")).tobytes()
    (gzip.open if compress else open)(path, "wb").write(payload)


@pytest.mark.parametrize("dtype", ["u1", "i2", "i4", "f4"])
@pytest.mark.parametrize("compress", [False, True])
def test_read_idx_round_trips_numpy_arrays(tmp_path, dtype, compress):
    rng = np.random.default_rng(0)
    array = (rng.standard_normal((5, 3, 4)) * 100).astype(dtype)
    path = tmp_path / ("x.gz" if compress else "x")
    write_idx(path, array, compress)
    got = read_idx(path)
    assert got.shape == (5, 3, 4) and got.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(got, array)


def test_read_idx_rejects_bad_and_truncated_files(tmp_path):
    (tmp_path / "bad").write_bytes(b"\x01\x02\x03\x04")
    with pytest.raises(UsageError, match="not an IDX file"):
        read_idx(tmp_path / "bad")
    write_idx(tmp_path / "short", np.zeros((4, 2), np.uint8))
    (tmp_path / "short").write_bytes((tmp_path / "short").read_bytes()[:-1])
    with pytest.raises(UsageError, match="truncated"):
        read_idx(tmp_path / "short")


def write_fake_fashion_mnist(folder, n_train=40, n_test=10):
    for prefix, count in (("train", n_train), ("t10k", n_test)):
        # Pixel [0, 0] and [0, 1] encode the example's index, so splits can be compared exactly.
        images = np.zeros((count, 28, 28), np.uint8)
        images[:, 0, 0], images[:, 0, 1] = np.arange(count) % 256, np.arange(count) // 256
        write_idx(folder / f"{prefix}-images-idx3-ubyte.gz", images, compress=True)
        write_idx(folder / f"{prefix}-labels-idx1-ubyte.gz", (np.arange(count) % 10).astype(np.uint8), True)


def test_fashion_mnist_validation_is_carved_from_train_without_overlap(tmp_path):
    write_fake_fashion_mnist(tmp_path)
    splits = load_fashion_mnist(tmp_path, val_size=8, seed=3)
    ids = {k: set((s.images[:, 0, 0] + 256 * s.images[:, 0, 1].astype(int)).tolist()) for k, s in splits.items()}
    assert len(splits["train"]) == 32 and len(splits["val"]) == 8 and len(splits["test"]) == 10
    assert ids["train"].isdisjoint(ids["val"]) and ids["train"] | ids["val"] == set(range(40))
    assert all(splits[k].labels.dtype == np.int64 for k in splits)
    again = load_fashion_mnist(tmp_path, val_size=8, seed=3)
    np.testing.assert_array_equal(again["val"].images, splits["val"].images)


def test_fashion_mnist_missing_folder_or_file_is_a_usage_error(tmp_path):
    with pytest.raises(UsageError, match="--data-dir"):
        load_fashion_mnist(tmp_path / "nowhere")
    with pytest.raises(UsageError, match="train-images-idx3-ubyte"):
        load_fashion_mnist(tmp_path)


def test_real_fashion_mnist_has_the_standard_shapes():
    if not (DEFAULT_DIR / "train-images-idx3-ubyte.gz").is_file():
        pytest.skip(f"Fashion-MNIST not installed in {DEFAULT_DIR} (apt-get install dataset-fashion-mnist)")
    splits = load_fashion_mnist(val_size=5000)
    assert [len(splits[k]) for k in ("train", "val", "test")] == [55000, 5000, 10000]
    assert splits["test"].images.shape[1:] == (28, 28)
    assert np.bincount(splits["test"].labels).tolist() == [1000] * 10
