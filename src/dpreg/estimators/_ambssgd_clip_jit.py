r"""DP-AMBSSGD's residual clipping with the runs innermost in SIMD registers (numba, cached).

Imported on first use only. The compiled pass of
:func:`dpreg.estimators.ambssgd_kernel.clip_residuals` (Algorithm 2 of Varshney, Thakurta &
Jain 2022: the per-example clip :math:`\min\{1, \zeta/\|g_i\|\}` of a batch chunk). The
reference, ``ambssgd_kernel._clip_kernel``, counts and scales each clipped entry in a
branch, which keeps the loop over runs scalar and mispredicts wherever a run's clip binds
on some rows and not on others. Here each entry computes the factor :math:`\zeta_r / g`
unconditionally (``error_model="numpy"``: a zero g gives inf or NaN, never selected), keeps
it by a select, and the counts go to an integer scratch array added once per replicate, so
LLVM's loop vectoriser runs the runs in SIMD registers. Each kept value is the same IEEE
operations in the same order (no fast-math, no fused multiply-add) and the float counts
are sums of whole numbers far below :math:`2^{53}`: the same bits
(``tests/unit/test_ambssgd_clip_residuals.py``).
"""

import numba


@numba.njit(cache=True, nogil=True, error_model="numpy")
def clip_simd(Rm, base, z, sig, norms, zeta, clipped, has_z, count):  # pragma: no cover
    # In place, replicate a, row i, run r: v = (Rm - base) - z sig_r (z only if has_z),
    # g = |v| ||x||; where g > zeta: count it and v *= zeta / g. count (R,) int64 scratch.
    D, k, R = Rm.shape
    for a in range(D):
        for r in range(R):
            count[r] = 0
        za = zeta[a]
        for i in range(k):
            b = base[a, i]
            zi = z[a, i]
            nm = norms[a, i]
            row = Rm[a, i]
            if has_z:
                for r in range(R):
                    v = (row[r] - b) - zi * sig[r]
                    g = abs(v) * nm
                    over = g > za[r]
                    count[r] += over
                    s = za[r] / g
                    row[r] = v * s if over else v
            else:
                for r in range(R):
                    v = row[r] - b
                    g = abs(v) * nm
                    over = g > za[r]
                    count[r] += over
                    s = za[r] / g
                    row[r] = v * s if over else v
        for r in range(R):
            clipped[a, r] += count[r]
