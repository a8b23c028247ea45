/* records/crc32c.c: see crc32c.h. */
#include "records/crc32c.h"

#include <pthread.h>
#include <string.h>

#define POLY 0x82f63b78u

static uint32_t table[8][256];
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static void make_table(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = c & 1 ? (c >> 1) ^ POLY : c >> 1;
        table[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++)
        for (int s = 1; s < 8; s++)
            table[s][i] = (table[s - 1][i] >> 8) ^ table[0][table[s - 1][i] & 0xff];
}

/* Slicing-by-8: eight table lookups per 8 bytes. */
static uint32_t crc_table(uint32_t crc, const unsigned char *p, size_t n) {
    pthread_once(&table_once, make_table);
    while (n >= 8) {
        uint32_t lo, hi;
        memcpy(&lo, p, 4);
        memcpy(&hi, p + 4, 4);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
        lo = __builtin_bswap32(lo);
        hi = __builtin_bswap32(hi);
#endif
        lo ^= crc;
        crc = table[7][lo & 0xff] ^ table[6][(lo >> 8) & 0xff] ^ table[5][(lo >> 16) & 0xff] ^ table[4][lo >> 24] ^
              table[3][hi & 0xff] ^ table[2][(hi >> 8) & 0xff] ^ table[1][(hi >> 16) & 0xff] ^ table[0][hi >> 24];
        p += 8;
        n -= 8;
    }
    while (n--)
        crc = (crc >> 8) ^ table[0][(crc ^ *p++) & 0xff];
    return crc;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
__attribute__((target("sse4.2"))) static uint32_t crc_hw(uint32_t crc, const unsigned char *p, size_t n) {
    uint64_t c = crc;
    while (n >= 8) {
        uint64_t v;
        memcpy(&v, p, 8);
        c = __builtin_ia32_crc32di(c, v);
        p += 8;
        n -= 8;
    }
    uint32_t c32 = (uint32_t)c;
    while (n--)
        c32 = __builtin_ia32_crc32qi(c32, *p++);
    return c32;
}

static int have_hw = -1;

static uint32_t crc_any(uint32_t crc, const unsigned char *p, size_t n) {
    int hw = __atomic_load_n(&have_hw, __ATOMIC_RELAXED);
    if (hw < 0) {
        __builtin_cpu_init();
        hw = __builtin_cpu_supports("sse4.2") ? 1 : 0;
        __atomic_store_n(&have_hw, hw, __ATOMIC_RELAXED);
    }
    return hw ? crc_hw(crc, p, n) : crc_table(crc, p, n);
}
#else
static uint32_t crc_any(uint32_t crc, const unsigned char *p, size_t n) { return crc_table(crc, p, n); }
#endif

uint32_t Crc32c_update(uint32_t crc, const void *p, size_t n) { return ~crc_any(~crc, (const unsigned char *)p, n); }

uint32_t Crc32c_updateTable(uint32_t crc, const void *p, size_t n) {
    return ~crc_table(~crc, (const unsigned char *)p, n);
}
