/* qrt_trim: hands back to the system the memory the process freed (no database, no
 * httpd).
 *
 * glibc keeps what a process frees in its heaps, one per thread that allocated, until
 * malloc_trim gives it back; a child that ran a large report would otherwise keep that
 * report's peak. AddressSanitizer's allocator replaces glibc's and ignores malloc_trim:
 * under it the sanitizer's own free memory (its quarantine and caches) is given back
 * instead, so that the tests that watch a child's memory see the same under
 * `make test-asan` as in a release build. Elsewhere it does nothing and answers 0
 * (1 where it handed memory back), so that callers log only what happened. */
#ifndef QRT_TRIM_H
#define QRT_TRIM_H

int qrt_trim(void);

#endif
