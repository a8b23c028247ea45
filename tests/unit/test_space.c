/* tests/unit/test_space.c: knob counts, index round trips, errors, sampling, neighbours. */
#include "space/space.h"
#include "tests/check.h"

static uint64_t split_len(int64_t extent, int m, SplitPolicy p, int64_t max_factor) {
    Space s;
    Space_init(&s);
    char err[TT_ERRLEN];
    uint64_t len = 0;
    if (Space_addSplit(&s, "x", extent, m, p, max_factor, err) == TT_OK) len = s.knobs[0].len;
    Space_done(&s);
    return len;
}

static uint64_t binom(int n, int k) {
    uint64_t r = 1;
    for (int i = 1; i <= k; i++)
        r = r * (uint64_t)(n - k + i) / (uint64_t)i;
    return r;
}

/* The seed-003 conv2d 7x7 512->512 CUDA space. */
static void seed003_space(Space *s) {
    char err[TT_ERRLEN];
    Space_init(s);
    CHECK(Space_addSplit(s, "tile_f", 512, 4, SPLIT_FACTORS, 0, err) == TT_OK);
    CHECK(Space_addSplit(s, "tile_y", 7, 4, SPLIT_FACTORS, 0, err) == TT_OK);
    CHECK(Space_addSplit(s, "tile_x", 7, 4, SPLIT_FACTORS, 0, err) == TT_OK);
    CHECK(Space_addSplit(s, "tile_rc", 512, 3, SPLIT_FACTORS, 0, err) == TT_OK);
    CHECK(Space_addSplit(s, "tile_ry", 3, 3, SPLIT_FACTORS, 0, err) == TT_OK);
    CHECK(Space_addSplit(s, "tile_rx", 3, 3, SPLIT_FACTORS, 0, err) == TT_OK);
    int64_t unroll[] = {0, 512, 1500}, expl[] = {0, 1};
    CHECK(Space_addOption(s, "auto_unroll_max_step", unroll, 3, err) == TT_OK);
    CHECK(Space_addOption(s, "unroll_explicit", expl, 2, err) == TT_OK);
}

TEST(test_counts_factors) {
    CHECK_EQ_INT(split_len(512, 4, SPLIT_FACTORS, 0), 220);
    CHECK_EQ_INT(split_len(7, 4, SPLIT_FACTORS, 0), 4);
    CHECK_EQ_INT(split_len(512, 3, SPLIT_FACTORS, 0), 55);
    CHECK_EQ_INT(split_len(3, 3, SPLIT_FACTORS, 0), 3);
    CHECK_EQ_INT(split_len(1, 4, SPLIT_FACTORS, 0), 1);
    CHECK_EQ_INT(split_len(12, 1, SPLIT_FACTORS, 0), 1);
    /* 12 = 2^2 * 3 into 2 ordered factors: its 6 divisors */
    CHECK_EQ_INT(split_len(12, 2, SPLIT_FACTORS, 0), 6);
    /* into 3: C(2+2,2) * C(1+2,2) = 6 * 3 */
    CHECK_EQ_INT(split_len(12, 3, SPLIT_FACTORS, 0), 18);
    Space s;
    seed003_space(&s);
    CHECK_EQ_INT(s.total, 10454400);
    Space_done(&s);
}

TEST(test_counts_power2) {
    for (int k = 0; k <= 10; k++)
        for (int m = 1; m <= 4; m++)
            CHECK_EQ_INT(split_len((int64_t)1 << k, m, SPLIT_POWER2, 0), binom(k + m - 1, m - 1));
    /* tails: 7 into 2 -> inner 1,2,4 (outer 7,4,2) */
    CHECK_EQ_INT(split_len(7, 2, SPLIT_POWER2, 0), 3);
    Space s;
    Space_init(&s);
    char err[TT_ERRLEN];
    CHECK(Space_addSplit(&s, "t", 7, 2, SPLIT_POWER2, 0, err) == TT_OK);
    int32_t c[1];
    int64_t want_outer[] = {7, 4, 2};
    for (int i = 0; i < 3; i++) {
        c[0] = i;
        const int64_t *f = Space_split(&s, c, 0);
        CHECK_EQ_INT(f[0], want_outer[i]);
        CHECK(f[0] * f[1] >= 7 && f[1] <= 7);
    }
    Space_done(&s);
}

TEST(test_max_factor) {
    /* 64 into 2 with inner <= 8: inner 1,2,4,8 */
    CHECK_EQ_INT(split_len(64, 2, SPLIT_FACTORS, 8), 4);
    CHECK_EQ_INT(split_len(64, 2, SPLIT_POWER2, 8), 4);
    /* 64 = 2^6 into 3, inner exponents a,b <= 3 with a+b <= 6: all 16 */
    CHECK_EQ_INT(split_len(64, 3, SPLIT_FACTORS, 8), 16);
    /* with cap 4: a,b <= 2: 9 */
    CHECK_EQ_INT(split_len(64, 3, SPLIT_FACTORS, 4), 9);
    Space s;
    Space_init(&s);
    char err[TT_ERRLEN];
    CHECK(Space_addSplit(&s, "t", 512, 4, SPLIT_FACTORS, 16, err) == TT_OK);
    int32_t c[1];
    for (uint64_t i = 0; i < s.total; i++) {
        c[0] = (int32_t)i;
        const int64_t *f = Space_split(&s, c, 0);
        CHECK(f[1] <= 16 && f[2] <= 16 && f[3] <= 16);
        CHECK_EQ_INT(f[0] * f[1] * f[2] * f[3], 512);
    }
    Space_done(&s);
}

TEST(test_entities_exact_and_distinct) {
    Space s;
    Space_init(&s);
    char err[TT_ERRLEN];
    CHECK(Space_addSplit(&s, "t", 360, 3, SPLIT_FACTORS, 0, err) == TT_OK);
    const Knob *k = &s.knobs[0];
    for (uint64_t i = 0; i < k->len; i++) {
        const int64_t *f = k->factors + i * 3;
        CHECK_EQ_INT(f[0] * f[1] * f[2], 360);
        for (uint64_t j = 0; j < i; j++) {
            const int64_t *g = k->factors + j * 3;
            CHECK(!(f[0] == g[0] && f[1] == g[1] && f[2] == g[2]));
        }
    }
    Space_done(&s);
}

TEST(test_round_trip) {
    Space s;
    seed003_space(&s);
    Rng rng;
    Rng_seed(&rng, 7);
    int32_t c[SPACE_MAX_KNOBS];
    uint64_t edges[] = {0, 1, 219, 220, s.total - 1, s.total / 2};
    for (int i = 0; i < 6; i++) {
        Space_decode(&s, edges[i], c);
        CHECK_EQ_INT(Space_encode(&s, c), edges[i]);
    }
    for (int i = 0; i < 10000; i++) {
        uint64_t idx = Rng_below(&rng, s.total);
        Space_decode(&s, idx, c);
        for (int k = 0; k < s.n_knobs; k++)
            CHECK(c[k] >= 0 && (uint64_t)c[k] < s.knobs[k].len);
        CHECK_EQ_INT(Space_encode(&s, c), idx);
    }
    /* first knob fastest */
    Space_decode(&s, 1, c);
    CHECK_EQ_INT(c[0], 1);
    CHECK_EQ_INT(c[1], 0);
    Space_decode(&s, 220, c);
    CHECK_EQ_INT(c[0], 0);
    CHECK_EQ_INT(c[1], 1);
    Space_decode(&s, s.total - 1, c);
    CHECK_EQ_INT(c[7], 1);
    CHECK_EQ_INT(Space_option(&s, c, 6), 1500);
    CHECK_EQ_INT(Space_optionByName(&s, c, "unroll_explicit"), 1);
    CHECK_EQ_INT(Space_knobIndex(&s, "tile_rc"), 3);
    CHECK_EQ_INT(Space_knobIndex(&s, "nope"), -1);
    Space_done(&s);
}

TEST(test_degenerate_extents) {
    Space s;
    Space_init(&s);
    char err[TT_ERRLEN] = "";
    CHECK(Space_addSplit(&s, "tile_f", 0, 4, SPLIT_FACTORS, 0, err) == TT_ERR);
    CHECK_CONTAINS(err, "tile_f");
    CHECK_CONTAINS(err, "extent 0 must be positive");
    CHECK(Space_addSplit(&s, "tile_y", -1, 4, SPLIT_POWER2, 0, err) == TT_ERR);
    CHECK_CONTAINS(err, "tile_y: extent -1");
    CHECK(Space_addSplit(&s, "tile_z", 8, 0, SPLIT_FACTORS, 0, err) == TT_ERR);
    CHECK_CONTAINS(err, "tile_z");
    CHECK(Space_addSplit(&s, "tile_w", 8, 5, SPLIT_FACTORS, 0, err) == TT_ERR);
    CHECK_CONTAINS(err, "tile_w");
    CHECK(Space_addOption(&s, "opt", NULL, 0, err) == TT_ERR);
    CHECK_CONTAINS(err, "opt");
    CHECK(Space_addSplit(&s, "tile_x", (int64_t)1 << 50, 2, SPLIT_FACTORS, 0, err) == TT_ERR);
    CHECK_CONTAINS(err, "tile_x: extent");
    CHECK(Space_addSplit(&s, "tile_v", 16, 2, SPLIT_FACTORS, -3, err) == TT_ERR);
    CHECK_CONTAINS(err, "tile_v: max_factor");
    CHECK(Space_addSplit(&s, "a", 16, 2, SPLIT_FACTORS, 0, err) == TT_OK);
    CHECK(Space_addSplit(&s, "a", 16, 2, SPLIT_FACTORS, 0, err) == TT_ERR);
    CHECK_CONTAINS(err, "a: knob defined twice");
    CHECK_EQ_INT(s.n_knobs, 1);
    CHECK_EQ_INT(s.total, 5);
    Space_done(&s);
    CHECK_EQ_INT(s.n_knobs, 0);
    CHECK_EQ_INT(s.total, 1);
}

TEST(test_visited_set) {
    VisitedSet v;
    VisitedSet_init(&v);
    Rng rng;
    Rng_seed(&rng, 12);
    /* enough entries to grow the table several times */
    for (uint64_t i = 0; i < 20000; i++)
        CHECK(VisitedSet_add(&v, i * 7919));
    CHECK_EQ_INT(v.count, 20000);
    for (uint64_t i = 0; i < 20000; i++)
        CHECK(!VisitedSet_add(&v, i * 7919));
    int wrong = 0;
    for (uint64_t i = 0; i < 200000; i++)
        wrong += VisitedSet_has(&v, i) != (i % 7919 == 0 && i / 7919 < 20000);
    CHECK_EQ_INT(wrong, 0);
    CHECK(!VisitedSet_has(&v, UINT64_MAX));
    CHECK(!VisitedSet_add(&v, UINT64_MAX));
    CHECK_EQ_INT(v.count, 20000);
    VisitedSet_done(&v);
}

TEST(test_overflow) {
    Space s;
    Space_init(&s);
    char err[TT_ERRLEN] = "";
    /* 2^20 into 4 (power2): C(23,3) = 1771 each; four of them exceed 2^43, six exceed 2^64 */
    int ok = 0;
    Status st = TT_OK;
    for (int i = 0; i < 8 && st == TT_OK; i++) {
        char name[16];
        snprintf(name, sizeof name, "k%d", i);
        st = Space_addSplit(&s, name, 1 << 20, 4, SPLIT_POWER2, 0, err);
        if (st == TT_OK) ok++;
    }
    CHECK(st == TT_ERR);
    CHECK_EQ_INT(ok, 5); /* 1771^5 ~ 1.7e16 fits, 1771^6 ~ 3e19 does not */
    CHECK_CONTAINS(err, "k5");
    CHECK_CONTAINS(err, "overflow");
    CHECK_EQ_INT(s.n_knobs, 5);
    /* the space is still usable after the failed add */
    int32_t c[SPACE_MAX_KNOBS];
    Space_decode(&s, s.total - 1, c);
    CHECK_EQ_INT(Space_encode(&s, c), s.total - 1);
    Space_done(&s);
}

static void small_space(Space *s) {
    char err[TT_ERRLEN];
    Space_init(s);
    CHECK(Space_addSplit(s, "a", 12, 2, SPLIT_FACTORS, 0, err) == TT_OK);
    int64_t v[] = {0, 1, 2};
    CHECK(Space_addOption(s, "b", v, 3, err) == TT_OK);
    CHECK(Space_addSplit(s, "c", 8, 2, SPLIT_POWER2, 0, err) == TT_OK);
}

TEST(test_sample_exhaustion) {
    Space s;
    small_space(&s);
    CHECK_EQ_INT(s.total, 6 * 3 * 4);
    VisitedSet v;
    VisitedSet_init(&v);
    Rng rng;
    Rng_seed(&rng, 1);
    int seen[72] = {0};
    uint64_t out[5];
    int total = 0, got;
    while ((got = Space_sampleUnvisited(&s, &v, &rng, out, 5)) > 0) {
        for (int i = 0; i < got; i++) {
            CHECK(out[i] < 72);
            if (out[i] < 72) seen[out[i]]++;
        }
        total += got;
        CHECK(total <= 72);
        if (total > 72) break;
    }
    CHECK_EQ_INT(total, 72);
    for (int i = 0; i < 72; i++)
        CHECK_EQ_INT(seen[i], 1);
    CHECK_EQ_INT(Space_sampleUnvisited(&s, &v, &rng, out, 5), 0);
    VisitedSet_done(&v);

    /* the same with some configs visited beforehand (a resumed log) */
    VisitedSet_init(&v);
    for (uint64_t i = 0; i < 72; i += 3)
        VisitedSet_add(&v, i);
    memset(seen, 0, sizeof seen);
    total = 0;
    while ((got = Space_sampleUnvisited(&s, &v, &rng, out, 5)) > 0) {
        for (int i = 0; i < got; i++) {
            CHECK(out[i] % 3 != 0);
            if (out[i] < 72) seen[out[i]]++;
        }
        total += got;
        if (total > 72) break;
    }
    CHECK_EQ_INT(total, 48);
    for (int i = 0; i < 72; i++)
        CHECK_EQ_INT(seen[i], i % 3 ? 1 : 0);
    VisitedSet_done(&v);
    Space_done(&s);
}

TEST(test_sample_huge_and_reproducible) {
    Space s;
    seed003_space(&s);
    VisitedSet v1, v2;
    VisitedSet_init(&v1);
    VisitedSet_init(&v2);
    Rng r1, r2;
    Rng_seed(&r1, 99);
    Rng_seed(&r2, 99);
    uint64_t a[64], b[64];
    for (int round = 0; round < 50; round++) {
        CHECK_EQ_INT(Space_sampleUnvisited(&s, &v1, &r1, a, 64), 64);
        CHECK_EQ_INT(Space_sampleUnvisited(&s, &v2, &r2, b, 64), 64);
        CHECK(memcmp(a, b, sizeof a) == 0);
        for (int i = 0; i < 64; i++)
            CHECK(a[i] < s.total);
    }
    CHECK_EQ_INT(v1.count, 50 * 64);
    VisitedSet_done(&v1);
    VisitedSet_done(&v2);
    Space_done(&s);
}

TEST(test_neighbours) {
    Space s;
    seed003_space(&s);
    Rng rng;
    Rng_seed(&rng, 3);
    int32_t a[SPACE_MAX_KNOBS], b[SPACE_MAX_KNOBS];
    for (int i = 0; i < 5000; i++) {
        uint64_t idx = Rng_below(&rng, s.total);
        uint64_t nb = Space_neighbour(&s, idx, &rng);
        CHECK(nb < s.total);
        Space_decode(&s, idx, a);
        Space_decode(&s, nb, b);
        int diff = 0;
        for (int k = 0; k < s.n_knobs; k++)
            diff += a[k] != b[k];
        CHECK_EQ_INT(diff, 1);
    }
    Space_done(&s);
    /* every knob of len 1: the index itself */
    Space one;
    Space_init(&one);
    char err[TT_ERRLEN];
    CHECK(Space_addSplit(&one, "a", 1, 3, SPLIT_FACTORS, 0, err) == TT_OK);
    CHECK_EQ_INT(Space_neighbour(&one, 0, &rng), 0);
    Space_done(&one);
}

TEST(test_describe_format_features) {
    Space s;
    seed003_space(&s);
    char buf[2048];
    Space_describe(&s, buf, sizeof buf);
    CHECK_CONTAINS(buf, "0 tile_f: Split(policy=factors, product=512, num_outputs=4) len=220\n");
    CHECK_CONTAINS(buf, "6 auto_unroll_max_step: Option([0, 512, 1500]) len=3\n");
    int32_t c[SPACE_MAX_KNOBS];
    Space_decode(&s, s.total - 1, c);
    Space_format(&s, c, buf, sizeof buf);
    CHECK_CONTAINS(buf, "auto_unroll_max_step=1500 unroll_explicit=1");
    CHECK_CONTAINS(buf, "tile_f=[");
    /* truncation is safe */
    char small[10];
    Space_format(&s, c, small, sizeof small);
    CHECK_EQ_INT(strlen(small), 9);
    CHECK_EQ_INT(Space_featureCount(&s), 4 + 4 + 4 + 3 + 3 + 3 + 1 + 1);
    float f[32];
    int n = Space_features(&s, s.total - 1, f, 32);
    CHECK_EQ_INT(n, 23);
    CHECK_NEAR(f[21], 1500, 1e-3);
    CHECK_NEAR(f[22], 1, 1e-6);
    const int64_t *tf = Space_split(&s, c, 0);
    for (int j = 0; j < 4; j++)
        CHECK_NEAR(f[j], log2((double)tf[j]), 1e-5);
    CHECK_EQ_INT(Space_features(&s, 0, f, 5), 5);
    Space_done(&s);
}

int main(void) {
    RUN(test_counts_factors);
    RUN(test_counts_power2);
    RUN(test_max_factor);
    RUN(test_entities_exact_and_distinct);
    RUN(test_round_trip);
    RUN(test_degenerate_extents);
    RUN(test_overflow);
    RUN(test_visited_set);
    RUN(test_sample_exhaustion);
    RUN(test_sample_huge_and_reproducible);
    RUN(test_neighbours);
    RUN(test_describe_format_features);
    return check_summary();
}
