/* Go's math/rand generator (the seeded source, rngSource, and the Rand
 * methods built on it), reimplemented so that the simulator can draw the
 * very arrival sequences that Go programs draw: the FGD paper's simulator
 * (hkust-adsl/kubernetes-scheduler-simulator) picks its workload with
 * rand.Seed, rand.Int, rand.Shuffle and rand.Intn.
 *
 * The algorithm (Go's src/math/rand/rng.go and rand.go, Go 1 stream,
 * unchanged since): an additive lagged Fibonacci generator over 64-bit words,
 * x[n] = x[n-607] + x[n-273] mod 2^64, whose 607 words of state are seeded
 * from a Lehmer generator (x <- 48271 x mod 2^31-1) XORed with a fixed table
 * of "cooked" values (the state of the same generator after 7.8e12 steps
 * from seed 1). Every Rand method is reproduced bit for bit, including the
 * rejection loops of Int31n and Int63n and the Lemire reduction that Shuffle
 * uses, so the values match Go's own regression goldens
 * (tests/unit/test_sim_gorand.c).
 *
 * Go's top-level functions (rand.Seed, rand.Intn, ...) use one such source
 * once rand.Seed has been called, so one struct fair_gorand plays them.
 * A caller-owned struct, no allocation. */
#ifndef FAIR_SIM_GORAND_H
#define FAIR_SIM_GORAND_H

#include <stddef.h>
#include <stdint.h>

#define FAIR_GORAND_LEN 607
#define FAIR_GORAND_TAP 273

struct fair_gorand {
    int tap, feed;
    uint64_t vec[FAIR_GORAND_LEN];
};

/* rand.NewSource(seed) / rand.Seed(seed). */
void fair_gorand_seed(struct fair_gorand *r, int64_t seed);

/* The Rand methods, as on a 64-bit machine (Go's int is 64 bits). The n
 * arguments must be > 0 (Go panics otherwise; here the result is 0). */
uint64_t fair_gorand_uint64(struct fair_gorand *r);
int64_t fair_gorand_int63(struct fair_gorand *r);
uint32_t fair_gorand_uint32(struct fair_gorand *r);
int32_t fair_gorand_int31(struct fair_gorand *r);
int64_t fair_gorand_int(struct fair_gorand *r);
int64_t fair_gorand_int63n(struct fair_gorand *r, int64_t n);
int32_t fair_gorand_int31n(struct fair_gorand *r, int32_t n);
int64_t fair_gorand_intn(struct fair_gorand *r, int64_t n);
/* rand.Perm(n): out gets n entries. */
void fair_gorand_perm(struct fair_gorand *r, int64_t *out, size_t n);
/* rand.Shuffle(n, swap): swap(ctx, i, j) exchanges elements i and j. */
void fair_gorand_shuffle(struct fair_gorand *r, size_t n,
                         void (*swap)(void *ctx, size_t i, size_t j), void *ctx);

#endif
