/*
 * The PHT benchmark of seed 004 (Fig. 5, §4.2) written against PMDK's libpmemobj, for the side by
 * side comparison in `nvmswap pheap bench`. Same structure as crates/pheap/src/pht.rs: a root
 * with a directory of 512-byte segments of 64 bucket heads, entries of three words (key, value,
 * next), keys and values of 64 bytes in their own objects; one transaction per put; the same
 * key/value generator (splitmix64) and operation sequence as crates/pheap/src/bench.rs.
 */
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

/* One put in one transaction (its own function: setjmp inside TX_BEGIN must not see the
 * caller's loop variables change). */
static int put_one(PMEMobjpool *pop, PMEMoid root_oid, struct root *root, PMEMoid dir_oid,
                   uint64_t *dir, uint64_t s, uint64_t at, const unsigned char *key,
                   const unsigned char *val) {
    volatile int rc = 0;
    TX_BEGIN(pop) {
        if (dir[s] == 0) {
            PMEMoid seg = pmemobj_tx_zalloc(SEG_BUCKETS * 8, 0);
            pmemobj_tx_add_range(dir_oid, s * 8, 8);
            dir[s] = seg.off;
        }
        PMEMoid seg_oid = {root_oid.pool_uuid_lo, dir[s]};
        uint64_t *seg = AT(pop, dir[s]);
        PMEMoid k = pmemobj_tx_alloc(64, 0);
        memcpy(pmemobj_direct(k), key, 64);
        PMEMoid v = pmemobj_tx_alloc(64, 0);
        memcpy(pmemobj_direct(v), val, 64);
        PMEMoid e = pmemobj_tx_alloc(sizeof(struct entry), 0);
        struct entry *ent = pmemobj_direct(e);
        ent->key = k.off;
        ent->val = v.off;
        ent->next = seg[at / 8];
        pmemobj_tx_add_range(seg_oid, at, 8);
        seg[at / 8] = e.off;
        pmemobj_tx_add_range(root_oid, offsetof(struct root, count), 8);
        root->count++;
    } TX_ONABORT {
        rc = -1;
    } TX_END
    return rc;
}

/* Returns 0 on success; on failure writes a message into err. */
int nvmswap_pmdk_pht(const char *path, uint64_t pool_size, uint64_t elements, uint64_t seed,
                     double *seconds, uint64_t *found, char *err, size_t errlen) {
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
    if (rc != 0) {
        snprintf(err, errlen, "put: %s", pmemobj_errormsg());
    }
    pmemobj_close(pop);
    return rc;
}
