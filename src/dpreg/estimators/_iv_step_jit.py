r"""The bookkeeping of one step of the tiled DP-2S-GD recursion, compiled (issue 18; numba).

Imported only where :class:`dpreg.estimators.iv_batched.BatchedIVGradients` runs its
tiled kernel (numba is loaded then). Each step of :func:`dpreg.estimators.iv._iterate`
on batched data (Liang et al. 2025, Algorithms 1 and 3, lines 5-7) laid the iterates out
in tiles of lanes for the kernel, took the sums back out, divided them by ``n`` and
updated :math:`\Theta` and :math:`\beta` with the step's noise: about forty numpy calls
of a few microseconds each per step on (100, 5, 5) arrays, 15-20 % of a step of Fig. 6.
:func:`pack` and :func:`unpack` move the same values (copies, no arithmetic; the
padding lanes zero, as ``_to_tiles`` pads them) and :func:`update` performs the
reference's IEEE operations on every entry in its order,

.. math::

    \Theta_{t+1} = \Theta_t - \eta\,(G_1 / n) + (\xi\lambda_1)\,\eta,\qquad
    \beta_{t+1} = \beta_t - \alpha\,(G_2 / n) + (\nu\lambda_2)\,\alpha,

without fast-math flags (no fused multiply-add, reciprocal or reassociation), so the
iterates and clip fractions are the reference's bit for bit
(``tests/unit/test_iv_fused_steps.py``). The products :math:`v = \Theta\beta` and
:math:`G_2 = \Theta^\top S_2` stay numpy's batched matmuls (BLAS fixes their bits).

One file with module-level kernels, so numba's on-disk cache checks its source.
"""

import numba


@numba.njit(cache=True, nogil=True)
def pack(Theta, v, S):  # pragma: no cover - compiled; tested against numpy
    """Lay ``Theta`` (trials, q, p) and ``v`` (trials, q) out as the kernel's ``S``.

    ``S`` (tiles, q p + q, lanes): column ``c`` of trial ``k * lanes + l`` at
    ``S[k, c, l]`` (``Theta`` row-major, then ``v``); lanes past the last trial zero.
    """
    trials, q, p = Theta.shape
    tiles, _, lanes = S.shape
    for k in range(tiles):
        for lane in range(lanes):
            trial = k * lanes + lane
            if trial < trials:
                for m in range(q):
                    for j in range(p):
                        S[k, m * p + j, lane] = Theta[trial, m, j]
                for m in range(q):
                    S[k, q * p + m, lane] = v[trial, m]
            else:
                for c in range(q * p + q):
                    S[k, c, lane] = 0.0


@numba.njit(cache=True, nogil=True)
def unpack(Out, G1, S2, frac_theta, frac_beta, t, n, do1, do2):  # pragma: no cover - compiled
    """Take the kernel's sums out of ``Out`` and zero it for the next step.

    ``G1`` (trials, q, p) if ``do1``, ``S2`` (trials, q) if ``do2``; the clip fractions
    ``frac_theta[:, t]`` and ``frac_beta[:, t]`` are the counts divided by ``n`` (the
    counts are exact integers in float64, so the reference's ``int64`` cast is exact).
    """
    trials, q, p = G1.shape
    tiles, _, lanes = Out.shape
    qp = q * p
    for k in range(tiles):
        for lane in range(lanes):
            trial = k * lanes + lane
            if trial < trials:
                if do1:
                    for m in range(q):
                        for j in range(p):
                            G1[trial, m, j] = Out[k, m * p + j, lane]
                if do2:
                    for m in range(q):
                        S2[trial, m] = Out[k, qp + m, lane]
                frac_theta[trial, t] = Out[k, qp + q, lane] / n
                frac_beta[trial, t] = Out[k, qp + q + 1, lane] / n
        for c in range(Out.shape[1]):
            for lane in range(lanes):
                Out[k, c, lane] = 0.0


@numba.njit(cache=True, nogil=True)
def update(
    Theta, beta, G1, G2, n, step_theta, step_beta, xi, lambda1, nu, lambda2, Theta_next, beta_next
):  # pragma: no cover - compiled; tested against numpy
    """One step of the recursion into ``Theta_next`` and ``beta_next``.

    ``Theta - step_theta * (G1 / n)``, then ``+ (xi * lambda1) * step_theta`` if ``xi``
    has entries (``lambda1 > 0``); likewise ``beta`` with ``G2``, ``nu``, ``lambda2`` and
    ``step_beta``: the reference's operations per entry, in its order.
    """
    trials, q, p = Theta.shape
    noise1 = xi.size > 0
    noise2 = nu.size > 0
    for k in range(trials):
        for m in range(q):
            for j in range(p):
                x = Theta[k, m, j] - step_theta * (G1[k, m, j] / n)
                if noise1:
                    x = x + (xi[k, m, j] * lambda1) * step_theta
                Theta_next[k, m, j] = x
        for j in range(p):
            x = beta[k, j] - step_beta * (G2[k, j] / n)
            if noise2:
                x = x + (nu[k, j] * lambda2) * step_beta
            beta_next[k, j] = x
