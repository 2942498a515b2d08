"""The reference models of gate (c) (oversmooth.claims.reference): the logistic regression against a
naive gradient descent on the same objective and against the Bayes accuracy of a Gaussian problem."""

import math

import numpy as np
import torch
from scipy import stats

from oversmooth.claims.reference import fit_logistic, logistic_accuracy


def _naive_fit(x: np.ndarray, y: np.ndarray, classes: int, l2: float, steps: int = 20000, lr: float = 0.5):
    """Plain gradient descent on mean cross-entropy + l2 / 2 ||W||^2, the gradient derived by hand:
    d/dW = x^T (softmax(x W + b) - onehot(y)) / N + l2 W; d/db = the column means of the same residual."""
    weight, bias = np.zeros((x.shape[1], classes)), np.zeros(classes)
    onehot = np.eye(classes)[y]
    for _ in range(steps):
        logits = x @ weight + bias
        p = np.exp(logits - logits.max(1, keepdims=True))
        p /= p.sum(1, keepdims=True)
        residual = (p - onehot) / len(x)
        weight -= lr * (x.T @ residual + l2 * weight)
        bias -= lr * residual.sum(0)
    return weight, bias


def test_lbfgs_fit_matches_a_naive_gradient_descent():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(300, 4))
    y = (x @ rng.normal(size=(4, 3)) + rng.normal(size=(300, 3))).argmax(1)
    weight, bias = fit_logistic(torch.from_numpy(x), torch.from_numpy(y), 3, l2=0.05)
    naive_weight, naive_bias = _naive_fit(x, y, 3, l2=0.05)
    np.testing.assert_allclose(weight.numpy(), naive_weight, atol=1e-6)
    np.testing.assert_allclose(bias.numpy(), naive_bias, atol=1e-6)


def test_accuracy_reaches_the_bayes_rate_of_two_gaussians():
    """Classes N(-e, I) and N(+e, I) in 5 dimensions, e = (1, 0, 0, 0, 0): the best classifier is
    linear, with accuracy Phi(1) = 0.8413; 20 000 validation points put the estimate within
    about 3 SE (0.008) of it. Pixels are uint8 in the task, so any numeric dtype must do."""
    rng = np.random.default_rng(1)

    def draw(n):
        labels = rng.integers(0, 2, n)
        points = rng.normal(size=(n, 5))
        points[:, 0] += 2 * labels - 1
        return torch.from_numpy(points).float(), torch.from_numpy(labels)

    train, val = draw(20000), draw(20000)
    accuracy = logistic_accuracy(*train, *val, classes=2)
    assert abs(accuracy - stats.norm.cdf(1.0)) < 3 * math.sqrt(0.84 * 0.16 / 20000) + 0.002


def test_separable_classes_are_all_right_and_constant_pixels_do_no_harm():
    """Images whose mean brightness tells the class, with a border that is always 0 (SD 0)."""
    rng = np.random.default_rng(2)
    labels = rng.integers(0, 3, 600)
    images = np.zeros((600, 6, 6), dtype=np.uint8)
    images[:, 1:5, 1:5] = (60 * labels + rng.integers(0, 20, 600))[:, None, None]
    images, labels = torch.from_numpy(images), torch.from_numpy(labels)
    assert logistic_accuracy(images[:400], labels[:400], images[400:], labels[400:], classes=3) == 1.0
