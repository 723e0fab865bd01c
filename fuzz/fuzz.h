/*
 * What the libFuzzer targets in fuzz/ share: the entry point libFuzzer
 * calls, a reader that turns the fuzzer's bytes into choices, and the
 * way a target reports a broken property (an abort with the reason,
 * which libFuzzer saves as a crash like any other).
 */
#ifndef CSQ_FUZZ_H
#define CSQ_FUZZ_H

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* Choices drawn from the input; once it runs out, every draw is 0. */
struct fuzz_in {
	const uint8_t *p;
	size_t left;
};

void fuzz_in_init(struct fuzz_in *, const uint8_t *data, size_t size);
uint8_t fuzz_u8(struct fuzz_in *);
uint16_t fuzz_u16(struct fuzz_in *);
uint32_t fuzz_u32(struct fuzz_in *);
uint64_t fuzz_u64(struct fuzz_in *);
/* A value in 0..n-1 (0 when n is 0). */
uint32_t fuzz_pick(struct fuzz_in *, uint32_t n);
/* Up to max bytes, as many as the next byte says; *len gets the count. */
const uint8_t *fuzz_bytes(struct fuzz_in *, size_t max, size_t *len);
int fuzz_done(const struct fuzz_in *);

/* A property does not hold: prints why and aborts. */
void fuzz_fail(const char *fmt, ...)
    __attribute__((format(printf, 1, 2), noreturn));

/*
 * The journal's framing (lib/record.h) without the checksum, which a
 * fuzzer cannot compute: u32 length, u32 ignored, payload. Returns the
 * next payload and moves on, or NULL when no whole one is left.
 */
const uint8_t *fuzz_next_record(struct fuzz_in *, size_t *len);

#endif
