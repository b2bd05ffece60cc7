/*
 * The persistent heap from C: create a pool, put keys, close; reopen (recovery runs), check
 * every value, delete half, reopen again and check. Prints one summary line the test reads.
 * Usage: pheap_demo POOL_PATH
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "nvmswap_pheap.h"

#define N 2000

static void make(uint64_t i, uint8_t *key, uint8_t *val) {
    for (int j = 0; j < 64; j++) {
        key[j] = (uint8_t)(i * 31 + (uint64_t)j * 7 + 1);
        val[j] = (uint8_t)(i * 17 + (uint64_t)j);
    }
    memcpy(key, &i, sizeof i);
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s POOL_PATH\n", argv[0]);
        return 2;
    }
    uint8_t key[64], val[64], got[64];
    NvmswapPheap *h = nvmswap_pheap_create(argv[1], 8u << 20, N, "nvwa", "hybrid");
    if (h == NULL) {
        fprintf(stderr, "create: %s\n", nvmswap_pheap_last_error());
        return 1;
    }
    for (uint64_t i = 0; i < N; i++) {
        make(i, key, val);
        if (nvmswap_pheap_put(h, key, val) != 0) {
            fprintf(stderr, "put: %s\n", nvmswap_pheap_last_error());
            return 1;
        }
    }
    NvmswapPheapFlushes f;
    nvmswap_pheap_flushes(h, &f);
    nvmswap_pheap_close(h);

    /* A second create on the same file must be refused, not reformat it. */
    if (nvmswap_pheap_create(argv[1], 8u << 20, N, "nvwa", "hybrid") != NULL) {
        fprintf(stderr, "create over an existing pool succeeded\n");
        return 1;
    }
    h = nvmswap_pheap_open(argv[1]);
    if (h == NULL) {
        fprintf(stderr, "open: %s\n", nvmswap_pheap_last_error());
        return 1;
    }
    unsigned mismatches = 0, found = 0;
    for (uint64_t i = 0; i < N; i++) {
        make(i, key, val);
        int r = nvmswap_pheap_get(h, key, got);
        if (r == 1) {
            found++;
            mismatches += memcmp(got, val, 64) != 0;
        }
        if (i % 2 == 0 && nvmswap_pheap_delete(h, key) != 1) mismatches++;
    }
    nvmswap_pheap_close(h);
    h = nvmswap_pheap_open(argv[1]);
    if (h == NULL) {
        fprintf(stderr, "reopen: %s\n", nvmswap_pheap_last_error());
        return 1;
    }
    uint64_t left = nvmswap_pheap_len(h);
    nvmswap_pheap_close(h);
    printf("pheap: keys %d found %u mismatches %u left %llu allocator-flushes/put %.2f\n", N, found,
           mismatches, (unsigned long long)left, (double)f.allocator / N);
    return 0;
}
