/* records/crc32c.h: CRC-32C (Castagnoli, reflected polynomial 0x82f63b78),
 * the checksum that seals every object of the record log.
 *
 * Crc32c_update(0, p, n) is the CRC of p[0..n); feeding the result back in
 * continues it over more bytes. Uses the SSE4.2 crc32 instruction when the
 * processor has it, else an 8-bytes-at-a-time table (same result). */
#ifndef TT_RECORDS_CRC32C_H
#define TT_RECORDS_CRC32C_H

#include <stddef.h>
#include <stdint.h>

uint32_t Crc32c_update(uint32_t crc, const void *p, size_t n);
/* The same, always with the table (the test checks that both forms agree). */
uint32_t Crc32c_updateTable(uint32_t crc, const void *p, size_t n);

#endif
