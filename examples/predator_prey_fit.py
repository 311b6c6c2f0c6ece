"""Fitting the four rates of a predator-prey model to noisy counts, with scipy's L-BFGS-B and astgrad's gradient.

The Lotka-Volterra equations

    d prey / dt     = alpha * prey - beta * prey * predators
    d predators / dt = delta * prey * predators - gamma * predators

are integrated by a fixed-step fourth-order Runge-Kutta method written in
plain numpy.  The loss compares the simulated counts with observations (in
logs: the noise is multiplicative), and ``astgrad.grad(loss)`` is the
derivative of that whole simulation, loop included, handed to
``scipy.optimize.minimize(..., jac=...)``.  The rates are fitted in logs,
which keeps them positive.  Before fitting, the gradient is checked once
against central differences (``astgrad.check_grads``).

    python examples/predator_prey_fit.py
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import minimize

import astgrad

STEP = 0.1  # time step of the integrator
STEPS = 150  # 15 time units: about two cycles
EVERY = 5  # an observation every EVERY steps
START = np.array([10.0, 5.0])  # prey and predators at t = 0
TRUE_RATES = np.array([1.0, 0.1, 0.075, 1.5])  # alpha, beta, delta, gamma


def predator_prey(y, rates):
    """The time derivative of (prey, predators)."""
    prey, predators = y[0], y[1]
    alpha, beta, delta, gamma = rates[0], rates[1], rates[2], rates[3]
    return np.array([alpha * prey - beta * prey * predators, delta * prey * predators - gamma * predators])


def rk4_step(y, rates, h):
    k1 = predator_prey(y, rates)
    k2 = predator_prey(y + h / 2 * k1, rates)
    k3 = predator_prey(y + h / 2 * k2, rates)
    k4 = predator_prey(y + h * k3, rates)
    return y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)


def simulate(rates, y0, steps):
    """The state at every step, one row per step (``steps + 1`` rows)."""
    y = y0
    path = [y0]
    for _ in range(steps):
        y = rk4_step(y, rates, STEP)
        path.append(y)
    return np.stack(path)


def loss(log_rates, observed):
    """The mean squared difference of log counts at the observed steps."""
    path = simulate(np.exp(log_rates), START, STEPS)
    return np.mean((np.log(path[::EVERY]) - np.log(observed)) ** 2)


def main():
    rng = np.random.default_rng(0)
    truth = simulate(TRUE_RATES, START, STEPS)[::EVERY]
    observed = truth * np.exp(0.05 * rng.standard_normal(truth.shape))  # 5% multiplicative noise

    gradient = astgrad.grad(loss)
    guess = np.log(TRUE_RATES * np.array([1.2, 1.2, 0.8, 0.8]))  # each rate 20% off
    report = astgrad.check_grads(loss, guess, observed, modes=("generated", "numeric"))  # raises if they disagree
    (argument, methods, _, relative, _, _), = report.rows
    print(f"gradient check at the first guess ({methods}): largest relative difference {relative:.1e}")

    result = minimize(loss, guess, args=(observed,), jac=gradient, method="L-BFGS-B")
    fitted = np.exp(result.x)
    print(f"L-BFGS-B: {result.nit} iterations, {result.nfev} evaluations, loss {result.fun:.5f}")
    print("           alpha    beta    delta   gamma")
    print("true     " + "".join(f"{r:8.4f}" for r in TRUE_RATES))
    print("guess    " + "".join(f"{r:8.4f}" for r in np.exp(guess)))
    print("fitted   " + "".join(f"{r:8.4f}" for r in fitted))


if __name__ == "__main__":
    main()
