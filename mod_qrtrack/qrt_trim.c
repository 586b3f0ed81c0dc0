/* qrt_trim: freed memory handed back to the system (qrt_trim.h). */
#include <stdlib.h>                 /* (first: it tells __GLIBC__) */
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "qrt_trim.h"

#if defined(__SANITIZE_ADDRESS__)
#define QRT_TRIM_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define QRT_TRIM_ASAN 1
#endif
#endif

#ifdef QRT_TRIM_ASAN
/* (sanitizer/allocator_interface.h, which not every compiler installs) */
void __sanitizer_purge_allocator(void);
#endif

int qrt_trim(void)
{
#if defined(QRT_TRIM_ASAN)
    __sanitizer_purge_allocator();
    return 1;
#elif defined(__GLIBC__)
    malloc_trim(0);
    return 1;
#else
    return 0;
#endif
}
