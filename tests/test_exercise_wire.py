"""What crosses between the checker and the reader's process: data both ways, nothing that runs code."""

import json
import os

import numpy as np
import pytest

from kmt_ref import Block, KMeansTransformer, TokenLayout
from kmt_ref.dot_product_transformer import dot_product_lloyd_transformer
from kmt_ref.exercises import _wire
from kmt_ref.learning.model import ModelConfig
from kmt_ref.lloyd_transformer import lloyd_transformer


def _through(value):
    """``value`` sent through a pipe and read back, as the checker and the solver do."""
    read, write = os.pipe()
    try:
        _wire.send(write, {"value": _wire.encode(value)})
        os.close(write)
        return _wire.decode(_wire.receive(read)["value"])
    finally:
        os.close(read)


def test_values_cross_unchanged():
    values = [None, True, 3, -2**70, 0.1, float("inf"), "text", np.float32(1.5), np.int64(7),
              np.arange(6, dtype=np.int32).reshape(2, 3), np.array([np.nan, -0.0]), np.zeros((0, 4)),
              (1, [2.0, {"a": np.eye(2)}]), {3: "x"}, ModelConfig(4, 3, tied=True), TokenLayout(2, 3)]
    for value in values:
        got = _through(value)
        assert type(got) is type(value)
        if isinstance(value, (np.ndarray, np.generic)):
            assert got.dtype == value.dtype and got.shape == np.shape(value)
            np.testing.assert_array_equal(got, value)
        else:
            assert repr(got) == repr(value)


def test_a_generator_crosses_in_its_state():
    rng = np.random.default_rng(5)
    rng.normal(size=3)
    copy = _through(rng)
    assert copy is not rng and copy.normal() == rng.normal()


@pytest.mark.parametrize("build", [lloyd_transformer, dot_product_lloyd_transformer])
def test_a_model_crosses_as_its_weights_and_runs_the_same(build):
    model = build(2, 3)
    copy = _through(model)
    assert type(copy) is KMeansTransformer and copy.layout == model.layout
    for block in model.blocks:
        for name in ("Wq", "Wk", "Wv"):
            np.testing.assert_array_equal(copy.weights[block][name], model.weights[block][name])
        assert copy.blocks[block].normalizer == model.blocks[block].normalizer
    rng = np.random.default_rng(0)
    X, C = rng.normal(size=(20, 2)), rng.normal(size=(3, 2))
    np.testing.assert_array_equal(copy.run(X, C, 3).centers, model.run(X, C, 3).centers)


def test_what_is_not_data_does_not_cross():
    class Model(KMeansTransformer):  # a subclass could run anything: its behaviour would not cross
        pass

    base = lloyd_transformer(2, 3)
    for value in (lambda: 0, object(), np.array([object()]), Model(base.layout, dict(base.blocks)), {(1, 2): 3},
                  np.random.default_rng(0).bit_generator, [[[[[[[[[[[[[[[[[[0]]]]]]]]]]]]]]]]]]):
        with pytest.raises(_wire.UnsendableError):
            _wire.encode(value)


@pytest.mark.parametrize("forged", [
    [1, 2],  # a bare list: only tagged containers are read
    {"~": "array", "dtype": "O", "shape": [1], "data": ""},  # objects, not numbers
    {"~": "array", "dtype": "<f8", "shape": [3], "data": "AAAAAAAAAAA="},  # 8 bytes for 3 numbers
    {"~": "array", "dtype": "<f8", "shape": [-1], "data": ""},
    {"~": "Block", "fields": {"Wq": None, "__class__": 1}},  # a field the class does not have
    {"~": "Block", "fields": {"Wq": 0.0}},  # does not build
    {"~": "generator", "state": {"~": "dict", "items": [["bit_generator", "MT19937"]]}},
    {"~": "pickle", "data": "..."},
])
def test_a_forged_message_is_refused_not_executed(forged):
    with pytest.raises(_wire.BadMessageError):
        _wire.decode(json.loads(json.dumps(forged)))


def test_a_message_longer_than_the_limit_is_refused_before_it_is_read():
    read, write = os.pipe()
    try:
        os.write(write, (_wire.MAX_MESSAGE_BYTES + 1).to_bytes(8, "big"))
        with pytest.raises(_wire.BadMessageError, match="at most"):
            _wire.receive(read)
    finally:
        os.close(read)
        os.close(write)


def test_a_block_crosses_with_its_parameters():
    layout = TokenLayout(2, 3)
    D = layout.width
    block = Block(np.eye(D), np.eye(D), np.eye(D), normalizer="sparsemax", gamma=2.5)
    copy = _through(block)
    assert type(copy) is Block and copy.normalizer == "sparsemax" and copy.gamma == 2.5
    assert dict(copy.params) == dict(block.params)
