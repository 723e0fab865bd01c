/*
 * Journal records: one operation and the time it ran at, as bytes.
 *
 *   u32 length of the payload (little endian)
 *   u32 CRC-32C of the payload
 *   payload: u8 opcode, u64 now_ms, then the operation's arguments
 *            (strings as u8 length + bytes; integers little endian)
 *
 * Pure functions: the daemon's journal does the file I/O.
 */
#ifndef CSQ_RECORD_H
#define CSQ_RECORD_H

#include <stddef.h>
#include <stdint.h>

#include "engine.h"
#include "snapshot.h"

#define CSQ_RECORD_HEADER 8
#define CSQ_RECORD_MAX    4096 /* the largest record, header included */

/* Strings a decoded operation points into. */
struct csq_record_strings {
	char id[CSQ_ROOM_MAX + 1];
	char queue[CSQ_ID_MAX + 1];
	char queues[CSQ_SERVICER_QUEUES][CSQ_ID_MAX + 1];
	char prefer[CSQ_ID_MAX + 1]; /* ENQUEUE's and TRANSFER's PREFER */
	/* SKILLS, NEEDS: a text one byte longer than any valid list, so
	 * that a list too long stays too long through a replay. */
	char skills[CSQ_SKILLS_TEXT_MAX + 1];
};

/* CRC-32C (Castagnoli) of the bytes: by the CPU's crc32 instruction
 * where it has one (SSE4.2, looked up at each call), else by a table.
 * Both give the same sum; the two below are the paths, for the tests. */
uint32_t csq_crc32c(const void *, size_t);
uint32_t csq_crc32c_table(const void *, size_t);
int csq_crc32c_hw_ok(void);                   /* 1: the CPU's path runs */
uint32_t csq_crc32c_hw(const void *, size_t); /* only where hw_ok */

/* Writes op at now as one whole record into buf; returns its size. */
size_t csq_record_encode(const struct csq_op *, uint64_t now,
                         uint8_t buf[CSQ_RECORD_MAX]);
/*
 * Reads one payload (without the header) into op and *now, its strings
 * into st. Returns 0, or -1 when the payload is not a valid record. Every
 * field of op the record does not hold is zero, but op->policy, which
 * only a POLICY record writes (and only a POLICY reads).
 */
int csq_record_decode(const uint8_t *payload, size_t len, struct csq_op *,
                      uint64_t *now, struct csq_record_strings *st);

/* Snapshot items (compaction) share the format; their code byte is
 * CSQ_RECORD_SNAP + the item's kind. */
#define CSQ_RECORD_SNAP 0x80

int csq_record_is_snap(const uint8_t *payload, size_t len);
size_t csq_record_encode_snap(const struct csq_snap_item *,
                              uint8_t buf[CSQ_RECORD_MAX]);
int csq_record_decode_snap(const uint8_t *payload, size_t len,
                           struct csq_snap_item *);

#endif
