/* Go's math/rand port (sim/gorand.h) against Go's own published outputs:
 * the golden values of Go's src/math/rand/regress_test.go (every method
 * re-seeded with 0, 20 calls each, the arguments cycling through Go's
 * lists), the well-known first values of rand.NewSource(1), and Shuffle
 * outputs of Go 1.19.8's math/rand. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "sim/gorand.h"

static const int32_t int32s[] = {1,          10,      32,         1 << 20,   (1 << 20) + 1,
                                 1000000000, 1 << 30, 2147483646, 2147483647};
static const int64_t int64s[] = {1,
                                 10,
                                 32,
                                 1 << 20,
                                 (1 << 20) + 1,
                                 1000000000,
                                 1 << 30,
                                 2147483646,
                                 2147483647,
                                 1000000000000000000LL,
                                 1LL << 60,
                                 INT64_MAX - 1,
                                 INT64_MAX};

/* Int63() and Int() of NewSource(0); Uint64() differs only in the top bit. */
static const int64_t golden_int63[20] = {
    8717895732742165505, 2259404117704393152, 6050128673802995827, 501233450539197794,
    3390393562759376202, 2669985732393126063, 1774932891286980153, 6044372234677422456,
    8274930044578894929, 1543572285742637646, 2661732831099943416, 8325060299420976708,
    7837839688282259259, 2518412263346885298, 5617773211005988520, 2339563716805116249,
    7144924247938981575, 161231572858529631,  7259475919510918339, 7373105480197164748,
};
static const uint64_t golden_uint64[20] = {
    8717895732742165505ULL,  2259404117704393152ULL,  6050128673802995827ULL,
    9724605487393973602ULL,  12613765599614152010ULL, 11893357769247901871ULL,
    1774932891286980153ULL,  15267744271532198264ULL, 17498302081433670737ULL,
    1543572285742637646ULL,  11885104867954719224ULL, 17548432336275752516ULL,
    7837839688282259259ULL,  2518412263346885298ULL,  5617773211005988520ULL,
    11562935753659892057ULL, 16368296284793757383ULL, 161231572858529631ULL,
    16482847956365694147ULL, 16596477517051940556ULL,
};
static const int32_t golden_int31[20] = {
    2029793274, 526058514,  1408655353, 116702506, 789387515,  621654496,  413258767,
    1407315077, 1926657288, 359390928,  619732968, 1938329147, 1824889259, 586363548,
    1307989752, 544722126,  1663557311, 37539650,  1690228450, 1716684894,
};
static const int32_t golden_int31n[20] = {
    0, 4,  25,     310570, 857611,    621654496, 413258767,  1407315077, 1926657288, 0,
    8, 27, 367019, 209005, 307989752, 544722126, 1663557311, 37539650,   0,          4,
};
static const int64_t golden_int63n[20] = {
    0,
    2,
    19,
    959842,
    688912,
    393126063,
    89212473,
    834026388,
    1577188963,
    543572285742637646,
    355889821886249464,
    8325060299420976708,
    7837839688282259259,
    0,
    0,
    25,
    679623,
    882178,
    510918339,
    782454476,
};
static const int64_t golden_intn[20] = {
    0,
    4,
    25,
    310570,
    857611,
    621654496,
    413258767,
    1407315077,
    1926657288,
    543572285742637646,
    355889821886249464,
    8325060299420976708,
    7837839688282259259,
    0,
    2,
    14,
    515775,
    839455,
    690228450,
    642943070,
};
static const uint32_t golden_uint32[20] = {
    4059586549u, 1052117029u, 2817310706u, 233405013u,  1578775030u, 1243308993u, 826517535u,
    2814630155u, 3853314576u, 718781857u,  1239465936u, 3876658295u, 3649778518u, 1172727096u,
    2615979505u, 1089444252u, 3327114623u, 75079301u,   3380456901u, 3433369789u,
};

static void test_regress_goldens(void **state)
{
    (void)state;
    struct fair_gorand r;
    fair_gorand_seed(&r, 0);
    for (int i = 0; i < 20; i++)
        assert_int_equal(fair_gorand_int63(&r), golden_int63[i]);
    fair_gorand_seed(&r, 0);
    for (int i = 0; i < 20; i++)
        assert_int_equal(fair_gorand_int(&r), golden_int63[i]);
    fair_gorand_seed(&r, 0);
    for (int i = 0; i < 20; i++)
        assert_true(fair_gorand_uint64(&r) == golden_uint64[i]);
    fair_gorand_seed(&r, 0);
    for (int i = 0; i < 20; i++)
        assert_int_equal(fair_gorand_int31(&r), golden_int31[i]);
    fair_gorand_seed(&r, 0);
    for (int i = 0; i < 20; i++)
        assert_int_equal(fair_gorand_int31n(&r, int32s[i % 9]), golden_int31n[i]);
    fair_gorand_seed(&r, 0);
    for (int i = 0; i < 20; i++)
        assert_int_equal(fair_gorand_int63n(&r, int64s[i % 13]), golden_int63n[i]);
    fair_gorand_seed(&r, 0);
    for (int i = 0; i < 20; i++)
        assert_int_equal(fair_gorand_intn(&r, int64s[i % 13]), golden_intn[i]);
    fair_gorand_seed(&r, 0);
    for (int i = 0; i < 20; i++)
        assert_int_equal(fair_gorand_uint32(&r), golden_uint32[i]);
}

static void test_regress_perm(void **state)
{
    (void)state;
    /* Perm(n) for n cycling through 0, 1, 5, 8, 9, 10, 16 (20 calls). */
    static const size_t sizes[] = {0, 1, 5, 8, 9, 10, 16};
    static const int64_t want[20][16] = {
        {0},
        {0},
        {0, 4, 1, 3, 2},
        {3, 1, 0, 4, 7, 5, 2, 6},
        {5, 0, 3, 6, 7, 4, 2, 1, 8},
        {4, 5, 0, 2, 6, 9, 3, 1, 8, 7},
        {14, 2, 0, 8, 3, 5, 13, 12, 1, 4, 6, 7, 11, 9, 15, 10},
        {0},
        {0},
        {3, 0, 1, 2, 4},
        {5, 1, 2, 0, 4, 7, 3, 6},
        {4, 0, 6, 8, 1, 5, 2, 7, 3},
        {8, 6, 1, 7, 5, 4, 3, 2, 9, 0},
        {0, 3, 13, 2, 15, 4, 10, 1, 8, 14, 7, 6, 12, 9, 5, 11},
        {0},
        {0},
        {0, 4, 2, 1, 3},
        {2, 1, 7, 0, 6, 3, 4, 5},
        {8, 7, 5, 3, 4, 6, 0, 1, 2},
        {1, 0, 2, 5, 7, 6, 9, 8, 3, 4},
    };
    struct fair_gorand r;
    fair_gorand_seed(&r, 0);
    for (int k = 0; k < 20; k++) {
        int64_t got[16];
        size_t n = sizes[k % 7];
        fair_gorand_perm(&r, got, n);
        for (size_t i = 0; i < n; i++)
            assert_int_equal(got[i], want[k][i]);
    }
}

static void test_seed_one(void **state)
{
    (void)state;
    /* rand.New(rand.NewSource(1)).Int63(): Go's best-known values. */
    static const int64_t want[] = {5577006791947779410, 8674665223082153551, 6129484611666145821,
                                   4037200794235010051, 3916589616287113937};
    struct fair_gorand r;
    fair_gorand_seed(&r, 1);
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
        assert_int_equal(fair_gorand_int63(&r), want[i]);
    /* Seeds equal modulo 2^31-1 give the same stream; 0 is replaced. */
    struct fair_gorand a, b;
    fair_gorand_seed(&a, 1);
    fair_gorand_seed(&b, 2147483648LL);
    assert_int_equal(fair_gorand_int63(&a), fair_gorand_int63(&b));
    fair_gorand_seed(&a, -5);
    fair_gorand_seed(&b, 2147483642LL);
    assert_int_equal(fair_gorand_int63(&a), fair_gorand_int63(&b));
}

static void swap_ints(void *ctx, size_t i, size_t j)
{
    int64_t *a = ctx;
    int64_t t = a[i];
    a[i] = a[j];
    a[j] = t;
}

static void swap_words(void *ctx, size_t i, size_t j)
{
    const char **w = ctx;
    const char *t = w[i];
    w[i] = w[j];
    w[j] = t;
}

static void test_shuffle(void **state)
{
    (void)state;
    /* rand.Seed(1); rand.Shuffle(8 words) and rand.New(rand.NewSource(42))
     * shuffling 0..19, then Intn(8152), Intn(1000003), Int(): the outputs of
     * Go 1.19.8's math/rand for the same calls. (Go's ExampleShuffle prints
     * another order because the examples before it draw from the same
     * global source.) */
    const char *words[] = {"ink", "runs", "from", "the", "corners", "of", "my", "mouth"};
    static const char *const want[] = {"of",   "ink", "mouth", "runs",
                                       "from", "the", "my",    "corners"};
    struct fair_gorand r;
    fair_gorand_seed(&r, 1);
    fair_gorand_shuffle(&r, 8, swap_words, words);
    for (int i = 0; i < 8; i++)
        assert_string_equal(words[i], want[i]);
    static const int64_t want42[20] = {6,  8,  14, 13, 9, 16, 15, 2,  18, 17,
                                       19, 12, 4,  11, 5, 0,  3,  10, 1,  7};
    int64_t a[20];
    for (int i = 0; i < 20; i++)
        a[i] = i;
    fair_gorand_seed(&r, 42);
    fair_gorand_shuffle(&r, 20, swap_ints, a);
    for (int i = 0; i < 20; i++)
        assert_int_equal(a[i], want42[i]);
    assert_int_equal(fair_gorand_intn(&r, 8152), 88);
    assert_int_equal(fair_gorand_intn(&r, 1000003), 262314);
    assert_int_equal(fair_gorand_int(&r), 3137486211269163098LL);
    /* n = 0 and 1 never swap (Go's TestShuffleSmall). */
    fair_gorand_shuffle(&r, 0, swap_words, NULL);
    fair_gorand_shuffle(&r, 1, swap_words, NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_regress_goldens),
        cmocka_unit_test(test_regress_perm),
        cmocka_unit_test(test_seed_one),
        cmocka_unit_test(test_shuffle),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
