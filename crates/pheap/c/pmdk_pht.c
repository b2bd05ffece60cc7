/*
 * The PHT benchmark of seed 004 (Fig. 5, §4.2) written against PMDK's libpmemobj, for the side by
 * side comparison in `nvmswap pheap bench`. Same structure as crates/pheap/src/pht.rs: a root
 * with a directory of 512-byte segments of 64 bucket heads, entries of three words (key, value,
 * next), keys and values of 64 bytes in their own objects; one transaction per put; the same
 * key/value generator (splitmix64) and operation sequence as crates/pheap/src/bench.rs.
 */
#define _GNU_SOURCE /* RTLD_NEXT */
#include <dlfcn.h>
#include <libpmem.h>
#include <libpmemobj.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SEG_BUCKETS 64

struct root {
    uint64_t dir;
    uint64_t nbuckets;
    uint64_t count;
    uint64_t tag;
};

struct entry {
    uint64_t key;
    uint64_t val;
    uint64_t next;
};

static uint64_t splitmix(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static void fill(uint64_t seed, uint64_t i, uint64_t salt, unsigned char out[64]) {
    uint64_t s = seed ^ (i * 0x2545f4914f6cdd1dULL) ^ salt;
    for (int j = 0; j < 8; j++) {
        uint64_t w = splitmix(&s);
        memcpy(out + 8 * j, &w, 8);
    }
}

static uint64_t fnv(const unsigned char *k) {
    uint64_t h = 0xcbf29ce484222325ULL;
    for (int i = 0; i < 64; i++) {
        h ^= k[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

#define AT(pop, off) ((void *)((char *)(pop) + (off)))

/*
 * Counting libpmemobj's flushes. libpmemobj.so does not flush by itself: it calls libpmem.so's
 * pmem_flush, pmem_drain, pmem_persist, pmem_memcpy/memmove/memset (with flags) and pmem_msync
 * through its PLT (`nm -D --undefined-only libpmemobj.so.1`), or through pointers to them taken
 * at pool open, which the dynamic linker resolves the same way. This program defines those
 * symbols; ld exports a symbol of the executable that a linked shared library references, so
 * the dynamic linker binds libpmemobj's calls to the definitions below (interposition), which
 * count the cache lines each call writes back and the fences, then call libpmem's own function
 * (dlsym RTLD_NEXT). What is counted is exactly what libpmemobj asks libpmem to make durable;
 * flushes libpmem does inside itself for a call are the lines of that call's range.
 * Lines of a non-temporal copy (pmem_memcpy of 256 B or more goes around the cache) are counted
 * as written back too: they reach NVM the same way a flushed line does.
 */
enum { PH_ALLOC, PH_LOG, PH_COMMIT, PH_OTHER };
static int phase = PH_OTHER;
static struct nvmswap_pmdk_flushes {
    uint64_t lines[4]; /* by phase: in tx_alloc, in tx_add_range, at commit, elsewhere */
    uint64_t fences;
    uint64_t calls;
} counts;

static void count_lines(const void *addr, size_t len) {
    counts.calls++;
    if (len == 0) return;
    uintptr_t a = (uintptr_t)addr;
    counts.lines[phase] += (a + len + 63) / 64 - a / 64;
}

/* libpmem's own `name` (the next definition after ours), looked up once. */
#define REAL(name)                      \
    static __typeof__(&name) real_##name; \
    if (real_##name == NULL) real_##name = (__typeof__(&name))dlsym(RTLD_NEXT, #name)

void pmem_flush(const void *addr, size_t len) {
    REAL(pmem_flush);
    count_lines(addr, len);
    real_pmem_flush(addr, len);
}

void pmem_deep_flush(const void *addr, size_t len) {
    REAL(pmem_deep_flush);
    count_lines(addr, len);
    real_pmem_deep_flush(addr, len);
}

void pmem_drain(void) {
    REAL(pmem_drain);
    counts.fences++;
    real_pmem_drain();
}

void pmem_persist(const void *addr, size_t len) {
    REAL(pmem_persist);
    count_lines(addr, len);
    counts.fences++;
    real_pmem_persist(addr, len);
}

int pmem_msync(const void *addr, size_t len) {
    REAL(pmem_msync);
    count_lines(addr, len);
    counts.fences++;
    return real_pmem_msync(addr, len);
}

static void count_mem(void *dest, size_t len, unsigned flags) {
    if (flags & PMEM_F_MEM_NOFLUSH) return;
    count_lines(dest, len);
    if (!(flags & PMEM_F_MEM_NODRAIN)) counts.fences++;
}

void *pmem_memcpy(void *dest, const void *src, size_t len, unsigned flags) {
    REAL(pmem_memcpy);
    count_mem(dest, len, flags);
    return real_pmem_memcpy(dest, src, len, flags);
}

void *pmem_memmove(void *dest, const void *src, size_t len, unsigned flags) {
    REAL(pmem_memmove);
    count_mem(dest, len, flags);
    return real_pmem_memmove(dest, src, len, flags);
}

void *pmem_memset(void *dest, int c, size_t len, unsigned flags) {
    REAL(pmem_memset);
    count_mem(dest, len, flags);
    return real_pmem_memset(dest, c, len, flags);
}

/* One put in one transaction (its own function: setjmp inside TX_BEGIN must not see the
 * caller's loop variables change). */
static int put_one(PMEMobjpool *pop, PMEMoid root_oid, struct root *root, PMEMoid dir_oid,
                   uint64_t *dir, uint64_t s, uint64_t at, const unsigned char *key,
                   const unsigned char *val) {
    volatile int rc = 0;
    TX_BEGIN(pop) {
        if (dir[s] == 0) {
            phase = PH_ALLOC;
            PMEMoid seg = pmemobj_tx_zalloc(SEG_BUCKETS * 8, 0);
            phase = PH_LOG;
            pmemobj_tx_add_range(dir_oid, s * 8, 8);
            dir[s] = seg.off;
        }
        PMEMoid seg_oid = {root_oid.pool_uuid_lo, dir[s]};
        uint64_t *seg = AT(pop, dir[s]);
        phase = PH_ALLOC;
        PMEMoid k = pmemobj_tx_alloc(64, 0);
        memcpy(pmemobj_direct(k), key, 64);
        PMEMoid v = pmemobj_tx_alloc(64, 0);
        memcpy(pmemobj_direct(v), val, 64);
        PMEMoid e = pmemobj_tx_alloc(sizeof(struct entry), 0);
        struct entry *ent = pmemobj_direct(e);
        ent->key = k.off;
        ent->val = v.off;
        ent->next = seg[at / 8];
        phase = PH_LOG;
        pmemobj_tx_add_range(seg_oid, at, 8);
        seg[at / 8] = e.off;
        pmemobj_tx_add_range(root_oid, offsetof(struct root, count), 8);
        root->count++;
        phase = PH_COMMIT;
    } TX_ONABORT {
        rc = -1;
    } TX_END
    phase = PH_OTHER;
    return rc;
}

/* Referenced from nvmswap_pmdk_pht so the linker's section garbage collection keeps the
 * definitions above (nothing in the executable calls them; libpmemobj.so does). */
static void *volatile interposers[] = {
    (void *)pmem_flush,  (void *)pmem_deep_flush, (void *)pmem_drain,   (void *)pmem_persist,
    (void *)pmem_msync,  (void *)pmem_memcpy,     (void *)pmem_memmove, (void *)pmem_memset,
};

/* Returns 0 on success; on failure writes a message into err. */
int nvmswap_pmdk_pht(const char *path, uint64_t pool_size, uint64_t elements, uint64_t seed,
                     double *seconds, uint64_t *found, struct nvmswap_pmdk_flushes *flushes,
                     char *err, size_t errlen) {
    (void)interposers[0];
    /* Flush with CPU instructions as our pool does, not msync, on a file system without DAX. */
    setenv("PMEM_IS_PMEM_FORCE", "1", 1);
    PMEMobjpool *pop = pmemobj_create(path, "pht", (size_t)pool_size, 0600);
    if (pop == NULL) {
        snprintf(err, errlen, "pmemobj_create(%s): %s", path, pmemobj_errormsg());
        return -1;
    }
    PMEMoid root_oid = pmemobj_root(pop, sizeof(struct root));
    struct root *root = pmemobj_direct(root_oid);
    uint64_t nb = SEG_BUCKETS;
    while (nb < elements) nb <<= 1;
    uint64_t nsegs = nb / SEG_BUCKETS;
    volatile int rc = 0;
    TX_BEGIN(pop) {
        PMEMoid dir = pmemobj_tx_zalloc(nsegs * 8, 0);
        pmemobj_tx_add_range(root_oid, 0, sizeof(struct root));
        root->dir = dir.off;
        root->nbuckets = nb;
        root->count = 0;
        root->tag = 1;
    } TX_ONABORT {
        rc = -1;
    } TX_END
    if (rc != 0) {
        snprintf(err, errlen, "creating the table: %s", pmemobj_errormsg());
        pmemobj_close(pop);
        return -1;
    }
    PMEMoid dir_oid = {root_oid.pool_uuid_lo, root->dir};
    uint64_t *dir = AT(pop, root->dir);
    uint64_t rng = seed ^ 0x6765747321ULL;
    uint64_t hits = 0;
    unsigned char key[64], val[64];
    memset(&counts, 0, sizeof counts);
    double t0 = now();
    for (uint64_t i = 0; i < elements && rc == 0; i++) {
        fill(seed, i, 0x6b6579, key);
        fill(seed, i, 0x76616c, val);
        uint64_t b = fnv(key) & (nb - 1);
        uint64_t s = b / SEG_BUCKETS, at = (b % SEG_BUCKETS) * 8;
        if (put_one(pop, root_oid, root, dir_oid, dir, s, at, key, val) != 0) rc = -1;
        /* A get of a random key put so far. */
        uint64_t j = splitmix(&rng) % (i + 1);
        fill(seed, j, 0x6b6579, key);
        uint64_t g = fnv(key) & (nb - 1);
        uint64_t segoff = dir[g / SEG_BUCKETS];
        uint64_t e = segoff ? ((uint64_t *)AT(pop, segoff))[g % SEG_BUCKETS] : 0;
        while (e != 0) {
            struct entry *ent = AT(pop, e);
            if (memcmp(AT(pop, ent->key), key, 64) == 0) {
                hits++;
                break;
            }
            e = ent->next;
        }
    }
    *seconds = now() - t0;
    *found = hits;
    *flushes = counts;
    if (rc != 0) {
        snprintf(err, errlen, "put: %s", pmemobj_errormsg());
    }
    pmemobj_close(pop);
    return rc;
}
