r"""scipy's BFGS on diffprivlib's noisy objective, compiled, with scipy's arithmetic.

The diffprivlib peer minimises the noisy least-squares objective
:math:`c_0 - 2 c_1^\top w + w^\top c_2 w` with ``scipy.optimize.minimize(objective, 0,
jac=True)`` (BFGS). The noisy :math:`c_2` is almost never positive definite, so there is
no minimiser: the library's coefficients are where BFGS stops (docs/benchmark.md,
"Reading the peer's errors"), after about 125-240 evaluations of which scipy's Python
(its function wrappers, ``line_search_wolfe1``'s MINPACK ``dcsrch`` and
``line_search_wolfe2``'s zoom) costs most. :func:`minimise_compiled` runs the same
algorithm in one compiled call: scipy 1.17's ``_minimize_bfgs`` (default options: gtol
1e-5, infinity norm, maxiter 200 d, c1 1e-4, c2 0.9, xrtol 0), its Wolfe line search
(``dcsrch``/``dcstep``, then ``scalar_search_wolfe2``/``_zoom``/``_cubicmin``/``_quadmin``)
and the objective of ``peer_diffprivlib._minimise_noisy_objective``, operation by
operation in the same order: numpy's BLAS for every ``np.dot``/``np.matmul``
(:mod:`dpreg.estimators.numpy_blas_kernel`), libm's ``pow`` for every ``**`` of a
scalar, numpy's pairwise summation for ``.sum()``, Python's ``min``/``max`` and
``np.clip``'s tie rules, and scipy's memoisation of the last point (a point equal to the
last one with ``==`` reuses its value and gradient).

Where the replica's arithmetic could part from scipy's it does not guess: if a value in
the line search or an evaluation is not finite, if an interpolation step sees steps
outside :math:`[10^{-50}, 10^{50}]` (where Python floats and numpy scalars would differ in
raising), the kernel returns ``False`` and the caller runs scipy itself. Inside
``_cubicmin`` / ``_quadmin`` (run under ``np.errstate(..., 'raise')`` by scipy) an
intermediate that is not finite means scipy raised and returned None, and so does the
replica. Given the same coefficients the result is scipy's to the bit
(``tests/unit/test_peer_bfgs_kernel.py``: random problems convex and not, the
mechanism's own coefficients with status-2 stops and convex ones; the benchmark's
datasets and jobs in docs/scaling.md).

One module on purpose: numba's on-disk cache checks only the file of the function it
compiled, so a replica split over files could keep a stale compiled callee after an edit.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import numpy as np

from dpreg.estimators.numpy_blas_kernel import (
    COL_MAJOR,
    NO_TRANS,
    ROW_MAJOR,
    TRANS,
    blas_available,
    intrinsics,
)

__all__ = ["SCIPY_REPLICATED", "kernel_available", "minimise_compiled"]

_ALPHA_SAFE = 1e50
"""Interpolation steps must lie in [1/_ALPHA_SAFE, _ALPHA_SAFE] (or be 0) for the replica."""


SCIPY_REPLICATED = (1, 17)
"""The scipy release whose BFGS and line searches the kernel replays (major, minor)."""


@cache
def kernel_available() -> bool:
    """Whether the compiled BFGS can run here.

    Needs scipy 1.17 (:data:`SCIPY_REPLICATED`: another release may change the algorithm),
    numpy's BLAS reachable and giving numpy's bits
    (:func:`~dpreg.estimators.numpy_blas_kernel.blas_available`), and the compiled
    pairwise sum equal to ``ndarray.sum()`` on a few sizes.

    Examples
    --------
    >>> isinstance(kernel_available(), bool)
    True
    """
    import scipy

    if tuple(int(part) for part in scipy.__version__.split(".")[:2]) != SCIPY_REPLICATED:
        return False
    if not blas_available():
        return False
    _kernel()
    rng = np.random.default_rng(20261126)
    for n in (5, 100, 1000, 16641):
        a = rng.normal(size=n) * 10.0 ** rng.uniform(-8, 8, size=n)
        if np.float64(np_sum(a)).tobytes() != np.float64(a.sum()).tobytes():
            return False
    return True


# ---- the replica (plain Python here; compiled by _kernel) --------------------


def pw_block(a, lo, n):
    # numpy's pairwise sum of a[lo:lo+n] for n <= 128 (PW_BLOCKSIZE)
    if n < 8:
        res = 0.0
        for c in range(lo, lo + n):
            res += a[c]
        return res
    r0, r1, r2, r3 = a[lo], a[lo + 1], a[lo + 2], a[lo + 3]
    r4, r5, r6, r7 = a[lo + 4], a[lo + 5], a[lo + 6], a[lo + 7]
    c = 8
    while c < n - (n % 8):
        r0 += a[lo + c]
        r1 += a[lo + c + 1]
        r2 += a[lo + c + 2]
        r3 += a[lo + c + 3]
        r4 += a[lo + c + 4]
        r5 += a[lo + c + 5]
        r6 += a[lo + c + 6]
        r7 += a[lo + c + 7]
        c += 8
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while c < n:
        res += a[lo + c]
        c += 1
    return res


def pw_sum(a, lo, n):
    # numpy's pairwise sum of a[lo:lo+n]: pw(lo, n) = pw(lo, h) + pw(lo + h, n - h) with
    # h = n // 2 cut down to a multiple of 8, blocks of <= 128 summed by pw_block. The
    # recursion runs on an explicit stack (numba's cache mishandles recursive functions).
    if n <= 128:
        return pw_block(a, lo, n)
    f_lo = np.empty(64, np.int64)
    f_n = np.empty(64, np.int64)
    f_state = np.empty(64, np.int64)
    f_left = np.empty(64)
    top = 0
    f_lo[0], f_n[0], f_state[0] = lo, n, 0
    ret = 0.0
    while top >= 0:
        m = f_n[top]
        if m <= 128:
            ret = pw_block(a, f_lo[top], m)
            top -= 1
            continue
        h = m // 2
        h -= h % 8
        if f_state[top] == 0:  # descend left
            f_state[top] = 1
            f_lo[top + 1], f_n[top + 1], f_state[top + 1] = f_lo[top], h, 0
            top += 1
        elif f_state[top] == 1:  # left done: keep it, descend right
            f_left[top] = ret
            f_state[top] = 2
            f_lo[top + 1], f_n[top + 1], f_state[top + 1] = f_lo[top] + h, m - h, 0
            top += 1
        else:  # both done
            ret = f_left[top] + ret
            top -= 1
    return ret


def np_sum(a):
    # ndarray.sum() of a contiguous float64 array: 0.0 + the pairwise sum
    return 0.0 + pw_sum(a, 0, a.shape[0])


def np_dot(x, y):
    # np.dot of two contiguous vectors (length >= 2)
    return 0.0 + ddot(x.shape[0], x, y)


def value_at(c0, c1, c2f, w, work, sq):
    # value = c0; value -= 2 * np.dot(c1, w);
    # value += np.multiply(c2, np.multiply.outer(w, w)).sum(); value += 0 * (w**2).sum()
    d = w.shape[0]
    value = c0 - 2.0 * np_dot(c1, w)
    for i in range(d):
        wi = w[i]
        base = i * d  # (a row index, not a running counter: the loop then vectorises)
        for j in range(d):
            work[base + j] = c2f[base + j] * (wi * w[j])
    value = value + np_sum(work)
    for i in range(d):
        sq[i] = w[i] * w[i]
    return value + 0.0 * np_sum(sq)


def grad_at(c1, c2, w, mv, g):
    # -2 * c1 + 2 * np.matmul(c2, w) + 2 * w * 0
    d = w.shape[0]
    mv[:] = 0.0
    dgemv(COL_MAJOR, TRANS, d, d, c2, d, w, mv)
    for i in range(d):
        g[i] = ((-2.0 * c1[i]) + (2.0 * mv[i])) + ((2.0 * w[i]) * 0.0)


def pymin(a, b):
    return b if b < a else a


def pymax(a, b):
    return b if b > a else a


def np_clip(x, lo, hi):
    r = x if x > lo else lo
    return r if r < hi else hi


def sign(x):
    return 1.0 if x > 0 else (-1.0 if x < 0 else 0.0)


def finite(x):
    return np.isfinite(x)


# -- scipy's memoised function: the last point, its value and (lazily) gradient ----
# st: [has point, value, has gradient, bail-out flag]


def ensure(x, cx, st, c0, c1, c2f, work, sq):
    same = st[0] == 1.0
    if same:
        for i in range(x.shape[0]):
            if not (x[i] == cx[i]):
                same = False
                break
    if not same:
        cx[:] = x
        st[0] = 1.0
        st[1] = value_at(c0, c1, c2f, cx, work, sq)
        st[2] = 0.0
        if not finite(st[1]):
            st[3] = 1.0


def grad_cached(cx, st, cg, c1, c2, mv):
    if st[2] == 0.0:
        grad_at(c1, c2, cx, mv, cg)
        st[2] = 1.0
        for i in range(cg.shape[0]):
            if not finite(cg[i]):
                st[3] = 1.0


# ctx: (c1, c2, c2f, work, sq, mv, cx, cg, st, xt, gval); st[4] holds c0


def phi(ctx, xk, pk, s):
    # f(xk + s pk) through the memoised function
    xt = ctx[9]
    for i in range(xk.shape[0]):
        xt[i] = xk[i] + s * pk[i]
    st = ctx[8]
    ensure(xt, ctx[6], st, st[4], ctx[0], ctx[2], ctx[3], ctx[4])
    return st[1]


def derphi(ctx, xk, pk, s):
    # np.dot(fprime(xk + s pk), pk); the gradient kept as gval[0]
    xt = ctx[9]
    for i in range(xk.shape[0]):
        xt[i] = xk[i] + s * pk[i]
    st = ctx[8]
    ensure(xt, ctx[6], st, st[4], ctx[0], ctx[2], ctx[3], ctx[4])
    grad_cached(ctx[6], st, ctx[7], ctx[0], ctx[1], ctx[5])
    ctx[10][:] = ctx[7]
    return np_dot(ctx[7], pk)


def bad(ctx):
    return ctx[8][3] != 0.0


def bfgs(c0, c1, c2, x_out):  # noqa: C901
    d = c1.shape[0]
    c2f = c2.ravel()
    st = np.zeros(5)
    st[4] = c0
    ctx = (c1, c2, c2f, np.empty(d * d), np.empty(d), np.empty(d), np.empty(d),
           np.empty(d), st, np.empty(d), np.empty(d))  # fmt: skip
    work, sq, mv, cx, cg, gval = ctx[3], ctx[4], ctx[5], ctx[6], ctx[7], ctx[10]
    xk = np.zeros(d)
    ensure(xk, cx, st, c0, c1, c2f, work, sq)
    grad_cached(cx, st, cg, c1, c2, mv)
    if bad(ctx):
        return False
    old_fval = st[1]
    gfk = cg.copy()
    Hk = np.eye(d)
    old_old_fval = old_fval + np.sqrt(np_dot(gfk, gfk)) / 2
    gnorm = np.max(np.abs(gfk))
    k = 0
    maxiter = d * 200
    pk = np.empty(d)
    gfkp1 = np.empty(d)
    while gnorm > 1e-5 and k < maxiter:
        pk[:] = 0.0
        dgemv(ROW_MAJOR, NO_TRANS, d, d, Hk, d, gfk, pk)
        for i in range(d):
            pk[i] = -pk[i]
            if not finite(pk[i]):
                return False
        # ---- line_search_wolfe1 (scalar_search_wolfe1 + DCSRCH), then wolfe2 ------
        derphi0 = np_dot(gfk, pk)
        if not finite(derphi0):
            return False
        phi0 = old_fval
        status, alpha_k, new_fval, have_grad = wolfe1(ctx, xk, pk, phi0, old_old_fval, derphi0)
        if status < 0:
            return False
        found = status == 1
        if not found:
            # ---- line_search_wolfe2: scalar_search_wolfe2 + _zoom -------------
            status, alpha_k, new_fval, have_grad = wolfe2(ctx, xk, pk, phi0, old_old_fval, derphi0)
            if status < 0:
                return False
            if status == 0:
                break  # _LineSearchError: warnflag 2
        new_old_old = phi0
        # ---- BFGS update ---------------------------------------------------------
        sk = alpha_k * pk
        xkp1 = xk + sk
        xk = xkp1
        if have_grad:
            gfkp1[:] = gval
        else:
            ensure(xkp1, cx, st, c0, c1, c2f, work, sq)
            grad_cached(cx, st, cg, c1, c2, mv)
            if bad(ctx):
                return False
            gfkp1[:] = cg
        old_fval = new_fval
        old_old_fval = new_old_old
        yk = gfkp1 - gfk
        gfk = gfkp1.copy()
        k += 1
        gnorm = np.max(np.abs(gfk))
        if gnorm <= 1e-5:
            break
        for i in range(d):
            sq[i] = abs(pk[i]) * abs(pk[i])
        vn_p = libm_pow(np_sum(sq), 0.5)
        for i in range(d):
            sq[i] = abs(xk[i]) * abs(xk[i])
        vn_x = libm_pow(np_sum(sq), 0.5)
        if not (finite(vn_p) and finite(vn_x)):
            return False
        if alpha_k * vn_p <= 0.0 * (0.0 + vn_x):
            break
        if not finite(old_fval):
            return False
        rhok_inv = np_dot(yk, sk)
        if rhok_inv == 0.0:
            rhok = 1000.0
        else:
            rhok = 1.0 / rhok_inv
        if not finite(rhok):
            return False
        A1 = np.empty((d, d))
        A2 = np.empty((d, d))
        for i in range(d):
            for j in range(d):
                eye = 1.0 if i == j else 0.0
                A1[i, j] = eye - (sk[i] * yk[j]) * rhok
                A2[i, j] = eye - (yk[i] * sk[j]) * rhok
        T = np.zeros((d, d))
        dgemm(d, Hk, A2, T)
        U = np.zeros((d, d))
        dgemm(d, A1, T, U)
        for i in range(d):
            for j in range(d):
                U[i, j] = U[i, j] + (rhok * sk[i]) * sk[j]
        Hk = U
    x_out[:] = xk
    return True


def wolfe1(ctx, xk, pk, phi0, old_phi0, derphi0):  # noqa: C901
    # scipy's line_search_wolfe1: scalar_search_wolfe1's first step, then MINPACK's
    # DCSRCH (ftol 1e-4, gtol 0.9, xtol 1e-14, steps in [1e-100, 1e100], 100 iterations).
    # Returns (status, alpha, phi(alpha), True): status 1 found, 0 failed (scipy then
    # tries wolfe2), -1 outside the replica.
    c1_ls, c2_ls = 1e-4, 0.9
    old_old_fval = old_phi0
    if derphi0 != 0:
        alpha1 = pymin(1.0, 1.01 * 2 * (phi0 - old_old_fval) / derphi0)
        if alpha1 < 0:
            alpha1 = 1.0
    else:
        alpha1 = 1.0
    if not finite(alpha1):
        return -1, 0.0, 0.0, False
    found = False
    alpha_k = 0.0
    new_fval = 0.0
    stp = alpha1
    ftol, gtol, xtol, stpmin, stpmax = c1_ls, c2_ls, 1e-14, 1e-100, 1e100
    if not (stp < stpmin or stp > stpmax or derphi0 >= 0):
        brackt = False
        stage = 1
        finit = phi0
        ginit = derphi0
        gtest = ftol * ginit
        width = stpmax - stpmin
        width1 = width / 0.5
        stx, fx, gx = 0.0, finit, ginit
        sty, fy, gy = 0.0, finit, ginit
        stmin = 0.0
        stmax = stp + 4.0 * stp
        if not finite(stmax):
            return -1, 0.0, 0.0, False
        f = phi(ctx, xk, pk, stp)
        g = derphi(ctx, xk, pk, stp)
        if bad(ctx) or not finite(g):
            return -1, 0.0, 0.0, False
        it = 1
        while True:
            # DCSRCH._iterate at (stp, f, g)
            ftest = finit + stp * gtest
            if not finite(ftest):
                return -1, 0.0, 0.0, False
            if stage == 1 and f <= ftest and g >= 0:
                stage = 2
            warn = False
            if brackt and (stp <= stmin or stp >= stmax):
                warn = True
            if brackt and stmax - stmin <= xtol * stmax:
                warn = True
            if stp == stpmax and f <= ftest and g <= gtest:
                warn = True
            if stp == stpmin and (f > ftest or g >= gtest):
                warn = True
            if f <= ftest and abs(g) <= gtol * -ginit:
                found = True
                alpha_k = stp
                new_fval = f
                break
            if warn:
                break
            if stage == 1 and f <= fx and f > ftest:
                fm = f - stp * gtest
                fxm = fx - stx * gtest
                fym = fy - sty * gtest
                gm = g - gtest
                gxm = gx - gtest
                gym = gy - gtest
                ok, stx, fxm, gxm, sty, fym, gym, stp, brackt = dcstep(
                    stx, fxm, gxm, sty, fym, gym, stp, fm, gm, brackt, stmin, stmax
                )
                fx = fxm + stx * gtest
                fy = fym + sty * gtest
                gx = gxm + gtest
                gy = gym + gtest
            else:
                ok, stx, fx, gx, sty, fy, gy, stp, brackt = dcstep(
                    stx, fx, gx, sty, fy, gy, stp, f, g, brackt, stmin, stmax
                )
            if not ok:
                return -1, 0.0, 0.0, False
            if brackt:
                if abs(sty - stx) >= 0.66 * width1:
                    stp = stx + 0.5 * (sty - stx)
                width1 = width
                width = abs(sty - stx)
            if brackt:
                stmin = pymin(stx, sty)
                stmax = pymax(stx, sty)
            else:
                stmin = stp + 1.1 * (stp - stx)
                stmax = stp + 4.0 * (stp - stx)
            stp = np_clip(stp, stpmin, stpmax)
            if (brackt and (stp <= stmin or stp >= stmax)) or (
                brackt and stmax - stmin <= xtol * stmax
            ):
                stp = stx
            for v in (fx, gx, fy, gy, stx, sty, stmin, stmax, width, width1):
                if not finite(v):
                    return -1, 0.0, 0.0, False
            if not finite(stp):
                return -1, 0.0, 0.0, False  # scipy: a WARN; kept out of the replica
            f = phi(ctx, xk, pk, stp)
            g = derphi(ctx, xk, pk, stp)
            if bad(ctx) or not finite(g):
                return -1, 0.0, 0.0, False
            it += 1
            if it >= 100:
                break  # dcsrch did not converge within 100 iterations
    if found:
        return 1, alpha_k, new_fval, True
    return 0, 0.0, 0.0, False


def dcstep(stx, fx, dx, sty, fy, dy, stp, fp, dp, brackt, stpmin, stpmax):  # noqa: C901
    # scipy's dcstep; ok=False if an intermediate is not finite (never seen on the
    # benchmark's problems: scipy would warn or carry NaN/inf, left to scipy)
    sgnd = sign(dp) * sign(dx)
    ok = True
    if fp > fx:
        theta = 3.0 * (fx - fp) / (stp - stx) + dx + dp
        s = max3(abs(theta), abs(dx), abs(dp))
        gamma = s * np.sqrt(libm_pow(theta / s, 2.0) - (dx / s) * (dp / s))
        if stp < stx:
            gamma = gamma * -1
        p = (gamma - dx) + theta
        q = ((gamma - dx) + gamma) + dp
        r = p / q
        stpc = stx + r * (stp - stx)
        stpq = stx + ((dx / ((fx - fp) / (stp - stx) + dx)) / 2.0) * (stp - stx)
        ok = all_finite6(theta, s, gamma, r, stpc, stpq)
        if abs(stpc - stx) <= abs(stpq - stx):
            stpf = stpc
        else:
            stpf = stpc + (stpq - stpc) / 2.0
        brackt = True
    elif sgnd < 0.0:
        theta = 3 * (fx - fp) / (stp - stx) + dx + dp
        s = max3(abs(theta), abs(dx), abs(dp))
        gamma = s * np.sqrt(libm_pow(theta / s, 2.0) - (dx / s) * (dp / s))
        if stp > stx:
            gamma = gamma * -1
        p = (gamma - dp) + theta
        q = ((gamma - dp) + gamma) + dx
        r = p / q
        stpc = stp + r * (stx - stp)
        stpq = stp + (dp / (dp - dx)) * (stx - stp)
        ok = all_finite6(theta, s, gamma, r, stpc, stpq)
        if abs(stpc - stp) > abs(stpq - stp):
            stpf = stpc
        else:
            stpf = stpq
        brackt = True
    elif abs(dp) < abs(dx):
        theta = 3 * (fx - fp) / (stp - stx) + dx + dp
        s = max3(abs(theta), abs(dx), abs(dp))
        gamma = s * np.sqrt(pymax(0.0, libm_pow(theta / s, 2.0) - (dx / s) * (dp / s)))
        if stp > stx:
            gamma = -gamma
        p = (gamma - dp) + theta
        q = (gamma + (dx - dp)) + gamma
        r = p / q
        if r < 0 and gamma != 0:
            stpc = stp + r * (stx - stp)
        elif stp > stx:
            stpc = stpmax
        else:
            stpc = stpmin
        stpq = stp + (dp / (dp - dx)) * (stx - stp)
        ok = all_finite6(theta, s, gamma, r, stpc, stpq)
        if brackt:
            if abs(stpc - stp) < abs(stpq - stp):
                stpf = stpc
            else:
                stpf = stpq
            if stp > stx:
                stpf = pymin(stp + 0.66 * (sty - stp), stpf)
            else:
                stpf = pymax(stp + 0.66 * (sty - stp), stpf)
        else:
            if abs(stpc - stp) > abs(stpq - stp):
                stpf = stpc
            else:
                stpf = stpq
            stpf = np_clip(stpf, stpmin, stpmax)
    else:
        if brackt:
            theta = 3.0 * (fp - fy) / (sty - stp) + dy + dp
            s = max3(abs(theta), abs(dy), abs(dp))
            gamma = s * np.sqrt(libm_pow(theta / s, 2.0) - (dy / s) * (dp / s))
            if stp > sty:
                gamma = -gamma
            p = (gamma - dp) + theta
            q = ((gamma - dp) + gamma) + dy
            r = p / q
            stpc = stp + r * (sty - stp)
            stpf = stpc
            ok = all_finite6(theta, s, gamma, r, stpc, stpc)
        elif stp > stx:
            stpf = stpmax
        else:
            stpf = stpmin
    if fp > fx:
        sty = stp
        fy = fp
        dy = dp
    else:
        if sgnd < 0:
            sty = stx
            fy = fx
            dy = dx
        stx = stp
        fx = fp
        dx = dp
    stp = stpf
    ok = ok and finite(stp)
    return ok, stx, fx, dx, sty, fy, dy, stp, brackt


def max3(a, b, c):
    m = a
    if b > m:
        m = b
    if c > m:
        m = c
    return m


def all_finite6(a, b, c, d, e, f):
    return finite(a) and finite(b) and finite(c) and finite(d) and finite(e) and finite(f)


def safe_alpha(x):
    ax = abs(x)
    return ax == 0.0 or (1.0 / _ALPHA_SAFE < ax < _ALPHA_SAFE)


def cubicmin(a, fa, fpa, b, fb, c, fc, d1, v, AB):
    # scipy's _cubicmin under errstate(raise): (status, xmin); status 1 = value,
    # 0 = None (scipy raised or xmin not finite), -1 = outside the replica
    C = fpa
    db = b - a
    dc = c - a
    if not (safe_alpha(a) and safe_alpha(b) and safe_alpha(c)):
        return -1, 0.0
    if not (safe_alpha(db) and safe_alpha(dc)):
        return -1, 0.0
    denom = libm_pow(db * dc, 2.0) * (db - dc)
    d1[0, 0] = libm_pow(dc, 2.0)
    d1[0, 1] = -libm_pow(db, 2.0)
    d1[1, 0] = -libm_pow(dc, 3.0)
    d1[1, 1] = libm_pow(db, 3.0)
    t0 = C * db
    u0 = fb - fa
    v[0] = u0 - t0
    t1 = C * dc
    u1 = fc - fa
    v[1] = u1 - t1
    if not (finite(t0) and finite(u0) and finite(v[0])):
        return 0, 0.0
    if not (finite(t1) and finite(u1) and finite(v[1])):
        return 0, 0.0
    AB[:] = 0.0
    dgemv(ROW_MAJOR, NO_TRANS, 2, 2, d1, 2, v, AB)
    A = AB[0]
    B = AB[1]
    if not (finite(A) and finite(B)):
        return -1, 0.0
    A = A / denom
    if not finite(A):
        return 0, 0.0
    B = B / denom
    if not finite(B):
        return 0, 0.0
    BB = B * B
    A3 = 3 * A
    A3C = A3 * C
    radical = BB - A3C
    if not (finite(BB) and finite(A3C) and finite(radical)) or radical < 0:
        return 0, 0.0
    root = np.sqrt(radical)
    num = -B + root
    quot = num / A3
    xmin = a + quot
    if not (finite(num) and finite(quot) and finite(xmin)):
        return 0, 0.0
    return 1, xmin


def quadmin(a, fa, fpa, b, fb):
    # scipy's _quadmin under errstate(raise); statuses as cubicmin's
    D = fa
    C = fpa
    if not (safe_alpha(a) and safe_alpha(b)):
        return -1, 0.0
    db = b - a * 1.0
    if not safe_alpha(db):
        return -1, 0.0
    u = fb - D
    t = C * db
    num = u - t
    dd = db * db
    B = num / dd
    B2 = 2.0 * B
    quot = C / B2
    xmin = a - quot
    for val in (u, t, num, dd, B, B2, quot, xmin):
        if not finite(val):
            return 0, 0.0
    return 1, xmin


def wolfe2(ctx, xk, pk, phi0, old_phi0, derphi0):  # noqa: C901
    # scipy's scalar_search_wolfe2 (amax 1e100, maxiter 10) with _zoom.
    # Returns (status, alpha, phi, have_grad): status 1 found, 0 failed (None),
    # -1 outside the replica.
    c1_ls, c2_ls, amax = 1e-4, 0.9, 1e100
    d1 = np.empty((2, 2))
    v = np.empty(2)
    AB = np.empty(2)
    alpha0 = 0.0
    if derphi0 != 0:
        alpha1 = pymin(1.0, 1.01 * 2 * (phi0 - old_phi0) / derphi0)
    else:
        alpha1 = 1.0
    if alpha1 < 0:
        alpha1 = 1.0
    alpha1 = pymin(alpha1, amax)
    if not finite(alpha1):
        return -1, 0.0, 0.0, False
    phi_a1 = phi(ctx, xk, pk, alpha1)
    if bad(ctx):
        return -1, 0.0, 0.0, False
    phi_a0 = phi0
    derphi_a0 = derphi0
    zoom_lo = 0.0
    zoom_hi = 0.0
    zphi_lo = 0.0
    zphi_hi = 0.0
    zder_lo = 0.0
    do_zoom = False
    for i in range(10):
        if alpha1 == 0 or alpha0 > amax:
            return 0, 0.0, 0.0, False
        if (phi_a1 > phi0 + c1_ls * alpha1 * derphi0) or ((phi_a1 >= phi_a0) and i > 0):
            zoom_lo, zoom_hi, zphi_lo, zphi_hi, zder_lo = alpha0, alpha1, phi_a0, phi_a1, derphi_a0
            do_zoom = True
            break
        derphi_a1 = derphi(ctx, xk, pk, alpha1)
        if bad(ctx) or not finite(derphi_a1):
            return -1, 0.0, 0.0, False
        if abs(derphi_a1) <= -c2_ls * derphi0:
            return 1, alpha1, phi_a1, True
        if derphi_a1 >= 0:
            zoom_lo, zoom_hi, zphi_lo, zphi_hi, zder_lo = alpha1, alpha0, phi_a1, phi_a0, derphi_a1
            do_zoom = True
            break
        alpha2 = 2 * alpha1
        alpha2 = pymin(alpha2, amax)
        alpha0 = alpha1
        alpha1 = alpha2
        phi_a0 = phi_a1
        phi_a1 = phi(ctx, xk, pk, alpha1)
        if bad(ctx):
            return -1, 0.0, 0.0, False
        derphi_a0 = derphi_a1
    if not do_zoom:
        # maxiter reached: alpha1 returned without a gradient
        return 1, alpha1, phi_a1, False
    # ---- _zoom ---------------------------------------------------------------
    a_lo, a_hi, phi_lo, phi_hi, derphi_lo = zoom_lo, zoom_hi, zphi_lo, zphi_hi, zder_lo
    delta1, delta2 = 0.2, 0.1
    phi_rec = phi0
    a_rec = 0.0
    j = 0
    cchk = 0.0
    while True:
        dalpha = a_hi - a_lo
        if dalpha < 0:
            a, b = a_hi, a_lo
        else:
            a, b = a_lo, a_hi
        use_cubic = False
        a_j = 0.0
        if j > 0:
            cchk = delta1 * dalpha
            status, a_j = cubicmin(a_lo, phi_lo, derphi_lo, a_hi, phi_hi, a_rec, phi_rec,
                                   d1, v, AB)  # fmt: skip
            if status < 0:
                return -1, 0.0, 0.0, False
            use_cubic = status == 1 and not (a_j > b - cchk or a_j < a + cchk)
        if not use_cubic:
            qchk = delta2 * dalpha
            status, a_j = quadmin(a_lo, phi_lo, derphi_lo, a_hi, phi_hi)
            if status < 0:
                return -1, 0.0, 0.0, False
            if status == 0 or (a_j > b - qchk) or (a_j < a + qchk):
                a_j = a_lo + 0.5 * dalpha
        if not finite(a_j):
            return -1, 0.0, 0.0, False
        phi_aj = phi(ctx, xk, pk, a_j)
        if bad(ctx):
            return -1, 0.0, 0.0, False
        if (phi_aj > phi0 + c1_ls * a_j * derphi0) or (phi_aj >= phi_lo):
            phi_rec = phi_hi
            a_rec = a_hi
            a_hi = a_j
            phi_hi = phi_aj
        else:
            derphi_aj = derphi(ctx, xk, pk, a_j)
            if bad(ctx) or not finite(derphi_aj):
                return -1, 0.0, 0.0, False
            if abs(derphi_aj) <= -c2_ls * derphi0:
                return 1, a_j, phi_aj, True
            if derphi_aj * (a_hi - a_lo) >= 0:
                phi_rec = phi_hi
                a_rec = a_hi
                a_hi = a_lo
                phi_hi = phi_lo
            else:
                phi_rec = phi_lo
                a_rec = a_lo
            a_lo = a_j
            phi_lo = phi_aj
            derphi_lo = derphi_aj
        j += 1
        if j > 10:
            return 0, 0.0, 0.0, False


_JITTED = (
    "pw_block", "pw_sum", "np_sum", "np_dot", "value_at", "grad_at", "pymin", "pymax",
    "np_clip", "sign", "finite", "ensure", "grad_cached", "phi", "derphi", "bad", "bfgs",
    "wolfe1", "dcstep", "max3", "all_finite6", "safe_alpha", "cubicmin", "quadmin", "wolfe2",
)  # fmt: skip
"""The module's functions compiled by :func:`_kernel`, in order (module globals rebound)."""

ddot = dgemv = dgemm = libm_pow = None  # numpy's BLAS and libm's pow, bound by _kernel()


@cache
def _kernel() -> Any:
    """Compile (or load from numba's cache) the BFGS replica.

    The functions above are plain module-level Python; here each module global is
    rebound to its numba compilation, so the compiled functions call each other (and
    the intrinsics of :mod:`dpreg.estimators.numpy_blas_kernel`) as globals: no
    closures, whose contents numba would hash into its cache key (numba dispatchers and
    intrinsics pickle with a per-process id, so a closure over them is never found in
    the cache).
    """
    import numba

    ops = intrinsics()
    module = globals()
    module["ddot"], module["dgemv"] = ops.ddot, ops.dgemv
    module["dgemm"], module["libm_pow"] = ops.dgemm_square, ops.libm_pow
    jit = numba.njit(cache=True, nogil=True, error_model="numpy")
    for name in _JITTED:
        module[name] = jit(module[name])
    return module["bfgs"]


def minimise_compiled(c0: float, c1: np.ndarray, c2: np.ndarray) -> np.ndarray | None:
    r"""Run scipy's BFGS from 0 on :math:`c_0 - 2 c_1^\top w + w^\top c_2 w`, compiled.

    Returns the point ``scipy.optimize.minimize(objective, np.zeros(d), jac=True).x`` of
    ``peer_diffprivlib._minimise_noisy_objective`` bit for bit, or None where the
    replica does not claim scipy's bits (module docstring; the caller then runs scipy):
    also for d < 2 (numpy treats length-1 vectors as scalars), for operands that are
    not contiguous float64, and where numpy's BLAS is not reachable.

    Examples
    --------
    >>> import numpy as np
    >>> c2 = np.array([[2.0, 0.5], [0.5, 1.0]])
    >>> w = minimise_compiled(1.0, np.array([1.0, -1.0]), c2)
    >>> w is None or bool(np.allclose(w, np.linalg.solve(c2, [1.0, -1.0]), atol=1e-5))
    True
    """
    d = np.shape(c1)[0] if np.ndim(c1) == 1 else 0
    if d < 2 or not kernel_available():
        return None
    if not (
        isinstance(c1, np.ndarray)
        and isinstance(c2, np.ndarray)
        and c1.dtype == np.float64
        and c2.dtype == np.float64
        and c1.flags.c_contiguous
        and c2.flags.c_contiguous
        and c2.shape == (d, d)
    ):
        return None
    out = np.empty(d)
    if not _kernel()(float(c0), c1, c2, out):
        return None
    return out
