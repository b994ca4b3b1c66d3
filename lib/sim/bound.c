/* The fragmentation lower bound (see bound.h): enumerate the patterns, solve
 * the LP with a revised primal simplex, and turn its duals into an exact
 * dual-feasible point whose objective bounds every policy's allocation. */
#include "sim/bound.h"

#include <math.h>
#include <string.h>

#include "base/alloc.h"
#include "engine/engine.h"

#define DEV FAIR_GPU_DEVICE_MILLI /* milli-GPU per device (engine/engine.h) */
/* Duals are rounded up to multiples of 1/SCALE milli-GPU, so that the dual
 * objective is computed exactly in 64-bit integers (see the limits in
 * fair_sim_frag_bound_hist(): every product stays below 2^58). */
#define SCALE 65536
#define EPS_COST 1e-7  /* a reduced cost above this improves */
#define EPS_PIVOT 1e-9 /* smallest pivot element the ratio test accepts */
#define REFACTOR 64    /* pivots between recomputations of B^-1 */
#define DEGENERATE 50  /* degenerate pivots in a row before Bland's rule */
/* The objective's reward for each pod of the must rows that is placed
 * (bound.h): more than a device is worth, so the LP places them all when
 * it can; any value gives a valid bound. */
#define MUST_BONUS (2 * DEV)
#define MAX_ROWS (3 * DEV + 2) /* k + 2 + 2k + 2 rows, k <= 999 sizes */

/* The LP in column form. Rows: 0 = devices, 1..k = fraction sizes, k+1 =
 * whole GPUs, then the must rows (bound.h): for each size i with pods that
 * must be placed a link row link[i] (z_i - placed_i <= 0) and a cap row
 * link[i] + 1 (z_i <= must_i), and the same pair for whole GPUs
 * (link_whole). The columns below ndev (the patterns, then W) have a 1 in
 * row 0, which is left implicit; the z columns after them do not. Other
 * entries are ent_row/ent_cnt[start[j] .. start[j+1]). */
struct lp {
    size_t k, m;   /* fraction sizes; rows = k + 2 + the must rows */
    size_t ncols;  /* structural columns: the patterns, W, then the z columns */
    size_t ndev;   /* columns with the implicit 1 in row 0 */
    size_t *start; /* ncols + 1 */
    int32_t *value;
    uint16_t *ent_row;
    int32_t *ent_cnt;
    size_t nent;
    size_t cap_start, cap_value, cap_row, cap_cnt;
    int64_t size[DEV];   /* fraction sizes, decreasing */
    int64_t count[DEV];  /* their arrivals */
    int64_t must[DEV];   /* of which must be placed */
    uint16_t link[DEV];  /* link row of size i; 0: none */
    uint16_t link_whole; /* link row of whole GPUs; 0: none */
    uint16_t cur[DEV];   /* the pattern being enumerated */
};

static int lp_add_col(struct lp *lp, struct fair_error *err)
{
    size_t n = 0;
    for (size_t i = 0; i < lp->k; i++)
        n += lp->cur[i] > 0 ? 1 + (lp->link[i] > 0) : 0;
    if (fair_grow((void **)&lp->start, &lp->cap_start, lp->ncols + 2, sizeof(*lp->start)) ||
        fair_grow((void **)&lp->value, &lp->cap_value, lp->ncols + 1, sizeof(*lp->value)) ||
        fair_grow((void **)&lp->ent_row, &lp->cap_row, lp->nent + n + 2, sizeof(*lp->ent_row)) ||
        fair_grow((void **)&lp->ent_cnt, &lp->cap_cnt, lp->nent + n + 2, sizeof(*lp->ent_cnt)))
        return fair_error_set(err, FAIR_ENOMEM,
                              "fragmentation bound: out of memory for %zu "
                              "patterns",
                              lp->ncols + 1);
    int64_t v = 0;
    lp->start[lp->ncols] = lp->nent;
    for (size_t i = 0; i < lp->k; i++)
        if (lp->cur[i]) {
            lp->ent_row[lp->nent] = (uint16_t)(1 + i);
            lp->ent_cnt[lp->nent] = lp->cur[i];
            lp->nent++;
            if (lp->link[i]) {
                lp->ent_row[lp->nent] = lp->link[i];
                lp->ent_cnt[lp->nent] = -(int32_t)lp->cur[i];
                lp->nent++;
            }
            v += lp->cur[i] * lp->size[i];
        }
    lp->value[lp->ncols] = (int32_t)v;
    lp->ncols++;
    lp->start[lp->ncols] = lp->nent;
    return 0;
}

/* Every non-empty multiset of sizes i.. that fits in rem, each size at most
 * as often as it arrived, on top of cur[0..i). Depth <= k < 1000. */
static int enumerate(struct lp *lp, size_t i, int64_t rem, bool any, struct fair_error *err)
{
    if (i == lp->k || rem < lp->size[lp->k - 1]) {
        if (!any)
            return 0;
        if (lp->ncols >= FAIR_SIM_BOUND_MAX_PATTERNS)
            return fair_error_set(err, FAIR_ERANGE,
                                  "fragmentation bound: more than %d packing patterns of the %zu "
                                  "fraction sizes; the LP would be too large",
                                  FAIR_SIM_BOUND_MAX_PATTERNS, lp->k);
        return lp_add_col(lp, err);
    }
    int64_t most = rem / lp->size[i];
    if (most > lp->count[i])
        most = lp->count[i];
    for (int64_t c = most; c >= 0; c--) {
        lp->cur[i] = (uint16_t)c;
        int rc = enumerate(lp, i + 1, rem - c * lp->size[i], any || c > 0, err);
        if (rc) {
            lp->cur[i] = 0;
            return rc;
        }
    }
    lp->cur[i] = 0;
    return 0;
}

/* alpha = B^-1 a_j; j >= ncols is the slack of row j - ncols. */
static void ftran(const struct lp *lp, const double *binv, size_t j, double *alpha)
{
    const size_t m = lp->m;
    for (size_t i = 0; i < m; i++) {
        const double *r = &binv[i * m];
        double a;
        if (j >= lp->ncols) {
            a = r[j - lp->ncols];
        } else {
            a = j < lp->ndev ? r[0] : 0;
            for (size_t e = lp->start[j]; e < lp->start[j + 1]; e++)
                a += lp->ent_cnt[e] * r[lp->ent_row[e]];
        }
        alpha[i] = a;
    }
}

static double col_cost(const struct lp *lp, size_t j)
{
    return j < lp->ncols ? (double)lp->value[j] : 0.0;
}

/* a_j.y for a structural column j. */
static double col_dot(const struct lp *lp, size_t j, const double *y)
{
    double s = j < lp->ndev ? y[0] : 0;
    for (size_t e = lp->start[j]; e < lp->start[j + 1]; e++)
        s += lp->ent_cnt[e] * y[lp->ent_row[e]];
    return s;
}

/* Recomputes binv = B^-1 and xb = B^-1 b by Gauss-Jordan with partial
 * pivoting (bm and inv are m x m scratch). Keeps the old ones when B looks
 * singular, which the simplex's pivot tolerance should prevent. */
static void refactor(const struct lp *lp, const size_t *basis, const double *b, double *binv,
                     double *xb, double *bm, double *inv)
{
    const size_t m = lp->m;
    memset(bm, 0, m * m * sizeof(*bm));
    for (size_t c = 0; c < m; c++) {
        size_t j = basis[c];
        if (j >= lp->ncols) {
            bm[(j - lp->ncols) * m + c] = 1;
            continue;
        }
        bm[c] = j < lp->ndev;
        for (size_t e = lp->start[j]; e < lp->start[j + 1]; e++)
            bm[lp->ent_row[e] * m + c] = lp->ent_cnt[e];
    }
    for (size_t i = 0; i < m; i++)
        for (size_t c = 0; c < m; c++)
            inv[i * m + c] = i == c;
    for (size_t c = 0; c < m; c++) {
        size_t p = c;
        for (size_t i = c + 1; i < m; i++)
            if (fabs(bm[i * m + c]) > fabs(bm[p * m + c]))
                p = i;
        if (fabs(bm[p * m + c]) < 1e-12)
            return;
        if (p != c)
            for (size_t x = 0; x < m; x++) {
                double t = bm[p * m + x];
                bm[p * m + x] = bm[c * m + x];
                bm[c * m + x] = t;
                t = inv[p * m + x];
                inv[p * m + x] = inv[c * m + x];
                inv[c * m + x] = t;
            }
        double piv = bm[c * m + c];
        for (size_t x = 0; x < m; x++) {
            bm[c * m + x] /= piv;
            inv[c * m + x] /= piv;
        }
        for (size_t i = 0; i < m; i++) {
            double f = bm[i * m + c];
            if (i == c || f == 0)
                continue;
            for (size_t x = 0; x < m; x++) {
                bm[i * m + x] -= f * bm[c * m + x];
                inv[i * m + x] -= f * inv[c * m + x];
            }
        }
    }
    memcpy(binv, inv, m * m * sizeof(*binv));
    for (size_t i = 0; i < m; i++) {
        double s = 0;
        for (size_t c = 0; c < m; c++)
            s += binv[i * m + c] * b[c];
        xb[i] = s;
    }
}

/* Revised primal simplex from the slack basis (b >= 0): Dantzig's rule,
 * then Bland's after a run of degenerate pivots (no cycling), and a pivot
 * cap. Leaves the duals of the final basis in y. */
static int simplex(const struct lp *lp, const double *b, size_t cap, double *y,
                   struct fair_sim_frag_bound *out, struct fair_error *err)
{
    int rc = 0;
    const size_t m = lp->m, ntot = lp->ncols + m;
    double *binv = fair_calloc(m * m, sizeof(*binv));
    double *bm = fair_calloc(m * m, sizeof(*bm));
    double *inv = fair_calloc(m * m, sizeof(*inv));
    double *xb = fair_calloc(m, sizeof(*xb));
    double *alpha = fair_calloc(m, sizeof(*alpha));
    size_t *basis = fair_calloc(m, sizeof(*basis));
    bool *in_basis = fair_calloc(ntot, sizeof(*in_basis));
    if (!binv || !bm || !inv || !xb || !alpha || !basis || !in_basis) {
        rc = fair_error_set(err, FAIR_ENOMEM, "fragmentation bound: out of memory for the LP");
        goto out;
    }
    for (size_t i = 0; i < m; i++) {
        binv[i * m + i] = 1;
        xb[i] = b[i];
        basis[i] = lp->ncols + i;
        in_basis[lp->ncols + i] = true;
    }
    bool bland = false;
    size_t degenerate = 0;
    out->optimal = false;
    for (size_t it = 0;; it++) {
        for (size_t c = 0; c < m; c++) {
            double s = 0;
            for (size_t i = 0; i < m; i++)
                s += col_cost(lp, basis[i]) * binv[i * m + c];
            y[c] = s;
        }
        if (it >= cap)
            break;
        /* Pricing: the entering column. */
        size_t q = ntot;
        double best = EPS_COST;
        for (size_t j = 0; j < ntot; j++) {
            if (in_basis[j])
                continue;
            double d = j < lp->ncols ? lp->value[j] - col_dot(lp, j, y) : -y[j - lp->ncols];
            if (d > best) {
                q = j;
                if (bland)
                    break;
                best = d;
            }
        }
        if (q == ntot) {
            out->optimal = true;
            break;
        }
        ftran(lp, binv, q, alpha);
        /* Ratio test: the leaving row. */
        size_t r = m;
        double theta = 0;
        for (size_t i = 0; i < m; i++) {
            if (alpha[i] <= EPS_PIVOT)
                continue;
            double t = (xb[i] > 0 ? xb[i] : 0) / alpha[i];
            if (r == m || t < theta - 1e-12 ||
                (t <= theta + 1e-12 && (bland ? basis[i] < basis[r] : alpha[i] > alpha[r]))) {
                r = i;
                theta = t;
            }
        }
        if (r == m) /* unbounded: impossible, every column has a 1 in row 0
                     * (devices) or, a z column, in its cap row */
            break;
        degenerate = theta <= 1e-12 ? degenerate + 1 : 0;
        if (degenerate > DEGENERATE)
            bland = true;
        for (size_t i = 0; i < m; i++)
            xb[i] = i == r ? theta : xb[i] - theta * alpha[i];
        double piv = alpha[r];
        for (size_t c = 0; c < m; c++)
            binv[r * m + c] /= piv;
        for (size_t i = 0; i < m; i++) {
            if (i == r || alpha[i] == 0)
                continue;
            for (size_t c = 0; c < m; c++)
                binv[i * m + c] -= alpha[i] * binv[r * m + c];
        }
        in_basis[basis[r]] = false;
        in_basis[q] = true;
        basis[r] = q;
        out->iterations++;
        if (out->iterations % REFACTOR == 0)
            refactor(lp, basis, b, binv, xb, bm, inv);
    }
    out->lp_milli = 0;
    for (size_t i = 0; i < m; i++)
        out->lp_milli += col_cost(lp, basis[i]) * xb[i];
out:
    fair_free(binv);
    fair_free(bm);
    fair_free(inv);
    fair_free(xb);
    fair_free(alpha);
    fair_free(basis);
    fair_free(in_basis);
    return rc;
}

/* The proof step (bound.h): duals y, however inexact, into an exactly dual
 * feasible u (in units of 1/SCALE milli); returns floor(b.u / SCALE) minus
 * the must rows' bonus, which bounds the allocation. */
static int64_t dual_bound(const struct lp *lp, const int64_t *bi, const double *y, double *duals)
{
    const size_t m = lp->m;
    int64_t u[MAX_ROWS];
    for (size_t r = 0; r < m; r++) {
        /* A size whose pods must all be placed may carry the bonus in
         * its own row rather than in its link row. */
        const bool held = m > lp->k + 2; /* any must rows */
        double hi = r == 0           ? DEV + (held ? MUST_BONUS : 0)
                    : r <= lp->k     ? (double)lp->size[r - 1] + (lp->link[r - 1] ? MUST_BONUS : 0)
                    : r == lp->k + 1 ? DEV + (lp->link_whole ? MUST_BONUS : 0)
                                     : MUST_BONUS;
        double v = y[r] > 0 ? y[r] : 0; /* also maps NaN to 0 */
        if (v > hi)
            v = hi;
        u[r] = (int64_t)ceil(v * SCALE);
    }
    /* A z column (link row +1, cap row +1, value MUST_BONUS) is made
     * feasible by its cap row, which no other column touches. */
    for (size_t j = lp->ndev; j < lp->ncols; j++) {
        int64_t s = 0;
        for (size_t e = lp->start[j]; e < lp->start[j + 1]; e++)
            s += (int64_t)lp->ent_cnt[e] * u[lp->ent_row[e]];
        int64_t viol = (int64_t)lp->value[j] * SCALE - s;
        if (viol > 0)
            u[lp->ent_row[lp->start[j + 1] - 1]] += viol;
    }
    /* Every other column has a 1 in the device row: raise it by the worst
     * violation. Link entries are negative, so the sums are signed. */
    int64_t worst = 0;
    for (size_t j = 0; j < lp->ndev; j++) {
        int64_t s = u[0];
        for (size_t e = lp->start[j]; e < lp->start[j + 1]; e++)
            s += (int64_t)lp->ent_cnt[e] * u[lp->ent_row[e]];
        int64_t viol = (int64_t)lp->value[j] * SCALE - s;
        if (viol > worst)
            worst = viol;
    }
    u[0] += worst;
    if (duals) {
        for (size_t s = 0; s <= DEV; s++)
            duals[s] = 0;
        duals[0] = (double)u[0] / SCALE;
        duals[DEV] = (double)u[lp->k + 1] / SCALE;
        for (size_t i = 0; i < lp->k; i++)
            duals[lp->size[i]] = (double)u[1 + i] / SCALE;
    }
    __int128 obj = 0, bonus = 0;
    for (size_t r = 0; r < m; r++)
        obj += (__int128)bi[r] * u[r];
    for (size_t i = 0; i < lp->k; i++)
        bonus += lp->must[i];
    if (lp->link_whole)
        bonus += bi[lp->link_whole + 1];
    __int128 most = obj / SCALE - bonus * MUST_BONUS;
    return most > INT64_MAX ? INT64_MAX : most < 0 ? 0 : (int64_t)most;
}

/* One entry of the column being built (lp_add_col() made room for it). */
static void lp_add_entry(struct lp *lp, size_t row, int32_t cnt)
{
    lp->ent_row[lp->nent] = (uint16_t)row;
    lp->ent_cnt[lp->nent] = cnt;
    lp->nent++;
    lp->start[lp->ncols] = lp->nent;
}

int fair_sim_frag_bound_hist(const struct fair_sim_frag_hist *h, struct fair_sim_frag_bound *out,
                             struct fair_error *err)
{
    int rc = 0;
    memset(out, 0, sizeof(*out));
    struct lp *lp = fair_calloc(1, sizeof(*lp));
    double *b = NULL, *y = NULL;
    int64_t *bi = NULL;
    if (!lp) {
        rc = fair_error_set(err, FAIR_ENOMEM, "fragmentation bound: out of memory");
        goto out;
    }
    if (h->devices < 0 || h->devices > INT32_MAX || h->whole_gpus < 0 ||
        h->whole_gpus > INT32_MAX) {
        rc = fair_error_set(err, FAIR_ERANGE,
                            "fragmentation bound: %lld devices and %lld whole GPUs arrived must "
                            "each be in 0..%d",
                            (long long)h->devices, (long long)h->whole_gpus, INT32_MAX);
        goto out;
    }
    /* Sort the sizes (decreasing) with their counts; drop sizes that never
     * arrived. */
    if (h->must_whole_gpus < 0 || h->must_whole_gpus > h->whole_gpus) {
        rc = fair_error_set(err, FAIR_EINVAL,
                            "fragmentation bound: %lld whole GPUs must be placed of %lld arrived",
                            (long long)h->must_whole_gpus, (long long)h->whole_gpus);
        goto out;
    }
    if (h->duals && (h->must_counts || h->must_whole_gpus)) {
        rc = fair_error_set(err, FAIR_EINVAL,
                            "fragmentation bound: the duals are only for the bound without pods "
                            "that must be placed");
        goto out;
    }
    int64_t fractions = 0, arrived = h->whole_gpus * DEV;
    bool seen[DEV] = {false};
    int64_t by_size[DEV] = {0}, must_by_size[DEV] = {0};
    for (size_t i = 0; i < h->nsizes; i++) {
        int64_t s = h->sizes[i], n = h->counts[i];
        int64_t must = h->must_counts ? h->must_counts[i] : 0;
        if (must < 0 || must > n) {
            rc = fair_error_set(err, FAIR_EINVAL,
                                "fragmentation bound: %lld pods of %lld milli-GPU must be placed, "
                                "of %lld arrived",
                                (long long)must, (long long)s, (long long)n);
            goto out;
        }
        if (s < 1 || s >= DEV || n < 0) {
            rc = fair_error_set(err, FAIR_EINVAL,
                                "fragmentation bound: fraction size %lld (count %lld) must be in "
                                "1..%d milli-GPU with a count >= 0",
                                (long long)s, (long long)n, DEV - 1);
            goto out;
        }
        if (seen[s]) {
            rc = fair_error_set(err, FAIR_EINVAL,
                                "fragmentation bound: fraction size %lld is listed twice",
                                (long long)s);
            goto out;
        }
        seen[s] = true;
        by_size[s] = n;
        must_by_size[s] = must;
        if (n > INT32_MAX - fractions) {
            rc = fair_error_set(err, FAIR_ERANGE,
                                "fragmentation bound: more than %d fractional arrivals", INT32_MAX);
            goto out;
        }
        fractions += n;
        arrived += s * n;
    }
    for (int64_t s = DEV - 1; s >= 1; s--)
        if (by_size[s] > 0) {
            lp->size[lp->k] = s;
            lp->count[lp->k] = by_size[s];
            lp->must[lp->k] = must_by_size[s];
            lp->k++;
        }
    lp->m = lp->k + 2;
    for (size_t i = 0; i < lp->k; i++)
        if (lp->must[i]) {
            lp->link[i] = (uint16_t)lp->m;
            lp->m += 2;
        }
    if (h->must_whole_gpus) {
        lp->link_whole = (uint16_t)lp->m;
        lp->m += 2;
    }
    out->capacity_milli = h->devices * DEV;
    out->arrived_milli = arrived;
    out->fraction_sizes = lp->k;
    if (lp->k) {
        rc = enumerate(lp, 0, DEV, false, err);
        if (rc)
            goto out;
    }
    out->patterns = lp->ncols;
    /* W: a 1 in the device row (implicit) and in the whole-GPU row, -1 in
     * the whole GPUs' link row. */
    memset(lp->cur, 0, sizeof(lp->cur));
    rc = lp_add_col(lp, err);
    if (rc)
        goto out;
    lp->value[lp->ncols - 1] = DEV;
    lp_add_entry(lp, lp->k + 1, 1);
    if (lp->link_whole)
        lp_add_entry(lp, lp->link_whole, -1);
    lp->ndev = lp->ncols;
    /* The z columns: +1 in their link row and in their cap row (last). */
    for (size_t i = 0; i <= lp->k; i++) {
        size_t link = i < lp->k ? lp->link[i] : lp->link_whole;
        if (!link)
            continue;
        rc = lp_add_col(lp, err);
        if (rc)
            goto out;
        lp->value[lp->ncols - 1] = MUST_BONUS;
        lp_add_entry(lp, link, 1);
        lp_add_entry(lp, link + 1, 1);
    }

    b = fair_calloc(lp->m, sizeof(*b));
    y = fair_calloc(lp->m, sizeof(*y));
    bi = fair_calloc(lp->m, sizeof(*bi));
    if (!b || !y || !bi) {
        rc = fair_error_set(err, FAIR_ENOMEM, "fragmentation bound: out of memory for the LP");
        goto out;
    }
    bi[0] = h->devices;
    for (size_t i = 0; i < lp->k; i++)
        bi[1 + i] = lp->count[i];
    bi[lp->k + 1] = h->whole_gpus;
    for (size_t i = 0; i < lp->k; i++)
        if (lp->link[i])
            bi[lp->link[i] + 1] = lp->must[i];
    if (lp->link_whole)
        bi[lp->link_whole + 1] = h->must_whole_gpus;
    for (size_t r = 0; r < lp->m; r++)
        b[r] = (double)bi[r];
    rc = simplex(lp, b, h->max_pivots ? h->max_pivots : 1000 + 100 * lp->m, y, out, err);
    if (rc)
        goto out;
    for (size_t r = lp->k + 2; r < lp->m; r += 2) /* the bonus is not allocation */
        out->lp_milli -= (double)bi[r + 1] * MUST_BONUS;
    int64_t most = dual_bound(lp, bi, y, h->duals);
    if (most > out->capacity_milli)
        most = out->capacity_milli;
    if (most > arrived)
        most = arrived;
    out->max_allocated_milli = most;
    out->bound_milli = out->capacity_milli - most;
out:
    if (lp) {
        fair_free(lp->start);
        fair_free(lp->value);
        fair_free(lp->ent_row);
        fair_free(lp->ent_cnt);
    }
    fair_free(lp);
    fair_free(b);
    fair_free(y);
    fair_free(bi);
    return rc;
}

int fair_sim_frag_bound(const struct fair_sim_trace *t, const struct fair_sim_frag_opts *opts,
                        struct fair_sim_frag_bound *out, struct fair_error *err)
{
    memset(out, 0, sizeof(*out));
    struct fair_sim_frag_draw d;
    int rc = fair_sim_frag_draw_init(&d, t, opts, err);
    if (rc)
        return rc;
    int64_t count[DEV] = {0}, whole = 0;
    const struct fair_sim_job *job;
    while ((rc = fair_sim_frag_draw_next(&d, &job, err)) == 1) {
        int64_t g = job->gpu_milli;
        if (g > 0 && g < DEV) {
            count[g]++;
        } else if (g >= DEV && g % DEV == 0) {
            whole += g / DEV;
        } else if (g != 0) {
            return fair_error_set(err, FAIR_EINVAL,
                                  "fragmentation bound: pod %s asks for %lld milli-GPU, neither "
                                  "a fraction below 1 nor whole GPUs",
                                  job->name, (long long)g);
        }
    }
    if (rc < 0)
        return rc;
    int64_t sizes[DEV], counts[DEV];
    size_t n = 0;
    for (int64_t s = 1; s < DEV; s++)
        if (count[s]) {
            sizes[n] = s;
            counts[n++] = count[s];
        }
    struct fair_sim_frag_hist h = {
        .sizes = sizes,
        .counts = counts,
        .nsizes = n,
        .whole_gpus = whole,
        .devices = d.capacity_milli / DEV,
    };
    rc = fair_sim_frag_bound_hist(&h, out, err);
    if (!rc)
        out->arrived_milli = d.arrived_milli;
    return rc;
}
