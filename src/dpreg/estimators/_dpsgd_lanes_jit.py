"""DP-SGD lanes' residual clipping with the lanes innermost (numba, cached on disk).

Imported on first use only (numba's import costs about 0.4 s of CPU). The compiled pass of
:func:`dpreg.estimators.dpsgd_poisson.dp_sgd_poisson_stream_runs` (Abadi et al. 2016's
per-example clip, one lane per grid point of the Varshney et al. (2022) study,
docs/varshney2022.md). The reference, ``dpsgd_poisson._clip_kernel``, counts each clipped
entry with a branch inside the loop over lanes, which keeps the loop scalar and
mispredicts on lanes whose clip binds about half the time. Here the counts go to an
integer array and are added once per call, so LLVM's loop vectoriser runs the lanes in
SIMD registers; each entry is the same IEEE operations in the same order (no fast-math,
no fused multiply-add), and the float counts are sums of whole numbers far below
:math:`2^{53}` (exact either way): the same bits (``tests/unit/test_dpsgd_poisson_kernel.py``).

``error_model="numpy"`` (as :mod:`dpreg.estimators._ambssgd_clip_jit`): under numba's
default ("python") every division tests its divisor for zero and may raise, a branch that
kept this loop scalar (on this host 88 us a call at 1,011 rows x 64 lanes, 23 us without
it; issue 18, session 24). The quotient is ``clip_r / max(g, clip_r)``, whose divisor is
at least ``clip_r``, so the test never fires for a positive clip and the values are the
same; a zero divisor (clip 0 on a zero gradient) now gives the numpy reference's NaN
instead of ``ZeroDivisionError``.
"""

import numba


@numba.njit(cache=True, nogil=True, error_model="numpy")
def clip_lanes_simd(Rm, base, noise, sig, xnorm, clip, clipped, noisy, count):  # pragma: no cover
    # In place, row m and lane r: Rm = <x_m, w_r> - y_mr, y_mr = base_m + noise_m sig_r,
    # times clip_r / max(|Rm| ||x_m||, clip_r); clipped_r += #{m: |Rm| ||x_m|| > clip_r}.
    # count (R,) int64 is scratch.
    M, R = Rm.shape
    for r in range(R):
        count[r] = 0
    if noisy:
        for m in range(M):
            b = base[m]
            e = noise[m]
            xn = xnorm[m]
            row = Rm[m]
            for r in range(R):
                v = row[r] - (b + e * sig[r])
                g = abs(v) * xn
                c = clip[r]
                count[r] += g > c
                row[r] = v * (c / max(g, c))
    else:
        for m in range(M):
            b = base[m]
            xn = xnorm[m]
            row = Rm[m]
            for r in range(R):
                v = row[r] - b
                g = abs(v) * xn
                c = clip[r]
                count[r] += g > c
                row[r] = v * (c / max(g, c))
    for r in range(R):
        clipped[r] += count[r]
