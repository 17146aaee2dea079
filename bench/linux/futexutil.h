/*
 * Futex wait/wake between processes sharing a MAP_SHARED page.  The
 * constants are spelled out because musl-gcc ships without the kernel's
 * uapi headers (<linux/futex.h>).  Shared (not FUTEX_PRIVATE) operations:
 * the two sides are distinct processes.
 */
#ifndef TESSERA_FUTEXUTIL_H
#define TESSERA_FUTEXUTIL_H

#include "bench.h"
#include <stdatomic.h>
#include <sys/syscall.h>

#define TESSERA_FUTEX_WAIT 0
#define TESSERA_FUTEX_WAKE 1

static inline long futex(atomic_int *uaddr, int op, int val)
{
	return syscall(SYS_futex, uaddr, op, val, NULL, NULL, 0);
}

/* Wait until *w becomes `want`, sleeping in the kernel while it is not. */
static inline void futex_await(atomic_int *w, int want)
{
	int v;
	while ((v = atomic_load(w)) != want)
		futex(w, TESSERA_FUTEX_WAIT, v);
}

static inline void futex_post(atomic_int *w, int val)
{
	atomic_store(w, val);
	futex(w, TESSERA_FUTEX_WAKE, 1);
}

#endif
